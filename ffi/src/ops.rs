//! Typed launches of the built-in kernels: each picks the launch
//! configuration, checks sizes and pointers (0, overflow, misalignment,
//! overlapping outputs: GC_ERROR_INVALID_ARGUMENT with a message, and
//! nothing is launched), and works eagerly or under capture.
//!
//! Thread safety: any number of threads may launch on any streams.

use crate::args::Out;
use crate::context::{context, gc_context};
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream};
use graphcore_core::kernels::ops;
use graphcore_core::{launch_op, Error};
use std::ffi::{c_int, c_void};

fn p<T>(ptr: *const T) -> u64 {
    ptr as u64
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

/// Applies up to GC_CHAIN_MAX_OPS operations to each of n elements in one
/// pass, in registers: y[i] = op_last(... op_first(x[i])). y may be x.
#[no_mangle]
pub extern "C" fn gc_op_chain(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
    ops_: *const gc_chain_op,
    count: u32,
) -> gc_status {
    boundary("gc_op_chain", || {
        let s = self::stream(stream, "stream")?;
        if count > 0 && ops_.is_null() {
            return Err(Error::invalid_argument(
                "`ops` is NULL but `count` is not 0",
            ));
        }
        let list: Vec<(u32, f32)> = if count == 0 {
            Vec::new()
        } else {
            // SAFETY: the caller passes `count` readable operations.
            unsafe { std::slice::from_raw_parts(ops_, count as usize) }
                .iter()
                .map(|o| (o.op, o.value))
                .collect()
        };
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::chain(p(y), p(x), n, &list, sms)) }
    })
}

/// Writes to *bytes the workspace gc_op_mse needs for n elements on ctx's
/// device.
#[no_mangle]
pub extern "C" fn gc_op_mse_workspace_bytes(
    ctx: *mut gc_context,
    n: u64,
    bytes: *mut u64,
) -> gc_status {
    boundary("gc_op_mse_workspace_bytes", || {
        let out = Out::new(bytes, "bytes")?;
        out.set(ops::mse_workspace_bytes(n, context(ctx)?.sm_count()));
        Ok(())
    })
}

/// Fills y[0..n) with value.
#[no_mangle]
pub extern "C" fn gc_op_fill(stream: *mut gc_stream, y: *mut f32, n: u64, value: f32) -> gc_status {
    boundary("gc_op_fill", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::fill(p(y), n, value, sms)) }
    })
}

/// y = x (n floats).
#[no_mangle]
pub extern "C" fn gc_op_copy(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
) -> gc_status {
    boundary("gc_op_copy", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::copy(p(y), p(x), n, sms)) }
    })
}

/// y = alpha * x; y may be x.
#[no_mangle]
pub extern "C" fn gc_op_scale(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
    alpha: f32,
) -> gc_status {
    boundary("gc_op_scale", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::scale(p(y), p(x), n, alpha, sms)) }
    })
}

/// y = x + c; y may be x.
#[no_mangle]
pub extern "C" fn gc_op_add_scalar(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
    c: f32,
) -> gc_status {
    boundary("gc_op_add_scalar", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::add_scalar(p(y), p(x), n, c, sms)) }
    })
}

/// y = alpha * x + y (one fused multiply-add).
#[no_mangle]
pub extern "C" fn gc_op_axpy(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
    alpha: f32,
) -> gc_status {
    boundary("gc_op_axpy", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::axpy(p(y), p(x), n, alpha, sms)) }
    })
}

/// z = x + y.
#[no_mangle]
pub extern "C" fn gc_op_add(
    stream: *mut gc_stream,
    z: *mut f32,
    x: *const f32,
    y: *const f32,
    n: u64,
) -> gc_status {
    boundary("gc_op_add", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::add(p(z), p(x), p(y), n, sms)) }
    })
}

/// z = x * y.
#[no_mangle]
pub extern "C" fn gc_op_mul(
    stream: *mut gc_stream,
    z: *mut f32,
    x: *const f32,
    y: *const f32,
    n: u64,
) -> gc_status {
    boundary("gc_op_mul", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::mul(p(z), p(x), p(y), n, sms)) }
    })
}

/// y = max(x, 0).
#[no_mangle]
pub extern "C" fn gc_op_relu(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    n: u64,
) -> gc_status {
    boundary("gc_op_relu", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::relu(p(y), p(x), n, sms)) }
    })
}

