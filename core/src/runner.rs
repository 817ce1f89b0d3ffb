//! Bucketed graphs: one graph per batch size, all sharing one pool, as the
//! PyTorch notes serve an MLP with `torch.cuda.graph(g, pool=…)` per batch
//! size. A replay picks the smallest bucket that holds the rows asked for.

use crate::arg::Binding;
use crate::capture::{abort_capture, begin_capture, end_capture};
use crate::context::Context;
use crate::driver::stream::CaptureMode;
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::exec::Exec;
use crate::pool::{Pool, PoolOptions};
use crate::stream::Stream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// One bucket: its batch size, its graph, and what capturing it cost.
pub struct Bucket {
    /// Rows the graph was captured for.
    pub batch: u32,
    /// Its graph; `None` for a bucket added while the runner ran eagerly
    /// (see [`Fallback`]).
    exec: Option<Exec>,
    /// Microseconds from the start of its capture to its uploaded exec.
    pub capture_us: f64,
    /// Nodes in its graph.
    pub node_count: usize,
    /// Pool bytes its capture allocated and still held when it ended.
    pub pool_bytes: u64,
}

/// A family of graphs keyed by batch size, sharing one pool.
pub struct Runner {
    pool: Pool,
    stream: Stream,
    buckets: Vec<Bucket>,
    fallback: Fallback,
    eager_runs: AtomicU64,
}

/// Whether a runner or a cache runs its record function eagerly instead of
/// replaying graphs, and whether doing so is an error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fallback {
    /// Run the record function eagerly on the caller's stream instead of
    /// replaying (also on for every object while the `GRAPHCORE_DISABLE`
    /// environment variable is `1`: see [`disabled_by_env`]).
    pub eager: bool,
    /// Hard fail: where the object would run eagerly, fail with
    /// [`ErrorKind::InvalidState`] instead and run nothing.
    pub hard_fail: bool,
}

impl Fallback {
    /// True when work runs eagerly: the flag, or `GRAPHCORE_DISABLE=1`.
    pub fn is_eager(&self) -> bool {
        self.eager || disabled_by_env()
    }

    /// Called before an eager run of `what`: in hard-fail mode the error to
    /// return instead; otherwise counts the run in `counter` and logs the
    /// first eager run of the process (one line on stderr).
    pub(crate) fn enter(&self, what: &str, counter: &AtomicU64) -> Result<()> {
        let why = if self.eager {
            "its eager flag is set"
        } else {
            "GRAPHCORE_DISABLE=1 is set"
        };
        if self.hard_fail {
            return Err(Error::invalid_state(format!(
                "{what} would run its record function eagerly instead of replaying ({why}), and                  hard-fail mode is on"
            )));
        }
        counter.fetch_add(1, Ordering::Relaxed);
        static LOGGED: AtomicBool = AtomicBool::new(false);
        if !LOGGED.swap(true, Ordering::Relaxed) {
            eprintln!(
                "graphcore: {what} runs its record function eagerly instead of replaying graphs                  ({why}); eager runs are counted in its statistics (logged once per process)"
            );
        }
        Ok(())
    }
}

/// True when the environment variable `GRAPHCORE_DISABLE` was `1` the first
/// time this was asked (read once per process): every runner and cache then
/// runs its record function eagerly instead of capturing and replaying.
pub fn disabled_by_env() -> bool {
    static DISABLED: OnceLock<bool> = OnceLock::new();
    *DISABLED.get_or_init(|| std::env::var_os("GRAPHCORE_DISABLE").is_some_and(|v| v == "1"))
}

/// One graph recorded by [`record_graph`]: uploaded and ready to launch.
pub(crate) struct Recorded {
    pub(crate) exec: Exec,
    /// Microseconds from the start of the capture to the uploaded exec.
    pub(crate) capture_us: f64,
    pub(crate) node_count: usize,
    /// Pool bytes the capture allocated and still held when it ended.
    pub(crate) pool_bytes: u64,
    /// The capture's own peak of allocated pool bytes.
    pub(crate) peak_bytes: u64,
}

/// Captures `record`'s work on `stream` into `pool`, then instantiates and
/// uploads it and waits for the upload. If `record` fails, or breaks the
/// capture, the capture is rolled back as a broken one is (its blocks
/// freed, its pages unmapped) and the error names `what`.
pub(crate) fn record_graph(
    stream: &Stream,
    pool: &Pool,
    what: &str,
    record: impl FnOnce(&Stream) -> Result<()>,
) -> Result<Recorded> {
    let t = Instant::now();
    begin_capture(stream, Some(pool), CaptureMode::ThreadLocal)?;
    if let Err(e) = record(stream) {
        // (A record that ended the capture itself left none to abort.)
        let _ = abort_capture(stream);
        return Err(e.context(&format!("recording {what}")));
    }
    let graph = end_capture(stream).map_err(|e| e.context(&format!("capturing {what}")))?;
    let exec = Exec::new(&graph, 0)?;
    exec.upload(stream)?;
    stream.synchronize()?;
    Ok(Recorded {
        capture_us: t.elapsed().as_secs_f64() * 1e6,
        node_count: graph.node_count()?,
        pool_bytes: graph.pool_bytes(),
        peak_bytes: graph.pool_peak_bytes(),
        exec,
    })
}

