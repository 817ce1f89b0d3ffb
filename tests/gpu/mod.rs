//! GPU tests: each is `#[ignore = "needs a CUDA GPU"]` and runs on the GPU
//! machine through scripts/gpu-check (`--include-ignored`).

mod api_gaps;
mod args;
mod cache;
mod conformance;
mod control;
mod diagnostics;
mod engine;
mod faults;
mod foundation;
mod fusion;
mod gemm;
mod graphs;
mod kernels;
mod leaks;
mod locking;
mod multi;
mod pdl;
mod promises;
mod reliability;
mod runner;
mod stress;
mod train;
mod vendor;

use graphcore_core::{Context, Pool, PoolOptions, Stream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A context on device 0.
pub(crate) fn ctx() -> Context {
    Context::new(0).expect("a CUDA device")
}

/// Pinned host staging for reading and writing device memory in tests.
pub(crate) struct Host {
    ctx: Context,
    ptr: *mut f32,
    len: usize,
}

impl Host {
    pub(crate) fn new(ctx: &Context, len: usize) -> Host {
        let ptr = ctx.host_alloc(len * 4).unwrap() as *mut f32;
        Host {
            ctx: ctx.clone(),
            ptr,
            len,
        }
    }
    pub(crate) fn addr(&self) -> u64 {
        self.ptr as u64
    }
    pub(crate) fn as_slice(&self) -> &[f32] {
        // SAFETY: len floats of pinned memory, owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub(crate) fn as_mut_slice(&mut self) -> &mut [f32] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.ctx.host_free(self.ptr as _).unwrap();
    }
}

/// Copies `values` to device address `dst` and waits.
pub(crate) fn upload(s: &Stream, dst: u64, values: &[f32]) {
    let mut h = Host::new(s.context(), values.len());
    h.as_mut_slice().copy_from_slice(values);
    // SAFETY: the ranges are live allocations of this test of at least `bytes`
    // bytes, kept until the stream is synchronized.
    unsafe { graphcore_core::copy_async(s, dst, h.addr(), values.len() * 4) }.unwrap();
    s.synchronize().unwrap();
}

/// Reads `n` floats from device address `src` (after the stream's work).
pub(crate) fn download(s: &Stream, src: u64, n: usize) -> Vec<f32> {
    let h = Host::new(s.context(), n);
    // SAFETY: the ranges are live allocations of this test of at least `bytes`
    // bytes, kept until the stream is synchronized.
    unsafe { graphcore_core::copy_async(s, h.addr(), src, n * 4) }.unwrap();
    s.synchronize().unwrap();
    h.as_slice().to_vec()
}

/// A pool with default options.
pub(crate) fn pool(ctx: &Context) -> Pool {
    Pool::new(ctx, PoolOptions::default()).unwrap()
}

/// What most GPU tests start from: a context on device 0, a stream and a
/// pool with default options on it.
pub(crate) fn setup() -> (Context, Stream, Pool) {
    let c = ctx();
    let s = Stream::new(&c).unwrap();
    let p = pool(&c);
    (c, s, p)
}

/// A deterministic pseudo-random sequence in [-1, 1) (splitmix64).
pub(crate) fn random(seed: u64, n: usize) -> Vec<f32> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A pseudo-random draw (xorshift64 from `seed | 1`): each call of the
/// closure returns an index below its argument.
pub(crate) fn below(seed: u64) -> impl FnMut(usize) -> usize {
    let mut r = seed | 1;
    move |m| {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        (r % m as u64) as usize
    }
}

/// A fresh seed per call (tests draw new random inputs each run).
pub(crate) fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Makes a segmentation fault (or a bus error, or an arithmetic fault) print the crashing thread's backtrace before
/// the process dies, so a crash in a race names where it happened. (Taking
/// a backtrace is not async-signal-safe; the process is dying anyway.)
fn report_crashes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn on_fault(sig: libc::c_int) {
        use std::io::Write;
        let bt = std::backtrace::Backtrace::force_capture();
        // Straight to stderr: eprintln! would go to the test harness's
        // capture, which dies with the process unprinted.
        let _ = writeln!(
            std::io::stderr(),
            "signal {sig} in thread {:?}:\n{bt}",
            std::thread::current().name()
        );
        // SAFETY: restores the default action and raises the signal again,
        // so the process ends as it would have.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
    ONCE.call_once(|| {
        for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE] {
            // SAFETY: installs a handler for a fatal signal; the handler
            // ends the process (see on_fault).
            unsafe { libc::signal(sig, on_fault as *const () as libc::sighandler_t) };
        }
    });
}

/// How long [`race`] waits for its threads before calling it a deadlock.
pub(crate) const WATCHDOG: Duration = Duration::from_secs(20);

/// Runs each of `work` on a thread of its own, all at once, and fails if
/// one panics or if they are not all done within [`WATCHDOG`] (a deadlock:
/// the stuck threads are left behind, and the test fails instead of hanging).
pub(crate) fn race(what: &str, work: Vec<Box<dyn FnOnce() + Send>>) {
    report_crashes();
    let (tx, rx) = mpsc::channel();
    let n = work.len();
    for (i, w) in work.into_iter().enumerate() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(w));
            let _ = tx.send((i, r.err().map(|e| panic_message(&*e))));
        });
    }
    // A thread that fails does not end the race at once: the others still
    // use the test's objects, so they are waited for (up to the deadline)
    // before the failure is reported, and a failed test leaves no thread
    // working into the next one.
    let deadline = Instant::now() + WATCHDOG;
    let mut failed = None;
    for _ in 0..n {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((_, None)) => {}
            Ok((i, Some(msg))) => {
                failed.get_or_insert(format!("{what}: thread {i} failed: {msg}"));
            }
            Err(_) => panic!(
                "{what}: the threads were not done after {WATCHDOG:?}: a deadlock{}",
                failed.map(|f| format!(" (after {f})")).unwrap_or_default()
            ),
        }
    }
    if let Some(f) = failed {
        panic!("{f}");
    }
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| e.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}
