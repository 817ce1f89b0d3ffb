//! Bucketed graphs: one graph per batch size, all sharing one pool, as
//! PyTorch serves a model with one CUDA graph per batch size. A replay
//! picks the smallest bucket that holds the rows asked for; the caller pads
//! its input to that size.

use crate::args::{Out, Versioned, VersionedOut};
use crate::context::{context, gc_context};
use crate::exec::gc_binding;
use crate::handle::Registry;
use crate::pool::{gc_pool, gc_pool_statistics, pool_statistics, POOLS};
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, STREAMS};
use graphcore_core::{Error, Fallback, Runner};
use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// A family of graphs keyed by batch size, sharing one pool.
///
/// Ownership: gc_runner_create returns a handle the caller destroys with
/// gc_runner_destroy, which destroys the runner's graphs (their pool memory
/// returns to the pool), its stream, and the row-count tables of
/// gc_runner_capture_exact (blocks of its pool). The runner holds its pool: a pool
/// passed in stays the caller's handle and may be destroyed before the
/// runner.
///
/// Thread safety: gc_runner_replay, gc_runner_replay_with and
/// gc_runner_stats may run from several threads at once on one runner
/// (a plain replay must not race with a replay with bindings of the same
/// bucket: as for gc_exec_launch_with; gc_runner_replay_exact is a replay
/// with bindings here, and replays of one bucket of gc_runner_capture_exact
/// bind its row count one at a time). gc_runner_capture and
/// gc_runner_capture_exact exclude them: they wait until it returns. The buckets share the runner's pool, so the GPU
/// work of two replays must not overlap: replay on one stream, or order
/// the streams (graphcore does not detect it). gc_runner_destroy must not
/// race with other calls on the handle.
pub struct gc_runner;

/// Most buckets one runner holds.
pub const GC_RUNNER_MAX_BUCKETS: usize = 16;

/// Records one bucket's work on `stream` for `batch` rows (graphcore's
/// gc_op_* calls, gc_launch, your own kernels on gc_stream_raw(stream)...).
/// Called for the warm-up runs, then once under capture, always on the
/// thread that called gc_runner_capture, before that call returns. The
/// stream is the runner's (do not destroy it; synchronizing it under
/// capture breaks the capture); while it
/// captures, gc_pool_alloc on the runner's pool from this thread allocates
/// for the capture. It must not call gc_runner_* on the same runner (that
/// would deadlock). Return GC_SUCCESS, or the failing call's status to
/// abort gc_runner_capture.
pub type gc_record_fn = Option<
    unsafe extern "C" fn(stream: *mut gc_stream, batch: u32, user_data: *mut c_void) -> gc_status,
>;

/// Records one bucket's work for an exact-size capture
/// (gc_runner_capture_exact): as gc_record_fn, and `rows` is the device
/// address of a uint32_t row count holding `batch` (in the warm-ups and in
/// the capture) that the ops recorded read when they run (gc_op_linear_rows,
/// gc_op_mlp_rows, or your own kernels given it): gc_runner_replay_exact
/// binds it to the rows asked for. Declare the ranges whose rows the ops
/// read or write (the input, the output) with gc_capture_arg and
/// GC_ARG_ROWS, sized for `batch` rows.
pub type gc_record_rows_fn = Option<
    unsafe extern "C" fn(
        stream: *mut gc_stream,
        batch: u32,
        rows: *const u32,
        user_data: *mut c_void,
    ) -> gc_status,
>;

pub(crate) struct RunnerEntry {
    runner: RwLock<Runner>,
    /// The handle of the runner's side stream, handed to record functions.
    stream: u64,
    /// The record function and user data of the last gc_runner_capture or
    /// gc_runner_capture_exact, which eager replays call (the pointer as an
    /// address).
    record: Mutex<Option<(RecordKind, usize)>>,
}

type RecordFn =
    unsafe extern "C" fn(stream: *mut gc_stream, batch: u32, user_data: *mut c_void) -> gc_status;

type RecordRowsFn = unsafe extern "C" fn(
    stream: *mut gc_stream,
    batch: u32,
    rows: *const u32,
    user_data: *mut c_void,
) -> gc_status;

/// A record function of either kind.
#[derive(Clone, Copy)]
enum RecordKind {
    Plain(RecordFn),
    Rows(RecordRowsFn),
}

