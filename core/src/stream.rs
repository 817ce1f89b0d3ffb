//! Streams: graphcore's own, or borrowed `CUstream`/`cudaStream_t` handles
//! the caller owns. A stream also holds the capture that
//! [`begin_capture`](crate::begin_capture) opened on it: the pool's part of
//! it rolls back when it is dropped, so a stream that goes away mid-capture
//! leaves its pool as it was.

use crate::arg::ArgDecl;
use crate::context::Context;
use crate::driver::owned::{Owned, Shared};
use crate::driver::{self, stream as ds, CUevent, CUstream, HostFn};
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::event::{CaptureProbe, Event};
use crate::lock::{get_mut, lock};
use crate::pool::PoolCapture;
use std::ffi::c_void;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A CUDA stream. Cheap to clone (clones share the stream). `Send + Sync`:
/// work may be enqueued from several threads, in the order the calls happen.
#[derive(Clone)]
pub struct Stream {
    inner: Arc<StreamInner>,
}

/// What the clones of a [`Stream`] share. `repr(C)`, so that what a
/// launch reads (the context, the stream and the capture mark) comes
/// first, together.
#[repr(C)]
struct StreamInner {
    ctx: Context,
    raw: Shared<CUstream>,
    /// Whether a kernel launch went into the open capture, for its end.
    capture_mark: CaptureMark,
    /// The stream when graphcore created it (destroyed with this value);
    /// `None` when borrowed.
    owned: Option<Owned<CUstream>>,
    /// Recorded by `wait_stream` on the stream waited for; the lock orders
    /// record-then-wait pairs.
    join_event: Mutex<Owned<CUevent>>,
    /// The open capture begun on this stream, if any.
    capture: Mutex<Option<OpenCapture>>,
}

impl Drop for StreamInner {
    /// Ends a capture left open (the fields then destroy the event and, if
    /// graphcore owns it, the stream).
    fn drop(&mut self) {
        if let Some(mut open) = get_mut(&mut self.capture).take() {
            if self.ctx.bind().is_ok() {
                open.discard(self.raw.raw());
            }
            // Stop counting it as open; dropping `open` rolls its pool back.
            self.ctx.close_capture();
            drop(open);
        }
    }
}

/// An operation on a stream, as a capture it broke names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamOp {
    /// A copy (`copy_async`).
    Copy,
    /// A set (`set_async`).
    Set,
    /// A kernel launch.
    Launch,
    /// A launch of a built-in operation.
    BuiltinLaunch,
    /// A wait for another stream.
    WaitStream,
    /// A stream synchronize.
    Synchronize,
    /// An exec launch.
    ExecLaunch,
    /// An exec upload.
    ExecUpload,
    /// An event record.
    EventRecord,
    /// A wait for an event.
    WaitEvent,
    /// A host function launch.
    HostFunc,
}

impl fmt::Display for StreamOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StreamOp::Copy => "a copy",
            StreamOp::Set => "a set",
            StreamOp::Launch => "a kernel launch",
            StreamOp::BuiltinLaunch => "a built-in operation",
            StreamOp::WaitStream => "a stream wait",
            StreamOp::Synchronize => "a stream synchronize",
            StreamOp::ExecLaunch => "an exec launch",
            StreamOp::ExecUpload => "an exec upload",
            StreamOp::EventRecord => "an event record",
            StreamOp::WaitEvent => "an event wait",
            StreamOp::HostFunc => "a host function launch",
        })
    }
}

