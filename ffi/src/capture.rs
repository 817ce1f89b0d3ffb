//! Stream capture: between gc_capture_begin and gc_capture_end, the work
//! enqueued on a stream is recorded into a graph instead of run. With a
//! pool, the capture's allocations come from that pool (see the Pool
//! section for who owns them and what a failed capture leaves).
//!
//! Thread safety: one capture at a time per stream. End a capture on the
//! thread that began it: CUDA requires it in the thread-local and global
//! modes, and in every mode the pool gives the capture the allocations of
//! the beginning thread only (other threads' gc_pool_alloc calls on the
//! pool stay eager). Different streams may capture concurrently on
//! different threads. While any capture is open in a context,
//! gc_context_synchronize and gc_pool_trim refuse to run (they would
//! invalidate it).

use crate::args::Out;
use crate::graph::{gc_graph, GRAPHS};
use crate::pool::{gc_pool, POOLS};
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream, STREAMS};
use graphcore_core::{CaptureMode, Error};
use std::ffi::{c_int, c_void};

/// How a capture treats potentially unsafe CUDA calls (cudaMalloc, a
/// synchronize...) made while it is open; CUDA's stream capture modes. Any
/// other value is GC_ERROR_INVALID_ARGUMENT at gc_capture_begin.
pub type gc_capture_mode = u32;
/// Unsafe calls from the capturing thread invalidate the capture (default).
pub const GC_CAPTURE_THREAD_LOCAL: gc_capture_mode = 0;
/// Unsafe calls from any thread invalidate the capture.
pub const GC_CAPTURE_GLOBAL: gc_capture_mode = 1;
/// No call is checked.
pub const GC_CAPTURE_RELAXED: gc_capture_mode = 2;

/// The capture mode `mode` names.
pub(crate) fn capture_mode(mode: gc_capture_mode) -> graphcore_core::Result<CaptureMode> {
    match mode {
        GC_CAPTURE_THREAD_LOCAL => Ok(CaptureMode::ThreadLocal),
        GC_CAPTURE_GLOBAL => Ok(CaptureMode::Global),
        GC_CAPTURE_RELAXED => Ok(CaptureMode::Relaxed),
        m => Err(Error::invalid_argument(format!(
            "`mode` {m} is not a gc_capture_mode"
        ))),
    }
}

/// Begins capturing `stream`: all work enqueued on it (graphcore's
/// kernels and copies, your own kernels and cuBLAS calls on the raw
/// stream, and streams that join through gc_stream_wait_stream) is recorded,
/// not run. With a pool (may be NULL), gc_pool_alloc on the calling thread
/// allocates for the capture until gc_capture_end; blocks it frees are
/// reused within the capture and by later captures into the same pool.
/// A stream that is already capturing (through graphcore or the CUDA API)
/// is GC_ERROR_INVALID_STATE. The pool must be of the stream's context.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (mode is not a
/// gc_capture_mode), GC_ERROR_INVALID_STATE (the stream is capturing already,
/// or this thread has a capture open into the pool), GC_ERROR_CAPTURE (CUDA
/// cannot capture the stream, e.g. the legacy default stream). Nothing is begun
/// on failure.
#[no_mangle]
pub extern "C" fn gc_capture_begin(
    stream: *mut gc_stream,
    pool: *mut gc_pool,
    mode: gc_capture_mode,
) -> gc_status {
    boundary("gc_capture_begin", || {
        STREAMS.with(stream as u64, "stream", |s| {
            if pool.is_null() {
                graphcore_core::begin_capture(s, None, capture_mode(mode)?)
            } else {
                POOLS.with(pool as u64, "pool", |p| {
                    graphcore_core::begin_capture(s, Some(p), capture_mode(mode)?)
                })
            }
        })
    })
}

/// Ends the capture begun on `stream` and writes the captured graph to
/// *graph. If the capture was invalidated, the error names the first
/// graphcore call that broke it (GC_ERROR_CAPTURE). A capture invalidated
/// by a call outside graphcore (another library's synchronize, a query of
/// the capturing stream; in GC_CAPTURE_GLOBAL mode also an unsafe call on
/// any other thread) is reported as such, with graphcore's first call on
/// the stream that found it invalid: CUDA does not say which call
/// invalidated a capture (cuStreamGetCaptureInfo reports only that it
/// is). GC_CAPTURE_THREAD_LOCAL, the mode of graphcore's own captures
/// (runners, caches) and the C++ and Python defaults, lets unrelated work
/// on other threads run during a capture. A stream that joined
/// and did not rejoin is GC_ERROR_CAPTURE too; either way the stream is
/// usable for eager work and the pool is as it was before
/// gc_capture_begin. Without a begin: GC_ERROR_INVALID_STATE. The caller
/// destroys the graph with gc_graph_destroy; it holds the pool memory its
/// capture used. Ending costs what CUDA's own end does: the graph's nodes
/// are read back only by the first call that needs them (DOT, adding nodes
/// or edges, fusion, gc_exec_set_kernel_args, an update compared node by
/// node), and its node count by the first that needs it
/// (gc_graph_node_count, gc_exec_stats; instantiating asks CUDA only
/// whether the graph has a node).
/// Errors: common (a NULL graph leaves the capture open), and
/// GC_ERROR_INVALID_STATE (no graphcore capture is open on the stream),
/// GC_ERROR_CAPTURE (the capture was invalidated, e.g. by a call CUDA
/// refused while it was open, such as a query of a captured event made
/// with the CUDA API; a joined stream did not rejoin; or the end came from
/// another thread),
/// GC_ERROR_OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn gc_capture_end(stream: *mut gc_stream, graph: *mut *mut gc_graph) -> gc_status {
    boundary("gc_capture_end", || {
        let out = Out::new(graph, "graph")?;
        let g = STREAMS.with(stream as u64, "stream", graphcore_core::end_capture)?;
        out.set(GRAPHS.insert(g)? as *mut gc_graph);
        Ok(())
    })
}