impl RecordKind {
    /// Calls it (`rows`: the row count's address, for a rows record).
    ///
    /// # Safety
    /// The function and `user` are the caller's of a capture, who vouched
    /// for them.
    unsafe fn call(self, stream: *mut gc_stream, batch: u32, rows: u64, user: usize) -> gc_status {
        // SAFETY: this function's contract.
        unsafe {
            match self {
                RecordKind::Plain(f) => f(stream, batch, user as *mut c_void),
                RecordKind::Rows(f) => f(stream, batch, rows as *const u32, user as *mut c_void),
            }
        }
    }
}

/// Fallback flag: run the record function eagerly on the caller's stream
/// instead of replaying a graph (gc_runner_set_fallback, gc_cache_options,
/// gc_cache_set_fallback). The environment variable GRAPHCORE_DISABLE=1
/// (read once per process) turns it on for every runner and cache.
pub const GC_FALLBACK_EAGER: u32 = 1;

/// Fallback flag: hard fail. Where the object would run its record
/// function eagerly (GC_FALLBACK_EAGER or GRAPHCORE_DISABLE=1), the call
/// fails with GC_ERROR_INVALID_STATE instead and runs nothing.
pub const GC_FALLBACK_HARD_FAIL: u32 = 2;

/// The fallback flags `flags` (named `arg` in errors).
pub(crate) fn fallback_flags(flags: u32, arg: &str) -> graphcore_core::Result<Fallback> {
    let known = GC_FALLBACK_EAGER | GC_FALLBACK_HARD_FAIL;
    if flags & !known != 0 {
        return Err(Error::invalid_argument(format!(
            "`{arg}` has unknown bits 0x{:x} (known: GC_FALLBACK_EAGER, GC_FALLBACK_HARD_FAIL)",
            flags & !known
        )));
    }
    Ok(Fallback {
        eager: flags & GC_FALLBACK_EAGER != 0,
        hard_fail: flags & GC_FALLBACK_HARD_FAIL != 0,
    })
}

impl Drop for RunnerEntry {
    fn drop(&mut self) {
        let _ = STREAMS.remove(self.stream, "stream");
    }
}

pub(crate) static RUNNERS: Registry<Arc<RunnerEntry>> = Registry::new(8, "gc_runner");

/// One bucket in gc_runner_statistics.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct gc_runner_bucket {
    /// Rows the bucket's graph was captured for.
    pub batch: u32,
    /// Nodes in its graph.
    pub node_count: u32,
    /// Microseconds from the start of its capture to its uploaded exec.
    pub capture_us: f64,
    /// Pool bytes its capture allocated and still held when it ended.
    pub pool_bytes: u64,
}

/// A runner's statistics: its buckets, smallest first, and its pool's.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct gc_runner_statistics {
    /// Set to sizeof(gc_runner_statistics) before calling gc_runner_stats.
    pub struct_size: usize,
    /// Buckets in use in `buckets`.
    pub bucket_count: u32,
    /// The buckets.
    pub buckets: [gc_runner_bucket; GC_RUNNER_MAX_BUCKETS],
    /// The shared pool's statistics.
    pub pool: gc_pool_statistics,
    /// Eager runs made instead of replays (fallback; see
    /// gc_runner_set_fallback). Added after the struct's first version: a
    /// caller built with an older header (a smaller struct_size) gets the
    /// fields before it only.
    pub eager_runs: u64,
    /// Bit i set: `buckets[i]`'s graph takes exact-size replays
    /// (gc_runner_replay_exact). Added after eager_runs, as it was.
    pub exact_buckets: u32,
}

impl Versioned for gc_runner_statistics {
    const V1_SIZE: usize = std::mem::offset_of!(gc_runner_statistics, eager_runs);
}

/// Creates a runner whose graphs share `pool` (NULL: a new pool of its own,
/// no initial bytes, no cap), with a stream of its own for warm-ups and
/// captures.
/// Errors: common, and GC_ERROR_NOT_SUPPORTED (a new pool needs virtual memory
/// management), GC_ERROR_OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn gc_runner_create(
    ctx: *mut gc_context,
    pool: *mut gc_pool,
    runner: *mut *mut gc_runner,
) -> gc_status {
    boundary("gc_runner_create", || {
        let out = Out::new(runner, "runner")?;
        let c = context(ctx)?;
        let p = if pool.is_null() {
            None
        } else {
            Some(POOLS.get(pool as u64, "pool")?)
        };
        let r = Runner::new(&c, p.as_ref())?;
        let stream = STREAMS.insert(r.stream().clone())?;
        let entry = Arc::new(RunnerEntry {
            runner: RwLock::new(r),
            stream,
            record: Mutex::new(None),
        });
        out.set(RUNNERS.insert(entry)? as *mut gc_runner);
        Ok(())
    })
}