/// dx = x > 0 ? dy : 0.
#[no_mangle]
pub extern "C" fn gc_op_relu_backward(
    stream: *mut gc_stream,
    dx: *mut f32,
    dy: *const f32,
    x: *const f32,
    n: u64,
) -> gc_status {
    boundary("gc_op_relu_backward", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::relu_backward(p(dx), p(dy), p(x), n, sms)) }
    })
}

/// w -= lr * g (one fused multiply-add per element).
#[no_mangle]
pub extern "C" fn gc_op_sgd(
    stream: *mut gc_stream,
    w: *mut f32,
    g: *const f32,
    n: u64,
    lr: f32,
) -> gc_status {
    boundary("gc_op_sgd", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::sgd(p(w), p(g), n, lr, sms)) }
    })
}

/// y[r][c] = x[r][c] + b[c] for a row-major rows x cols matrix.
#[no_mangle]
pub extern "C" fn gc_op_bias_add(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    b: *const f32,
    rows: u32,
    cols: u32,
) -> gc_status {
    boundary("gc_op_bias_add", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::bias_add(p(y), p(x), p(b), rows, cols, sms)) }
    })
}

/// y = x * W^T + b, then ReLU if relu != 0: x is m x k, W is n x k (PyTorch's layout), b has n floats (NULL: no bias), y is m x n, all row-major. m <= 256 takes the small-batch path (K split across the threads of each block); larger m the tiled GEMM.
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
    relu: c_int,
) -> gc_status {
    boundary("gc_op_linear", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe {
            launch_op(
                &s,
                ops::linear(p(y), p(x), p(w), p(b), m, n, k, relu != 0, sms),
            )
        }
    })
}

/// Input gradient of linear: dx = dy * W (dy m x n, W n x k, dx m x k).
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
    boundary("gc_op_linear_backward_input", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe {
            launch_op(
                &s,
                ops::linear_backward_input(p(dx), p(dy), p(w), m, n, k, sms),
            )
        }
    })
}

/// Weight gradient of linear: dw = dy^T * x (dy m x n, x m x k, dw n x k).
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
    boundary("gc_op_linear_backward_weight", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe {
            launch_op(
                &s,
                ops::linear_backward_weight(p(dw), p(dy), p(x), m, n, k, sms),
            )
        }
    })
}

/// Weight gradient and SGD fused: w -= lr * dy^T * x, without materialising the gradient (bitwise equal to linear_backward_weight then sgd).
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
    boundary("gc_op_linear_weight_sgd", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe {
            launch_op(
                &s,
                ops::linear_weight_sgd(p(w), p(dy), p(x), m, n, k, lr, sms),
            )
        }
    })
}

/// Bias gradient: db[c] = sum over rows of dy[r][c] (fixed order).
#[no_mangle]
pub extern "C" fn gc_op_bias_grad(
    stream: *mut gc_stream,
    db: *mut f32,
    dy: *const f32,
    rows: u32,
    cols: u32,
) -> gc_status {
    boundary("gc_op_bias_grad", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::bias_grad(p(db), p(dy), rows, cols, sms)) }
    })
}

/// Bias gradient and SGD fused: b[c] -= lr * sum over rows of dy[r][c].
#[no_mangle]
pub extern "C" fn gc_op_bias_sgd(
    stream: *mut gc_stream,
    b: *mut f32,
    dy: *const f32,
    rows: u32,
    cols: u32,
    lr: f32,
) -> gc_status {
    boundary("gc_op_bias_sgd", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe { launch_op(&s, ops::bias_sgd(p(b), p(dy), rows, cols, lr, sms)) }
    })
}

/// Sum-of-squares loss, as (pred - target).pow(2).sum(): loss[0] = sum (pred[i] - target[i])^2, and, when grad is not NULL, grad[i] = 2 * grad_scale * (pred[i] - target[i]). workspace holds workspace_bytes >= gc_op_mse_workspace_bytes(n) bytes, zeroed once before first use (the kernel leaves it zeroed); do not share it between concurrent launches. Deterministic: fixed-order reduction.
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
    boundary("gc_op_mse", || {
        let s = self::stream(stream, "stream")?;
        let sms = s.context().sm_count();
        // SAFETY: the caller's promise (this function's doc): the buffers are device
        // memory of the stream's context, large enough for the sizes given, and
        // stay allocated until the launch has run (or while the graph runs).
        unsafe {
            launch_op(
                &s,
                ops::mse(
                    p(loss),
                    p(grad),
                    p(pred),
                    p(target),
                    n,
                    grad_scale,
                    p(workspace),
                    workspace_bytes,
                    sms,
                ),
            )
        }
    })
}
