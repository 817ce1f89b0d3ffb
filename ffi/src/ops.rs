//! Typed launches of the built-in kernels: each picks the launch
//! configuration, checks sizes and pointers (0, overflow, misalignment,
//! overlapping outputs: GC_ERROR_INVALID_ARGUMENT with a message, and
//! nothing is launched), and works eagerly or under capture.
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

use crate::args::Out;
use crate::context::{context, gc_context};
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream};
use graphcore_core::kernels::{ops, Call, SizeError};
use graphcore_core::{launch_op, Context, Error};
use std::ffi::{c_int, c_void};

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
        $crate::ops::launch(this_export!(), $stream, $plan)
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
        for call in plan(s.context()).map_err(Into::into)? {
            // SAFETY: as in `launch`: the C caller promises that every
            // pointer it passed is device memory of the stream's context,
            // alive while the launches (or the captured graph) run.
            unsafe { launch_op(&s, Ok(call)) }?;
        }
        Ok(())
    })
}

/// One operation of gc_op_chain: an opcode (GC_CHAIN_*) and its constant.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gc_chain_op {
    /// GC_CHAIN_FILL, GC_CHAIN_MUL, GC_CHAIN_ADD, GC_CHAIN_RELU, GC_CHAIN_MAX or GC_CHAIN_MIN.
    pub op: u32,
    /// The constant (ignored by GC_CHAIN_RELU).
    pub value: f32,
}

/// Chain opcode: v = value (a fill; the input is not read when first).
pub const GC_CHAIN_FILL: u32 = 1;
/// Chain opcode: v = v * value (bitwise as gc_op_scale).
pub const GC_CHAIN_MUL: u32 = 2;
/// Chain opcode: v = v + value (bitwise as gc_op_add_scalar).
pub const GC_CHAIN_ADD: u32 = 3;
/// Chain opcode: v = max(v, 0) (bitwise as gc_op_relu).
pub const GC_CHAIN_RELU: u32 = 4;
/// Chain opcode: v = max(v, value).
pub const GC_CHAIN_MAX: u32 = 5;
/// Chain opcode: v = min(v, value).
pub const GC_CHAIN_MIN: u32 = 6;
/// Most operations one gc_op_chain call applies.
pub const GC_CHAIN_MAX_OPS: u32 = 8;

const _: () = assert!(
    GC_CHAIN_FILL == ops::OP_FILL
        && GC_CHAIN_MUL == ops::OP_MUL
        && GC_CHAIN_ADD == ops::OP_ADD
        && GC_CHAIN_RELU == ops::OP_RELU
        && GC_CHAIN_MAX == ops::OP_MAX
        && GC_CHAIN_MIN == ops::OP_MIN
        && GC_CHAIN_MAX_OPS as usize == ops::MAX_CHAIN_OPS
);

/// The `count` operations at `list` as (opcode, constant) pairs; `list` is
/// read only when `count` is within GC_CHAIN_MAX_OPS.
fn chain_ops(list: *const gc_chain_op, count: u32) -> Result<Vec<(u32, f32)>, Error> {
    if count as usize > ops::MAX_CHAIN_OPS {
        return Err(SizeError::TooManyOps {
            count: count as usize,
            max: ops::MAX_CHAIN_OPS,
        }
        .into());
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    if list.is_null() {
        return Err(Error::invalid_argument(
            "`ops` is NULL but `count` is not 0",
        ));
    }
    // SAFETY: the caller passes `count` readable operations (at most
    // GC_CHAIN_MAX_OPS, checked above).
    let list = unsafe { std::slice::from_raw_parts(list, count as usize) };
    Ok(list.iter().map(|o| (o.op, o.value)).collect())
}

/// Applies up to GC_CHAIN_MAX_OPS operations to each of n elements in one
/// pass, in registers: `y[i] = op_last(... op_first(x[i]))`. ops holds count
/// operations (it may be NULL when count is 0: y = x); the caller keeps it,
/// and graphcore reads it only during the call.
/// Pointers: y and x are device memory of the stream's context (gc_pool_alloc
/// blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned
/// (float alignment); when both are 16-byte aligned the float4 path runs.
/// When the first operation is GC_CHAIN_FILL, x is not read and may be NULL.
/// In place: y == x is allowed; partly overlapping y and x are refused.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream or y NULL, x NULL unless the
/// first operation is a fill, ops NULL with count > 0, count >
/// GC_CHAIN_MAX_OPS (ops is then not read), an unknown opcode, n == 0 or
/// too large, a pointer not 4-byte aligned, y and x partly overlapping),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_chain(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
    ops: *const gc_chain_op,
    count: u32,
) -> gc_status {
    op!(stream, |sms| {
        let list = chain_ops(ops, count)?;
        Ok::<_, Error>(ops::chain(p(y), p(x), n, &list, sms)?)
    })
}