/// Declares the device range ptr .. ptr + bytes an argument of the graph
/// `stream` is capturing (between gc_capture_begin and gc_capture_end),
/// and writes its index to *index; the graph gc_capture_end returns
/// carries it, as if declared with gc_graph_declare_arg (see there for how
/// uses are found, GC_ARG_EXACT and what cannot be covered). Typically the
/// input and output buffers of a captured model, declared in the same order
/// in each bucket's capture of a runner (gc_runner_replay_with binds them
/// by index; a record function also runs eagerly for the warm-ups, so it
/// declares only while gc_stream_is_capturing says 1). Declaring does not
/// break the capture. flags: GC_ARG_EXACT, GC_ARG_ROWS (the range holds
/// the rows of a runner's exact-size capture: see gc_runner_capture_exact).
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, ptr or index is NULL, bytes
/// is 0, an unknown flag, ptr is not device memory of the stream's device
/// or holds fewer than bytes bytes, or the range overlaps an argument
/// declared before in the capture, or the stream captures into a
/// conditional body: declare arguments on the graph that is instantiated),
/// GC_ERROR_INVALID_HANDLE (stream destroyed), GC_ERROR_INVALID_STATE (no
/// graphcore capture is open on the stream).
#[no_mangle]
pub extern "C" fn gc_capture_arg(
    stream: *mut gc_stream,
    ptr: *const c_void,
    bytes: usize,
    flags: u32,
    index: *mut usize,
) -> gc_status {
    boundary("gc_capture_arg", || {
        let out = Out::new(index, "index")?;
        let (exact, rows) = crate::graph::capture_arg_flags(flags)?;
        crate::graph::arg_range(ptr, bytes)?;
        let s = self::stream(stream, "stream")?;
        out.set(graphcore_core::declare_capture_rows_arg(
            &s, ptr as u64, bytes, exact, rows,
        )?);
        Ok(())
    })
}

/// Declares a scalar argument, marked by the `size` bytes at `marker`,
/// of the graph `stream` is capturing (between gc_capture_begin and
/// gc_capture_end), and writes its index to *index (numbered with the
/// range arguments of gc_capture_arg); the graph gc_capture_end returns
/// carries it as if declared with gc_graph_declare_scalar_arg (see there
/// for the marker, the exact matching rule and how a binding gives the
/// value). Typically: declare a learning rate's marker, launch the kernels
/// that take it with the marker as their value, end the capture, and bind
/// the real value at each gc_exec_launch_with. The marker's bytes are
/// copied. Declaring does not break the capture. Declare from the
/// capturing thread, as gc_capture_arg (the capture is the stream's).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (marker or index is NULL,
/// size is 0 or above 8, the marker is all zero bytes or was declared
/// before in the capture with the same size, or the stream captures into a
/// conditional body), GC_ERROR_INVALID_STATE (no graphcore capture is open
/// on the stream).
#[no_mangle]
pub extern "C" fn gc_capture_scalar_arg(
    stream: *mut gc_stream,
    marker: *const c_void,
    size: usize,
    index: *mut usize,
) -> gc_status {
    boundary("gc_capture_scalar_arg", || {
        let out = Out::new(index, "index")?;
        let m = crate::graph::scalar_marker(marker, size)?;
        let s = self::stream(stream, "stream")?;
        out.set(graphcore_core::declare_capture_scalar_arg(&s, m)?);
        Ok(())
    })
}

/// Writes 1 to *capturing while the stream captures (through graphcore or
/// not, including a stream that joined a capture), else 0.
/// Errors: common.
#[no_mangle]
pub extern "C" fn gc_stream_is_capturing(
    stream: *mut gc_stream,
    capturing: *mut c_int,
) -> gc_status {
    boundary("gc_stream_is_capturing", || {
        let out = Out::new(capturing, "capturing")?;
        out.set(self::stream(stream, "stream")?.is_capturing()? as c_int);
        Ok(())
    })
}
