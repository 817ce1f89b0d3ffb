//! The MSE loss and its gradient (gc_op_mse, and gc_op_mse_reduction with
//! PyTorch's sum or mean), and its workspace size.

use super::{op, p, this_export};
use crate::args::Out;
use crate::context::{context, gc_context};
use crate::status::{boundary, gc_status};
use crate::stream::gc_stream;
use graphcore_core::kernels::ops;
use graphcore_core::Error;
use std::ffi::c_void;

/// Writes to *bytes the workspace gc_op_mse needs for n elements on ctx's
/// device (a pure computation: nothing is allocated or launched).
/// Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
/// GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (workspace_bytes too small, a
/// refused overlap).
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

/// gc_op_mse_reduction: `loss[0]` = the sum of the squared errors, as
/// nn.MSELoss(reduction='sum').
pub const GC_REDUCTION_SUM: u32 = 0;

/// gc_op_mse_reduction: `loss[0]` = their mean, as nn.MSELoss() (reduction
/// 'mean', PyTorch's default).
pub const GC_REDUCTION_MEAN: u32 = 1;

/// nn.MSELoss(reduction=...) and its gradient in one launch: with
/// GC_REDUCTION_SUM, `loss[0]` = sum of `(pred[i] - target[i])^2` and
/// `grad[i] = 2 * (pred[i] - target[i])` (bitwise gc_op_mse with
/// grad_scale 1); with GC_REDUCTION_MEAN, `loss[0]` = that sum times
/// `s = 1.0f / n` (one float multiply, rounded to nearest: how PyTorch's
/// CUDA mean scales its sum) and `grad[i] = (pred[i] - target[i]) * (2 *
/// s)` (bitwise the scale of PyTorch's MSELoss backward, 2 / n as a float).
/// The sum is gc_op_mse's fixed-order sum (deterministic; equal to
/// PyTorch's up to rounding). grad is the gradient of `loss[0]`, or NULL
/// for the loss alone. Workspace, pointers and in-place rules as
/// gc_op_mse's (gc_op_mse_workspace_bytes(n) bytes, zeroed once before
/// first use, not shared between concurrent launches).
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a reduction that is
/// neither GC_REDUCTION_SUM nor GC_REDUCTION_MEAN, workspace_bytes too
/// small, a refused overlap).
#[no_mangle]
pub extern "C" fn gc_op_mse_reduction(
    stream: *mut gc_stream,
    loss: *mut f32,
    grad: *mut f32,
    pred: *const f32,
    target: *const f32,
    n: u64,
    reduction: u32,
    workspace: *mut c_void,
    workspace_bytes: u64,
) -> gc_status {
    op!(stream, |sms| {
        let reduction = match reduction {
            GC_REDUCTION_SUM => ops::Reduction::Sum,
            GC_REDUCTION_MEAN => ops::Reduction::Mean,
            other => {
                return Err(Error::invalid_argument(format!(
                    "unknown reduction {other} (GC_REDUCTION_SUM 0 and GC_REDUCTION_MEAN 1 are the reductions)"
                )))
            }
        };
        ops::mse_reduced(
            p(loss),
            p(grad),
            p(pred),
            p(target),
            n,
            reduction,
            p(workspace),
            workspace_bytes,
            sms,
        )
        .map_err(Error::from)
    })
}
