//! Training steps in two launches: Linear + MSE + SGD
//! (gc_op_linear_mse_step) and a 2-layer MLP's (gc_op_mlp2_mse_step), with
//! their workspace sizes.

use super::{p, this_export};
use crate::args::Out;
use crate::context::{context, gc_context};
use crate::status::{boundary, gc_status};
use crate::stream::gc_stream;
use graphcore_core::kernels::ops;
use std::ffi::{c_int, c_void};

/// Writes to *bytes the workspace gc_op_linear_mse_step needs for rows rows,
/// inputs inputs and outputs outputs on ctx's device (a pure computation:
/// nothing is allocated or launched): the loss's counter and per-block sums,
/// rounded up to 256 bytes, then the output gradient (rows x outputs floats).
/// Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
/// GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context).
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
/// other (on the same device, where the dispatch gives those calls
/// graphcore's kernels); the loss is summed in another fixed order
/// (equal up to rounding). Deterministic: no float atomics, the same bits
/// on every run and replay. The vendor GEMM: past the two-launch sizes,
/// where gc_op_linear's dispatch gives the forward's shape (rows, outputs,
/// inputs; f32) to cuBLASLt (see gc_op_linear), the forward runs as
/// cublasLtMatmul with the bias fused (as gc_op_linear's), the loss as
/// before, and the update as cublasLtMatmul W -= lr * dY^T * x (beta 1, in
/// place) then gc_op_bias_sgd's kernel: four launches, W within f32
/// rounding of graphcore's update (not bitwise gc_op_linear_weight_sgd's).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a matrix of 2^32 elements or
/// more, workspace_bytes too small, a refused overlap).
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
    linear_step(
        this_export!(),
        stream,
        w,
        b,
        x,
        target,
        loss,
        [rows, inputs, outputs],
        [grad_scale, lr],
        workspace,
        workspace_bytes,
        0,
    )
}

/// gc_op_linear_mse_step with flags choosing the GEMM backend and TF32
/// (the plain form is this with flags 0; everything else as there).
/// flags: 0 is the plain form's behaviour. GC_LINEAR_GRAPHCORE: graphcore's
/// kernels whatever the dispatch says. GC_LINEAR_CUBLASLT: the GEMM form's
/// GEMMs on cuBLASLt whatever the dispatch says (GC_ERROR_NOT_SUPPORTED,
/// nothing launched, where cuBLASLt is not loaded or refuses one of them, or
/// where the step takes its small-batch fused form, which has no GEMM).
/// GC_LINEAR_TF32 (TF32 allowed): in the GEMM form every GEMM (forward, input
/// gradient, weight update) runs on cuBLASLt with
/// CUBLAS_COMPUTE_32F_FAST_TF32, results within TF32 rounding of float64;
/// graphcore has no TF32 form of the steps, so where cuBLASLt is not loaded
/// or refuses one of them this is GC_ERROR_NOT_SUPPORTED naming the flag,
/// nothing launched (and GC_LINEAR_TF32 with GC_LINEAR_GRAPHCORE is always
/// refused so); the small-batch fused form stays f32 (TF32 allows lower
/// precision, it does not require it), as does a device below compute
/// capability 8.0.
/// Pointers, in place, workspace and thread safety: as gc_op_linear_mse_step.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (as gc_op_linear_mse_step;
/// an unknown flag, GC_LINEAR_GRAPHCORE with GC_LINEAR_CUBLASLT),
/// GC_ERROR_NOT_SUPPORTED (as the flags say; gc_last_error says why).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn gc_op_linear_mse_step_flags(
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
    flags: c_int,
) -> gc_status {
    linear_step(
        this_export!(),
        stream,
        w,
        b,
        x,
        target,
        loss,
        [rows, inputs, outputs],
        [grad_scale, lr],
        workspace,
        workspace_bytes,
        flags,
    )
}

