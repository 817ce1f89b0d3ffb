//! Streams, events and stream capture.

use super::{check, sys, CUevent, CUgraph, CUstream};
use crate::error::Result;
use crate::timing::{timed, Span};
use std::ffi::c_void;

/// Creates a non-blocking stream of `priority` (0: the default; lower
/// numbers are higher priorities, within [`priority_range`]) in the current
/// context.
pub(crate) fn create(priority: i32) -> Result<CUstream> {
    let mut s = std::ptr::null_mut();
    check(
        // SAFETY: writes one stream handle.
        unsafe {
            sys::cuStreamCreateWithPriority(
                &mut s,
                sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
                priority,
            )
        },
        "cuStreamCreateWithPriority",
    )?;
    Ok(s)
}

/// The current context's stream priorities: `(least, greatest)`, the
/// greatest being the lowest number (e.g. `(0, -5)`).
pub(crate) fn priority_range() -> Result<(i32, i32)> {
    let (mut least, mut greatest) = (0, 0);
    check(
        // SAFETY: writes two ints.
        unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) },
        "cuCtxGetStreamPriorityRange",
    )?;
    Ok((least, greatest))
}

/// Destroys a stream created by [`create`].
pub(crate) fn destroy(s: CUstream) -> Result<()> {
    // SAFETY: s was created by `create` and is destroyed once.
    check(unsafe { sys::cuStreamDestroy_v2(s) }, "cuStreamDestroy")
}

/// Waits for the stream's work.
pub(crate) fn synchronize(s: CUstream) -> Result<()> {
    check(
        // SAFETY: s is a live stream.
        unsafe { sys::cuStreamSynchronize(s) },
        "cuStreamSynchronize",
    )
}

/// Creates an event without timing (for ordering only) or with timing.
pub(crate) fn event_create(timing: bool) -> Result<CUevent> {
    let flags = if timing {
        sys::CUevent_flags::CU_EVENT_DEFAULT as u32
    } else {
        sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
    };
    let mut e = std::ptr::null_mut();
    check(
        // SAFETY: writes one event handle.
        unsafe { sys::cuEventCreate(&mut e, flags) },
        "cuEventCreate",
    )?;
    Ok(e)
}

/// Destroys an event.
pub(crate) fn event_destroy(e: CUevent) -> Result<()> {
    // SAFETY: e was created by `event_create` and is destroyed once.
    check(unsafe { sys::cuEventDestroy_v2(e) }, "cuEventDestroy")
}

/// Records `e` on `s`. With `external` (valid only while `s` captures),
/// the capture gets an event record node: each replay records `e`.
pub(crate) fn event_record(e: CUevent, s: CUstream, external: bool) -> Result<()> {
    let flags = if external {
        sys::CUevent_record_flags::CU_EVENT_RECORD_EXTERNAL as u32
    } else {
        sys::CUevent_record_flags::CU_EVENT_RECORD_DEFAULT as u32
    };
    check(
        // SAFETY: live event and stream.
        unsafe { sys::cuEventRecordWithFlags(e, s, flags) },
        "cuEventRecordWithFlags",
    )
}

/// Makes `s` wait for the work recorded in `e`. With `external` (valid only
/// while `s` captures), the capture gets an event wait node: each replay
/// waits for `e`'s latest record.
pub(crate) fn wait_event(s: CUstream, e: CUevent, external: bool) -> Result<()> {
    let flags = if external {
        sys::CUevent_wait_flags::CU_EVENT_WAIT_EXTERNAL as u32
    } else {
        sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT as u32
    };
    check(
        // SAFETY: live stream and event.
        unsafe { sys::cuStreamWaitEvent(s, e, flags) },
        "cuStreamWaitEvent",
    )
}

/// Blocks until the work recorded in `e` is done.
pub(crate) fn event_synchronize(e: CUevent) -> Result<()> {
    check(
        // SAFETY: live event.
        unsafe { sys::cuEventSynchronize(e) },
        "cuEventSynchronize",
    )
}

/// True when the work recorded in `e` is done (or `e` was never recorded).
pub(crate) fn event_query(e: CUevent) -> Result<bool> {
    // SAFETY: live event.
    let r = unsafe { sys::cuEventQuery(e) };
    if r == sys::CUresult::CUDA_ERROR_NOT_READY {
        return Ok(false);
    }
    check(r, "cuEventQuery").map(|()| true)
}

/// Milliseconds between two completed records of timing events.
pub(crate) fn event_elapsed_ms(start: CUevent, end: CUevent) -> Result<f32> {
    let mut ms = 0f32;
    check(
        // SAFETY: live events; writes one float.
        unsafe { sys::cuEventElapsedTime(&mut ms, start, end) },
        "cuEventElapsedTime",
    )?;
    Ok(ms)
}