/// Writes to *bytes the workspace gc_op_mse needs for n elements on ctx's
/// device (a pure computation: nothing is allocated or launched).
/// Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
/// GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context),
/// GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_mse_workspace_bytes(
    ctx: *mut gc_context,
    n: u64,
    bytes: *mut u64,
) -> gc_status {
    boundary(this_export!(), || {
        let out = Out::new(bytes, "bytes")?;
        out.set(ops::mse_workspace_bytes(n, context(ctx)?.sm_count()));
        Ok(())
    })
}

/// Fills y[0..n) with value.
/// Pointers: y is device memory of the stream's context (gc_pool_alloc
/// blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned
/// (float alignment); 16-byte aligned takes the float4 path.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream or y NULL, n == 0 or too
/// large, y not 4-byte aligned), GC_ERROR_INVALID_HANDLE (stream destroyed
/// or not a stream), GC_ERROR_CAPTURE (the stream's capture refused the
/// launch; the capture is now invalid), GC_ERROR_OUT_OF_MEMORY or
/// GC_ERROR_CUDA (loading the built-in kernels on first use, or the launch,
/// failed), GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_fill(stream: *mut gc_stream, y: *mut f32, n: u64, value: f32) -> gc_status {
    op!(stream, |sms| ops::fill(p(y), n, value, sms))
}

/// y = x (n floats).
/// Pointers: y and x are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); when both are 16-byte aligned the
/// float4 path runs.
/// In place: y == x is allowed; partly overlapping y and x are refused.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, y or x NULL, n == 0 or too
/// large, a pointer not 4-byte aligned, y and x partly overlapping),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_copy(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
) -> gc_status {
    op!(stream, |sms| ops::copy(p(y), p(x), n, sms))
}

/// y = alpha * x (n floats).
/// Pointers: y and x are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); when both are 16-byte aligned the
/// float4 path runs.
/// In place: y == x is allowed; partly overlapping y and x are refused.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, y or x NULL, n == 0 or too
/// large, a pointer not 4-byte aligned, y and x partly overlapping),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_scale(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
    alpha: f32,
) -> gc_status {
    op!(stream, |sms| ops::scale(p(y), p(x), n, alpha, sms))
}

/// y = x + c (n floats).
/// Pointers: y and x are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); when both are 16-byte aligned the
/// float4 path runs.
/// In place: y == x is allowed; partly overlapping y and x are refused.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, y or x NULL, n == 0 or too
/// large, a pointer not 4-byte aligned, y and x partly overlapping),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_add_scalar(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
    c: f32,
) -> gc_status {
    op!(stream, |sms| ops::add_scalar(p(y), p(x), n, c, sms))
}

/// y = alpha * x + y (one fused multiply-add per element, n floats).
/// Pointers: y and x are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); when both are 16-byte aligned the
/// float4 path runs.
/// In place: y == x is allowed; partly overlapping y and x are refused.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, y or x NULL, n == 0 or too
/// large, a pointer not 4-byte aligned, y and x partly overlapping),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_axpy(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
    alpha: f32,
) -> gc_status {
    op!(stream, |sms| ops::axpy(p(y), p(x), n, alpha, sms))
}

/// z = x + y (n floats).
/// Pointers: z, x and y are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); when all are 16-byte aligned the
/// float4 path runs.
/// In place: z may equal x and/or y; z partly overlapping either is refused.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, z, x or y NULL, n == 0 or too
/// large, a pointer not 4-byte aligned, z partly overlapping an input),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_add(
    stream: *mut gc_stream,
    z: *mut f32,
    x: *const f32,
    y: *const f32,
    n: u64,
) -> gc_status {
    op!(stream, |sms| ops::add(p(z), p(x), p(y), n, sms))
}

/// z = x * y (n floats).
/// Pointers: z, x and y are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); when all are 16-byte aligned the
/// float4 path runs.
/// In place: z may equal x and/or y; z partly overlapping either is refused.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, z, x or y NULL, n == 0 or too
/// large, a pointer not 4-byte aligned, z partly overlapping an input),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_mul(
    stream: *mut gc_stream,
    z: *mut f32,
    x: *const f32,
    y: *const f32,
    n: u64,
) -> gc_status {
    op!(stream, |sms| ops::mul(p(z), p(x), p(y), n, sms))
}

/// y = max(x, 0) (n floats; NaN propagates, -0 becomes +0).
/// Pointers: y and x are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); when both are 16-byte aligned the
/// float4 path runs.
/// In place: y == x is allowed; partly overlapping y and x are refused.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, y or x NULL, n == 0 or too
/// large, a pointer not 4-byte aligned, y and x partly overlapping),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_relu(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
) -> gc_status {
    op!(stream, |sms| ops::relu(p(y), p(x), n, sms))
}

/// dx = x > 0 ? dy : 0 (n floats).
/// Pointers: dx, dy and x are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); when all are 16-byte aligned the
/// float4 path runs.
/// In place: dx may equal dy and/or x; dx partly overlapping either is
/// refused.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, dx, dy or x NULL, n == 0 or
/// too large, a pointer not 4-byte aligned, dx partly overlapping an input),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_relu_backward(
    stream: *mut gc_stream,
    dx: *mut f32,
    dy: *const f32,
    x: *const f32,
    n: u64,
) -> gc_status {
    op!(stream, |sms| ops::relu_backward(p(dx), p(dy), p(x), n, sms))
}

