//! Bucketed graphs: one graph per batch size, all sharing one pool, as the
//! PyTorch notes serve an MLP with `torch.cuda.graph(g, pool=…)` per batch
//! size. A replay picks the smallest bucket that holds the rows asked for.

use crate::arg::{ArgDecl, Binding};
use crate::capture::{abort_capture, begin_capture, declare_capture_rows_arg, end_capture};
use crate::context::Context;
use crate::driver::stream::CaptureMode;
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::exec::{ArgUseKind, Exec};
use crate::lock::lock;
use crate::pool::{Pool, PoolOptions};
use crate::stream::Stream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
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
    /// The device address of its capture's row-count table (`u32`s,
    /// entry i holding i, up to the capture's largest bucket); 0 when it
    /// was captured with [`Runner::capture`].
    table: u64,
    /// How an exact-size replay binds it, when its graph can take one.
    exact: Option<ExactRows>,
    /// Why its graph cannot take an exact-size replay, where it was
    /// captured with [`Runner::capture_exact`] and cannot.
    refusal: Option<String>,
}

/// What an exact-size capable bucket binds at a replay.
struct ExactRows {
    /// The index of the row-count argument (declared by the runner after
    /// the record function's own).
    count: usize,
    /// Bytes of one row of each argument declared as rows (0: not rows).
    row_bytes: Vec<usize>,
    state: Mutex<ExactState>,
}

/// The row count and row bindings an exact-size capable bucket has now.
struct ExactState {
    /// The row count bound now; `None` after a replay that failed part way.
    rows: Option<u32>,
    /// Per argument: how many rows its binding holds (rows arguments).
    held: Vec<u64>,
    /// The bindings of the replay being made (reused: no allocation).
    list: Vec<Binding>,
}

/// A family of graphs keyed by batch size, sharing one pool.
pub struct Runner {
    pool: Pool,
    stream: Stream,
    buckets: Vec<Bucket>,
    fallback: Fallback,
    eager_runs: AtomicU64,
    /// The row-count tables of exact-size captures, freed with the runner.
    tables: Vec<u64>,
}