/// Enqueues a call of `f(user_data)` on a CPU thread of the driver, after
/// the work enqueued on `s` so far (captured as a host node).
pub(crate) fn launch_host_func(
    s: CUstream,
    f: super::HostFn,
    user_data: *mut c_void,
) -> Result<()> {
    check(
        // SAFETY: live stream; the caller vouches for `f` with `user_data`.
        unsafe { sys::cuLaunchHostFunc(s, Some(f), user_data) },
        "cuLaunchHostFunc",
    )
}

/// Capture modes, as CUDA defines them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureMode {
    /// Unsafe calls from any thread invalidate the capture.
    Global,
    /// Unsafe calls from the capturing thread invalidate the capture.
    ThreadLocal,
    /// No call is checked for safety.
    Relaxed,
}

impl CaptureMode {
    pub(crate) fn raw(self) -> sys::CUstreamCaptureMode {
        use sys::CUstreamCaptureMode as M;
        match self {
            CaptureMode::Global => M::CU_STREAM_CAPTURE_MODE_GLOBAL,
            CaptureMode::ThreadLocal => M::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            CaptureMode::Relaxed => M::CU_STREAM_CAPTURE_MODE_RELAXED,
        }
    }
}

/// A stream's capture status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CaptureStatus {
    None,
    Active,
    Invalidated,
}

/// Begins capturing `s`.
pub(crate) fn begin_capture(s: CUstream, mode: CaptureMode) -> Result<()> {
    check(
        // SAFETY: live stream.
        timed(Span::DriverBeginCapture, || unsafe {
            sys::cuStreamBeginCapture_v2(s, mode.raw())
        }),
        "cuStreamBeginCapture",
    )
}

/// Ends capturing `s`, returning the graph (or the capture's error). A call
/// that makes a graph, or finishes one (a capture into an existing graph):
/// under the graph-call lock (see `driver::graph`).
pub(crate) fn end_capture(s: CUstream) -> Result<CUgraph> {
    let mut g = std::ptr::null_mut();
    check(
        timed(Span::DriverEndCapture, || {
            // SAFETY: writes one graph handle.
            super::graph::serialized(|| unsafe { sys::cuStreamEndCapture(s, &mut g) })
        }),
        "cuStreamEndCapture",
    )?;
    Ok(g)
}

/// The capture status of `s`.
pub(crate) fn capture_status(s: CUstream) -> Result<CaptureStatus> {
    use sys::CUstreamCaptureStatus as S;
    let mut st = S::CU_STREAM_CAPTURE_STATUS_NONE;
    check(
        // SAFETY: writes one status.
        unsafe { sys::cuStreamIsCapturing(s, &mut st) },
        "cuStreamIsCapturing",
    )?;
    Ok(match st {
        S::CU_STREAM_CAPTURE_STATUS_NONE => CaptureStatus::None,
        S::CU_STREAM_CAPTURE_STATUS_ACTIVE => CaptureStatus::Active,
        S::CU_STREAM_CAPTURE_STATUS_INVALIDATED => CaptureStatus::Invalidated,
    })
}

/// The id of the capture `s` takes part in (begun on it, or joined), if
/// any: open, or invalidated and not yet ended.
pub(crate) fn capture_id(s: CUstream) -> Result<Option<u64>> {
    use sys::CUstreamCaptureStatus as S;
    let (mut st, mut id) = (S::CU_STREAM_CAPTURE_STATUS_NONE, 0u64);
    check(
        // SAFETY: writes one status and one id; the other outputs are
        // optional (NULL).
        unsafe {
            sys::cuStreamGetCaptureInfo_v2(
                s,
                &mut st,
                &mut id,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        },
        "cuStreamGetCaptureInfo",
    )?;
    Ok((st != S::CU_STREAM_CAPTURE_STATUS_NONE).then_some(id))
}

/// Ends a capture still open on `s`, if any, and destroys the graph it made:
/// the stream is out of capture mode afterwards (best effort).
pub(crate) fn discard_capture(s: CUstream) {
    if let Some(g) = leave_capture(s) {
        let _ = super::graph::destroy(g);
    }
}

/// Ends a capture still open on `s`, if any, returning the graph it made
/// (for a capture into an existing graph, that graph, which stays its
/// owner's): the stream is out of capture mode afterwards (best effort).
pub(crate) fn leave_capture(s: CUstream) -> Option<CUgraph> {
    if capture_status(s).unwrap_or(CaptureStatus::None) != CaptureStatus::None {
        return end_capture(s).ok();
    }
    None
}