/// w -= lr * g (one fused multiply-add per element, n floats).
/// Pointers: w and g are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); when both are 16-byte aligned the
/// float4 path runs.
/// In place: w is updated in place; w and g must not overlap at all.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, w or g NULL, n == 0 or too
/// large, a pointer not 4-byte aligned, w and g overlapping),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_sgd(
    stream: *mut gc_stream,
    w: *mut f32,
    g: *const f32,
    n: u64,
    lr: f32,
) -> gc_status {
    op!(stream, |sms| ops::sgd(p(w), p(g), n, lr, sms))
}

/// `y[r][c] = x[r][c] + b[c]` for a row-major rows x cols matrix (rows *
/// cols < 2^32).
/// Pointers: y, x and b are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); the float4 path runs when all are
/// 16-byte aligned and cols % 4 == 0.
/// In place: y == x is allowed; y partly overlapping x, or overlapping b,
/// is refused.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, y, x or b NULL, rows or cols
/// 0, rows * cols >= 2^32, a pointer not 4-byte aligned, a refused
/// overlap), GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_bias_add(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    b: *const f32,
    rows: u32,
    cols: u32,
) -> gc_status {
    op!(stream, |sms| ops::bias_add(
        p(y),
        p(x),
        p(b),
        rows,
        cols,
        sms
    ))
}

/// gc_op_linear flag: ReLU after the bias.
pub const GC_LINEAR_RELU: u32 = 1;

/// gc_op_linear flag: multiply on the TF32 tensor cores (compute capability
/// 8.0 or later) where the GEMM runs, and from 129 rows on where n is wide
/// enough to pay: x and W are rounded to TF32 (10 mantissa bits, to
/// nearest) and the products summed in f32, so results differ from the f32
/// path by that rounding (each product off by up to about 2^-10 of its
/// size; measured: at most 6e-5 of the sum of |products| per output).
/// Deterministic all the same. Small batches, and GPUs older than compute
/// capability 8.0 (detected at run time), compute in f32 as without the
/// flag.
pub const GC_LINEAR_TF32: u32 = 2;

/// y = x * W^T + b, then ReLU with GC_LINEAR_RELU in flags: x is m x k, W
/// is n x k (PyTorch's layout), b has n floats (NULL: no bias), y is m x n,
/// all row-major. m <= 256 takes the small-batch path (K split across the
/// threads of each block; from 129 rows on only while n is too narrow for
/// the GEMM's tiles to fill the GPU); larger m the tiled GEMM, on the TF32
/// tensor cores with GC_LINEAR_TF32 (see there). On GPUs of compute
/// capability 9.0 and later, 33 to 256 rows with n * k >= 2^24, and more
/// rows where the GEMM's tiles would leave SMs idle, take a kernel that
/// splits k over the blocks of thread-block clusters (deterministic; the
/// result's bits depend on the shape and the GPU). flags: GC_LINEAR_RELU |
/// GC_LINEAR_TF32 (1 is ReLU as before the flags existed; any other bit is
/// refused). Every m * k, n * k and m * n must be below 2^32.
/// Pointers: y, x, w and b are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); float4 loads where k (and for the
/// GEMM path n) is a multiple of 4 and the pointers are 16-byte aligned.
/// In place: not allowed; y must not overlap x, w or b.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, y, x or w NULL, m, n or k 0,
/// a matrix of 2^32 elements or more, a pointer not 4-byte aligned, y
/// overlapping an input, an unknown flag), GC_ERROR_INVALID_HANDLE (stream
/// destroyed or not a stream), GC_ERROR_CAPTURE (the stream's capture
/// refused the launch; the capture is now invalid), GC_ERROR_OUT_OF_MEMORY
/// or GC_ERROR_CUDA (loading the built-in kernels on first use, or the
/// launch, failed), GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the
/// context is unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_linear(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    w: *const f32,
    b: *const f32,
    m: u32,
    n: u32,
    k: u32,
    flags: c_int,
) -> gc_status {
    launch_in(this_export!(), stream, |ctx| {
        let f = flags as u32;
        if f & !(GC_LINEAR_RELU | GC_LINEAR_TF32) != 0 {
            return Err(Error::invalid_argument(format!(
                "unknown flags {f:#x} (GC_LINEAR_RELU and GC_LINEAR_TF32 are the flags)"
            )));
        }
        let relu = f & GC_LINEAR_RELU != 0;
        let plan = if f & GC_LINEAR_TF32 != 0 && ctx.compute_capability().0 >= 8 {
            ops::linear_tf32
        } else {
            ops::linear
        };
        Ok(plan(
            p(y),
            p(x),
            p(w),
            p(b),
            m,
            n,
            k,
            relu,
            ctx.sm_count(),
            ctx.has_clusters(),
        )?)
    })
}

