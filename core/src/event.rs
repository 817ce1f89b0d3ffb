//! Events: graphcore's own (with or without timing), or borrowed `CUevent`
//! / `cudaEvent_t` handles the caller owns. Recording an event on a stream
//! and making a stream wait on one are stream operations
//! ([`Stream::record_event`](crate::Stream::record_event),
//! [`Stream::wait_event`](crate::Stream::wait_event)); this module holds
//! the event itself: waiting for it, asking whether it is done, and the time
//! between two records.

use crate::context::Context;
use crate::driver::owned::{Owned, Shared};
use crate::driver::{stream as ds, CUevent};
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::lock::lock;
use std::sync::{Arc, Mutex};

/// Says whether the capture an event's latest record went into is still
/// open (streams make it: the event knows no stream).
pub(crate) type CaptureProbe = Arc<dyn Fn() -> bool + Send + Sync>;

/// A CUDA event. Cheap to clone (clones share the event). `Send + Sync`.
#[derive(Clone)]
pub struct Event {
    inner: Arc<EventInner>,
}

struct EventInner {
    ctx: Context,
    raw: Shared<CUevent>,
    /// The event when graphcore created it (destroyed with this value);
    /// `None` when borrowed.
    owned: Option<Owned<CUevent>>,
    /// Whether it records times: known for graphcore's events, `None` for
    /// borrowed ones (the driver then says).
    timing: Option<bool>,
    /// When its latest record through graphcore was made in a capture:
    /// asks whether that capture is still open (CUDA then refuses to wait
    /// on, query or time the event).
    captured: Mutex<Option<CaptureProbe>>,
}

impl Event {
    /// Creates an event owned by graphcore, recording times or not (an
    /// event without timing is cheaper to record and wait on).
    pub fn new(ctx: &Context, timing: bool) -> Result<Event> {
        ctx.bind()?;
        let owned = Owned::new(ds::event_create(timing)?, ctx.primary());
        Ok(Self::from_parts(
            ctx,
            owned.raw(),
            Some(owned),
            Some(timing),
        ))
    }

    /// Borrows a `CUevent` (or `cudaEvent_t`, the same handle) the caller
    /// owns; graphcore never destroys it.
    ///
    /// # Safety
    /// `raw` must be an event of `ctx`'s device that stays alive for as long
    /// as this value (and anything that recorded or waited on it) is used.
    pub unsafe fn wrap(ctx: &Context, raw: CUevent) -> Result<Event> {
        ensure_arg!(!raw.is_null(), "`raw` is NULL");
        ctx.bind()?;
        Ok(Self::from_parts(ctx, raw, None, None))
    }

    fn from_parts(
        ctx: &Context,
        raw: CUevent,
        owned: Option<Owned<CUevent>>,
        timing: Option<bool>,
    ) -> Event {
        Event {
            inner: Arc::new(EventInner {
                ctx: ctx.clone(),
                raw: Shared::new(raw),
                owned,
                timing,
                captured: Mutex::new(None),
            }),
        }
    }

    /// The event's context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The raw `CUevent` (usable as a `cudaEvent_t`).
    pub fn raw(&self) -> CUevent {
        self.inner.raw.raw()
    }

    /// True when this is a borrowed event.
    pub fn is_borrowed(&self) -> bool {
        self.inner.owned.is_none()
    }

    /// Notes where its latest record was made: in a capture (`Some`, a probe
    /// of that capture) or not.
    pub(crate) fn note_record(&self, capture: Option<CaptureProbe>) {
        *lock(&self.inner.captured) = capture;
    }

    /// [`ErrorKind::Capture`] when its latest record was made in a capture
    /// that is still open: CUDA refuses to wait on, query or time such an
    /// event (with an error that does not say why). `what` names it.
    fn ensure_not_in_open_capture(&self, what: &str) -> Result<()> {
        let probe = lock(&self.inner.captured).clone();
        match probe {
            Some(open) if open() => Err(Error::new(
                ErrorKind::Capture,
                format!(
                    "{what}'s latest record was made in a stream capture that is still open: it \
                     stands for captured work, which never runs eagerly; end the capture, or \
                     record the event outside it"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Blocks until the work its latest record covers is done (at once if
    /// it was never recorded). [`ErrorKind::Capture`] when that record was
    /// made in a capture still open.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.ctx.bind()?;
        self.ensure_not_in_open_capture("the event")?;
        ds::event_synchronize(self.raw())
    }

    /// True when the work its latest record covers is done (or it was never
    /// recorded); never blocks. [`ErrorKind::Capture`] when that record was
    /// made in a capture still open.
    pub fn is_done(&self) -> Result<bool> {
        self.inner.ctx.bind()?;
        self.ensure_not_in_open_capture("the event")?;
        ds::event_query(self.raw())
    }

    /// Milliseconds from `start`'s latest record to `end`'s (negative when
    /// `end` came first). Both must record times, be of one context and be
    /// done ([`ErrorKind::Capture`] when either's latest record was made in
    /// a capture still open).
    pub fn elapsed_ms(start: &Event, end: &Event) -> Result<f32> {
        start
            .inner
            .ctx
            .ensure_same("the start event", &end.inner.ctx, "the end event")?;
        for (name, e) in [("start", start), ("end", end)] {
            ensure_arg!(
                e.inner.timing != Some(false),
                "`{name}` was created without timing"
            );
        }
        start.inner.ctx.bind()?;
        start.ensure_not_in_open_capture("the start event")?;
        end.ensure_not_in_open_capture("the end event")?;
        ds::event_elapsed_ms(start.raw(), end.raw()).map_err(|e| {
            use cudarc::driver::sys::CUresult as R;
            if e.cuda_result() == Some(R::CUDA_ERROR_NOT_READY as u32) {
                Error::invalid_state(
                    "an event's work is not done yet (synchronize on the end event first)",
                )
            } else {
                e
            }
        })
    }
}