impl Drop for Runner {
    fn drop(&mut self) {
        // The graphs that read the tables go first.
        self.buckets.clear();
        for &t in &self.tables {
            let _ = self.pool.free(t);
        }
    }
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
                "{what} would run its record function eagerly instead of replaying ({why}), and hard-fail mode is on"
            )));
        }
        counter.fetch_add(1, Ordering::Relaxed);
        static LOGGED: AtomicBool = AtomicBool::new(false);
        if !LOGGED.swap(true, Ordering::Relaxed) {
            eprintln!(
                "graphcore: {what} runs its record function eagerly instead of replaying graphs ({why}); eager runs are counted in its statistics (logged once per process)"
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

/// Records one bucket's work for an exact-size capture
/// ([`Runner::capture_exact`]): the stream, the bucket's rows, and the
/// device address of a `u32` row count that its ops read when they run
/// (`ops::linear_rows`, `ops::mlp_rows` of the kernels crate): it holds
/// the bucket's rows in the warm-ups and the capture, and a replay binds it
/// to the rows asked for.
pub type RecordRows<'a> = dyn FnMut(&Stream, u32, u64) -> Result<()> + 'a;

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
            tables: Vec::new(),
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
        self.capture_impl(batches, &mut |s, b, _| record(s, b), warmup, false)
    }

    /// [`capture`](Self::capture) for exact-size replays
    /// ([`replay_exact`](Self::replay_exact)): `record` also gets the
    /// device address of a `u32` row count, which holds the bucket's rows
    /// (in the warm-ups and the capture); the ops it records read their
    /// row count there, and the ranges whose rows they read or write are
    /// declared as rows ([`declare_capture_rows_arg`]). The runner
    /// declares the row count as the capture's last argument. A bucket's
    /// graph takes exact-size replays when the row count has a use and
    /// every use of a rows argument is a kernel (not nested in a child
    /// graph) that also takes the row count, and each rows argument's
    /// bytes are a multiple of the bucket's rows; otherwise it is added
    /// all the same, for plain replays, and
    /// [`exact_refusal`](Bucket::exact_refusal) says why. The row counts
    /// live in a table of the runner's (one `u32` per row count, allocated
    /// from its pool before the warm-ups, freed with the runner).
    pub fn capture_exact(
        &mut self,
        batches: &[u32],
        record: &mut RecordRows,
        warmup: u32,
    ) -> Result<()> {
        self.capture_impl(batches, record, warmup, true)
    }

    fn capture_impl(
        &mut self,
        batches: &[u32],
        record: &mut RecordRows,
        warmup: u32,
        exact: bool,
    ) -> Result<()> {
        let existing: Vec<u32> = self.buckets.iter().map(|b| b.batch).collect();
        let order = capture_order(&existing, batches)?;
        if self.fallback.is_eager() && self.fallback.hard_fail {
            self.fallback.enter("the runner", &self.eager_runs)?;
        }
        let reserved_before = self.pool.stats().reserved_bytes;
        let table = if exact {
            self.count_table(order[0])?
        } else {
            0
        };
        if self.fallback.is_eager() {
            self.buckets.extend(order.iter().map(|&batch| Bucket {
                batch,
                exec: None,
                capture_us: 0.0,
                node_count: 0,
                pool_bytes: 0,
                table,
                exact: None,
                refusal: None,
            }));
            self.buckets.sort_by_key(|b| b.batch);
            return Ok(());
        }
        match self.capture_all(&order, record, warmup, table) {
            Ok(mut new) => {
                self.buckets.append(&mut new);
                self.buckets.sort_by_key(|b| b.batch);
                Ok(())
            }
            Err(e) => {
                if table != 0 {
                    self.tables.pop();
                    let _ = self.pool.free(table);
                }
                // The partial graphs are dropped by now; give back growth.
                trim_growth(&self.pool, reserved_before);
                Err(e)
            }
        }
    }

    /// A table of `u32`s 0..=`most` in the runner's pool (kept in
    /// `tables`), written and waited for.
    fn count_table(&mut self, most: u32) -> Result<u64> {
        let counts: Vec<u32> = (0..=most).collect();
        let bytes = counts.len() * 4;
        let table = self.pool.alloc(bytes as u64)?;
        // SAFETY: `table` is a live block of `bytes` bytes of the stream's
        // context, and `counts` lives until the copy is waited for.
        let written =
            unsafe { crate::copy::copy_async(&self.stream, table, counts.as_ptr() as u64, bytes) }
                .and_then(|()| self.stream.synchronize());
        if let Err(e) = written {
            let _ = self.pool.free(table);
            return Err(e.context("writing the runner's row-count table"));
        }
        self.tables.push(table);
        Ok(table)
    }

    fn capture_all(
        &self,
        order: &[u32],
        record: &mut RecordRows,
        warmup: u32,
        table: u64,
    ) -> Result<Vec<Bucket>> {
        let s = &self.stream;
        let count_of = |b: u32| if table == 0 { 0 } else { table + 4 * b as u64 };
        for &b in order {
            for _ in 0..warmup {
                record(s, b, count_of(b))
                    .map_err(|e| e.context(&format!("warm-up of bucket {b}")))?;
            }
        }
        s.synchronize()?;
        let mut out = Vec::with_capacity(order.len());
        for &b in order {
            let mut count = 0;
            let r = record_graph(s, &self.pool, &format!("bucket {b}"), |s| {
                record(s, b, count_of(b))?;
                if table != 0 {
                    count = declare_capture_rows_arg(s, count_of(b), 4, false, false)
                        .map_err(|e| e.context("declaring the row count"))?;
                }
                Ok(())
            })?;
            let (exact, refusal) = if table == 0 {
                (None, None)
            } else {
                match exact_rows(&r.exec, b, count) {
                    Ok(e) => (Some(e), None),
                    Err(why) => (None, Some(why)),
                }
            };
            out.push(Bucket {
                batch: b,
                capture_us: r.capture_us,
                node_count: r.node_count,
                pool_bytes: r.pool_bytes,
                exec: Some(r.exec),
                table,
                exact,
                refusal,
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
        self.run_eagerly_rows(rows, stream, false, &mut |s, b, _| record(s, b))
    }

    /// [`run_eagerly`](Self::run_eagerly) for a runner captured with
    /// [`capture_exact`](Self::capture_exact): `record` gets the address
    /// of the row count, holding `rows` when `exact` (an exact-size
    /// replay's eager run: the record function's own buffers then hold
    /// the bucket's rows, of which the first `rows` are computed) and the
    /// bucket's rows otherwise. `exact` on a bucket not captured with
    /// [`capture_exact`](Self::capture_exact) is
    /// [`ErrorKind::InvalidState`] and nothing runs.
    pub fn run_eagerly_rows(
        &self,
        rows: u32,
        stream: &Stream,
        exact: bool,
        record: &mut RecordRows,
    ) -> Result<u32> {
        ensure_arg!(rows > 0, "`rows` is 0");
        let b = self.bucket_for(rows)?;
        let batch = b.batch;
        if exact && b.table == 0 {
            return Err(not_exact(b));
        }
        self.fallback.enter("the runner", &self.eager_runs)?;
        let count = if b.table == 0 {
            0
        } else {
            b.table + 4 * if exact { rows } else { batch } as u64
        };
        record(stream, batch, count)
            .map_err(|e| e.context(&format!("eager run of bucket {batch}")))?;
        Ok(batch)
    }

    /// Replays the smallest bucket of at least `rows` rows on `stream` and
    /// returns its batch size (the caller pads to it). More rows than the
    /// largest bucket is [`ErrorKind::NoBucket`]: fall back to eager work.
    /// On a bucket that took an exact-size replay since, the row count is
    /// bound back to the bucket's rows, and every rows argument must be
    /// bound to a range of the bucket's rows (else
    /// [`ErrorKind::InvalidArgument`] and nothing runs: bind them with
    /// [`replay_with`](Self::replay_with)).
    pub fn replay(&self, rows: u32, stream: &Stream) -> Result<u32> {
        ensure_arg!(rows > 0, "`rows` is 0");
        let b = self.bucket_for(rows)?;
        match &b.exact {
            Some(e) => launch_rows(b, e, stream, b.batch, &[])
                .map_err(|e| e.context(&format!("bucket {}", b.batch)))?,
            None => b.graph()?.launch(stream)?,
        }
        Ok(b.batch)
    }

    /// Replays the smallest bucket of at least `rows` rows with its row
    /// count bound to `rows`, so that its rows arguments may be bound to
    /// ranges of exactly `rows` rows (no padding): binds `bindings` as
    /// [`replay_with`](Self::replay_with) does, except that a rows
    /// argument's range must hold `rows` rows (its declared bytes / the
    /// bucket's rows * `rows`), and launches. Every rows argument not
    /// bound here must be bound to at least `rows` rows already. Returns
    /// the bucket's rows. A bucket whose graph cannot take an exact-size
    /// replay (captured with [`capture`](Self::capture), or see
    /// [`Bucket::exact_refusal`]) is [`ErrorKind::InvalidState`]; binding
    /// the row count itself, or a bad binding, is
    /// [`ErrorKind::InvalidArgument`]; nothing is launched either way.
    pub fn replay_exact(&self, rows: u32, stream: &Stream, bindings: &[Binding]) -> Result<u32> {
        ensure_arg!(rows > 0, "`rows` is 0");
        let b = self.bucket_for(rows)?;
        let graph = b.graph();
        let e = match (&b.exact, graph) {
            (Some(e), Ok(_)) => e,
            (_, Err(g)) => return Err(g),
            (None, Ok(_)) => return Err(not_exact(b)),
        };
        launch_rows(b, e, stream, rows, bindings)
            .map_err(|e| e.context(&format!("bucket {}", b.batch)))?;
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
        match &b.exact {
            Some(e) => launch_rows(b, e, stream, b.batch, bindings),
            None => b.graph()?.launch_with(stream, bindings),
        }
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
    /// Whether its graph takes exact-size replays
    /// ([`Runner::replay_exact`]).
    pub fn is_exact(&self) -> bool {
        self.exact.is_some()
    }

    /// Why its graph does not take exact-size replays, where it was
    /// captured with [`Runner::capture_exact`] and does not.
    pub fn exact_refusal(&self) -> Option<&str> {
        self.refusal.as_deref()
    }

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

/// Why bucket `b` refuses an exact-size replay.
fn not_exact(b: &Bucket) -> Error {
    Error::invalid_state(match (&b.refusal, b.table) {
        (Some(why), _) => format!("bucket {} takes no exact-size replay: {why}", b.batch),
        (None, 0) => format!(
            "bucket {} takes no exact-size replay: it was captured without a row count (capture \
             it for exact-size replays)",
            b.batch
        ),
        (None, _) => format!(
            "bucket {} takes no exact-size replay: it was added while the runner ran eagerly",
            b.batch
        ),
    })
}

/// Whether the graph of bucket `batch`, whose row count is argument
/// `count`, takes exact-size replays: how, or why not.
fn exact_rows(exec: &Exec, batch: u32, count: usize) -> std::result::Result<ExactRows, String> {
    let decls: Vec<ArgDecl> = exec.graph().args();
    let counted: Vec<usize> = exec
        .arg_use_list(count)
        .map_err(|e| e.to_string())?
        .iter()
        .filter(|u| u.kind == ArgUseKind::Kernel && !u.nested && u.node != usize::MAX)
        .map(|u| u.node)
        .collect();
    if counted.is_empty() {
        return Err(
            "no kernel of its graph reads the row count (record its ops with the row \
                    count they were given)"
                .into(),
        );
    }
    let mut row_bytes = vec![0; decls.len()];
    for (i, d) in decls.iter().enumerate() {
        if !d.rows || i == count {
            continue;
        }
        if d.bytes % batch as usize != 0 {
            return Err(format!(
                "argument {i} is declared as rows with {} bytes, not a multiple of the bucket's \
                 {batch} rows",
                d.bytes
            ));
        }
        row_bytes[i] = d.bytes / batch as usize;
        for u in exec.arg_use_list(i).map_err(|e| e.to_string())? {
            let ok = u.kind == ArgUseKind::Kernel && !u.nested && counted.contains(&u.node);
            if !ok {
                let what = match (&u.kernel, u.kind) {
                    (Some(k), _) => format!("kernel `{k}`"),
                    (None, ArgUseKind::Memset) => "a memset".into(),
                    (None, _) => "a copy".into(),
                };
                return Err(format!(
                    "argument {i} (rows) is used by node {} ({what}{}), which does not read the \
                     row count: it would use the bucket's {batch} rows",
                    u.node,
                    if u.nested { ", in a child graph" } else { "" }
                ));
            }
        }
    }
    let held = row_bytes
        .iter()
        .map(|&r| if r == 0 { 0 } else { batch as u64 })
        .collect();
    Ok(ExactRows {
        count,
        row_bytes,
        state: Mutex::new(ExactState {
            rows: Some(batch),
            held,
            list: Vec::new(),
        }),
    })
}

/// Launches bucket `b` (exact-size capable as `e`) with its row count
/// bound to `rows` and `bindings` bound, each rows argument's range
/// holding `rows` rows. Checked before anything changes: no binding of
/// the row count, every rows argument bound to enough rows.
fn launch_rows(
    b: &Bucket,
    e: &ExactRows,
    stream: &Stream,
    rows: u32,
    bindings: &[Binding],
) -> Result<()> {
    let exec = b.graph()?;
    let mut st = lock(&e.state);
    check_rows(e.count, &e.row_bytes, &st.held, rows, bindings)?;
    let ExactState {
        rows: bound,
        held,
        list,
    } = &mut *st;
    list.clear();
    list.extend_from_slice(bindings);
    if *bound != Some(rows) {
        list.push(Binding {
            index: e.count,
            ptr: b.table + 4 * rows as u64,
            bytes: 4,
        });
    }
    let need = |i: usize, d: &ArgDecl| match e.row_bytes.get(i) {
        Some(&rb) if rb != 0 => rb * rows as usize,
        _ => d.bytes,
    };
    let r = exec.launch_with_for(stream, list, Some(&need));
    // A failure after the bindings took effect leaves them unknown: the
    // next replay binds the count again (see also `held_after`).
    *bound = r.is_ok().then_some(rows);
    held_after(&e.row_bytes, held, rows, bindings, r.is_ok());
    r
}

/// Checks the bindings of an exact-size capable bucket's launch of `rows`
/// rows before anything changes: none binds the row count (argument
/// `count`), and every rows argument (`row_bytes[i]` not 0) either is bound
/// here or holds at least `rows` rows already (`held[i]`).
fn check_rows(
    count: usize,
    row_bytes: &[usize],
    held: &[u64],
    rows: u32,
    bindings: &[Binding],
) -> Result<()> {
    for (k, x) in bindings.iter().enumerate() {
        ensure_arg!(
            x.index != count,
            "binding {k}: argument {} is the runner's row count, which the replay binds",
            x.index
        );
    }
    for (i, &rb) in row_bytes.iter().enumerate() {
        if rb != 0 && held[i] < rows as u64 && !bindings.iter().any(|x| x.index == i) {
            return Err(Error::invalid_argument(format!(
                "argument {i} (rows) is bound to a range of {} rows (an exact-size replay's) and \
                 this replay runs {rows}: bind it again",
                held[i]
            )));
        }
    }
    Ok(())
}

/// Updates `held` (the rows each rows argument's binding holds) after a
/// launch of `rows` rows with `bindings`: a range of known bytes holds
/// bytes / row bytes rows, one of 0 bytes (checked for `rows` rows) holds
/// `rows`. After a failed launch (`ok` false) the bindings may or may not
/// have taken effect: each rebound argument counts the fewer rows of the
/// two.
fn held_after(row_bytes: &[usize], held: &mut [u64], rows: u32, bindings: &[Binding], ok: bool) {
    for x in bindings {
        if let Some(&rb) = row_bytes.get(x.index).filter(|&&rb| rb != 0) {
            let now = if x.bytes == 0 {
                rows as u64
            } else {
                (x.bytes / rb) as u64
            };
            held[x.index] = if ok { now } else { now.min(held[x.index]) };
        }
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
    fn exact_replays_check_the_rows_each_binding_holds() {
        // Arguments: 0 rows of 16 bytes, 1 not rows, 2 rows of 40 bytes, 3 the count.
        let row_bytes = [16, 0, 40, 0];
        let mut held = [8u64, 0, 8, 0];
        let b = |index, bytes| Binding {
            index,
            ptr: 0x1000,
            bytes,
        };
        check_rows(3, &row_bytes, &held, 8, &[]).unwrap();
        check_rows(3, &row_bytes, &held, 3, &[b(0, 48)]).unwrap();
        let e = check_rows(3, &row_bytes, &held, 3, &[b(3, 4)]).unwrap_err();
        assert!(e.message().contains("row count"), "{}", e.message());
        // An exact-size replay of 3 rows binds both rows arguments to 3 rows.
        held_after(
            &row_bytes,
            &mut held,
            3,
            &[b(0, 48), b(2, 0), b(1, 64)],
            true,
        );
        assert_eq!(held, [3, 0, 3, 0]);
        // Now 8 rows (a padded replay) need both bound again; 3 or fewer do not.
        let e = check_rows(3, &row_bytes, &held, 8, &[b(0, 128)]).unwrap_err();
        assert!(
            e.message().contains("argument 2") && e.message().contains("bind it again"),
            "{}",
            e.message()
        );
        check_rows(3, &row_bytes, &held, 8, &[b(0, 128), b(2, 320)]).unwrap();
        check_rows(3, &row_bytes, &held, 2, &[]).unwrap();
        // A launch that failed: a rebound argument holds the fewer rows.
        held_after(&row_bytes, &mut held, 8, &[b(0, 128)], false);
        assert_eq!(held[0], 3);
        held_after(&row_bytes, &mut held, 8, &[b(0, 128)], true);
        assert_eq!(held[0], 8);
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