/// Input gradient of linear: dx = dy * W (dy m x n, W n x k, dx m x k,
/// row-major; every product of two of m, n, k below 2^32). m <= 64 takes
/// the small-batch path (except from 32 rows with n * k >= 2^24), larger m
/// (and those) the tiled GEMM; on GPUs with thread-block clusters (compute
/// capability 9.0), 33-256 rows with n * k >= 2^24 whose tiles of dx (64 x
/// 64 up to 64 rows, 128 x 64 above) fill the SMs in clusters of 2 take the
/// cluster split-K kernel instead, so its bits differ between Hopper and
/// older GPUs (each deterministic).
/// Pointers: dx, dy and w are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); float4 loads where the sizes are
/// multiples of 4 and the pointers 16-byte aligned.
/// In place: not allowed; dx must not overlap dy or w.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, dx, dy or w NULL, m, n or k 0,
/// a matrix of 2^32 elements or more, a pointer not 4-byte aligned, dx
/// overlapping an input), GC_ERROR_INVALID_HANDLE (stream destroyed or not
/// a stream), GC_ERROR_CAPTURE (the stream's capture refused the launch;
/// the capture is now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA
/// (loading the built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_linear_backward_input(
    stream: *mut gc_stream,
    dx: *mut f32,
    dy: *const f32,
    w: *const f32,
    m: u32,
    n: u32,
    k: u32,
) -> gc_status {
    launch_in(this_export!(), stream, |ctx| {
        ops::linear_backward_input(
            p(dx),
            p(dy),
            p(w),
            m,
            n,
            k,
            ctx.sm_count(),
            ctx.has_clusters(),
        )
    })
}

/// Weight gradient of linear: dw = dy^T * x (dy m x n, x m x k, dw n x k,
/// row-major, dw overwritten; every product of two of m, n, k below 2^32).
/// Pointers: dw, dy and x are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); float4 loads where the sizes are
/// multiples of 4 and the pointers 16-byte aligned.
/// In place: not allowed; dw must not overlap dy or x.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, dw, dy or x NULL, m, n or k 0,
/// a matrix of 2^32 elements or more, a pointer not 4-byte aligned, dw
/// overlapping an input), GC_ERROR_INVALID_HANDLE (stream destroyed or not
/// a stream), GC_ERROR_CAPTURE (the stream's capture refused the launch;
/// the capture is now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA
/// (loading the built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_linear_backward_weight(
    stream: *mut gc_stream,
    dw: *mut f32,
    dy: *const f32,
    x: *const f32,
    m: u32,
    n: u32,
    k: u32,
) -> gc_status {
    op!(stream, |sms| ops::linear_backward_weight(
        p(dw),
        p(dy),
        p(x),
        m,
        n,
        k,
        sms
    ))
}

/// Weight gradient and SGD fused: w -= lr * dy^T * x (dy m x n, x m x k, w
/// n x k, row-major), without materialising the gradient (bitwise equal to
/// gc_op_linear_backward_weight then gc_op_sgd).
/// Pointers: w, dy and x are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); float4 loads where the sizes are
/// multiples of 4 and the pointers 16-byte aligned.
/// In place: w is updated in place; it must not overlap dy or x.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, w, dy or x NULL, m, n or k 0,
/// a matrix of 2^32 elements or more, a pointer not 4-byte aligned, w
/// overlapping an input), GC_ERROR_INVALID_HANDLE (stream destroyed or not
/// a stream), GC_ERROR_CAPTURE (the stream's capture refused the launch;
/// the capture is now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA
/// (loading the built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_linear_weight_sgd(
    stream: *mut gc_stream,
    w: *mut f32,
    dy: *const f32,
    x: *const f32,
    m: u32,
    n: u32,
    k: u32,
    lr: f32,
) -> gc_status {
    op!(stream, |sms| ops::linear_weight_sgd(
        p(w),
        p(dy),
        p(x),
        m,
        n,
        k,
        lr,
        sms
    ))
}

/// Bias gradient: `db[c]` = sum over rows of `dy[r][c]` (dy row-major rows x
/// cols, rows * cols < 2^32), summed in a fixed order (deterministic).
/// Pointers: db and dy are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment).
/// In place: not allowed; db must not overlap dy.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, db or dy NULL, rows or cols 0,
/// rows * cols >= 2^32, a pointer not 4-byte aligned, db overlapping dy),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_bias_grad(
    stream: *mut gc_stream,
    db: *mut f32,
    dy: *const f32,
    rows: u32,
    cols: u32,
) -> gc_status {
    op!(stream, |sms| ops::bias_grad(p(db), p(dy), rows, cols, sms))
}

