//! Where graphcore's time per call goes, for the overhead figures of issue
//! 15: with the cargo feature `call-timing`, each [`Span`] adds its cycles
//! (the CPU's time-stamp counter) and its count to a process-wide table,
//! and the table is written when the process exits, to the file named by
//! `GC_CALL_TIMING` (JSON) or else to stderr. Without the feature a
//! [`Timer`] is an empty value and every span compiles to nothing; the
//! shipped library is built without it.
//!
//! Spans nest: `graph.add_kernel` contains `graph_calls.lock`, which
//! contains `driver.add_kernel`. The difference between a span and the spans
//! inside it is graphcore's own time there.

/// A timed stretch of a call. Its name (`Span::name`, built with the
/// feature) is its key in the JSON the table is written as.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Span {
    /// `cuGraphAddKernelNode` itself.
    DriverAddKernel,
    /// Taking the process-wide graph-call lock (`GRAPH_CALLS` in
    /// `driver::graph`) and the driver call under it.
    GraphCallsLock,
    /// `Graph::add_kernel`, all of it.
    GraphAddKernel,
    /// `cuGraphCreate`.
    DriverGraphCreate,
    /// `cuLaunchKernel`.
    DriverLaunchKernel,
    /// `Function::launch`, all of it.
    FunctionLaunch,
    /// `cuStreamBeginCapture`.
    DriverBeginCapture,
    /// `cuStreamEndCapture`.
    DriverEndCapture,
    /// `cuGraphInstantiateWithParams`.
    DriverInstantiate,
    /// `cuGraphExecUpdate`.
    DriverUpdate,
    /// `cuGraphLaunch`.
    DriverGraphLaunch,
    /// Making the context current where needed (`cuCtxGetCurrent`, and
    /// `cuCtxSetCurrent` when another one is).
    ContextBind,
}

impl Span {
    /// Every span, in table order.
    #[cfg(feature = "call-timing")]
    const ALL: [Span; 12] = [
        Span::DriverAddKernel,
        Span::GraphCallsLock,
        Span::GraphAddKernel,
        Span::DriverGraphCreate,
        Span::DriverLaunchKernel,
        Span::FunctionLaunch,
        Span::DriverBeginCapture,
        Span::DriverEndCapture,
        Span::DriverInstantiate,
        Span::DriverUpdate,
        Span::DriverGraphLaunch,
        Span::ContextBind,
    ];

    /// The span's key in the JSON table.
    #[cfg(feature = "call-timing")]
    fn name(self) -> &'static str {
        match self {
            Span::DriverAddKernel => "driver.add_kernel",
            Span::GraphCallsLock => "graph_calls.lock",
            Span::GraphAddKernel => "graph.add_kernel",
            Span::DriverGraphCreate => "driver.graph_create",
            Span::DriverLaunchKernel => "driver.launch_kernel",
            Span::FunctionLaunch => "function.launch",
            Span::DriverBeginCapture => "driver.begin_capture",
            Span::DriverEndCapture => "driver.end_capture",
            Span::DriverInstantiate => "driver.instantiate",
            Span::DriverUpdate => "driver.update",
            Span::DriverGraphLaunch => "driver.graph_launch",
            Span::ContextBind => "context.bind",
        }
    }
}

/// A span being timed: it adds its time to the table when dropped.
#[must_use = "a Timer times the scope it lives in"]
pub(crate) struct Timer {
    #[cfg(feature = "call-timing")]
    span: Span,
    #[cfg(feature = "call-timing")]
    start: u64,
}

/// Starts timing `span` (nothing without the `call-timing` feature).
#[inline(always)]
pub(crate) fn start(span: Span) -> Timer {
    #[cfg(feature = "call-timing")]
    {
        Timer {
            span,
            start: table::now(),
        }
    }
    #[cfg(not(feature = "call-timing"))]
    {
        let _ = span;
        Timer {}
    }
}

/// Times `f` as `span`.
#[inline(always)]
pub(crate) fn timed<T>(span: Span, f: impl FnOnce() -> T) -> T {
    let _t = start(span);
    f()
}

#[cfg(feature = "call-timing")]
impl Drop for Timer {
    #[inline(always)]
    fn drop(&mut self) {
        table::add(self.span, table::now() - self.start);
    }
}

#[cfg(feature = "call-timing")]
mod table {
    use super::Span;
    use std::fmt::Write as _;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::time::Instant;

    const N: usize = Span::ALL.len();
    static CYCLES: [AtomicU64; N] = [const { AtomicU64::new(0) }; N];
    static CALLS: [AtomicU64; N] = [const { AtomicU64::new(0) }; N];

    /// The time-stamp counter (x86-64), or nanoseconds elsewhere.
    #[inline(always)]
    pub(super) fn now() -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: RDTSC has no preconditions on x86-64.
            unsafe { core::arch::x86_64::_rdtsc() }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
            ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
        }
    }

    #[inline(always)]
    pub(super) fn add(span: Span, cycles: u64) {
        let i = span as usize;
        CYCLES[i].fetch_add(cycles, Relaxed);
        if CALLS[i].fetch_add(1, Relaxed) == 0 {
            register_exit_report();
        }
    }

    /// Counter ticks per nanosecond, measured over 20 ms.
    fn ticks_per_ns() -> f64 {
        let (t0, c0) = (Instant::now(), now());
        std::thread::sleep(std::time::Duration::from_millis(20));
        (now() - c0) as f64 / t0.elapsed().as_nanos() as f64
    }

    fn report() -> String {
        let per_ns = ticks_per_ns();
        let mut s = format!("{{\n  \"ticks_per_ns\": {per_ns:.4},\n  \"spans\": {{");
        let mut first = true;
        for span in Span::ALL {
            let calls = CALLS[span as usize].load(Relaxed);
            if calls == 0 {
                continue;
            }
            let ns = CYCLES[span as usize].load(Relaxed) as f64 / per_ns / calls as f64;
            let sep = if first { "" } else { "," };
            first = false;
            let _ = write!(
                s,
                "{sep}\n    \"{}\": {{\"calls\": {calls}, \"ns_per_call\": {ns:.1}}}",
                span.name()
            );
        }
        s.push_str("\n  }\n}\n");
        s
    }

    extern "C" fn at_exit() {
        let text = report();
        match std::env::var_os("GC_CALL_TIMING") {
            Some(path) => {
                if let Err(e) = std::fs::write(&path, text) {
                    eprintln!("graphcore call-timing: cannot write {path:?}: {e}");
                }
            }
            None => eprint!("graphcore call-timing:\n{text}"),
        }
    }

    extern "C" {
        fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
    }

    fn register_exit_report() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: `at_exit` is a plain function that lives as long as the
        // process (this library is never unloaded while the feature is
        // on: the table's users are benchmark processes).
        ONCE.call_once(|| unsafe {
            atexit(at_exit);
        });
    }
}
