//! Linear layers: the forward (gc_op_linear, with its flags), the input
//! and weight gradients, the weight and bias updates.

use super::{op, p, this_export};
use crate::status::gc_status;
use crate::stream::gc_stream;
use graphcore_core::kernels::ops;
use graphcore_core::Error;
use std::ffi::c_int;

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
/// flag. Where the dispatch sends the call to cuBLASLt (see gc_op_linear),
/// TF32 is cuBLASLt's CUBLAS_COMPUTE_32F_FAST_TF32 at every row count.
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
/// The vendor GEMM: where cuBLASLt is loaded at run time (never linked;
/// see gc_cublaslt_version) and the dispatch table compiled into the
/// library says it is faster for the shape (m, n, k, TF32), the call runs
/// as one cublasLtMatmul with the bias and ReLU fused (epilogues BIAS,
/// RELU_BIAS; TF32 as CUBLAS_COMPUTE_32F_FAST_TF32, f32 as
/// CUBLAS_COMPUTE_32F), no workspace, the same checks and results within
/// float rounding; otherwise, and wherever cuBLASLt is missing or has no
/// algorithm for the shape, graphcore's kernels as above.
/// gc_op_linear_backend tells which runs (and plans cuBLASLt's call ahead
/// of a capture); the flags GC_LINEAR_GRAPHCORE and GC_LINEAR_CUBLASLT
/// force one. Captured, either path is kernel nodes whose parameters hold
/// y, x, w and b, rebound as graph arguments (cuBLASLt's kernels by the
/// scan of foreign kernels, docs/arguments.md); a capture rebound to
/// pointers of less alignment than it was captured with (16 bytes for pool
/// blocks) is not supported on the cuBLASLt path.
/// Pointers: y, x, w and b are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); float4 loads where k (and for the
/// GEMM path n) is a multiple of 4 and the pointers are 16-byte aligned.
/// In place: not allowed; y must not overlap x, w or b.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a matrix of 2^32 elements or
/// more, y overlapping an input, an unknown flag, GC_LINEAR_GRAPHCORE with
/// GC_LINEAR_CUBLASLT), GC_ERROR_NOT_SUPPORTED (GC_LINEAR_CUBLASLT where
/// cuBLASLt is not loaded or has no algorithm for the shape; nothing is
/// launched), GC_ERROR_CUDA (cublasLtMatmul failed).
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
    super::vendor::linear(
        this_export!(),
        stream,
        p(y),
        p(x),
        p(w),
        p(b),
        m,
        n,
        k,
        flags,
    )
}

