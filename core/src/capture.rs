//! Stream capture: begin and end on a stream, with a pool the capture's
//! allocations come from. A failed capture names the first graphcore call
//! that broke it, leaves the stream usable and rolls the pool back.

use crate::arg::{check_new, ArgDecl};
use crate::driver::conditional as dc;
use crate::driver::device::KeepCurrent;
use crate::driver::stream::{self as ds, CaptureMode, CaptureStatus};
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use crate::graph::Graph;
use crate::module::Function;
use crate::pool::{check_device_range, Pool};
use crate::stream::{CaptureTarget, OpenCapture, Stream, StreamOp};

const AFTER_FAILURE: &str =
    "the stream is usable for eager work and the pool is as it was before the capture began";

/// Begins capturing `stream`. With a pool, allocations from it on the
/// calling thread belong to the capture until it ends. Fails if the stream
/// is already capturing (through graphcore or not). Leaves the thread's
/// current context as it was.
pub fn begin_capture(stream: &Stream, pool: Option<&Pool>, mode: CaptureMode) -> Result<()> {
    let _keep = KeepCurrent::enter();
    open(stream, pool, || {
        stream
            .context()
            .open_capture(|| ds::begin_capture(stream.raw(), mode))?;
        Ok(None)
    })
}

/// Begins capturing `stream` into `body`, an empty conditional body (CUDA
/// 12.3, `cuStreamBeginCaptureToGraph`). End it with [`end_capture`] on the
/// same stream: the body then holds what was captured, and the pool memory
/// the capture allocated belongs to the outermost graph. Leaves the
/// thread's current context as it was.
pub fn begin_capture_into(
    stream: &Stream,
    body: &Graph,
    pool: Option<&Pool>,
    mode: CaptureMode,
) -> Result<()> {
    let _keep = KeepCurrent::enter();
    body.context()
        .ensure_same("the body", stream.context(), "the stream")?;
    // Held before CUDA begins: no holder can go, or be called, while the
    // capture writes (released when `into` drops, also on failure).
    let into = IntoBody::new(body.clone(), body.holders()?);
    open(stream, pool, move || {
        body.begin_capture_into(|raw| {
            // Beginning into a body is rare: the context is made current
            // for it, as for the other calls that change a graph.
            stream.context().bind()?;
            stream
                .context()
                .open_capture(|| dc::begin_capture_into(stream.raw(), raw, mode))
        })?;
        Ok(Some(Box::new(into) as Box<dyn CaptureTarget>))
    })
}

/// A capture into a conditional body: the body, and the graphs holding it,
/// kept alive and kept from driver calls until the capture ends or is
/// discarded (CUDA destroys a body with its holder, and the capture writes
/// into the body, which is part of each holder).
struct IntoBody {
    body: Graph,
    holders: Vec<Graph>,
}

impl IntoBody {
    fn new(body: Graph, holders: Vec<Graph>) -> IntoBody {
        Graph::hold_for_capture(&holders);
        IntoBody { body, holders }
    }
}

impl Drop for IntoBody {
    fn drop(&mut self) {
        Graph::release_from_capture(&self.holders);
    }
}