/// The part the two captures share: checks the runner, `record` (not
/// NULL), `buckets` (n sizes) and the bucket limit, then runs `capture`
/// with the runner (locked for writing), the sizes, the runner's side
/// stream and the record function, and keeps the record function it
/// returns, with `user_data`, for eager replays.
fn capture_in<F>(
    runner: *mut gc_runner,
    buckets: *const u32,
    n: usize,
    record: Option<F>,
    user_data: *mut c_void,
    capture: impl FnOnce(&mut Runner, &[u32], *mut gc_stream, F) -> Result<RecordKind, Error>,
) -> Result<(), Error> {
    let entry = RUNNERS.get(runner as u64, "runner")?;
    let record = record.ok_or_else(|| Error::invalid_argument("`record` is NULL"))?;
    if buckets.is_null() || n == 0 {
        return Err(Error::invalid_argument("`buckets` is NULL or `n` is 0"));
    }
    // SAFETY: the caller passes `n` readable sizes.
    let sizes = unsafe { std::slice::from_raw_parts(buckets, n) };
    let mut r = entry.runner.write().unwrap_or_else(|e| e.into_inner());
    if r.buckets().len() + n > GC_RUNNER_MAX_BUCKETS {
        return Err(Error::invalid_argument(format!(
            "a runner holds at most {GC_RUNNER_MAX_BUCKETS} buckets"
        )));
    }
    let stream = entry.stream as *mut gc_stream;
    let kind = capture(&mut r, sizes, stream, record)?;
    *entry.record.lock().unwrap_or_else(PoisonError::into_inner) = Some((kind, user_data as usize));
    Ok(())
}

/// Captures one graph per bucket size in `buckets` (`n` of them, at most
/// GC_RUNNER_MAX_BUCKETS in all): `record` runs `warmup_runs` times per
/// bucket eagerly on the runner's side stream, then once per bucket under
/// capture, largest first, into the shared pool; each graph is instantiated
/// and uploaded. `record` runs on the calling thread. gc_runner_capture
/// waits for the warm-up work before the first capture and for each upload,
/// so all its work is done when it returns. If `record` fails or breaks a
/// capture, this call fails with that error, adds no bucket, and leaves no
/// pool growth behind: the blocks the failed capture allocated are freed
/// (and if the pool grew, it is trimmed as by gc_pool_trim). Blocks `record`
/// allocates in warm-up runs (eagerly) or keeps in a successful capture are
/// the caller's to free.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (n is 0, a size is 0 or given
/// twice or already a bucket, or more than GC_RUNNER_MAX_BUCKETS buckets in
/// all), GC_ERROR_CAPTURE (a capture broke), GC_ERROR_OUT_OF_MEMORY, or any
/// status `record` returned (its message kept in gc_last_error()).
#[no_mangle]
pub extern "C" fn gc_runner_capture(
    runner: *mut gc_runner,
    buckets: *const u32,
    n: usize,
    record: gc_record_fn,
    user_data: *mut c_void,
    warmup_runs: u32,
) -> gc_status {
    boundary("gc_runner_capture", || {
        capture_in(
            runner,
            buckets,
            n,
            record,
            user_data,
            |r, sizes, stream, record| {
                let mut call = |_: &graphcore_core::Stream, batch: u32| {
                    // SAFETY: the caller vouches for `record` and `user_data`.
                    unsafe { record(stream, batch, user_data) }.into_result("the record function")
                };
                r.capture(sizes, &mut call, warmup_runs)?;
                Ok(RecordKind::Plain(record))
            },
        )
    })
}

