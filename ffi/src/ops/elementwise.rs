//! The element-wise ops (fill, copy, scale, add, multiply, ReLU and its
//! backward, SGD, bias add) and gc_op_chain, which fuses up to
//! GC_CHAIN_MAX_OPS of them into one pass.

use super::{op, p};
use crate::status::gc_status;
use crate::stream::gc_stream;
use graphcore_core::kernels::{ops, SizeError};
use graphcore_core::Error;

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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (x NULL unless the first
/// operation is a fill, ops NULL with count > 0, count > GC_CHAIN_MAX_OPS (ops
/// is then not read), an unknown opcode, y and x partly overlapping).
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

/// Fills y[0..n) with value.
/// Pointers: y is device memory of the stream's context (gc_pool_alloc
/// blocks, cudaMalloc, managed memory; not host memory), 4-byte aligned
/// (float alignment); 16-byte aligned takes the float4 path.
/// Errors: common.
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (z partly overlapping an
/// input).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (z partly overlapping an
/// input).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (y and x partly overlapping).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (dx partly overlapping an
/// input).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (w and g overlapping).
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
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows * cols >= 2^32, a
/// refused overlap).
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
