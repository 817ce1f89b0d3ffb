//! Events: mark a point in a stream's work (gc_event_record), make another
//! stream wait for it (gc_stream_wait_event), wait for it on the host
//! (gc_event_synchronize, gc_event_query) and time the work between two
//! records (gc_event_elapsed_ms). gc_event_wrap borrows a cudaEvent_t you
//! already have, so a graphcore stream can wait on your own events.
//!
//! Under capture (CUDA's rules, cuEventRecord and cuStreamWaitEvent during
//! stream capture): a plain record on a capturing stream marks a point of
//! the capture, and a stream that waits on that event joins the capture
//! (fork; the capturing stream must wait on it again before gc_capture_end,
//! join); no node is made and the event itself is not recorded by replays.
//! With GC_EVENT_EXTERNAL the capture gets an event record node (each replay
//! records the event: time graph work, or order other streams after it) or
//! an event wait node (each replay waits for the event's latest record:
//! order a graph after eager work). A graph captured by gc_capture_begin
//! keeps the events of the event nodes made on its capturing stream alive
//! (destroying their handles is safe); for an event node made on a stream
//! that joined the capture, keep the event until the graph's execs are
//! gone. Querying, synchronizing on or timing an event whose latest record
//! (gc_event_record without GC_EVENT_EXTERNAL) was made in a capture still
//! open is GC_ERROR_CAPTURE: graphcore refuses it before asking CUDA, so
//! the capture stays valid and can end. (A record made with the CUDA API on
//! the raw event is not seen: CUDA then refuses the call, as GC_ERROR_CUDA
//! or GC_ERROR_CAPTURE, and may invalidate the capture, which
//! gc_capture_end then reports.)

use crate::args::Out;
use crate::context::{context, gc_context};
use crate::handle::Registry;
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream};
use graphcore_core::{Error, Event};
use std::ffi::{c_int, c_void};

/// A CUDA event: created by graphcore, or a borrowed CUevent/cudaEvent_t.
///
/// Ownership: the caller destroys the handle with gc_event_destroy. An
/// event graphcore created is destroyed once the handle is gone (records
/// already enqueued still complete); a borrowed one stays the caller's and
/// is never destroyed by graphcore.
///
/// Thread safety: every call may run concurrently with any other on the
/// same event (recording it on two streams at once leaves it standing for
/// either record, as in CUDA), except gc_event_destroy, which must not race
/// with other calls on the handle.
pub struct gc_event;

pub(crate) static EVENTS: Registry<Event> = Registry::new(9, "gc_event");

/// The event behind a handle (`arg` names the parameter in errors).
pub(crate) fn event(h: *mut gc_event, arg: &str) -> graphcore_core::Result<Event> {
    EVENTS.get(h as u64, arg)
}

/// Flags of gc_event_create (OR them; 0 is the default: an event that
/// records times).
pub type gc_event_flags = u32;
/// An event without timing: cheaper to record and wait on, but
/// gc_event_elapsed_ms refuses it.
pub const GC_EVENT_DISABLE_TIMING: gc_event_flags = 1;

/// Flags of gc_event_record and gc_stream_wait_event (0 or this).
pub type gc_event_capture_flags = u32;
/// While the stream captures, make an event record (or wait) node instead
/// of an in-capture dependency; ignored when the stream is not capturing.
pub const GC_EVENT_EXTERNAL: gc_event_capture_flags = 1;

fn external(flags: gc_event_capture_flags) -> graphcore_core::Result<bool> {
    if flags & !GC_EVENT_EXTERNAL != 0 {
        return Err(Error::invalid_argument(format!(
            "unknown flags 0x{flags:x} (only GC_EVENT_EXTERNAL is defined)"
        )));
    }
    Ok(flags == GC_EVENT_EXTERNAL)
}

/// Creates an event owned by graphcore (flags: GC_EVENT_DISABLE_TIMING, or
/// 0 for an event that records times); destroy it with gc_event_destroy.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (unknown flags),
/// GC_ERROR_OUT_OF_MEMORY (the driver or the handle table is out of memory).
#[no_mangle]
pub extern "C" fn gc_event_create(
    ctx: *mut gc_context,
    flags: gc_event_flags,
    event: *mut *mut gc_event,
) -> gc_status {
    boundary("gc_event_create", || {
        let out = Out::new(event, "event")?;
        if flags & !GC_EVENT_DISABLE_TIMING != 0 {
            return Err(Error::invalid_argument(format!(
                "unknown flags 0x{flags:x} (only GC_EVENT_DISABLE_TIMING is defined)"
            )));
        }
        let e = Event::new(&context(ctx)?, flags & GC_EVENT_DISABLE_TIMING == 0)?;
        out.set(EVENTS.insert(e)? as *mut gc_event);
        Ok(())
    })
}

/// Borrows `raw`, a CUevent or cudaEvent_t of ctx's device that the caller
/// owns and keeps alive while graphcore uses it (graphcore never destroys
/// it; gc_event_destroy drops only the handle). graphcore cannot check
/// that raw is a live event of ctx's device: anything else is undefined
/// behaviour in CUDA. Whether it records times is the caller's choice at
/// creation; gc_event_elapsed_ms reports GC_ERROR_CUDA if it does not.
/// Errors: common, and GC_ERROR_OUT_OF_MEMORY (the handle table),
/// GC_ERROR_DEVICE_FAULT (making ctx current).
#[no_mangle]
pub extern "C" fn gc_event_wrap(
    ctx: *mut gc_context,
    raw: *mut c_void,
    event: *mut *mut gc_event,
) -> gc_status {
    boundary("gc_event_wrap", || {
        let out = Out::new(event, "event")?;
        let ctx = context(ctx)?;
        // SAFETY: the caller vouches for `raw` as documented.
        let e = unsafe { Event::wrap(&ctx, raw as _) }?;
        out.set(EVENTS.insert(e)? as *mut gc_event);
        Ok(())
    })
}