/// Bias gradient and SGD fused: `b[c] -= lr *` sum over rows of `dy[r][c]`
/// (bitwise equal to gc_op_bias_grad then gc_op_sgd).
/// Pointers: b and dy are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment).
/// In place: b is updated in place; it must not overlap dy.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, b or dy NULL, rows or cols 0,
/// rows * cols >= 2^32, a pointer not 4-byte aligned, b overlapping dy),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_bias_sgd(
    stream: *mut gc_stream,
    b: *mut f32,
    dy: *const f32,
    rows: u32,
    cols: u32,
    lr: f32,
) -> gc_status {
    op!(stream, |sms| ops::bias_sgd(
        p(b),
        p(dy),
        rows,
        cols,
        lr,
        sms
    ))
}

/// Sum-of-squares loss, as (pred - target).pow(2).sum(): `loss[0]` = sum of
/// `(pred[i] - target[i])^2`, and, when grad is not NULL, `grad[i] = 2 *
/// grad_scale * (pred[i] - target[i])`. workspace holds workspace_bytes >=
/// gc_op_mse_workspace_bytes(n) bytes, zeroed once before first use (the
/// kernel leaves it zeroed); do not share it between concurrent launches.
/// Deterministic: fixed-order reduction.
/// Pointers: loss, grad, pred, target and workspace are device memory of
/// the stream's context (gc_pool_alloc blocks, cudaMalloc, managed memory;
/// not host memory), 4-byte aligned (float alignment); when pred, target
/// and grad are 16-byte aligned the float4 path runs.
/// In place: grad may equal pred or target; loss and workspace must not
/// overlap anything else.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, loss, pred, target or
/// workspace NULL, n == 0 or too large, workspace_bytes too small, a
/// pointer not 4-byte aligned, a refused overlap), GC_ERROR_INVALID_HANDLE
/// (stream destroyed or not a stream), GC_ERROR_CAPTURE (the stream's
/// capture refused the launch; the capture is now invalid),
/// GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the built-in kernels on
/// first use, or the launch, failed), GC_ERROR_DEVICE_FAULT (an earlier
/// kernel faulted; the context is unusable), GC_ERROR_PANIC (internal error
/// caught).
#[no_mangle]
pub extern "C" fn gc_op_mse(
    stream: *mut gc_stream,
    loss: *mut f32,
    grad: *mut f32,
    pred: *const f32,
    target: *const f32,
    n: u64,
    grad_scale: f32,
    workspace: *mut c_void,
    workspace_bytes: u64,
) -> gc_status {
    op!(stream, |sms| ops::mse(
        p(loss),
        p(grad),
        p(pred),
        p(target),
        n,
        grad_scale,
        p(workspace),
        workspace_bytes,
        sms,
    ))
}

/// One layer of gc_op_mlp: y = x * W^T + b, then ReLU when relu != 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gc_mlp_layer {
    /// W, outputs x inputs floats, row-major (as torch.nn.Linear stores it):
    /// device memory of the stream's context.
    pub w: *const f32,
    /// b, outputs floats (device memory), or NULL for no bias.
    pub b: *const f32,
    /// Input width: the previous layer's outputs (the first: x's columns).
    pub inputs: u32,
    /// Output width.
    pub outputs: u32,
    /// Non-zero: ReLU after this layer.
    pub relu: c_int,
}

/// gc_op_mlp flag: one fused launch where that measured at least as fast as
/// one launch per layer on an H100 (one row, 3 or 4 layers, every layer
/// after the first at most 2^17 weights: the notes' 1024-512-256-10 MLP at
/// batch 1), and only where graphcore does not launch its kernels with
/// programmatic dependent launch (below compute capability 9.0, a driver
/// older than CUDA 12.3, or GC_PDL=0): with it, one launch per layer
/// measured faster at every shape; one launch per layer elsewhere.
pub const GC_MLP_FUSED: u32 = 1;

/// gc_op_mlp flag: fused wherever the fused kernel takes the layers (up to 8
/// rows, at most 2^25 multiply-adds a layer; one launch per 4 layers),
/// faster or not: for measurements. Takes precedence over GC_MLP_FUSED.
pub const GC_MLP_FUSED_ALWAYS: u32 = 2;

/// Most layers one gc_op_mlp call takes.
pub const GC_MLP_MAX_LAYERS: u32 = 64;

/// The `n_layers` layers at `list` as typed layers; `list` is read only
/// when `n_layers` is within GC_MLP_MAX_LAYERS.
fn mlp_layers(list: *const gc_mlp_layer, n_layers: u32) -> Result<Vec<ops::MlpLayer>, Error> {
    if n_layers > GC_MLP_MAX_LAYERS {
        return Err(Error::invalid_argument(format!(
            "{n_layers} layers; at most {GC_MLP_MAX_LAYERS} per call"
        )));
    }
    if n_layers == 0 {
        return Err(Error::invalid_argument("`n_layers` is 0"));
    }
    if list.is_null() {
        return Err(Error::invalid_argument("`layers` is NULL"));
    }
    // SAFETY: the caller passes `n_layers` readable layers (at most
    // GC_MLP_MAX_LAYERS, checked above).
    let list = unsafe { std::slice::from_raw_parts(list, n_layers as usize) };
    Ok(list
        .iter()
        .map(|l| ops::MlpLayer {
            w: p(l.w),
            b: p(l.b),
            inputs: l.inputs,
            outputs: l.outputs,
            relu: l.relu != 0,
        })
        .collect())
}

