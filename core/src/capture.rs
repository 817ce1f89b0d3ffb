//! Stream capture: begin and end on a stream, with a pool the capture's
//! allocations come from. A failed capture names the first graphcore call
//! that broke it, leaves the stream usable and rolls the pool back.

use crate::device_pool::Pool;
use crate::driver::stream::{self as ds, CaptureMode, CaptureStatus};
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::graph::Graph;
use crate::pool::CaptureId;
use crate::stream::Stream;

/// What graphcore knows about a capture it opened on a stream.
pub(crate) struct CaptureState {
    /// The pool the capture allocates from, and its capture id there.
    pool: Option<(Pool, CaptureId)>,
    /// The first graphcore call that broke the capture, with its error.
    breaker: Option<String>,
}

impl CaptureState {
    /// Remembers `call` as the capture's breaker unless one is known.
    pub(crate) fn note_break(&mut self, call: &str, e: &Error) {
        if self.breaker.is_none() {
            self.breaker = Some(format!("{call} ({})", e.message()));
        }
    }

    fn abort_pool(&mut self) {
        if let Some((pool, id)) = self.pool.take() {
            pool.abort_capture(id);
        }
    }
}

/// Ends, and discards, a capture still open on stream `raw` when its
/// stream goes away: the CUDA capture ends, the pool rolls back, and the
/// context no longer counts the capture as open.
pub(crate) fn abandon(
    mut state: CaptureState,
    ctx: &crate::context::Context,
    raw: crate::driver::CUstream,
) {
    if ds::capture_status(raw).unwrap_or(CaptureStatus::None) != CaptureStatus::None {
        if let Ok(g) = ds::end_capture(raw) {
            crate::driver::graph::destroy(g);
        }
    }
    ctx.close_capture();
    state.abort_pool();
}

const AFTER_FAILURE: &str =
    "the stream is usable for eager work and the pool is as it was before gc_capture_begin";

impl Stream {
    /// Begins capturing the stream. With a pool, allocations from it on the
    /// calling thread belong to the capture until it ends. Fails if the
    /// stream is already capturing (through graphcore or not).
    pub fn begin_capture(&self, pool: Option<&Pool>, mode: CaptureMode) -> Result<()> {
        let mut cap = self.inner.capture.lock().unwrap();
        if cap.is_some() {
            return Err(Error::invalid_state(
                "the stream is already capturing: gc_capture_begin was called on it and gc_capture_end was not",
            ));
        }
        if let Some(p) = pool {
            ensure_arg!(
                p.context().same(self.context()),
                "the pool and the stream belong to different contexts"
            );
        }
        self.context().bind()?;
        if ds::capture_status(self.raw())? != CaptureStatus::None {
            return Err(Error::invalid_state(
                "the stream is already capturing outside graphcore (a capture begun with the CUDA API, or a stream that joined another capture)",
            ));
        }
        let pool = match pool {
            Some(p) => Some((p.clone(), p.begin_capture()?)),
            None => None,
        };
        let mut state = CaptureState {
            pool,
            breaker: None,
        };
        if let Err(e) = self
            .context()
            .open_capture(|| ds::begin_capture(self.raw(), mode))
        {
            state.abort_pool();
            return Err(e);
        }
        *cap = Some(state);
        Ok(())
    }

    /// Ends, and discards, the capture begun with
    /// [`begin_capture`](Self::begin_capture), as a failed capture is
    /// rolled back: the stream leaves capture mode, the blocks the capture
    /// allocated from its pool are freed and the pages mapped for it
    /// unmapped. Without a graphcore capture open this is
    /// [`ErrorKind::InvalidState`].
    pub(crate) fn abort_capture(&self) -> Result<()> {
        self.context().bind()?;
        let state =
            self.inner.capture.lock().unwrap().take().ok_or_else(|| {
                Error::invalid_state("the stream is not capturing through graphcore")
            })?;
        abandon(state, self.context(), self.raw());
        Ok(())
    }

    /// Ends the capture begun with [`begin_capture`](Self::begin_capture)
    /// and returns the graph. A capture that was invalidated, or that a
    /// joined stream did not rejoin, fails with [`ErrorKind::Capture`]
    /// naming the cause.
    pub fn end_capture(&self) -> Result<Graph> {
        let mut state = self.inner.capture.lock().unwrap().take().ok_or_else(|| {
            Error::invalid_state(
                "gc_capture_end without gc_capture_begin: the stream is not capturing through graphcore",
            )
        })?;
        self.context().bind()?;
        let ended = ds::end_capture(self.raw());
        self.context().close_capture();
        match ended {
            Ok(raw) => {
                let memory = match state.pool.take() {
                    Some((pool, id)) => Some(pool.end_capture(id)?),
                    None => None,
                };
                Graph::from_captured(self.context(), raw, memory)
            }
            Err(e) => {
                state.abort_pool();
                // Make sure the stream is out of capture mode.
                if ds::capture_status(self.raw()).unwrap_or(CaptureStatus::None)
                    != CaptureStatus::None
                {
                    if let Ok(g) = ds::end_capture(self.raw()) {
                        crate::driver::graph::destroy(g);
                    }
                }
                Err(explain(e, state.breaker.as_deref()))
            }
        }
    }
}

/// The message for a capture that failed at its end.
fn explain(e: Error, breaker: Option<&str>) -> Error {
    use cudarc::driver::sys::CUresult as R;
    let code = e.cuda_result().unwrap_or(0);
    let why = if code == R::CUDA_ERROR_STREAM_CAPTURE_UNJOINED as u32 {
        "a stream joined the capture (it waited on the capturing stream) and did not rejoin it: \
         make the capturing stream wait on that stream (gc_stream_wait_stream) before gc_capture_end"
            .to_string()
    } else if code == R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED as u32 {
        match breaker {
            Some(b) => format!("the capture was invalidated by {b}"),
            None => "the capture was invalidated by a call outside graphcore (a synchronizing or \
                     legacy-stream CUDA call on the capturing stream, or, in global mode, an unsafe \
                     CUDA call on another thread)"
                .to_string(),
        }
    } else {
        e.message().to_string()
    };
    Error::from_cuda(ErrorKind::Capture, code, format!("{why}; {AFTER_FAILURE}"))
}