impl CaptureTarget for IntoBody {
    fn abandon(&self) {
        self.body.abandon_capture_into();
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

/// The checks and bookkeeping of both kinds of capture; `begin` starts
/// CUDA's capture and says which graph it adds to, if any.
fn open(
    stream: &Stream,
    pool: Option<&Pool>,
    begin: impl FnOnce() -> Result<Option<Box<dyn CaptureTarget>>>,
) -> Result<()> {
    let mut slot = stream.capture_slot();
    if slot.is_some() {
        return Err(Error::invalid_state(
            "the stream is already capturing: a capture was begun on it and not ended",
        ));
    }
    if let Some(p) = pool {
        p.context()
            .ensure_same("the pool", stream.context(), "the stream")?;
    }
    // No context is made current: CUDA begins and ends a capture in the
    // stream's context, whichever is current (as it launches; checked on
    // CUDA 13 drivers, see the header's "Device and context"). What binds
    // on the way (a body, a failure) is undone by the callers' KeepCurrent.
    // Dropped on failure below, the pool's capture rolls back.
    let mut open = OpenCapture::new(pool.map(Pool::begin_capture).transpose()?);
    // CUDA refuses to begin on a stream that captures already; only then is
    // the stream asked why (one driver call fewer on the way in).
    open.into = begin().map_err(|e| {
        let _ = stream.context().bind();
        if ds::capture_status(stream.raw()).is_ok_and(|st| st != CaptureStatus::None) {
            Error::invalid_state(
                "the stream is already capturing outside graphcore (a capture begun with the CUDA API, or a stream that joined another capture)",
            )
        } else {
            e
        }
    })?;
    stream.open_mark(&mut open);
    *slot = Some(open);
    Ok(())
}

/// Ends the capture begun with [`begin_capture`] on `stream` and returns
/// the graph (for [`begin_capture_into`], the body). A capture that was
/// invalidated, or that a joined stream did not rejoin, fails with
/// [`ErrorKind::Capture`] naming the cause; the pool is then rolled back
/// and the stream is out of capture mode (a body is left empty). Leaves
/// the thread's current context as it was.
pub fn end_capture(stream: &Stream) -> Result<Graph> {
    let _keep = KeepCurrent::enter();
    let mut open = stream.capture_slot().take().ok_or_else(|| {
        Error::invalid_state(
            "the stream is not capturing through graphcore: no capture was begun on it",
        )
    })?;
    let launched_into = stream.close_mark(&open);
    let ended = ds::end_capture(stream.raw());
    stream.context().close_capture();
    // Only reading a body back, and cleaning up after a failed capture,
    // make the context current (`_keep` puts the thread's back).
    match ended {
        Ok(_) if open.into.is_some() => {
            let into = open.into.take().expect("checked above");
            let into = into
                .into_any()
                .downcast::<IntoBody>()
                .expect("a capture's target is a body");
            stream.context().bind()?;
            let memory = open.pool.take().map(|p| p.end()).transpose()?;
            let functions = kept_functions(&mut open);
            into.body
                .end_capture_into(memory, std::mem::take(&mut open.events), functions)?;
            // The holders are released when `into` goes, after the body.
            Ok(into.body.clone())
        }
        Ok(raw) => {
            let memory = open.pool.take().map(|p| p.end()).transpose()?;
            let events = std::mem::take(&mut open.events);
            let args = std::mem::take(&mut open.args);
            let functions = kept_functions(&mut open);
            Ok(Graph::from_captured(
                stream.context(),
                raw,
                memory,
                events,
                args,
                functions,
                launched_into,
            ))
        }
        Err(e) => {
            // Best effort: the cleanup below runs either way.
            let _ = stream.context().bind();
            open.discard(stream.raw());
            let breaker = open.breaker().cloned();
            drop(open); // rolls the pool back
            Err(explain(e, breaker))
        }
    }
}

/// Declares `base .. base + bytes` an argument of the graph `stream` is
/// capturing (see [`crate::arg`]); returns its index (arguments are
/// numbered in declaration order). Without a graphcore capture open on the
/// stream this is [`ErrorKind::InvalidState`]; a range that is not device
/// memory of the stream's device, or overlaps an argument declared before,
/// is [`ErrorKind::InvalidArgument`].
pub fn declare_capture_arg(stream: &Stream, base: u64, bytes: usize, exact: bool) -> Result<usize> {
    declare_capture_rows_arg(stream, base, bytes, exact, false)
}

/// [`declare_capture_arg`], marking the range as the capture's rows when
/// `rows` is set ([`ArgDecl::rows`]: in a runner's exact-size capture, an
/// exact-size replay of n rows may bind n rows of it).
pub fn declare_capture_rows_arg(
    stream: &Stream,
    base: u64,
    bytes: usize,
    exact: bool,
    rows: bool,
) -> Result<usize> {
    let mut slot = stream.capture_slot();
    let open = slot.as_mut().ok_or_else(|| {
        Error::invalid_state(
            "the stream is not capturing through graphcore: no capture was begun on it",
        )
    })?;
    ensure_arg!(
        open.into.is_none(),
        "the stream is capturing into a conditional body: declare arguments while capturing \
         the graph that is instantiated (uses inside bodies are not bound)"
    );
    let d = ArgDecl {
        rows,
        ..ArgDecl::range(base, bytes, exact)
    };
    let index = check_new(&open.args, &d)?;
    stream.context().bind()?;
    check_device_range(stream.context(), "ptr", base, bytes)?;
    open.args.push(d);
    Ok(index)
}

/// Declares a scalar argument, marked by `marker`'s bytes (1 to 8, not all
/// zero; see [`crate::arg`]), of the graph `stream` is capturing; returns
/// its index, numbered with the range arguments. Launches captured with
/// the marker as a parameter's value are its uses. Without a graphcore
/// capture open on the stream this is [`ErrorKind::InvalidState`]; a bad
/// marker, one declared before with the same size, or a capture into a
/// conditional body is [`ErrorKind::InvalidArgument`].
pub fn declare_capture_scalar_arg(stream: &Stream, marker: &[u8]) -> Result<usize> {
    let d = ArgDecl::scalar(marker)?;
    let mut slot = stream.capture_slot();
    let open = slot.as_mut().ok_or_else(|| {
        Error::invalid_state(
            "the stream is not capturing through graphcore: no capture was begun on it",
        )
    })?;
    ensure_arg!(
        open.into.is_none(),
        "the stream is capturing into a conditional body: declare arguments while capturing \
         the graph that is instantiated (uses inside bodies are not bound)"
    );
    let index = check_new(&open.args, &d)?;
    open.args.push(d);
    Ok(index)
}

/// Ends, and discards, the capture begun with [`begin_capture`] on
/// `stream`, as a failed capture is rolled back: the stream leaves capture
/// mode, the blocks the capture allocated from its pool are freed and the
/// pages mapped for it unmapped. Without a graphcore capture open this is
/// [`ErrorKind::InvalidState`].
pub(crate) fn abort_capture(stream: &Stream) -> Result<()> {
    let mut open = stream
        .capture_slot()
        .take()
        .ok_or_else(|| Error::invalid_state("the stream is not capturing through graphcore"))?;
    stream.context().bind()?;
    open.discard(stream.raw());
    stream.context().close_capture();
    drop(open); // rolls the pool back
    Ok(())
}

/// The functions the capture's launches kept loaded for its graph (see
/// [`Stream::keep_for_capture_of`]).
fn kept_functions(open: &mut OpenCapture) -> Vec<Function> {
    open.kept
        .drain(..)
        .filter_map(|(_, kept)| kept.downcast::<Function>().ok().map(|f| *f))
        .collect()
}

/// The message for a capture that failed at its end.
fn explain(e: Error, breaker: Option<(StreamOp, Error)>) -> Error {
    use cudarc::driver::sys::CUresult as R;
    let code = e.cuda_result().unwrap_or(0);
    let why = if code == R::CUDA_ERROR_STREAM_CAPTURE_UNJOINED as u32 {
        "a stream joined the capture (it waited on the capturing stream) and did not rejoin it: \
         make the capturing stream wait on that stream before the capture ends"
            .to_string()
    } else if code == R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED as u32 {
        invalidated(breaker.as_ref().map(|(op, e)| (op.to_string(), e)))
    } else {
        e.message().to_string()
    };
    Error::from_cuda(ErrorKind::Capture, code, format!("{why}; {AFTER_FAILURE}"))
}

/// Why a capture was invalidated, as far as it is known. CUDA names no
/// culprit (`cuStreamGetCaptureInfo` reports only that a capture is
/// invalidated): what is known is graphcore's own calls on the stream.
/// `breaker` is the first of them that failed with a capture error, and
/// its error: CUDA's `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` there means
/// the capture was invalid already (a call outside graphcore broke it
/// before that call); any other capture error means that call broke it.
fn invalidated(breaker: Option<(String, &Error)>) -> String {
    use cudarc::driver::sys::CUresult as R;
    const OUTSIDE: &str = "CUDA does not say which call: in thread-local mode (graphcore's \
         default) a capture-unsafe CUDA call on the capturing thread (a synchronize, \
         cudaMalloc, a query of a captured event or stream), or any legacy-stream call on the \
         capturing stream; in global mode also such a call on any other thread; relaxed mode \
         checks none";
    match breaker {
        Some((op, e))
            if e.cuda_result() == Some(R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED as u32) =>
        {
            format!(
                "the capture was invalidated by a call outside graphcore, made after the capture \
                 began and before {op} (graphcore's first call on the stream to find it \
                 invalid); {OUTSIDE}"
            )
        }
        Some((op, e)) => format!("the capture was invalidated by {op} ({})", e.message()),
        None => format!("the capture was invalidated by a call outside graphcore; {OUTSIDE}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::sys::CUresult as R;

    fn cuda(code: R) -> Error {
        Error::from_cuda(
            ErrorKind::Capture,
            code as u32,
            format!("cuLaunchKernel failed: {code:?}"),
        )
    }

    #[test]
    fn invalidation_says_what_is_known() {
        // graphcore's own call broke it: named, with CUDA's error.
        let m = invalidated(Some((
            "a stream synchronize".into(),
            &cuda(R::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
        )));
        assert!(m.starts_with("the capture was invalidated by a stream synchronize (cuLaunchKernel failed: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"), "{m}");
        // graphcore's call found it invalid already: the culprit came
        // before, outside graphcore, and CUDA does not name it.
        let m = invalidated(Some((
            "a kernel launch".into(),
            &cuda(R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
        )));
        assert!(m.contains("outside graphcore"), "{m}");
        assert!(
            m.contains("before a kernel launch (graphcore's first call"),
            "{m}"
        );
        assert!(m.contains("CUDA does not say which call"), "{m}");
        // No graphcore call failed.
        let m = invalidated(None);
        assert!(
            m.contains("outside graphcore") && m.contains("thread-local mode"),
            "{m}"
        );
        let e = explain(cuda(R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED), None);
        assert_eq!(e.kind(), ErrorKind::Capture);
        assert!(e.message().ends_with(AFTER_FAILURE));
    }
}