/// Gives back what `pool` mapped past `reserved_before` bytes (a trim, if
/// it grew): after a failed recording, whose graphs are gone by now.
pub(crate) fn trim_growth(pool: &Pool, reserved_before: u64) {
    if pool.stats().reserved_bytes > reserved_before {
        let _ = pool.trim();
    }
}

/// Records one bucket's work on the stream it is given (graphcore's kernels,
/// your own, cuBLAS...): called for the warm-up runs, then under capture.
pub type Record<'a> = dyn FnMut(&Stream, u32) -> Result<()> + 'a;

impl Runner {
    /// A runner on `ctx` whose graphs allocate from `pool` (a new pool when
    /// `None`).
    pub fn new(ctx: &Context, pool: Option<&Pool>) -> Result<Runner> {
        let pool = match pool {
            Some(p) => {
                ctx.ensure_same("the runner", p.context(), "the pool")?;
                p.clone()
            }
            None => Pool::new(ctx, PoolOptions::default())?,
        };
        Ok(Runner {
            pool,
            stream: Stream::new(ctx)?,
            buckets: Vec::new(),
            fallback: Fallback::default(),
            eager_runs: AtomicU64::new(0),
        })
    }

    /// The runner's fallback flags.
    pub fn fallback(&self) -> Fallback {
        self.fallback
    }

    /// Sets the fallback flags (see [`Fallback`]); they apply to the calls
    /// after this one.
    pub fn set_fallback(&mut self, f: Fallback) {
        self.fallback = f;
    }

    /// Eager runs made instead of replays so far.
    pub fn eager_runs(&self) -> u64 {
        self.eager_runs.load(Ordering::Relaxed)
    }

    /// The runner's side stream (warm-ups and captures run on it).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The pool the graphs share.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The buckets, smallest first.
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// Warms each bucket up `warmup` times eagerly on the runner's side
    /// stream (as the PyTorch notes do before capturing), then captures the
    /// buckets largest first into the shared pool, and instantiates and
    /// uploads them. If `record` fails, or breaks a capture, nothing is
    /// added, the graphs of this call are gone, the capture that failed is
    /// rolled back (the blocks it allocated are freed), and the pool has
    /// given back the memory this call mapped (it is trimmed). Blocks that
    /// `record` allocates and does not free otherwise are the caller's:
    /// those of warm-up runs (eager allocations) and those a capture kept.
    ///
    /// While the runner runs eagerly ([`Fallback::is_eager`]), nothing is
    /// recorded: the buckets are added without graphs, and replays run
    /// `record` (see [`run_eagerly`](Self::run_eagerly)); in hard-fail mode
    /// this is [`ErrorKind::InvalidState`] and nothing is added.
    pub fn capture(&mut self, batches: &[u32], record: &mut Record, warmup: u32) -> Result<()> {
        let existing: Vec<u32> = self.buckets.iter().map(|b| b.batch).collect();
        let order = capture_order(&existing, batches)?;
        if self.fallback.is_eager() {
            if self.fallback.hard_fail {
                self.fallback.enter("the runner", &self.eager_runs)?;
            }
            self.buckets.extend(order.iter().map(|&batch| Bucket {
                batch,
                exec: None,
                capture_us: 0.0,
                node_count: 0,
                pool_bytes: 0,
            }));
            self.buckets.sort_by_key(|b| b.batch);
            return Ok(());
        }
        let reserved_before = self.pool.stats().reserved_bytes;
        match self.capture_all(&order, record, warmup) {
            Ok(mut new) => {
                self.buckets.append(&mut new);
                self.buckets.sort_by_key(|b| b.batch);
                Ok(())
            }
            Err(e) => {
                // The partial graphs are dropped by now; give back growth.
                trim_growth(&self.pool, reserved_before);
                Err(e)
            }
        }
    }

    fn capture_all(&self, order: &[u32], record: &mut Record, warmup: u32) -> Result<Vec<Bucket>> {
        let s = &self.stream;
        for &b in order {
            for _ in 0..warmup {
                record(s, b).map_err(|e| e.context(&format!("warm-up of bucket {b}")))?;
            }
        }
        s.synchronize()?;
        let mut out = Vec::with_capacity(order.len());
        for &b in order {
            let r = record_graph(s, &self.pool, &format!("bucket {b}"), |s| record(s, b))?;
            out.push(Bucket {
                batch: b,
                capture_us: r.capture_us,
                node_count: r.node_count,
                pool_bytes: r.pool_bytes,
                exec: Some(r.exec),
            });
        }
        Ok(out)
    }

