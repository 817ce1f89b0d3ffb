//! Streams: graphcore's own, or borrowed `CUstream`/`cudaStream_t` handles
//! the caller owns. A stream also carries the state of a capture that
//! [`Stream::begin_capture`](crate::Stream::begin_capture) opened on it.

use crate::capture::CaptureState;
use crate::context::Context;
use crate::driver::{self, stream as ds, CUevent, CUstream};
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use std::sync::{Arc, Mutex};

/// A CUDA stream. Cheap to clone (clones share the stream). `Send + Sync`:
/// work may be enqueued from several threads, in the order the calls happen.
#[derive(Clone)]
pub struct Stream {
    pub(crate) inner: Arc<StreamInner>,
}

pub(crate) struct StreamInner {
    pub(crate) ctx: Context,
    pub(crate) raw: CUstream,
    owned: bool,
    /// Recorded by `wait_stream` on the stream waited for.
    join_event: Mutex<CUevent>,
    /// The open capture begun on this stream, if any.
    pub(crate) capture: Mutex<Option<CaptureState>>,
}

// SAFETY: CUDA streams and events may be used from any thread; the raw
// handles are only passed to the driver, and mutable state is locked.
unsafe impl Send for StreamInner {}
// SAFETY: as above.
unsafe impl Sync for StreamInner {}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            let open = self
                .capture
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(state) = open {
                crate::capture::abandon(state, &self.ctx, self.raw);
            }
            ds::event_destroy(*self.join_event.get_mut().unwrap_or_else(|e| e.into_inner()));
            if self.owned {
                ds::destroy(self.raw);
            }
        }
    }
}

impl Stream {
    /// Creates a non-blocking stream owned by graphcore.
    pub fn new(ctx: &Context) -> Result<Stream> {
        ctx.bind()?;
        let raw = ds::create()?;
        Self::from_parts(ctx, raw, true).inspect_err(|_| ds::destroy(raw))
    }

    /// Borrows a `CUstream` (or `cudaStream_t`, the same handle) the caller
    /// owns; graphcore never destroys it. NULL is the legacy default stream.
    ///
    /// # Safety
    /// `raw` must be a stream of `ctx`'s device that stays alive for as long
    /// as this value (and anything that captured or launched on it) is used.
    pub unsafe fn wrap(ctx: &Context, raw: CUstream) -> Result<Stream> {
        ctx.bind()?;
        Self::from_parts(ctx, raw, false)
    }

    fn from_parts(ctx: &Context, raw: CUstream, owned: bool) -> Result<Stream> {
        let ev = ds::event_create(false)?;
        Ok(Stream {
            inner: Arc::new(StreamInner {
                ctx: ctx.clone(),
                raw,
                owned,
                join_event: Mutex::new(ev),
                capture: Mutex::new(None),
            }),
        })
    }

    /// The stream's context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The raw `CUstream` (usable as a `cudaStream_t`).
    pub fn raw(&self) -> CUstream {
        self.inner.raw
    }

    /// True when this is a borrowed stream.
    pub fn is_borrowed(&self) -> bool {
        !self.inner.owned
    }

    /// Makes this stream wait for all work enqueued on `other` so far
    /// (an event recorded on `other`, waited on here). Works while either
    /// stream captures: that is how a second stream joins a capture (fork)
    /// and how it rejoins (join).
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        ensure_arg!(
            self.inner.ctx.same(&other.inner.ctx),
            "the two streams belong to different contexts"
        );
        if Arc::ptr_eq(&self.inner, &other.inner) {
            return Ok(());
        }
        self.inner.ctx.bind()?;
        let ev = other.inner.join_event.lock().unwrap();
        let r = ds::event_record(*ev, other.inner.raw)
            .and_then(|_| ds::wait_event(self.inner.raw, *ev));
        drop(ev);
        self.note("gc_stream_wait_stream", r)
    }

    /// Blocks until the stream's work is done. On a capturing stream this
    /// fails and invalidates the capture (as CUDA does); the capture's end
    /// then names this call.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.ctx.bind()?;
        let r = ds::synchronize(self.inner.raw);
        self.note("gc_stream_synchronize", r)
    }

    /// True while the stream is capturing (through graphcore or not).
    pub fn is_capturing(&self) -> Result<bool> {
        self.inner.ctx.bind()?;
        Ok(ds::capture_status(self.inner.raw)? != ds::CaptureStatus::None)
    }

    /// Passes `r` through; when it is a capture error and this stream has a
    /// graphcore capture open, remembers `call` as what broke the capture.
    pub(crate) fn note<T>(&self, call: &'static str, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            if driver::is_capture_error(e) {
                if let Some(state) = self.inner.capture.lock().unwrap().as_mut() {
                    state.note_break(call, e);
                }
                return Err(Error::new(
                    ErrorKind::Capture,
                    format!(
                        "{call}: not permitted while the stream captures ({}); the capture is now invalid",
                        e.message()
                    ),
                ));
            }
        }
        r
    }

    /// True when `self` and `other` are the same stream object.
    pub fn same(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