/// gc_runner_capture for exact-size replays (gc_runner_replay_exact):
/// `record` also gets `rows`, the device address of a uint32_t row count
/// holding the bucket's rows; the ops it records read their row count there
/// (gc_op_linear_rows, gc_op_mlp_rows), and it declares the ranges whose
/// rows they read or write with gc_capture_arg and GC_ARG_ROWS (sized for
/// the bucket's rows). The runner declares the row count as the last
/// argument of each capture, after the record function's. A bucket's graph
/// takes exact-size replays when some kernel reads the row count and every
/// use of a GC_ARG_ROWS range is a kernel (not in a child graph) that reads
/// it too, and each such range's bytes are a multiple of the bucket's rows;
/// otherwise the bucket is added all the same (for gc_runner_replay and
/// gc_runner_replay_with) and gc_runner_replay_exact of it is
/// GC_ERROR_INVALID_STATE, naming the use that stops it
/// (gc_runner_statistics.exact_buckets tells which buckets take them). The
/// row counts are a table of uint32_t (0 to the largest bucket of the call)
/// that the runner allocates from its pool before the warm-ups and frees
/// when it is destroyed. Otherwise as gc_runner_capture (warm-ups, order,
/// rollback, record's rules).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (n is 0, a size is 0 or
/// given twice or already a bucket, or more than GC_RUNNER_MAX_BUCKETS
/// buckets in all), GC_ERROR_CAPTURE (a capture broke),
/// GC_ERROR_OUT_OF_MEMORY (also: the row-count table), or any status
/// `record` returned (its message kept in gc_last_error()).
#[no_mangle]
pub extern "C" fn gc_runner_capture_exact(
    runner: *mut gc_runner,
    buckets: *const u32,
    n: usize,
    record: gc_record_rows_fn,
    user_data: *mut c_void,
    warmup_runs: u32,
) -> gc_status {
    boundary("gc_runner_capture_exact", || {
        capture_in(
            runner,
            buckets,
            n,
            record,
            user_data,
            |r, sizes, stream, record| {
                let mut call = |_: &graphcore_core::Stream, batch: u32, rows: u64| {
                    // SAFETY: the caller vouches for `record` and `user_data`.
                    unsafe { record(stream, batch, rows as *const u32, user_data) }
                        .into_result("the record function")
                };
                r.capture_exact(sizes, &mut call, warmup_runs)?;
                Ok(RecordKind::Rows(record))
            },
        )
    })
}

/// Sets the runner's fallback flags (GC_FALLBACK_EAGER,
/// GC_FALLBACK_HARD_FAIL, or 0) for the calls after this one. While the
/// runner runs eagerly (the flag, or GRAPHCORE_DISABLE=1): gc_runner_capture
/// records nothing (the buckets are added without graphs; no warm-up
/// runs), and gc_runner_replay, gc_runner_replay_with and
/// gc_runner_replay_exact run the record function of the last
/// gc_runner_capture (or gc_runner_capture_exact) once, on the stream given, for
/// the bucket they choose (the batch a graph would have been captured for),
/// from the calling thread, instead of replaying; bindings are not applied
/// (the record function works on the buffers it names itself: with
/// user_data, and gc_capture_arg only while gc_stream_is_capturing says so,
/// it gets the same results eagerly as replayed). Never silent: each eager
/// run counts in gc_runner_statistics.eager_runs, and the process's first
/// prints one line on stderr. With GC_FALLBACK_HARD_FAIL, each of these
/// calls fails with GC_ERROR_INVALID_STATE instead and nothing runs. A
/// bucket added while the runner ran eagerly has no graph: replaying it
/// after the flag is cleared is GC_ERROR_INVALID_STATE. The user_data of
/// the last capture must stay valid while eager replays may call it.
/// Errors: GC_ERROR_INVALID_ARGUMENT (runner is NULL, or an unknown flag),
/// GC_ERROR_INVALID_HANDLE (runner destroyed).
#[no_mangle]
pub extern "C" fn gc_runner_set_fallback(runner: *mut gc_runner, flags: u32) -> gc_status {
    boundary("gc_runner_set_fallback", || {
        let f = fallback_flags(flags, "flags")?;
        let entry = RUNNERS.get(runner as u64, "runner")?;
        entry
            .runner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .set_fallback(f);
        Ok(())
    })
}

/// An eager replay: the last capture's record function on `stream` (the
/// caller's handle) for the bucket `rows` chooses.
fn replay_eagerly(
    entry: &RunnerEntry,
    rows: u32,
    stream: *mut gc_stream,
    exact: bool,
) -> graphcore_core::Result<u32> {
    let s = STREAMS.get(stream as u64, "stream")?;
    let recorded = *entry.record.lock().unwrap_or_else(PoisonError::into_inner);
    let r = entry.runner.read().unwrap_or_else(PoisonError::into_inner);
    let Some((record, user)) = recorded else {
        // No capture yet: the runner has no bucket either.
        return r.run_eagerly_rows(rows, &s, exact, &mut |_, _, _| Ok(()));
    };
    let mut call = |_: &graphcore_core::Stream, batch: u32, count: u64| {
        // SAFETY: the caller of the capture vouched for `record` and its
        // user data, which must stay valid while eager replays run.
        unsafe { record.call(stream, batch, count, user) }.into_result("the record function")
    };
    r.run_eagerly_rows(rows, &s, exact, &mut call)
}

