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
use std::time::Instant;

/// One bucket: its batch size, its graph, and what capturing it cost.
pub struct Bucket {
    /// Rows the graph was captured for.
    pub batch: u32,
    exec: Exec,
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
        })
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
    pub fn capture(&mut self, batches: &[u32], record: &mut Record, warmup: u32) -> Result<()> {
        let existing: Vec<u32> = self.buckets.iter().map(|b| b.batch).collect();
        let order = capture_order(&existing, batches)?;
        let reserved_before = self.pool.stats().reserved_bytes;
        match self.capture_all(&order, record, warmup) {
            Ok(mut new) => {
                self.buckets.append(&mut new);
                self.buckets.sort_by_key(|b| b.batch);
                Ok(())
            }
            Err(e) => {
                // The partial graphs are dropped by now; give back growth.
                if self.pool.stats().reserved_bytes > reserved_before {
                    let _ = self.pool.trim();
                }
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
            let t = Instant::now();
            begin_capture(s, Some(&self.pool), CaptureMode::ThreadLocal)?;
            if let Err(e) = record(s, b) {
                // Roll the capture back as a broken one is (its blocks freed,
                // its pages unmapped); report the record's error. (A record
                // that ended the capture itself left none to abort.)
                let _ = abort_capture(s);
                return Err(e.context(&format!("recording bucket {b}")));
            }
            let graph = end_capture(s).map_err(|e| e.context(&format!("capturing bucket {b}")))?;
            let exec = Exec::new(&graph, 0)?;
            exec.upload(s)?;
            s.synchronize()?;
            out.push(Bucket {
                batch: b,
                capture_us: t.elapsed().as_secs_f64() * 1e6,
                node_count: graph.node_count()?,
                pool_bytes: graph.pool_bytes(),
                exec,
            });
        }
        Ok(out)
    }

    /// Replays the smallest bucket of at least `rows` rows on `stream` and
    /// returns its batch size (the caller pads to it). More rows than the
    /// largest bucket is [`ErrorKind::NoBucket`]: fall back to eager work.
    pub fn replay(&self, rows: u32, stream: &Stream) -> Result<u32> {
        ensure_arg!(rows > 0, "`rows` is 0");
        let b = self.bucket_for(rows)?;
        b.exec.launch(stream)?;
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
        b.exec
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