/// Writes to *bytes the workspace gc_op_mlp needs for rows rows through the
/// n_layers layers at layers (a pure computation: nothing is allocated or
/// launched; only the widths are read): 256 bytes (the fused kernel's
/// counter and epoch), then every layer's output but the last twice: as the
/// fused kernel's tagged activations (8 bytes an element) and as floats,
/// each rounded up to 256 bytes.
/// Errors: GC_ERROR_INVALID_ARGUMENT (layers or bytes NULL, n_layers 0 or
/// more than GC_MLP_MAX_LAYERS), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_mlp_workspace_bytes(
    rows: u32,
    layers: *const gc_mlp_layer,
    n_layers: u32,
    bytes: *mut u64,
) -> gc_status {
    boundary(this_export!(), || {
        let out = Out::new(bytes, "bytes")?;
        let list = mlp_layers(layers, n_layers)?;
        out.set(ops::mlp_workspace_bytes(rows, &list));
        Ok(())
    })
}

/// The forward pass of an MLP: rows rows of x (rows x `layers[0].inputs`)
/// through n_layers layers (each y = x * W^T + b, then ReLU when asked) into
/// y (rows x layers[n_layers - 1].outputs), all f32 row-major. flags 0: one
/// launch per layer (the small-batch or GEMM kernel of gc_op_linear), the
/// faster form on an H100 for most shapes measured (kernels/TUNING.md).
/// GC_MLP_FUSED: fused where that pays (see the flag), one launch per
/// layer elsewhere; GC_MLP_FUSED_ALWAYS: fused wherever the fused kernel
/// takes the layers (up to 8 rows, at most 2^25 multiply-adds a layer).
/// Fused: one launch per 4 layers, a cooperative kernel with no barrier
/// between layers (each tile waits only for the
/// activations it reads, which carry a per-launch tag); a 2- to 4-layer MLP
/// is one kernel node when captured; elsewhere one launch per layer. Fused
/// outputs are bitwise those of per-layer launches with the fused kernel's
/// tiles. Results
/// are deterministic (the same bits on every run and replay) and within
/// float rounding of float64.
/// workspace holds workspace_bytes >= gc_op_mlp_workspace_bytes(rows,
/// layers, n_layers) bytes (a gc_pool_alloc block is the usual choice); its
/// first 4 bytes must be zero before its first use (gc_memset_async once;
/// every launch leaves them zero); do not share it between launches that
/// may run concurrently. The caller keeps layers; graphcore reads it only
/// during the call (a captured launch keeps the pointers in it).
/// Pointers: y, x, workspace and every layer's w and b are device memory of
/// the stream's context (gc_pool_alloc blocks, cudaMalloc, managed memory;
/// not host memory), 4-byte aligned (float alignment); float4 loads where a
/// layer's inputs is a multiple of 4 and its x and W are 16-byte aligned
/// (workspace 16-byte aligned for the intermediates).
/// In place: not allowed; y and workspace must not overlap each other, x
/// or any weight or bias.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, y, x, layers, workspace or a
/// layer's w NULL, an unknown flag, rows, n_layers or a width 0, n_layers more than
/// GC_MLP_MAX_LAYERS (layers is then not read), a layer's inputs not the
/// previous layer's outputs, a matrix of 2^32 elements or more,
/// workspace_bytes too small, a pointer not 4-byte aligned, a refused
/// overlap), GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused the launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or the launch, failed; a device without
/// cooperative launch), GC_ERROR_DEVICE_FAULT (an earlier kernel faulted;
/// the context is unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn gc_op_mlp(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    rows: u32,
    layers: *const gc_mlp_layer,
    n_layers: u32,
    workspace: *mut c_void,
    workspace_bytes: u64,
    flags: u32,
) -> gc_status {
    launch_all(this_export!(), stream, |ctx| {
        let sms = ctx.sm_count();
        if flags & !(GC_MLP_FUSED | GC_MLP_FUSED_ALWAYS) != 0 {
            return Err(Error::invalid_argument(format!(
                "unknown flags {flags:#x} (GC_MLP_FUSED and GC_MLP_FUSED_ALWAYS are the flags)"
            )));
        }
        let form = if flags & GC_MLP_FUSED_ALWAYS != 0 {
            ops::MlpForm::FusedAlways
        } else if flags & GC_MLP_FUSED != 0 {
            ops::MlpForm::Fused
        } else {
            ops::MlpForm::PerLayer
        };
        let list = mlp_layers(layers, n_layers)?;
        let overlap = form == ops::MlpForm::Fused && ctx.launches_builtins_programmatically()?;
        Ok(ops::mlp(
            p(y),
            p(x),
            p(workspace),
            workspace_bytes,
            rows,
            &list,
            form,
            overlap,
            sms,
            ctx.has_clusters(),
        )?)
    })
}