    /// The eager fallback of [`replay`](Self::replay): runs `record` on
    /// `stream` (the caller's) for the smallest bucket of at least `rows`
    /// rows, as its graph would run, and returns its batch size. Counted in
    /// [`eager_runs`](Self::eager_runs); in hard-fail mode
    /// [`ErrorKind::InvalidState`] and nothing runs.
    pub fn run_eagerly(&self, rows: u32, stream: &Stream, record: &mut Record) -> Result<u32> {
        ensure_arg!(rows > 0, "`rows` is 0");
        let batch = self.bucket_for(rows)?.batch;
        self.fallback.enter("the runner", &self.eager_runs)?;
        record(stream, batch).map_err(|e| e.context(&format!("eager run of bucket {batch}")))?;
        Ok(batch)
    }

    /// Replays the smallest bucket of at least `rows` rows on `stream` and
    /// returns its batch size (the caller pads to it). More rows than the
    /// largest bucket is [`ErrorKind::NoBucket`]: fall back to eager work.
    pub fn replay(&self, rows: u32, stream: &Stream) -> Result<u32> {
        ensure_arg!(rows > 0, "`rows` is 0");
        let b = self.bucket_for(rows)?;
        b.graph()?.launch(stream)?;
        Ok(b.batch)
    }

    /// [`replay`](Self::replay) with bindings: binds the arguments in the
    /// chosen bucket's exec (see [`Exec::launch_with`]) and launches it.
    /// Each bucket's capture declares its own arguments (with
    /// [`declare_capture_arg`](crate::declare_capture_arg) on the runner's
    /// stream), in the same order, so an index names the same argument in
    /// every bucket. Bindings persist per bucket.
    pub fn replay_with(&self, rows: u32, stream: &Stream, bindings: &[Binding]) -> Result<u32> {
        ensure_arg!(rows > 0, "`rows` is 0");
        let b = self.bucket_for(rows)?;
        b.graph()?
            .launch_with(stream, bindings)
            .map_err(|e| e.context(&format!("bucket {}", b.batch)))?;
        Ok(b.batch)
    }

    /// The bucket a replay of `rows` rows uses.
    pub fn bucket_for(&self, rows: u32) -> Result<&Bucket> {
        let batches = self.buckets.iter().map(|b| b.batch);
        bucket_index(batches, rows)
            .map(|i| &self.buckets[i])
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NoBucket,
                    match self.buckets.last() {
                        Some(l) => format!(
                            "{rows} rows is more than the largest bucket ({}): run it eagerly",
                            l.batch
                        ),
                        None => "the runner has no buckets yet: capture some first".into(),
                    },
                )
            })
    }
}

impl Bucket {
    /// The bucket's exec, or why it has none.
    fn graph(&self) -> Result<&Exec> {
        self.exec.as_ref().ok_or_else(|| {
            Error::invalid_state(format!(
                "bucket {} has no graph: it was added while the runner ran eagerly; run it \
                 eagerly, or capture the runner's buckets again in a new runner",
                self.batch
            ))
        })
    }
}

/// The order to capture new buckets in (largest first), after checking them
/// against each other and the buckets a runner already has.
fn capture_order(existing: &[u32], batches: &[u32]) -> Result<Vec<u32>> {
    ensure_arg!(!batches.is_empty(), "no buckets given");
    let mut order: Vec<u32> = batches.to_vec();
    order.sort_unstable_by(|a, b| b.cmp(a));
    for (i, &b) in order.iter().enumerate() {
        ensure_arg!(b > 0, "bucket sizes must be at least 1");
        ensure_arg!(
            !order[..i].contains(&b) && !existing.contains(&b),
            "bucket {b} is given twice"
        );
    }
    Ok(order)
}

/// The index of the smallest of `batches` (ascending) holding `rows` rows.
fn bucket_index(batches: impl Iterator<Item = u32>, rows: u32) -> Option<usize> {
    batches
        .enumerate()
        .find(|&(_, b)| b >= rows)
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_captured_largest_first_and_checked() {
        assert_eq!(
            capture_order(&[], &[4, 1, 32, 16]).unwrap(),
            vec![32, 16, 4, 1]
        );
        assert!(capture_order(&[], &[]).is_err());
        assert!(capture_order(&[], &[0, 4]).is_err());
        assert!(capture_order(&[], &[4, 4]).is_err());
        assert!(capture_order(&[8], &[8, 2]).is_err());
        assert_eq!(capture_order(&[8], &[2]).unwrap(), vec![2]);
    }

    #[test]
    fn replay_picks_the_smallest_bucket_that_holds_the_rows() {
        let b = [1u32, 4, 16, 32];
        let pick = |rows| bucket_index(b.iter().copied(), rows);
        assert_eq!(pick(1), Some(0));
        assert_eq!(pick(2), Some(1));
        assert_eq!(pick(4), Some(1));
        assert_eq!(pick(5), Some(2));
        assert_eq!(pick(32), Some(3));
        assert_eq!(pick(33), None);
        assert_eq!(bucket_index(std::iter::empty(), 1), None);
    }
}
