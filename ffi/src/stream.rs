//! Streams: graphcore's own (gc_stream_create) or borrowed CUstream /
//! cudaStream_t handles (gc_stream_wrap). Work on a stream runs in the
//! order it was enqueued; gc_stream_raw hands the CUstream to your own
//! kernels and libraries, and gc_stream_wait_stream orders two streams
//! (also across a capture: fork and join). To wait on an event of your own,
//! wrap it (gc_event_wrap) and use gc_stream_wait_event (Event section).

use crate::args::Out;
use crate::context::{context, gc_context};
use crate::handle::Registry;
use crate::status::{boundary, gc_status};
use graphcore_core::Stream;
use std::ffi::{c_int, c_void};

/// A CUDA stream: created by graphcore, or a borrowed CUstream/cudaStream_t.
///
/// Ownership: the caller destroys the handle with gc_stream_destroy. A
/// stream graphcore created is destroyed once the handle and graphcore's
/// own references to it are gone (work already enqueued still finishes); a
/// borrowed one stays the caller's and is never destroyed by graphcore.
/// Destroying a stream that is capturing ends and discards its capture (the
/// capture's pool is rolled back). The runner's
/// stream handed to a gc_record_fn belongs to the runner.
///
/// Thread safety: work may be enqueued on one stream from several threads
/// at once (it runs in the order the calls happen). gc_capture_begin and
/// gc_capture_end on a stream are serialized inside, but the caller orders
/// them (one capture at a time per stream). gc_stream_destroy must not race
/// with other calls on the same handle.
pub struct gc_stream;

pub(crate) static STREAMS: Registry<Stream> = Registry::new(2, "gc_stream");

/// The stream behind a handle (`arg` names the parameter in errors).
pub(crate) fn stream(h: *mut gc_stream, arg: &str) -> graphcore_core::Result<Stream> {
    STREAMS.get(h as u64, arg)
}

/// Creates a non-blocking stream owned by graphcore; destroy it with
/// gc_stream_destroy.
/// Errors: common, and GC_ERROR_OUT_OF_MEMORY (the driver or the handle table
/// is out of memory).
#[no_mangle]
pub extern "C" fn gc_stream_create(ctx: *mut gc_context, stream: *mut *mut gc_stream) -> gc_status {
    boundary("gc_stream_create", || {
        let out = Out::new(stream, "stream")?;
        let s = Stream::new(&context(ctx)?)?;
        out.set(STREAMS.insert(s)? as *mut gc_stream);
        Ok(())
    })
}

/// Creates a non-blocking stream owned by graphcore, as gc_stream_create,
/// whose work the GPU schedules by `priority`: lower numbers are higher
/// priorities, from gc_stream_priority_range's `least` (the default, 0 on
/// current GPUs) to its `greatest` (e.g. -5). When blocks of several
/// kernels wait for free SMs, those of higher-priority streams start first;
/// running blocks are not preempted. Kernels captured on the stream keep its
/// priority as a node attribute, which an exec instantiated with
/// GC_INSTANTIATE_USE_NODE_PRIORITY uses (otherwise every node runs at the
/// priority of the stream the exec is launched on). Typical use: a
/// high-priority stream for collectives (NCCL) that overlap a GEMM.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (priority outside the device's
/// range; the message gives the range), GC_ERROR_OUT_OF_MEMORY (the driver or
/// the handle table is out of memory).
#[no_mangle]
pub extern "C" fn gc_stream_create_with_priority(
    ctx: *mut gc_context,
    priority: c_int,
    stream: *mut *mut gc_stream,
) -> gc_status {
    boundary("gc_stream_create_with_priority", || {
        let out = Out::new(stream, "stream")?;
        let s = Stream::with_priority(&context(ctx)?, priority)?;
        out.set(STREAMS.insert(s)? as *mut gc_stream);
        Ok(())
    })
}

/// Writes the stream priorities of ctx's device: *least (the default
/// priority, 0 on current GPUs) and *greatest (the highest priority, the
/// lowest number, e.g. -5), for gc_stream_create_with_priority.
/// Errors: common.
#[no_mangle]
pub extern "C" fn gc_stream_priority_range(
    ctx: *mut gc_context,
    least: *mut c_int,
    greatest: *mut c_int,
) -> gc_status {
    boundary("gc_stream_priority_range", || {
        let (least, greatest) = (Out::new(least, "least")?, Out::new(greatest, "greatest")?);
        let (l, g) = Stream::priority_range(&context(ctx)?)?;
        least.set(l);
        greatest.set(g);
        Ok(())
    })
}