/// True when the runner runs eagerly (its flag, or GRAPHCORE_DISABLE=1).
fn eager(entry: &RunnerEntry) -> bool {
    entry
        .runner
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .fallback()
        .is_eager()
}

/// The part the three replays share: the eager replay while the runner
/// runs eagerly (`exact` says which kind), else `graph` with the runner and
/// the stream.
fn replay_in(
    runner: *mut gc_runner,
    rows: u32,
    stream: *mut gc_stream,
    exact: bool,
    graph: impl FnOnce(&Runner, &graphcore_core::Stream) -> graphcore_core::Result<u32>,
) -> graphcore_core::Result<u32> {
    RUNNERS.with(runner as u64, "runner", |entry| {
        if eager(entry) {
            return replay_eagerly(entry, rows, stream, exact);
        }
        STREAMS.with(stream as u64, "stream", |s| {
            graph(&entry.runner.read().unwrap_or_else(|e| e.into_inner()), s)
        })
    })
}

/// gc_runner_replay_with's body, or gc_runner_replay_exact's when `exact`.
#[allow(clippy::too_many_arguments)]
fn replay_bound(
    func: &'static str,
    runner: *mut gc_runner,
    rows: u32,
    stream: *mut gc_stream,
    bindings: *const gc_binding,
    n: usize,
    bucket: *mut u32,
    exact: bool,
) -> gc_status {
    boundary(func, || {
        let out = Out::new(bucket, "bucket")?;
        let b = crate::exec::bindings(bindings, n)?;
        let batch = replay_in(runner, rows, stream, exact, |r, s| {
            if exact {
                r.replay_exact(rows, s, b)
            } else {
                r.replay_with(rows, s, b)
            }
        })?;
        out.set(batch);
        Ok(())
    })
}

/// Replays the smallest bucket of at least `rows` rows on `stream` and
/// writes its size to *bucket (the caller pads its input to it). More rows
/// than the largest bucket is GC_ERROR_NO_BUCKET: run that batch eagerly.
/// A bucket of gc_runner_capture_exact replays its whole rows: its row
/// count is bound back to them, and a GC_ARG_ROWS argument that an
/// exact-size replay bound to fewer rows is refused (bind it again with
/// gc_runner_replay_with).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows is 0, or a
/// GC_ARG_ROWS argument bound to fewer rows than the bucket's; nothing is
/// launched),
/// GC_ERROR_NO_BUCKET (rows over the largest bucket, or no bucket captured
/// yet), GC_ERROR_CAPTURE (as gc_exec_launch).
#[no_mangle]
pub extern "C" fn gc_runner_replay(
    runner: *mut gc_runner,
    rows: u32,
    stream: *mut gc_stream,
    bucket: *mut u32,
) -> gc_status {
    boundary("gc_runner_replay", || {
        let out = Out::new(bucket, "bucket")?;
        let b = replay_in(runner, rows, stream, false, |r, s| r.replay(rows, s))?;
        out.set(b);
        Ok(())
    })
}

/// gc_runner_replay with bindings: binds the arguments in the chosen
/// bucket's exec, as gc_exec_launch_with does, then replays it and writes
/// its size to *bucket. Each bucket's capture declares its arguments with
/// gc_capture_arg on the stream the record function gets, in the same
/// order, so an index names the same argument (the input, the output...)
/// in every bucket. Bindings persist per bucket: the memory bound must
/// stay valid, as for gc_exec_launch_with, until that bucket's argument is
/// bound elsewhere or the runner is destroyed, since a plain replay that
/// chooses the bucket uses it. A bucket of gc_runner_capture_exact replays
/// its whole rows here (its row count bound back to them; every GC_ARG_ROWS
/// argument must then be bound to the bucket's rows, here or before).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (bindings NULL while n is not
/// 0, rows is 0, or a bad binding as for gc_exec_launch_with, naming the
/// bucket; nothing is launched), GC_ERROR_NO_BUCKET (rows over the largest
/// bucket, or no bucket captured yet), GC_ERROR_CAPTURE (as gc_exec_launch).
#[no_mangle]
pub extern "C" fn gc_runner_replay_with(
    runner: *mut gc_runner,
    rows: u32,
    stream: *mut gc_stream,
    bindings: *const gc_binding,
    n: usize,
    bucket: *mut u32,
) -> gc_status {
    replay_bound(
        "gc_runner_replay_with",
        runner,
        rows,
        stream,
        bindings,
        n,
        bucket,
        false,
    )
}