/// Writes to *bytes the workspace gc_op_linear_mse_step needs for rows rows,
/// inputs inputs and outputs outputs on ctx's device (a pure computation:
/// nothing is allocated or launched): the loss's counter and per-block sums,
/// rounded up to 256 bytes, then the output gradient (rows x outputs floats).
/// Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
/// GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context),
/// GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_linear_mse_step_workspace_bytes(
    ctx: *mut gc_context,
    rows: u32,
    inputs: u32,
    outputs: u32,
    bytes: *mut u64,
) -> gc_status {
    boundary(this_export!(), || {
        let out = Out::new(bytes, "bytes")?;
        let ctx = context(ctx)?;
        out.set(ops::linear_mse_step_workspace_bytes(
            rows,
            inputs,
            outputs,
            ctx.sm_count(),
            ctx.has_clusters(),
        ));
        Ok(())
    })
}

/// One training step of a linear layer with the summed squared error and
/// SGD, in two launches (up to 256 rows): pred = x * W^T + b (x rows x
/// inputs, W outputs x inputs as torch.nn.Linear stores it, b outputs
/// floats or NULL for no bias), `loss[0]` = sum (pred - target)^2 (PyTorch's
/// (pred - target).pow(2).sum()), dY = 2 * grad_scale * (pred - target)
/// (grad_scale 1 for the summed loss, 1 / (rows * outputs) for the mean),
/// then W -= lr * dY^T * x and b -= lr * (column sums of dY), in place. The
/// first launch is the forward pass with dY and the loss's per-block sums
/// in its epilogue, the second the weight and bias update and the loss's
/// final sum; more than 256 rows take three (GEMM, loss, update). W and b come out bitwise equal to gc_op_linear,
/// gc_op_mse, gc_op_linear_weight_sgd and gc_op_bias_sgd run one after the
/// other (on the same device); the loss is summed in another fixed order
/// (equal up to rounding). Deterministic: no float atomics, the same bits
/// on every run and replay.
/// workspace holds workspace_bytes >= gc_op_linear_mse_step_workspace_bytes
/// bytes (a gc_pool_alloc block is the usual choice); its first 4 bytes must
/// be zero before its first use (gc_memset_async once; every step leaves
/// them zero); do not share it between steps that may run concurrently. dY
/// is left in the workspace (256-byte aligned, after the loss's sums).
/// Pointers: w, b, x, target, loss and workspace are device memory of the
/// stream's context (gc_pool_alloc blocks, cudaMalloc, managed memory; not
/// host memory), 4-byte aligned (float alignment); float4 loads when inputs
/// is a multiple of 4 and x and w are 16-byte aligned.
/// In place: w and b are updated in place; w, b, loss and workspace must
/// not overlap each other, x or target.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, w, x, target, loss or
/// workspace NULL, rows, inputs or outputs 0, a matrix of 2^32 elements or
/// more, workspace_bytes too small, a pointer not 4-byte aligned, a refused
/// overlap), GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused a launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or a launch, failed),
/// GC_ERROR_DEVICE_FAULT (an earlier kernel faulted; the context is
/// unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn gc_op_linear_mse_step(
    stream: *mut gc_stream,
    w: *mut f32,
    b: *mut f32,
    x: *const f32,
    target: *const f32,
    loss: *mut f32,
    rows: u32,
    inputs: u32,
    outputs: u32,
    grad_scale: f32,
    lr: f32,
    workspace: *mut c_void,
    workspace_bytes: u64,
) -> gc_status {
    launch_all(this_export!(), stream, |ctx| {
        let sms = ctx.sm_count();
        let step = ops::LinearMseStep {
            w: p(w),
            b: p(b),
            x: p(x),
            target: p(target),
            loss: p(loss),
            rows,
            inputs,
            outputs,
            grad_scale,
            lr,
        };
        ops::linear_mse_step(
            &step,
            p(workspace),
            workspace_bytes,
            sms,
            ctx.has_clusters(),
        )
    })
}

/// Writes to *bytes the workspace gc_op_mlp2_mse_step needs for rows rows,
/// hidden hidden units and outputs outputs on ctx's device (a pure
/// computation: nothing is allocated or launched): a 256-byte grid barrier,
/// the loss's per-block sums, then h, dP and dH (each 256-byte aligned).
/// Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
/// GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context),
/// GC_ERROR_PANIC (internal error caught).
#[no_mangle]
pub extern "C" fn gc_op_mlp2_mse_step_workspace_bytes(
    ctx: *mut gc_context,
    rows: u32,
    hidden: u32,
    outputs: u32,
    bytes: *mut u64,
) -> gc_status {
    boundary(this_export!(), || {
        let out = Out::new(bytes, "bytes")?;
        let sms = context(ctx)?.sm_count();
        out.set(ops::mlp2_mse_step_workspace_bytes(
            rows, hidden, outputs, sms,
        ));
        Ok(())
    })
}

