//! Typed launches of the built-in kernels: each picks the launch
//! configuration, checks sizes and pointers (0, overflow, misalignment,
//! overlapping outputs: GC_ERROR_INVALID_ARGUMENT with a message, and
//! nothing is launched), and works eagerly or under capture.
//!
//! Common errors: in this header, `Errors: common` means these (instead of
//! the status section's): GC_ERROR_INVALID_ARGUMENT (stream or a pointer
//! argument NULL, n or a size 0 or too large, a pointer not 4-byte
//! aligned; nothing is launched), GC_ERROR_INVALID_HANDLE (stream destroyed
//! or not a stream), GC_ERROR_CAPTURE (the stream's capture refused a
//! launch; the capture is now invalid), GC_ERROR_OUT_OF_MEMORY or
//! GC_ERROR_CUDA (loading the built-in kernels on first use, or a launch,
//! failed), GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context
//! is unusable).
//!
//! Every export here is one wrapper: its signature (spelled out for
//! cbindgen) and an `op!` body naming the typed operation of
//! `graphcore_kernels::ops` it runs; the body takes the export's name from
//! the function it is in, so the name is written once.
//!
//! Programmatic dependent launch: on GPUs of compute capability 9.0 with a
//! CUDA 12.3 driver, the kernels (their compute_90 PTX) wait on the kernel
//! before them and trigger the one after, and these exports launch them
//! with programmatic stream serialization, so a kernel's launch and weight
//! prefetch overlap the previous kernel's tail; captured, consecutive ops
//! are joined by programmatic edges. Cooperative launches (gc_op_mlp's
//! fused form, gc_op_mlp2_mse_step's first launch) and GEMMs whose grid
//! fills the SMs (gc_op_linear beyond 256 rows, and the backward and
//! weight-gradient GEMMs of large layers) stay fully ordered.
//! Results are bitwise the same either way. The environment variable
//! GC_PDL=0, read once per process, turns these launches off (plain
//! launches, full edges), e.g. for A/B measurements.
//!
//! Thread safety: any number of threads may launch on any streams.

use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream};
use graphcore_core::kernels::Call;
use graphcore_core::{launch_op, Context, Error, Stream};

mod elementwise;
#[cfg(test)]
mod gen;
mod linear;
mod loss;
mod mlp;
mod step;
mod vendor;

pub use elementwise::*;
pub use linear::*;
pub use loss::*;
pub use mlp::*;
pub use step::*;
pub use vendor::*;

pub(crate) fn p<T>(ptr: *const T) -> u64 {
    ptr as u64
}

/// The name of the export whose body this is (the last segment of the path
/// of an item declared in it), so that a wrapper spells its name once.
macro_rules! this_export {
    () => {{
        fn here() {}
        let path = std::any::type_name_of_val(&here);
        let path = path.strip_suffix("::here").unwrap_or(path);
        path.rsplit("::").next().unwrap_or(path)
    }};
}

/// The body of a gc_op_* export: `op!(stream, |sms| plan)` resolves the
/// stream, plans the launch for its device's multiprocessor count and
/// launches it, inside the boundary of the export it is written in.
macro_rules! op {
    ($stream:expr, $plan:expr) => {
        $crate::ops::launch($crate::ops::this_export!(), $stream, $plan)
    };
}
pub(crate) use {op, this_export};

/// What `op!` runs: the boundary of export `func` around resolving
/// `stream`, `plan(sms)` and the launch.
pub(crate) fn launch<E: Into<Error>>(
    func: &'static str,
    stream: *mut gc_stream,
    plan: impl FnOnce(u32) -> Result<Call, E>,
) -> gc_status {
    launch_in(func, stream, |ctx| plan(ctx.sm_count()))
}

/// [`launch`] with the plan given the stream's whole context (for a choice
/// that depends on the device, such as its compute capability).
fn launch_in<E: Into<Error>>(
    func: &'static str,
    stream: *mut gc_stream,
    plan: impl FnOnce(&Context) -> Result<Call, E>,
) -> gc_status {
    boundary(func, || {
        let s = self::stream(stream, "stream")?;
        let call = plan(s.context()).map_err(Into::into)?;
        // SAFETY: the C caller promises (gc_op_* docs) that every pointer it
        // passed is device memory of the stream's context holding the
        // elements the op reads or writes, alive until the launch has run
        // (or, captured, for as long as the graph runs).
        unsafe { launch_op(&s, Ok(call)) }
    })
}

/// What `op!` runs for an operation of several launches (in order, on the
/// stream; a failed launch stops the rest).
fn launch_all<E: Into<Error>>(
    func: &'static str,
    stream: *mut gc_stream,
    plan: impl FnOnce(&Context) -> Result<Vec<Call>, E>,
) -> gc_status {
    boundary(func, || {
        let s = self::stream(stream, "stream")?;
        let calls = plan(s.context()).map_err(Into::into)?;
        // SAFETY: as in `launch`: the C caller promises that every pointer
        // it passed is device memory of the stream's context, alive while
        // the launches (or the captured graph) run.
        unsafe { launch_calls(&s, calls) }
    })
}

/// Launches graphcore's `calls` in order on `s`, a failed launch stopping
/// the rest.
///
/// # Safety
/// As for `launch_op`, for each call: every pointer it names is device
/// memory of the stream's context holding what it reads and writes, alive
/// while the launches (or the captured graph) run.
unsafe fn launch_calls(s: &Stream, calls: Vec<Call>) -> Result<(), Error> {
    for call in calls {
        // SAFETY: the caller vouches for every call's pointers.
        unsafe { launch_op(s, Ok(call)) }?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::gc_last_error;
    use std::ffi::CStr;

    #[test]
    fn export_names_come_from_the_function() {
        fn gc_op_example() -> &'static str {
            this_export!()
        }
        assert_eq!(gc_op_example(), "gc_op_example");
    }

    /// The message of a refused call names the export once.
    #[test]
    fn messages_carry_one_prefix() {
        let st = gc_op_scale(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null(),
            4,
            1.0,
        );
        assert_eq!(st, gc_status::GC_ERROR_INVALID_ARGUMENT);
        // SAFETY: gc_last_error returns a NUL-terminated string.
        let msg = unsafe { CStr::from_ptr(gc_last_error()) }.to_str().unwrap();
        assert_eq!(msg, "gc_op_scale: `stream` is NULL");
    }
}
