//! The MSE loss and its gradient (gc_op_mse), and its workspace size.

use super::{op, p, this_export};
use crate::args::Out;
use crate::context::{context, gc_context};
use crate::status::{boundary, gc_status};
use crate::stream::gc_stream;
use graphcore_core::kernels::ops;
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