/// Borrows `raw`, a CUstream or cudaStream_t of ctx's device that the
/// caller owns and keeps alive while graphcore uses it (graphcore never
/// destroys it; gc_stream_destroy drops only the handle). NULL is the
/// legacy default stream, and so is CU_STREAM_LEGACY (cudaStreamLegacy,
/// the value 0x1), taken as NULL. The per-thread default stream,
/// CU_STREAM_PER_THREAD (cudaStreamPerThread, 0x2, also what stream 0
/// means in code built with --default-stream per-thread), is refused
/// (GC_ERROR_INVALID_ARGUMENT): it names a different stream on each
/// thread, while a gc_stream is one stream whatever thread uses it, and
/// CUDA gives no handle of a thread's per-thread stream to wrap instead.
/// Use a stream of your own (cudaStreamCreate, then wrap it) or
/// gc_stream_create, and order it with the per-thread stream through
/// events where both are used. graphcore cannot check that raw is a stream
/// of ctx's device: a stream of another device is undefined behaviour in
/// CUDA.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (raw is
/// CU_STREAM_PER_THREAD), GC_ERROR_OUT_OF_MEMORY (the handle table),
/// GC_ERROR_DEVICE_FAULT (creating the stream's event failed).
#[no_mangle]
pub extern "C" fn gc_stream_wrap(
    ctx: *mut gc_context,
    raw: *mut c_void,
    stream: *mut *mut gc_stream,
) -> gc_status {
    boundary("gc_stream_wrap", || {
        let out = Out::new(stream, "stream")?;
        let raw = match raw as usize {
            // CU_STREAM_LEGACY: the legacy default stream, as NULL.
            0x1 => std::ptr::null_mut(),
            // CU_STREAM_PER_THREAD.
            0x2 => {
                return Err(graphcore_core::Error::invalid_argument(
                    "`raw` is CU_STREAM_PER_THREAD (cudaStreamPerThread), the per-thread \
                     default stream, which names a different stream on each thread: wrap a \
                     stream of your own, or create one with gc_stream_create",
                ))
            }
            _ => raw,
        };
        // SAFETY: the caller vouches for `raw` as documented.
        let s = unsafe { Stream::wrap(&context(ctx)?, raw as _) }?;
        out.set(STREAMS.insert(s)? as *mut gc_stream);
        Ok(())
    })
}

/// Writes the underlying CUstream (usable as a cudaStream_t) to *raw, so
/// your own kernels and libraries (cuBLAS, ...) can work on the stream.
/// The CUstream stays valid while the gc_stream lives; do not destroy it.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream or raw is NULL),
/// GC_ERROR_INVALID_HANDLE (stream destroyed).
#[no_mangle]
pub extern "C" fn gc_stream_raw(stream: *mut gc_stream, raw: *mut *mut c_void) -> gc_status {
    boundary("gc_stream_raw", || {
        let out = Out::new(raw, "raw")?;
        out.set(self::stream(stream, "stream")?.raw() as *mut c_void);
        Ok(())
    })
}

/// Makes `stream` wait for the work enqueued on `other` so far (an event
/// recorded on other, waited on by stream). Capture-safe: a stream that
/// waits on a capturing stream joins its capture (fork); the capturing
/// stream must wait on it again before gc_capture_end (join). Both streams
/// must be of one context. Waiting on itself is a no-op.
/// Errors: common, and GC_ERROR_CAPTURE (CUDA refused the wait under capture,
/// e.g. joining two captures; the capture is invalid now).
#[no_mangle]
pub extern "C" fn gc_stream_wait_stream(
    stream: *mut gc_stream,
    other: *mut gc_stream,
) -> gc_status {
    boundary("gc_stream_wait_stream", || {
        self::stream(stream, "stream")?.wait_stream(&self::stream(other, "other")?)
    })
}

/// Blocks until the stream's work is done. On a capturing stream this fails
/// with GC_ERROR_CAPTURE and invalidates the capture (as CUDA does); the
/// error of gc_capture_end then names this call.
/// Errors: common, and GC_ERROR_CAPTURE (the stream is capturing),
/// GC_ERROR_DEVICE_FAULT (work on the stream faulted), GC_ERROR_CUDA (another
/// failure of the work or the wait).
#[no_mangle]
pub extern "C" fn gc_stream_synchronize(stream: *mut gc_stream) -> gc_status {
    boundary("gc_stream_synchronize", || {
        self::stream(stream, "stream")?.synchronize()
    })
}

/// Destroys the handle; an owned stream is destroyed once work that
/// graphcore objects still reference it for is gone (a borrowed one is
/// never destroyed). A capture still open on it is ended and discarded,
/// and its pool rolled back. NULL is a no-op.
/// Errors: GC_ERROR_INVALID_HANDLE (stream already destroyed, or not a
/// stream).
#[no_mangle]
pub extern "C" fn gc_stream_destroy(stream: *mut gc_stream) -> gc_status {
    boundary("gc_stream_destroy", || {
        STREAMS.remove(stream as u64, "stream")?;
        Ok(())
    })
}
