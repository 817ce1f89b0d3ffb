//! Elementwise operations, the bias add and the fused chain.

use super::check::{apart, buf, elems, floats, nonzero, opt_buf, positive_sms, F32};
use super::grid::{grid_stride_call, grid_stride_values};
use crate::fusion::{is_opcode, MAX_CHAIN_OPS, OP_FILL};
use crate::map::{MapOp, ZipOp};
use crate::{args, Call, Kernel, SizeError, Value};

/// `y[i] = value`, `i < n`.
pub fn fill(y: u64, n: u64, value: f32, sms: u32) -> Result<Call, SizeError> {
    positive_sms(sms)?;
    let bytes = floats("n", n)?;
    buf("y", y, bytes)?;
    Ok(grid_stride_call(args::Fill { y, n, value }, n, sms))
}

/// Checks a unary elementwise operation `y = f(x)` over `n` floats.
fn unary(y: u64, x: u64, n: u64, sms: u32) -> Result<(), SizeError> {
    positive_sms(sms)?;
    let bytes = floats("n", n)?;
    let y = buf("y", y, bytes)?;
    let x = buf("x", x, bytes)?;
    apart(y, x, true)
}

/// Checks a binary elementwise operation `out = f(a, b)` over `n` floats.
fn binary(names: [&'static str; 3], ptrs: [u64; 3], n: u64, sms: u32) -> Result<(), SizeError> {
    positive_sms(sms)?;
    let bytes = floats("n", n)?;
    let out = buf(names[0], ptrs[0], bytes)?;
    let a = buf(names[1], ptrs[1], bytes)?;
    let b = buf(names[2], ptrs[2], bytes)?;
    apart(out, a, true)?;
    apart(out, b, true)
}

/// The map op `op` ([`crate::map`]): `y[i] = f(x[i], c)` over `n` floats
/// (`c` is ignored by ops without a constant), with the unary checks: y and
/// x non-null and 4-byte aligned, `n` in range, y == x or apart.
pub fn map(op: MapOp, y: u64, x: u64, n: u64, c: f32, sms: u32) -> Result<Call, SizeError> {
    unary(y, x, n, sms)?;
    let values = [Value::Ptr(y), Value::Ptr(x), Value::U64(n), Value::F32(c)];
    let nargs = op.info().args.len();
    Ok(grid_stride_values(op.kernel, &values[..nargs], n, sms))
}

/// The map op of `kernel` (declared in the kernel table).
fn map_op(kernel: Kernel) -> MapOp {
    MapOp::of(kernel).expect("declared with map:")
}

/// `y[i] = x[i]`.
pub fn copy(y: u64, x: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    map(map_op(Kernel::Copy), y, x, n, 0.0, sms)
}

/// `y[i] = alpha * x[i]`.
pub fn scale(y: u64, x: u64, n: u64, alpha: f32, sms: u32) -> Result<Call, SizeError> {
    map(map_op(Kernel::Scale), y, x, n, alpha, sms)
}

/// `y[i] = x[i] + c`.
pub fn add_scalar(y: u64, x: u64, n: u64, c: f32, sms: u32) -> Result<Call, SizeError> {
    map(map_op(Kernel::AddScalar), y, x, n, c, sms)
}

/// `y[i] = fmaf(alpha, x[i], y[i])`.
pub fn axpy(y: u64, x: u64, n: u64, alpha: f32, sms: u32) -> Result<Call, SizeError> {
    unary(y, x, n, sms)?;
    Ok(grid_stride_call(args::Axpy { y, x, n, alpha }, n, sms))
}

/// The zip op `op` ([`crate::map::Zip`]): `out[i] = f(a[i], b[i])` over `n`
/// floats, with the binary checks: every pointer non-null and 4-byte
/// aligned, `n` in range, out equal to or apart from each input.
pub fn zip(op: ZipOp, out: u64, a: u64, b: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    binary(op.names(), [out, a, b], n, sms)?;
    let values = [Value::Ptr(out), Value::Ptr(a), Value::Ptr(b), Value::U64(n)];
    Ok(grid_stride_values(op.kernel, &values, n, sms))
}

/// The zip op of `kernel` (declared in the kernel table).
fn zip_op(kernel: Kernel) -> ZipOp {
    ZipOp::of(kernel).expect("declared with zip:")
}

/// `z[i] = x[i] + y[i]`.
pub fn add(z: u64, x: u64, y: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    zip(zip_op(Kernel::Add), z, x, y, n, sms)
}

/// `z[i] = x[i] * y[i]`.
pub fn mul(z: u64, x: u64, y: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    zip(zip_op(Kernel::Mul), z, x, y, n, sms)
}

/// `y[i] = relu(x[i])` (NaN propagates, -0 becomes +0).
pub fn relu(y: u64, x: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    map(map_op(Kernel::Relu), y, x, n, 0.0, sms)
}

/// `dx[i] = x[i] > 0 ? dy[i] : 0`.
pub fn relu_backward(dx: u64, dy: u64, x: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    zip(zip_op(Kernel::ReluBackward), dx, dy, x, n, sms)
}

/// `w[i] = fmaf(-lr, g[i], w[i])` (an SGD step).
pub fn sgd(w: u64, g: u64, n: u64, lr: f32, sms: u32) -> Result<Call, SizeError> {
    positive_sms(sms)?;
    let bytes = floats("n", n)?;
    let wr = buf("w", w, bytes)?;
    let gr = buf("g", g, bytes)?;
    apart(wr, gr, false)?;
    Ok(grid_stride_call(args::Sgd { w, g, n, lr }, n, sms))
}

/// `y[r, c] = x[r, c] + b[c]` for row-major `rows x cols` matrices.
pub fn bias_add(y: u64, x: u64, b: u64, rows: u32, cols: u32, sms: u32) -> Result<Call, SizeError> {
    positive_sms(sms)?;
    nonzero("rows", rows as u64)?;
    nonzero("cols", cols as u64)?;
    let n = elems("x", rows as u64, cols as u64)?;
    let yr = buf("y", y, n * F32)?;
    let xr = buf("x", x, n * F32)?;
    let br = buf("b", b, cols as u64 * F32)?;
    apart(yr, xr, true)?;
    apart(yr, br, false)?;
    Ok(grid_stride_call(
        args::BiasAdd {
            y,
            x,
            b,
            rows,
            cols,
        },
        n,
        sms,
    ))
}

/// Applies up to [`MAX_CHAIN_OPS`] operations `(opcode, constant)` to every
/// element in one pass: `y[i] = op_last(... op_first(x[i]))`. Opcodes are the
/// `OP_*` constants; each gives bitwise the result of its standalone kernel.
/// When the first operation is [`OP_FILL`], `x` is not read and may be 0.
/// An empty list copies `x` to `y`.
pub fn chain(y: u64, x: u64, n: u64, ops: &[(u32, f32)], sms: u32) -> Result<Call, SizeError> {
    positive_sms(sms)?;
    if ops.len() > MAX_CHAIN_OPS {
        return Err(SizeError::TooManyOps {
            count: ops.len(),
            max: MAX_CHAIN_OPS,
        });
    }
    let mut packed = 0u32;
    let mut c = [0.0f32; MAX_CHAIN_OPS];
    for (index, &(op, k)) in ops.iter().enumerate() {
        if !is_opcode(op) {
            return Err(SizeError::UnknownOpcode { index, opcode: op });
        }
        packed |= op << (4 * index);
        c[index] = k;
    }
    let bytes = floats("n", n)?;
    let yr = buf("y", y, bytes)?;
    let reads_x = ops.first().map(|&(op, _)| op) != Some(OP_FILL);
    let xr = if reads_x {
        buf("x", x, bytes)?
    } else {
        opt_buf("x", x, bytes)?
    };
    apart(yr, xr, true)?;
    let [c0, c1, c2, c3, c4, c5, c6, c7] = c;
    Ok(grid_stride_call(
        args::Chain {
            y,
            x,
            n,
            ops: packed,
            count: ops.len() as u32,
            c0,
            c1,
            c2,
            c3,
            c4,
            c5,
            c6,
            c7,
        },
        n,
        sms,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::*;
    use crate::ops::*;
    use crate::{Kernel, Value};

    #[test]
    fn elementwise_configs_cover_every_size() {
        let sizes = [
            1u64,
            2,
            3,
            4,
            5,
            7,
            255,
            256,
            1023,
            1024,
            1025,
            (1 << 20) + 3,
            1 << 40,
        ];
        for &n in &sizes {
            for sms in [1, 2, 132] {
                check_stride(&fill(A, n, 1.0, sms).unwrap(), n, sms);
                check_stride(&copy(A, B, n, sms).unwrap(), n, sms);
                check_stride(&scale(A, B, n, 2.0, sms).unwrap(), n, sms);
                check_stride(&add_scalar(A, A, n, 2.0, sms).unwrap(), n, sms);
                check_stride(&axpy(A, B, n, 2.0, sms).unwrap(), n, sms);
                check_stride(&add(A, B, C, n, sms).unwrap(), n, sms);
                check_stride(&mul(A, A, A, n, sms).unwrap(), n, sms);
                check_stride(&relu(A, B, n, sms).unwrap(), n, sms);
                check_stride(&relu_backward(A, B, C, n, sms).unwrap(), n, sms);
                check_stride(&sgd(A, B, n, 0.1, sms).unwrap(), n, sms);
                check_stride(&chain(A, B, n, &[(OP_MUL, 2.0)], sms).unwrap(), n, sms);
            }
        }
    }

    #[test]
    fn elementwise_rejects_bad_arguments() {
        err(scale(A, B, 0, 1.0, SMS), "n must be > 0");
        err(scale(0, B, 8, 1.0, SMS), "y is a null pointer");
        err(scale(A, 0, 8, 1.0, SMS), "x is a null pointer");
        err(scale(A + 2, B, 8, 1.0, SMS), "not 4-byte aligned");
        err(scale(A, B + 1, 8, 1.0, SMS), "not 4-byte aligned");
        err(scale(A, B, u64::MAX / 4 + 1, 1.0, SMS), "overflows");
        err(scale(u64::MAX - 7, B, 4, 1.0, SMS), "address space");
        err(scale(A, B, 8, 1.0, 0), "sms");
        // Partial overlap refused, exact in-place allowed.
        err(scale(A + 4, A, 8, 1.0, SMS), "overlap");
        assert_eq!(
            scale(A + 4, A, 8, 1.0, SMS),
            Err(SizeError::Overlap {
                output: "y",
                input: "x",
                in_place_allowed: true
            })
        );
        assert_eq!(
            scale(A, B + 2, 8, 1.0, SMS),
            Err(SizeError::Misaligned {
                arg: "x",
                addr: B + 2
            })
        );
        assert!(scale(A, A, 8, 1.0, SMS).is_ok());
        assert!(scale(A + 32, A, 8, 1.0, SMS).is_ok());
        err(add(A, A + 4, B, 8, SMS), "overlap");
        err(relu_backward(A, B, A + 8, 8, SMS), "overlap");
        err(sgd(A, A, 8, 0.1, SMS), "overlap");
        err(fill(0, 8, 1.0, SMS), "null");
        // Misaligned to 16 bytes is fine (the kernel has a scalar path).
        assert!(add(A + 4, B + 8, C + 12, 5, SMS).is_ok());
    }

    #[test]
    fn elementwise_arguments_are_in_order() {
        let call = scale(A, B, 77, 2.5, SMS).unwrap();
        assert_eq!(call.kernel, Kernel::Scale);
        assert_eq!(
            call.args(),
            &[
                Value::Ptr(A),
                Value::Ptr(B),
                Value::U64(77),
                Value::F32(2.5)
            ]
        );
        let call = add(A, B, C, 9, SMS).unwrap();
        assert_eq!(
            call.args(),
            &[Value::Ptr(A), Value::Ptr(B), Value::Ptr(C), Value::U64(9)]
        );
    }

    /// Every map op: the generic checks, its own kernel, its arguments in
    /// order (the constant only where the kernel takes one), and the same
    /// launch as the typed wrapper.
    #[test]
    fn map_ops_check_and_launch() {
        for m in MapOp::all() {
            let call = map(m, A, B, 77, 2.5, SMS).unwrap();
            assert_eq!(call.kernel, m.kernel);
            let mut want = vec![Value::Ptr(A), Value::Ptr(B), Value::U64(77)];
            if m.scalar().is_some() {
                want.push(Value::F32(2.5));
            }
            assert_eq!(call.args(), &want[..], "{}", m.name());
            for n in [1, 5, 1 << 20, 1 << 40] {
                check_stride(&map(m, A, B, n, 1.0, 132).unwrap(), n, 132);
            }
            assert!(map(m, A, A, 8, 1.0, SMS).is_ok(), "in place");
            err(map(m, A, B, 0, 1.0, SMS), "n must be > 0");
            err(map(m, 0, B, 8, 1.0, SMS), "y is a null pointer");
            err(map(m, A, 0, 8, 1.0, SMS), "x is a null pointer");
            err(map(m, A + 2, B, 8, 1.0, SMS), "not 4-byte aligned");
            err(map(m, A, B + 1, 8, 1.0, SMS), "not 4-byte aligned");
            err(map(m, A, B, u64::MAX / 4 + 1, 1.0, SMS), "overflows");
            err(map(m, u64::MAX - 7, B, 4, 1.0, SMS), "address space");
            err(map(m, A + 4, A, 8, 1.0, SMS), "overlap");
            err(map(m, A, B, 8, 1.0, 0), "sms");
        }
        assert_eq!(
            copy(A, B, 9, SMS),
            map(map_op(Kernel::Copy), A, B, 9, 0.0, SMS)
        );
        assert_eq!(
            relu(A, B, 9, SMS),
            map(MapOp::by_name("relu").unwrap(), A, B, 9, 7.0, SMS)
        );
    }

    /// Every zip op: the binary checks, named by the kernel's parameters.
    #[test]
    fn zip_ops_check_and_launch() {
        for z in ZipOp::all() {
            let [o, a, b] = z.names();
            let call = zip(z, A, B, C, 9, SMS).unwrap();
            assert_eq!(call.kernel, z.kernel);
            assert_eq!(
                call.args(),
                &[Value::Ptr(A), Value::Ptr(B), Value::Ptr(C), Value::U64(9)]
            );
            check_stride(&zip(z, A, B, C, 1 << 20, 132).unwrap(), 1 << 20, 132);
            assert!(zip(z, A, A, A, 8, SMS).is_ok(), "in place");
            err(zip(z, 0, B, C, 8, SMS), &format!("{o} is a null pointer"));
            err(zip(z, A, 0, C, 8, SMS), &format!("{a} is a null pointer"));
            err(zip(z, A, B, 0, 8, SMS), &format!("{b} is a null pointer"));
            err(zip(z, A, B + 2, C, 8, SMS), "not 4-byte aligned");
            err(zip(z, A, A + 4, C, 8, SMS), "overlap");
            err(zip(z, A, B, A + 4, 8, SMS), "overlap");
            err(zip(z, A, B, C, 0, SMS), "n must be > 0");
        }
    }

    #[test]
    fn bias_add_checks_and_covers() {
        for (rows, cols) in [(1, 1), (64, 1024), (3, 7), (100_000, 10)] {
            let call = bias_add(A, B, C, rows, cols, SMS).unwrap();
            check_stride(&call, rows as u64 * cols as u64, SMS);
        }
        err(bias_add(A, B, C, 0, 4, SMS), "rows must be > 0");
        err(bias_add(A, B, C, 4, 0, SMS), "cols must be > 0");
        err(bias_add(A, B, C, 1 << 16, 1 << 16, SMS), "2^32");
        err(bias_add(A, B, 0, 4, 4, SMS), "b is a null pointer");
        err(bias_add(A, B, A + 16, 4, 4, SMS), "overlap");
        assert!(bias_add(A, A, C, 4, 4, SMS).is_ok());
    }

    #[test]
    fn chain_packs_opcodes() {
        let ops = [
            (OP_FILL, 1.5),
            (OP_ADD, 2.0),
            (OP_MUL, -3.0),
            (OP_RELU, 0.0),
            (OP_MAX, 0.5),
        ];
        let call = chain(A, 0, 10, &ops, SMS).unwrap();
        assert_eq!(call.kernel, Kernel::Chain);
        assert_eq!(u32_arg(&call, "ops"), 0x54231);
        assert_eq!(u32_arg(&call, "count"), 5);
        assert_eq!(arg(&call, "c0"), Value::F32(1.5));
        assert_eq!(arg(&call, "c2"), Value::F32(-3.0));
        assert_eq!(arg(&call, "c7"), Value::F32(0.0));
        let eight = [(OP_MIN, 1.0); 8];
        let call = chain(A, B, 10, &eight, SMS).unwrap();
        assert_eq!(u32_arg(&call, "ops"), 0x6666_6666);
        assert!(chain(A, B, 10, &[], SMS).is_ok());
        err(chain(A, B, 10, &[(OP_MUL, 1.0); 9], SMS), "at most 8");
        assert_eq!(
            chain(A, B, 10, &[(OP_MUL, 1.0); 9], SMS),
            Err(SizeError::TooManyOps { count: 9, max: 8 })
        );
        assert_eq!(
            chain(A, B, 10, &[(OP_MUL, 1.0), (8, 1.0)], SMS),
            Err(SizeError::UnknownOpcode {
                index: 1,
                opcode: 8
            })
        );
        err(chain(A, B, 10, &[(0, 1.0)], SMS), "unknown opcode 0");
        err(chain(A, B, 10, &[(8, 1.0)], SMS), "unknown opcode 8");
        // Every map op's opcode chains (the declaration is the opcode list).
        for m in MapOp::all() {
            if let Some(op) = m.chain_op(1.0) {
                assert!(chain(A, B, 10, &[op], SMS).is_ok(), "{}", m.name());
            }
        }
        // x may be null only when the first op is FILL.
        err(
            chain(A, 0, 10, &[(OP_MUL, 1.0)], SMS),
            "x is a null pointer",
        );
        err(
            chain(A, 0, 10, &[(OP_MUL, 1.0), (OP_FILL, 1.0)], SMS),
            "x is a null pointer",
        );
        err(chain(A, A + 4, 10, &[(OP_MUL, 1.0)], SMS), "overlap");
    }
}