/// gc_op_linear with its row count in device memory, for exact-size
/// requests: the kernel reads `m = *rows` (a uint32_t) when it runs, so one
/// launch, captured once for a bucket of max_rows rows, serves any
/// 1 <= m <= max_rows with x and y of exactly m rows (x m x k, y m x n:
/// x is read and y written below row m only; no padding). A count above
/// max_rows is clamped to max_rows (the rows of the bucket are computed;
/// nothing past them is read or written); a count of 0 computes nothing.
/// Always the small-batch kernel with the tiles gc_op_linear's small-batch
/// path picks for max_rows rows: the first m rows of y are bitwise what
/// that launch of max_rows rows gives them (each within float rounding of
/// float64). flags: GC_LINEAR_RELU (GC_LINEAR_TF32 and other bits are
/// refused). Every max_rows * k, n * k and max_rows * n must be below 2^32.
/// Pointers: y, x, w, b and rows are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned; y and x are checked for max_rows rows when this is
/// called (the bucket's buffers); rows may be written by a kernel before
/// this one on the stream, or bound as a graph argument.
/// In place: not allowed; y must not overlap x, w, b or rows.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows NULL, max_rows 0 or
/// more than 256, a matrix of 2^32 elements or more, y overlapping an
/// input, an unknown or refused flag).
#[no_mangle]
pub extern "C" fn gc_op_linear_rows(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    w: *const f32,
    b: *const f32,
    rows: *const u32,
    max_rows: u32,
    n: u32,
    k: u32,
    flags: c_int,
) -> gc_status {
    op!(stream, |sms| {
        let f = flags as u32;
        if f & !GC_LINEAR_RELU != 0 {
            return Err(Error::invalid_argument(format!(
                "unknown or refused flags {f:#x} (GC_LINEAR_RELU is the only flag; GC_LINEAR_TF32 is not taken here)"
            )));
        }
        ops::linear_rows(
            p(y),
            p(x),
            p(w),
            p(b),
            p(rows),
            max_rows,
            n,
            k,
            f & GC_LINEAR_RELU != 0,
            sms,
        )
        .map_err(Error::from)
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
/// The vendor GEMM: where gc_op_linear's dispatch table gives the layer's
/// forward shape (m, n, k; f32) to cuBLASLt, cuBLASLt is loaded and it
/// plans this call (see gc_op_linear and gc_op_linear_backend), this runs
/// as one cublasLtMatmul instead, within f32 rounding of graphcore's
/// kernel (not bitwise); elsewhere graphcore's kernel as described.
/// Pointers: dx, dy and w are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); float4 loads where the sizes are
/// multiples of 4 and the pointers 16-byte aligned.
/// In place: not allowed; dx must not overlap dy or w.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a matrix of 2^32 elements or
/// more, dx overlapping an input).
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
    let op = super::vendor::Backward::Input(p(dx), p(dy), p(w));
    super::vendor::backward(this_export!(), stream, op, (m, n, k), |ctx| {
        Ok(ops::linear_backward_input(
            p(dx),
            p(dy),
            p(w),
            m,
            n,
            k,
            ctx.sm_count(),
            ctx.has_clusters(),
        )?)
    })
}

/// Weight gradient of linear: dw = dy^T * x (dy m x n, x m x k, dw n x k,
/// row-major, dw overwritten; every product of two of m, n, k below 2^32).
/// The vendor GEMM: where gc_op_linear's dispatch table gives the layer's
/// forward shape (m, n, k; f32) to cuBLASLt, cuBLASLt is loaded and it
/// plans this call (see gc_op_linear and gc_op_linear_backend), this runs
/// as one cublasLtMatmul instead, within f32 rounding of graphcore's
/// kernel (not bitwise); elsewhere graphcore's kernel as described.
/// Pointers: dw, dy and x are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); float4 loads where the sizes are
/// multiples of 4 and the pointers 16-byte aligned.
/// In place: not allowed; dw must not overlap dy or x.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a matrix of 2^32 elements or
/// more, dw overlapping an input).
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
    let op = super::vendor::Backward::Weight(p(dw), p(dy), p(x));
    super::vendor::backward(this_export!(), stream, op, (m, n, k), |ctx| {
        Ok(ops::linear_backward_weight(
            p(dw),
            p(dy),
            p(x),
            m,
            n,
            k,
            ctx.sm_count(),
        )?)
    })
}

/// Weight gradient and SGD fused: w -= lr * dy^T * x (dy m x n, x m x k, w
/// n x k, row-major), without materialising the gradient (bitwise equal to
/// gc_op_linear_backward_weight then gc_op_sgd where both run graphcore's
/// kernels).
/// The vendor GEMM: where gc_op_linear's dispatch table gives the layer's
/// forward shape (m, n, k; f32) to cuBLASLt, cuBLASLt is loaded and it
/// plans this call (see gc_op_linear and gc_op_linear_backend), this runs
/// as one cublasLtMatmul instead (W -= lr * dY^T . x with beta 1, in place), within f32 rounding of graphcore's
/// kernel (not bitwise); elsewhere graphcore's kernel as described.
/// Pointers: w, dy and x are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment); float4 loads where the sizes are
/// multiples of 4 and the pointers 16-byte aligned.
/// In place: w is updated in place; it must not overlap dy or x.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a matrix of 2^32 elements or
/// more, w overlapping an input).
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
    let op = super::vendor::Backward::WeightSgd(p(w), p(dy), p(x), lr);
    super::vendor::backward(this_export!(), stream, op, (m, n, k), |ctx| {
        Ok(ops::linear_weight_sgd(
            p(w),
            p(dy),
            p(x),
            m,
            n,
            k,
            lr,
            ctx.sm_count(),
        )?)
    })
}

/// Bias gradient: `db[c]` = sum over rows of `dy[r][c]` (dy row-major rows x
/// cols, rows * cols < 2^32), summed in a fixed order (deterministic).
/// Pointers: db and dy are device memory of the stream's context
/// (gc_pool_alloc blocks, cudaMalloc, managed memory; not host memory),
/// 4-byte aligned (float alignment).
/// In place: not allowed; db must not overlap dy.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows * cols >= 2^32, db
/// overlapping dy).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows * cols >= 2^32, b
/// overlapping dy).
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
