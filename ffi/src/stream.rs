//! Streams, owned or borrowed.
//!
//! Thread safety: work may be enqueued on one gc_stream from several threads
//! (in the order the calls happen); gc_stream_destroy must not race with
//! other calls on the same handle.

use crate::args::Out;
use crate::context::{context, gc_context};
use crate::handle::Registry;
use crate::status::{boundary, gc_status};
use graphcore_core::Stream;
use std::ffi::{c_int, c_void};

/// A CUDA stream: created by graphcore, or a borrowed CUstream/cudaStream_t.
pub struct gc_stream;

pub(crate) static STREAMS: Registry<Stream> = Registry::new(2, "gc_stream");

/// The stream behind a handle (`arg` names the parameter in errors).
pub(crate) fn stream(h: *mut gc_stream, arg: &str) -> graphcore_core::Result<Stream> {
    STREAMS.get(h as u64, arg)
}

/// Creates a non-blocking stream owned by graphcore.
#[no_mangle]
pub extern "C" fn gc_stream_create(ctx: *mut gc_context, stream: *mut *mut gc_stream) -> gc_status {
    boundary("gc_stream_create", || {
        let out = Out::new(stream, "stream")?;
        let s = Stream::new(&context(ctx)?)?;
        out.set(STREAMS.insert(s)? as *mut gc_stream);
        Ok(())
    })
}

/// Borrows `raw`, a CUstream or cudaStream_t of ctx's device that the
/// caller owns and keeps alive while graphcore uses it (graphcore never
/// destroys it). NULL is the legacy default stream.
#[no_mangle]
pub extern "C" fn gc_stream_wrap(
    ctx: *mut gc_context,
    raw: *mut c_void,
    stream: *mut *mut gc_stream,
) -> gc_status {
    boundary("gc_stream_wrap", || {
        let out = Out::new(stream, "stream")?;
        // SAFETY: the caller vouches for `raw` as documented.
        let s = unsafe { Stream::wrap(&context(ctx)?, raw as _) }?;
        out.set(STREAMS.insert(s)? as *mut gc_stream);
        Ok(())
    })
}

/// Writes the underlying CUstream (usable as a cudaStream_t) to *raw, so
/// your own kernels and libraries (cuBLAS, ...) can work on the stream.
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
/// stream must wait on it again before gc_capture_end (join).
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
/// with GC_ERROR_CAPTURE and invalidates the capture (as CUDA does).
#[no_mangle]
pub extern "C" fn gc_stream_synchronize(stream: *mut gc_stream) -> gc_status {
    boundary("gc_stream_synchronize", || {
        self::stream(stream, "stream")?.synchronize()
    })
}

/// Writes 1 to *capturing while the stream captures (through graphcore or
/// not), else 0.
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

/// Destroys the handle; an owned stream is destroyed once work that
/// graphcore objects still reference it for is gone (a borrowed one is
/// never destroyed). NULL is a no-op.
#[no_mangle]
pub extern "C" fn gc_stream_destroy(stream: *mut gc_stream) -> gc_status {
    boundary("gc_stream_destroy", || {
        STREAMS.remove(stream as u64, "stream")?;
        Ok(())
    })
}