/// Replays the smallest bucket of at least `rows` rows with its row count
/// bound to `rows` (an exact-size request: no padding), binding `bindings`
/// (n of them) as gc_runner_replay_with does, except that a GC_ARG_ROWS
/// argument's range needs only `rows` rows (its declared bytes / the
/// bucket's rows * rows: bytes that many or more, or 0 to have the memory
/// checked for that many), and writes the bucket's size to *bucket. The
/// graph reads and writes the first `rows` rows of those ranges only, so
/// input and output tensors of exactly `rows` rows are bound as they are:
/// nothing is copied, and outputs are exactly `rows` rows. A GC_ARG_ROWS
/// argument not bound here must be bound to at least `rows` rows already
/// (a binding persists, and so does its size: after an exact-size replay of
/// fewer rows, bind it again; gc_runner_replay and gc_runner_replay_with of
/// that bucket then need its whole rows bound too, and refuse otherwise).
/// The row count is the runner's to bind: a binding of it is refused. The
/// bucket must have been captured with gc_runner_capture_exact and take
/// exact-size replays (gc_runner_statistics.exact_buckets). While the
/// runner runs eagerly (gc_runner_set_fallback) the record function runs
/// with its row count holding `rows`, on its own buffers, bindings not
/// applied (as for gc_runner_replay_with).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (bindings NULL while n is
/// not 0, rows is 0, a binding of the row count, a GC_ARG_ROWS argument
/// bound to fewer than `rows` rows, or a bad binding as for
/// gc_exec_launch_with, naming the bucket; nothing is launched),
/// GC_ERROR_INVALID_STATE (the bucket takes no exact-size replay: captured
/// with gc_runner_capture, or a use of a GC_ARG_ROWS range that does not
/// read the row count, named in gc_last_error(); nothing is launched),
/// GC_ERROR_NO_BUCKET (rows over the largest bucket, or no bucket captured
/// yet), GC_ERROR_CAPTURE (as gc_exec_launch).
#[no_mangle]
pub extern "C" fn gc_runner_replay_exact(
    runner: *mut gc_runner,
    rows: u32,
    stream: *mut gc_stream,
    bindings: *const gc_binding,
    n: usize,
    bucket: *mut u32,
) -> gc_status {
    replay_bound(
        "gc_runner_replay_exact",
        runner,
        rows,
        stream,
        bindings,
        n,
        bucket,
        true,
    )
}

/// Fills *stats (set stats->struct_size = sizeof(gc_runner_statistics)):
/// per bucket its capture time, node count and pool bytes, and the pool's
/// totals.
/// Errors: GC_ERROR_INVALID_ARGUMENT (runner or stats is NULL, or a wrong
/// struct_size), GC_ERROR_INVALID_HANDLE (runner destroyed).
#[no_mangle]
pub extern "C" fn gc_runner_stats(
    runner: *mut gc_runner,
    stats: *mut gc_runner_statistics,
) -> gc_status {
    boundary("gc_runner_stats", || {
        let out = VersionedOut::new(stats, "stats")?;
        let entry = RUNNERS.get(runner as u64, "runner")?;
        let r = entry.runner.read().unwrap_or_else(|e| e.into_inner());
        let mut v = gc_runner_statistics {
            struct_size: std::mem::size_of::<gc_runner_statistics>(),
            bucket_count: r.buckets().len() as u32,
            pool: pool_statistics(r.pool()),
            eager_runs: r.eager_runs(),
            ..Default::default()
        };
        for (i, b) in r.buckets().iter().enumerate() {
            if b.is_exact() {
                v.exact_buckets |= 1 << i;
            }
        }
        for (d, b) in v.buckets.iter_mut().zip(r.buckets()) {
            *d = gc_runner_bucket {
                batch: b.batch,
                node_count: b.node_count as u32,
                capture_us: b.capture_us,
                pool_bytes: b.pool_bytes,
            };
        }
        out.set(&v);
        Ok(())
    })
}

/// Destroys the runner, its graphs (their pool memory returns to the
/// pool) and its stream. NULL is a no-op.
/// Errors: GC_ERROR_INVALID_HANDLE (runner already destroyed, or not a
/// runner).
#[no_mangle]
pub extern "C" fn gc_runner_destroy(runner: *mut gc_runner) -> gc_status {
    boundary("gc_runner_destroy", || {
        RUNNERS.remove(runner as u64, "runner")?;
        Ok(())
    })
}