/// Writes the underlying CUevent (usable as a cudaEvent_t) to *raw, for
/// CUDA calls graphcore does not wrap. It stays valid while the gc_event
/// lives; do not destroy it.
/// Errors: GC_ERROR_INVALID_ARGUMENT (event or raw is NULL),
/// GC_ERROR_INVALID_HANDLE (event destroyed).
#[no_mangle]
pub extern "C" fn gc_event_raw(event: *mut gc_event, raw: *mut *mut c_void) -> gc_status {
    boundary("gc_event_raw", || {
        let out = Out::new(raw, "raw")?;
        out.set(self::event(event, "event")?.raw() as *mut c_void);
        Ok(())
    })
}

/// Records `event` on `stream`: the event then stands for the work
/// enqueued on the stream so far (a later record replaces it). flags: 0, or
/// GC_EVENT_EXTERNAL to make an event record node while the stream
/// captures (see this section's text for records under capture). Event and
/// stream must be of one context.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (unknown flags),
/// GC_ERROR_CAPTURE (CUDA refused the record under capture; the capture is
/// invalid now).
#[no_mangle]
pub extern "C" fn gc_event_record(
    event: *mut gc_event,
    stream: *mut gc_stream,
    flags: gc_event_capture_flags,
) -> gc_status {
    boundary("gc_event_record", || {
        let e = self::event(event, "event")?;
        let s = self::stream(stream, "stream")?;
        s.record_event(&e, external(flags)?)
    })
}

/// Makes `stream` wait for the work `event`'s latest record stands for (an
/// event never recorded: no wait). The event may be a borrowed one the
/// caller records with the CUDA API. flags: 0, or GC_EVENT_EXTERNAL to make
/// an event wait node while the stream captures (a plain wait under
/// capture must be on an event recorded in the same capture: a fork or a
/// join). Event and stream must be of one context.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (unknown flags),
/// GC_ERROR_CAPTURE (CUDA refused the wait under capture, e.g. a plain wait on
/// an event recorded outside it; the capture is invalid now).
#[no_mangle]
pub extern "C" fn gc_stream_wait_event(
    stream: *mut gc_stream,
    event: *mut gc_event,
    flags: gc_event_capture_flags,
) -> gc_status {
    boundary("gc_stream_wait_event", || {
        let s = self::stream(stream, "stream")?;
        let e = self::event(event, "event")?;
        s.wait_event(&e, external(flags)?)
    })
}

/// Blocks until the work the event's latest record stands for is done (at
/// once for an event never recorded).
/// Errors: common, and GC_ERROR_CAPTURE (its latest record was made in a
/// capture still open), GC_ERROR_DEVICE_FAULT (the work faulted), GC_ERROR_CUDA
/// (another failure).
#[no_mangle]
pub extern "C" fn gc_event_synchronize(event: *mut gc_event) -> gc_status {
    boundary("gc_event_synchronize", || {
        self::event(event, "event")?.synchronize()
    })
}

/// Writes 1 to *done when the work the event's latest record stands for is
/// done (or it was never recorded), 0 when it is still running; never
/// blocks.
/// Errors: common, and GC_ERROR_CAPTURE (its latest record was made in a
/// capture still open), GC_ERROR_DEVICE_FAULT (the work faulted), GC_ERROR_CUDA
/// (another failure).
#[no_mangle]
pub extern "C" fn gc_event_query(event: *mut gc_event, done: *mut c_int) -> gc_status {
    boundary("gc_event_query", || {
        let out = Out::new(done, "done")?;
        out.set(self::event(event, "event")?.is_done()? as c_int);
        Ok(())
    })
}

/// Writes the milliseconds from `start`'s latest record to `end`'s to *ms
/// (about half a microsecond resolution; negative when end was recorded
/// first). Both must record times, be of one context, and be done.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (an event made with
/// GC_EVENT_DISABLE_TIMING), GC_ERROR_INVALID_STATE (the work of either is not
/// done yet: synchronize on end first), GC_ERROR_CAPTURE (a record made in a
/// capture still open), GC_ERROR_CUDA (e.g. an event never recorded, or a
/// borrowed event without timing).
#[no_mangle]
pub extern "C" fn gc_event_elapsed_ms(
    start: *mut gc_event,
    end: *mut gc_event,
    ms: *mut f32,
) -> gc_status {
    boundary("gc_event_elapsed_ms", || {
        let out = Out::new(ms, "ms")?;
        let (s, e) = (self::event(start, "start")?, self::event(end, "end")?);
        out.set(Event::elapsed_ms(&s, &e)?);
        Ok(())
    })
}

/// Destroys the handle; an owned event is destroyed with it (records
/// already enqueued still complete), a borrowed one never is. NULL is a
/// no-op.
/// Errors: GC_ERROR_INVALID_HANDLE (event already destroyed, or not an
/// event).
#[no_mangle]
pub extern "C" fn gc_event_destroy(event: *mut gc_event) -> gc_status {
    boundary("gc_event_destroy", || {
        EVENTS.remove(event as u64, "event")?;
        Ok(())
    })
}