/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`: a call found the capture invalid
/// already.
const CAPTURE_INVALIDATED: u32 =
    cudarc::driver::sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED as u32;

/// A capture graphcore opened on a stream: its pool's part (rolled back
/// when dropped unless ended), and the first operation that broke it.
pub(crate) struct OpenCapture {
    /// The pool the capture allocates from, if any.
    pub(crate) pool: Option<PoolCapture>,
    /// Events the capture's event nodes record or wait on (the graph keeps
    /// them alive).
    pub(crate) events: Vec<Event>,
    /// Arguments declared during the capture (handed to its graph).
    pub(crate) args: Vec<ArgDecl>,
    /// What the capture's kernel nodes launch, kept for its graph (the
    /// functions launched into it, each once by its key): opaque here,
    /// `capture` (above) knows their type.
    pub(crate) kept: Vec<(usize, Box<dyn std::any::Any + Send>)>,
    /// The existing graph the capture adds to (a conditional body), kept
    /// opaque here: `capture` (above) knows its type.
    pub(crate) into: Option<Box<dyn CaptureTarget>>,
    breaker: Option<(StreamOp, Error)>,
    /// The stream's [`CaptureMark`] word as this capture opened it.
    mark: u64,
}

impl OpenCapture {
    /// A capture allocating from `pool`, not broken yet.
    pub(crate) fn new(pool: Option<PoolCapture>) -> Self {
        OpenCapture {
            pool,
            events: Vec::new(),
            args: Vec::new(),
            kept: Vec::new(),
            into: None,
            breaker: None,
            mark: 0,
        }
    }

    /// The first operation that broke the capture, with its error.
    pub(crate) fn breaker(&self) -> Option<&(StreamOp, Error)> {
        self.breaker.as_ref()
    }

    /// Takes `stream` out of capture mode without keeping what it
    /// captured (the caller makes the stream's context current): a new
    /// graph CUDA made is destroyed; an existing graph captured into (a
    /// conditional body) is CUDA's part of its holder and stays, emptied
    /// by its target. Best effort.
    pub(crate) fn discard(&mut self, stream: CUstream) {
        match self.into.take() {
            Some(target) => {
                let _ = ds::leave_capture(stream);
                target.abandon();
            }
            None => ds::discard_capture(stream),
        }
    }
}

/// The existing graph a capture adds to (a conditional body, above this
/// module), as the stream sees it.
pub(crate) trait CaptureTarget: std::any::Any + Send {
    /// After a capture into it was discarded: clears its capture mark and
    /// removes the nodes the capture left.
    fn abandon(&self);

    /// The target as `Any`, for the capture module to take its type back.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send>;
}

/// Whether a kernel launch went into the capture graphcore has open on a
/// stream, known without the capture's lock: its graph is then not empty,
/// and instantiating it asks CUDA nothing for the emptiness check. One
/// word, `epoch << 2 | NONEMPTY | OPEN`; each capture begun takes the next
/// epoch.
///
/// * Begin stores `epoch | OPEN` (Release) after CUDA began the capture,
///   holding the stream's capture slot (so epochs are taken one at a time).
/// * A kernel launch loads the word (Acquire) before it enqueues; if that
///   was `epoch | OPEN`, the capture had begun before the launch, and once
///   the launch succeeded it stores `epoch | OPEN | NONEMPTY` (Release).
/// * End loads the word (Acquire) before CUDA ends the capture: only
///   `epoch | OPEN | NONEMPTY` of its own epoch says a launch went in (its
///   store happened before the load, so its enqueue came before the end,
///   into the capture). Anything else says nothing, and the emptiness
///   check asks CUDA. It then clears `OPEN`: a launch that finds it clear
///   looks for no capture to keep its function for.
///
/// A store that comes late (a launch that loaded the word, then lost the
/// CPU) can only overwrite the word with an older epoch's, which no later
/// end matches: it costs the shortcut, never a wrong answer. Launches made
/// outside graphcore, on other streams joined to the capture, or through
/// another graphcore handle of the same `CUstream`, mark nothing.
#[derive(Default)]
#[repr(C)]
struct CaptureMark {
    /// What launches read: first (`repr(C)`).
    word: AtomicU64,
    /// Epochs taken so far (changed by begins only, under the slot lock).
    epochs: AtomicU64,
}

impl CaptureMark {
    const OPEN: u64 = 1;
    const NONEMPTY: u64 = 2;

    /// Opens the next epoch (called holding the capture slot, once CUDA
    /// began the capture); returns the word for [`close`](Self::close).
    fn open(&self) -> u64 {
        let epoch = self.epochs.load(Ordering::Relaxed) + 1;
        self.epochs.store(epoch, Ordering::Relaxed);
        let word = epoch << 2 | Self::OPEN;
        self.word.store(word, Ordering::Release);
        word
    }

    /// The word a launch sees before it enqueues.
    #[inline]
    fn seen(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    /// After a launch that succeeded having seen `seen`: marks its capture
    /// not empty (once).
    #[inline]
    fn launched(&self, seen: u64) {
        if seen & (Self::OPEN | Self::NONEMPTY) == Self::OPEN {
            self.word.store(seen | Self::NONEMPTY, Ordering::Release);
        }
    }

    /// Whether a launch went into the capture that opened `opened` (called
    /// before CUDA ends it). Clears the open bit, so that launches after the capture do not look
    /// for it (one that loaded the word before may set it again: then a
    /// later launch only finds no capture open).
    fn close(&self, opened: u64) -> bool {
        let word = self.word.load(Ordering::Acquire);
        self.word.store(word & !Self::OPEN, Ordering::Release);
        word == opened | Self::NONEMPTY
    }
}

impl Stream {
    /// Creates a non-blocking stream owned by graphcore (default priority).
    pub fn new(ctx: &Context) -> Result<Stream> {
        Self::with_priority(ctx, 0)
    }

    /// Creates a non-blocking stream owned by graphcore whose work the GPU
    /// schedules by `priority`: lower numbers are higher priorities, within
    /// [`Stream::priority_range`] (anything outside is InvalidArgument
    /// naming the range). Kernels captured on it keep the priority as a
    /// node attribute (used by execs instantiated with
    /// `instantiate_flags::USE_NODE_PRIORITY`).
    pub fn with_priority(ctx: &Context, priority: i32) -> Result<Stream> {
        let (least, greatest) = Self::priority_range(ctx)?;
        ensure_arg!(
            (greatest..=least).contains(&priority),
            "priority {priority} is outside device {}'s stream priorities, {least} (least) to {greatest} (greatest)",
            ctx.ordinal()
        );
        let owned = Owned::new(ds::create(priority)?, ctx.primary());
        Self::from_parts(ctx, owned.raw(), Some(owned))
    }

    /// The stream priorities of `ctx`'s device: `(least, greatest)`, the
    /// greatest priority being the lowest number (`(0, -5)` on recent GPUs).
    pub fn priority_range(ctx: &Context) -> Result<(i32, i32)> {
        ctx.bind()?;
        ds::priority_range()
    }

    /// Borrows a `CUstream` (or `cudaStream_t`, the same handle) the caller
    /// owns; graphcore never destroys it. NULL is the legacy default stream.
    ///
    /// # Safety
    /// `raw` must be a stream of `ctx`'s device that stays alive for as long
    /// as this value (and anything that captured or launched on it) is used.
    pub unsafe fn wrap(ctx: &Context, raw: CUstream) -> Result<Stream> {
        ctx.bind()?;
        Self::from_parts(ctx, raw, None)
    }

    fn from_parts(ctx: &Context, raw: CUstream, owned: Option<Owned<CUstream>>) -> Result<Stream> {
        let ev = Owned::new(ds::event_create(false)?, ctx.primary());
        Ok(Stream {
            inner: Arc::new(StreamInner {
                ctx: ctx.clone(),
                raw: Shared::new(raw),
                owned,
                join_event: Mutex::new(ev),
                capture: Mutex::new(None),
                capture_mark: CaptureMark::default(),
            }),
        })
    }

    /// The stream's context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The raw `CUstream` (usable as a `cudaStream_t`).
    pub fn raw(&self) -> CUstream {
        self.inner.raw.raw()
    }

    /// True when this is a borrowed stream.
    pub fn is_borrowed(&self) -> bool {
        self.inner.owned.is_none()
    }

    /// Makes this stream wait for all work enqueued on `other` so far
    /// (an event recorded on `other`, waited on here). Works while either
    /// stream captures: that is how a second stream joins a capture (fork)
    /// and how it rejoins (join).
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        self.inner.ctx.ensure_same(
            "the waiting stream",
            &other.inner.ctx,
            "the stream it waits for",
        )?;
        if self.same(other) {
            return Ok(());
        }
        self.inner.ctx.bind()?;
        let ev = lock(&other.inner.join_event);
        let r = ds::event_record(ev.raw(), other.raw(), false)
            .and_then(|_| ds::wait_event(self.raw(), ev.raw(), false));
        drop(ev);
        self.note(StreamOp::WaitStream, r)
    }

    /// Records `event` on this stream: it then stands for the work enqueued
    /// here so far. While the stream captures, a plain record marks a point
    /// of the capture (another stream waiting on it joins the capture);
    /// with `external` the capture gets an event record node instead, and
    /// each replay records the event (a capture begun on this stream keeps
    /// the event alive for its graph). `external` is ignored outside
    /// capture.
    pub fn record_event(&self, event: &Event, external: bool) -> Result<()> {
        self.inner
            .ctx
            .ensure_same("the stream", event.context(), "the event")?;
        self.inner.ctx.bind()?;
        let r = self.external_in_capture(external).and_then(|ext| {
            ds::event_record(event.raw(), self.raw(), ext)?;
            self.keep_for_capture(event, ext);
            if !ext {
                event.note_record(self.capture_probe());
            }
            Ok(())
        });
        self.note(StreamOp::EventRecord, r)
    }

    /// While this stream takes part in a capture, a probe saying whether
    /// that capture is still open (for an event recorded in it); `None`
    /// outside capture.
    fn capture_probe(&self) -> Option<CaptureProbe> {
        let id = ds::capture_id(self.raw()).ok().flatten()?;
        let stream = Arc::downgrade(&self.inner);
        Some(Arc::new(move || {
            stream
                .upgrade()
                .is_some_and(|s| ds::capture_id(s.raw.raw()).ok().flatten() == Some(id))
        }))
    }

    /// Makes this stream wait for the work `event`'s latest record stands
    /// for. While the stream captures, a plain wait on an event recorded in
    /// the same capture is a dependency (a fork or join); with `external`
    /// the capture gets an event wait node instead, and each replay waits
    /// for the event's latest record then (a capture begun on this stream
    /// keeps the event alive for its graph). `external` is ignored outside
    /// capture.
    pub fn wait_event(&self, event: &Event, external: bool) -> Result<()> {
        self.inner
            .ctx
            .ensure_same("the stream", event.context(), "the event")?;
        self.inner.ctx.bind()?;
        let r = self.external_in_capture(external).and_then(|ext| {
            ds::wait_event(self.raw(), event.raw(), ext)?;
            self.keep_for_capture(event, ext);
            Ok(())
        });
        self.note(StreamOp::WaitEvent, r)
    }

    /// When an event node of `event` was made (`node`) in the capture
    /// graphcore opened on this stream, keeps the event for its graph.
    fn keep_for_capture(&self, event: &Event, node: bool) {
        if node {
            if let Some(open) = self.capture_slot().as_mut() {
                open.events.push(event.clone());
            }
        }
    }

    /// `external`, unless the stream is not capturing (CUDA refuses the
    /// external flags outside capture).
    fn external_in_capture(&self, external: bool) -> Result<bool> {
        Ok(external && ds::capture_status(self.raw())? != ds::CaptureStatus::None)
    }

    /// Enqueues a call of `f(user_data)` on a CPU thread of the driver,
    /// after the work enqueued so far; later work waits for it to return.
    /// Captured as a host node while the stream captures.
    ///
    /// # Safety
    /// `f` must be safe to call with `user_data` when the call runs (each
    /// time a captured graph runs), and must not call CUDA.
    pub unsafe fn launch_host_func(&self, f: HostFn, user_data: *mut c_void) -> Result<()> {
        self.inner.ctx.bind()?;
        let r = ds::launch_host_func(self.raw(), f, user_data);
        self.note(StreamOp::HostFunc, r)
    }

    /// Blocks until the stream's work is done. On a capturing stream this
    /// fails and invalidates the capture (as CUDA does); the capture's end
    /// then names this call.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.ctx.bind()?;
        let r = ds::synchronize(self.raw());
        self.note(StreamOp::Synchronize, r)
    }

    /// True while the stream is capturing (through graphcore or not).
    pub fn is_capturing(&self) -> Result<bool> {
        self.inner.ctx.bind()?;
        Ok(ds::capture_status(self.raw())? != ds::CaptureStatus::None)
    }

    /// The slot of the capture graphcore opened on this stream.
    pub(crate) fn capture_slot(&self) -> MutexGuard<'_, Option<OpenCapture>> {
        lock(&self.inner.capture)
    }

    /// Opens the capture mark for `open`, a capture CUDA just began (called
    /// holding the capture slot).
    pub(crate) fn open_mark(&self, open: &mut OpenCapture) {
        open.mark = self.inner.capture_mark.open();
    }

    /// Whether a kernel launch is known to have gone into `open`, the
    /// capture being ended (called before CUDA ends it).
    pub(crate) fn close_mark(&self, open: &OpenCapture) -> bool {
        self.inner.capture_mark.close(open.mark)
    }

    /// Makes the kernel launch `launch` on this stream, noting its result
    /// as [`note`](Self::note) does and marking a capture it went into.
    #[inline]
    pub(crate) fn launch_noted(
        &self,
        op: StreamOp,
        launch: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let seen = self.inner.capture_mark.seen();
        let r = launch();
        if r.is_ok() {
            self.inner.capture_mark.launched(seen);
        }
        self.note(op, r)
    }

    /// After a launch into the capture graphcore has open on this stream
    /// (if one is), keeps `value` (what the launch needs loaded: a
    /// function, named by `key`) for the capture's graph, once per key.
    /// Costs nothing when no capture is open (one load of the capture
    /// mark).
    pub(crate) fn keep_for_capture_of(
        &self,
        key: usize,
        value: impl FnOnce() -> Box<dyn std::any::Any + Send>,
    ) {
        if self.inner.capture_mark.seen() & CaptureMark::OPEN == 0 {
            return;
        }
        if let Some(open) = self.capture_slot().as_mut() {
            if !open.kept.iter().any(|(k, _)| *k == key) {
                open.kept.push((key, value()));
            }
        }
    }

    /// Passes `r` through; when it is a capture error and this stream has a
    /// graphcore capture open, remembers `op` as what broke the capture.
    #[inline]
    pub(crate) fn note<T>(&self, op: StreamOp, r: Result<T>) -> Result<T> {
        r.map_err(|e| self.noted(op, e))
    }

    /// The error path of [`note`](Self::note), out of line.
    #[cold]
    #[inline(never)]
    fn noted(&self, op: StreamOp, e: Error) -> Error {
        if !driver::is_capture_error(&e) {
            return e;
        }
        if let Some(open) = self.capture_slot().as_mut() {
            open.breaker.get_or_insert_with(|| (op, e.clone()));
        }
        if e.cuda_result() == Some(CAPTURE_INVALIDATED) {
            return Error::new(
                ErrorKind::Capture,
                format!(
                    "the stream's capture was invalidated before {op} (by a call outside \
                     graphcore: CUDA does not say which) ({}); end the capture to start over",
                    e.message()
                ),
            );
        }
        Error::new(
            ErrorKind::Capture,
            format!(
                "{op} is not permitted while the stream captures ({}); the capture is now invalid",
                e.message()
            ),
        )
    }

    /// True when `self` and `other` are the same stream object.
    pub fn same(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::CaptureMark;

    #[test]
    fn the_capture_mark_says_not_empty_only_for_a_launch_inside_its_own_capture() {
        let m = CaptureMark::default();
        // An eager launch before any capture, then a capture with nothing.
        let eager = m.seen();
        m.launched(eager);
        let first = m.open();
        assert!(!m.close(first));
        // A launch that saw the capture open, twice.
        let second = m.open();
        let seen = m.seen();
        m.launched(seen);
        m.launched(m.seen());
        assert!(m.close(second));
        // A launch that saw `second` open stores late, in the next capture:
        // it says nothing of that one, and a launch in it that sees the
        // stale word marks nothing either (a lost shortcut, not a wrong yes).
        let third = m.open();
        m.launched(seen);
        m.launched(m.seen());
        assert!(!m.close(third));
        // The capture after it is marked again.
        let fourth = m.open();
        m.launched(m.seen());
        assert!(m.close(fourth));
    }
}