/// Writes to *bytes the workspace gc_op_mlp2_mse_step needs for rows rows,
/// hidden hidden units and outputs outputs on ctx's device (a pure
/// computation: nothing is allocated or launched): a 256-byte grid barrier,
/// the loss's per-block sums, then h, dP and dH (each 256-byte aligned).
/// Errors: GC_ERROR_INVALID_ARGUMENT (ctx or bytes NULL),
/// GC_ERROR_INVALID_HANDLE (ctx destroyed or not a context).
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
/// run and replay; results within float rounding of float64. The vendor
/// GEMM: in the seven-launch form, a layer whose forward shape (rows,
/// hidden, inputs for W1; rows, outputs, hidden for W2) gc_op_linear's
/// dispatch gives to cuBLASLt (see gc_op_linear) runs its GEMMs as
/// cublasLtMatmul calls (its forward with the bias and ReLU fused; for W2
/// also dH = dP * W2; its update W -= lr * dY^T * x with beta 1) and its
/// bias update as gc_op_bias_sgd's kernel, within f32 rounding of
/// graphcore's kernels.
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a width of 65536 or more,
/// workspace_bytes too small, a refused overlap), GC_ERROR_CUDA (also: a device
/// without cooperative launch).
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
    mlp2_step(
        this_export!(),
        stream,
        [w1, b1, w2, b2],
        x,
        target,
        loss,
        [rows, inputs, hidden, outputs],
        [grad_scale, lr],
        workspace,
        workspace_bytes,
        0,
    )
}

/// gc_op_mlp2_mse_step with flags choosing the GEMM backend and TF32 for
/// its seven-launch form's layers (the plain form is this with flags 0;
/// everything else as there). Each layer decides apart from the other
/// (flags 0: the dispatch per layer's forward shape).
/// flags: as gc_op_linear_mse_step_flags's (GC_LINEAR_GRAPHCORE,
/// GC_LINEAR_CUBLASLT, GC_LINEAR_TF32: the same rules and statuses), for
/// the GEMMs of the seven-launch form (each layer's forward, the input
/// gradient dH, each layer's weight update); the small-batch fused form
/// as there (no GEMM: forced cuBLASLt refused, TF32 runs f32).
/// Pointers, in place, workspace and thread safety: as gc_op_mlp2_mse_step.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (as gc_op_mlp2_mse_step;
/// an unknown flag, GC_LINEAR_GRAPHCORE with GC_LINEAR_CUBLASLT),
/// GC_ERROR_NOT_SUPPORTED (as the flags say; gc_last_error says why),
/// GC_ERROR_CUDA (also: a device without cooperative launch).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn gc_op_mlp2_mse_step_flags(
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
    flags: c_int,
) -> gc_status {
    mlp2_step(
        this_export!(),
        stream,
        [w1, b1, w2, b2],
        x,
        target,
        loss,
        [rows, inputs, hidden, outputs],
        [grad_scale, lr],
        workspace,
        workspace_bytes,
        flags,
    )
}

/// The body of gc_op_linear_mse_step and its `_flags` form (the plain form
/// passes flags 0): builds the step and runs it inside func's boundary.
/// `dims` is rows, inputs, outputs; `scales` is grad_scale, lr.
#[allow(clippy::too_many_arguments)]
fn linear_step(
    func: &'static str,
    stream: *mut gc_stream,
    w: *mut f32,
    b: *mut f32,
    x: *const f32,
    target: *const f32,
    loss: *mut f32,
    [rows, inputs, outputs]: [u32; 3],
    [grad_scale, lr]: [f32; 2],
    workspace: *mut c_void,
    workspace_bytes: u64,
    flags: c_int,
) -> gc_status {
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
    super::vendor::linear_mse_step(func, stream, step, p(workspace), workspace_bytes, flags)
}

/// The body of gc_op_mlp2_mse_step and its `_flags` form (the plain form
/// passes flags 0): builds the step and runs it inside func's boundary.
/// `params` is w1, b1, w2, b2; `dims` is rows, inputs, hidden, outputs;
/// `scales` is grad_scale, lr.
#[allow(clippy::too_many_arguments)]
fn mlp2_step(
    func: &'static str,
    stream: *mut gc_stream,
    [w1, b1, w2, b2]: [*mut f32; 4],
    x: *const f32,
    target: *const f32,
    loss: *mut f32,
    [rows, inputs, hidden, outputs]: [u32; 4],
    [grad_scale, lr]: [f32; 2],
    workspace: *mut c_void,
    workspace_bytes: u64,
    flags: c_int,
) -> gc_status {
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
    super::vendor::mlp2_mse_step(func, stream, step, p(workspace), workspace_bytes, flags)
}