/// One training step of a 2-layer MLP with a ReLU hidden layer, the summed
/// squared error and SGD, in two launches while rows * hidden * (inputs +
/// 2 * outputs) < 2^31 multiply-adds (e.g. 4096-wide layers up to 42 rows):
/// h = relu(x * W1^T + b1), pred =
/// h * W2^T + b2, `loss[0]` = sum (pred - target)^2, dP = 2 * grad_scale *
/// (pred - target), dH = (dP * W2) where h > 0 (else 0), then W2 -= lr *
/// dP^T * h, b2 -= lr * (column sums of dP), W1 -= lr * dH^T * x and
/// b1 -= lr * (column sums of dH), in place (x rows x inputs, W1 hidden x
/// inputs, W2 outputs x hidden as torch.nn.Linear stores them; b1, b2 may be
/// NULL).
/// The first launch is cooperative (the forward pass, the loss's per-block
/// sums, dP and dH, with a grid barrier between the phases), the second
/// the loss's final sum and both layers' updates. Larger steps, where the
/// layers' own kernels are faster, take seven launches: gc_op_linear twice,
/// gc_op_mse, gc_op_linear_backward_input, gc_op_relu_backward and each
/// layer's update. Deterministic: no float atomics, the same bits on every
/// run and replay; results within float rounding of float64.
/// workspace holds workspace_bytes >= gc_op_mlp2_mse_step_workspace_bytes
/// bytes (a gc_pool_alloc block is the usual choice); its first 4 bytes must
/// be zero before its first use (gc_memset_async once; every step leaves
/// them zero); do not share it between steps that may run concurrently.
/// Pointers: w1, b1, w2, b2, x, target, loss and workspace are device
/// memory of the stream's context (gc_pool_alloc blocks, cudaMalloc,
/// managed memory; not host memory), 4-byte aligned (float alignment);
/// float4 loads where widths are multiples of 4 and pointers 16-byte
/// aligned.
/// In place: the weights and biases are updated in place; w1, b1, w2, b2,
/// loss and workspace must not overlap each other, x or target.
/// Errors: GC_ERROR_INVALID_ARGUMENT (stream, w1, w2, x, target, loss or
/// workspace NULL, rows or a width 0 or 65536 or more, workspace_bytes too
/// small, a pointer not 4-byte aligned, a refused overlap),
/// GC_ERROR_INVALID_HANDLE (stream destroyed or not a stream),
/// GC_ERROR_CAPTURE (the stream's capture refused a launch; the capture is
/// now invalid), GC_ERROR_OUT_OF_MEMORY or GC_ERROR_CUDA (loading the
/// built-in kernels on first use, or a launch, failed; a device without
/// cooperative launch), GC_ERROR_DEVICE_FAULT (an earlier kernel faulted;
/// the context is unusable), GC_ERROR_PANIC (internal error caught).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn gc_op_mlp2_mse_step(
    stream: *mut gc_stream,
    w1: *mut f32,
    b1: *mut f32,
    w2: *mut f32,
    b2: *mut f32,
    x: *const f32,
    target: *const f32,
    loss: *mut f32,
    rows: u32,
    inputs: u32,
    hidden: u32,
    outputs: u32,
    grad_scale: f32,
    lr: f32,
    workspace: *mut c_void,
    workspace_bytes: u64,
) -> gc_status {
    launch_all(this_export!(), stream, |ctx| {
        let sms = ctx.sm_count();
        let step = ops::Mlp2MseStep {
            w1: p(w1),
            b1: p(b1),
            w2: p(w2),
            b2: p(b2),
            x: p(x),
            target: p(target),
            loss: p(loss),
            rows,
            inputs,
            hidden,
            outputs,
            grad_scale,
            lr,
        };
        ops::mlp2_mse_step(
            &step,
            p(workspace),
            workspace_bytes,
            sms,
            ctx.has_clusters(),
        )
    })
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

    #[test]
    fn chain_lists_are_checked_before_they_are_read() {
        // Too many operations: refused without reading the (dangling) list.
        let dangling = std::ptr::NonNull::<gc_chain_op>::dangling().as_ptr();
        let e = chain_ops(dangling, GC_CHAIN_MAX_OPS + 1).unwrap_err();
        assert_eq!(e.kind(), graphcore_core::ErrorKind::InvalidArgument);
        assert_eq!(e.message(), "9 operations; at most 8 per call");
        let e = chain_ops(std::ptr::null(), 2).unwrap_err();
        assert_eq!(e.kind(), graphcore_core::ErrorKind::InvalidArgument);
        assert!(chain_ops(std::ptr::null(), 0).unwrap().is_empty());
        let list = [gc_chain_op {
            op: GC_CHAIN_MUL,
            value: 2.0,
        }];
        assert_eq!(chain_ops(list.as_ptr(), 1).unwrap(), [(GC_CHAIN_MUL, 2.0)]);
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
