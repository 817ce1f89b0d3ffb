//! Typed operations: size checks and launch configurations.
//!
//! Every constructor checks its arguments and returns the [`Call`] to launch,
//! or a [`SizeError`] saying what was wrong (then nothing may be launched):
//!
//! - pointers are device addresses (`u64`): null is refused (except where an
//!   argument is documented as optional, `0` = absent), and so is an address
//!   that is not a multiple of 4 (the size of an `f32`);
//! - element counts and matrix sizes must be non-zero, and the byte extent of
//!   every buffer must fit in the 64-bit address space;
//! - matrices: every `rows * cols` (or `rows * ld`) must be below 2^32, the
//!   kernels' 32-bit index range;
//! - an output may not partly overlap an input. Elementwise operations allow
//!   exact in-place use (output == input, same length); the linear layers and
//!   GEMM allow no overlap at all.
//!
//! `sms` is the device's multiprocessor count (`CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`);
//! launch shapes are chosen from it. The same sizes and `sms` always give the
//! same [`Call`], so results are reproducible bit for bit.

/// The chain kernel's opcodes and its operation limit (see [`chain`]).
pub use crate::fusion::{MAX_CHAIN_OPS, OP_ADD, OP_FILL, OP_MAX, OP_MIN, OP_MUL, OP_RELU};
use crate::{args, Call, Kernel, KernelArgs, SizeError};

/// Threads per block of the elementwise and reduction kernels.
pub const BLOCK: u32 = 256;
/// Largest m for which the linear forward takes the small-batch kernel
/// (larger m: the tiled GEMM).
pub const SMALL_BATCH_MAX_M: u32 = 256;
/// Largest m for which the input gradient takes the small-batch kernel.
pub const SMALL_BACKWARD_MAX_M: u32 = 64;

/// Blocks per multiprocessor at most for grid-stride kernels.
const STRIDE_WAVES: u64 = 8;
/// Blocks per multiprocessor at most for the MSE kernel (fewer partial sums).
const MSE_WAVES: u64 = 4;
const MAX_GRID_X: u64 = (1 << 31) - 1;
const F32: u64 = 4;

// ---------------------------------------------------------------------------
// Checks

/// A buffer for overlap checks: name, address, byte length.
#[derive(Clone, Copy)]
struct Region {
    name: &'static str,
    addr: u64,
    bytes: u64,
}

/// The multiprocessor count must be at least 1.
fn positive_sms(sms: u32) -> Result<(), SizeError> {
    if sms == 0 {
        return Err(SizeError::NoMultiprocessors);
    }
    Ok(())
}

/// A count or size must be at least 1.
fn nonzero(arg: &'static str, v: u64) -> Result<(), SizeError> {
    if v == 0 {
        return Err(SizeError::Zero { arg });
    }
    Ok(())
}

/// Byte length of `n` floats.
fn floats(arg: &'static str, n: u64) -> Result<u64, SizeError> {
    nonzero(arg, n)?;
    n.checked_mul(F32)
        .ok_or(SizeError::ByteOverflow { arg, floats: n })
}

/// `rows * cols` elements, below 2^32.
fn elems(matrix: &'static str, rows: u64, cols: u64) -> Result<u64, SizeError> {
    let e = rows.saturating_mul(cols);
    if e > u32::MAX as u64 {
        return Err(SizeError::TooManyElements { matrix, rows, cols });
    }
    Ok(e)
}

/// A required buffer of `bytes` at `addr`.
fn buf(name: &'static str, addr: u64, bytes: u64) -> Result<Region, SizeError> {
    if addr == 0 {
        return Err(SizeError::Null { arg: name });
    }
    opt_buf(name, addr, bytes)
}

/// An optional buffer (`addr == 0`: absent, an empty region).
fn opt_buf(name: &'static str, addr: u64, bytes: u64) -> Result<Region, SizeError> {
    if addr == 0 {
        return Ok(Region {
            name,
            addr,
            bytes: 0,
        });
    }
    if addr % F32 != 0 {
        return Err(SizeError::Misaligned { arg: name, addr });
    }
    if addr.checked_add(bytes).is_none() {
        return Err(SizeError::PastAddressSpace {
            arg: name,
            addr,
            bytes,
        });
    }
    Ok(Region { name, addr, bytes })
}

/// `out` and `input` must not overlap, except exactly (same address and
/// length) when `in_place` is allowed.
fn apart(out: Region, input: Region, in_place: bool) -> Result<(), SizeError> {
    if out.bytes == 0 || input.bytes == 0 {
        return Ok(());
    }
    let overlap = out.addr < input.addr + input.bytes && input.addr < out.addr + out.bytes;
    if !overlap || (in_place && out.addr == input.addr && out.bytes == input.bytes) {
        return Ok(());
    }
    Err(SizeError::Overlap {
        output: out.name,
        input: input.name,
        in_place_allowed: in_place,
    })
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// Grid for a grid-stride kernel over `n` floats (float4 units), at most
/// `STRIDE_WAVES` blocks per SM.
fn stride_grid(n: u64, sms: u32, waves: u64) -> u32 {
    let units = ceil_div(n, 4);
    let want = ceil_div(units, BLOCK as u64);
    want.min(sms as u64 * waves).clamp(1, MAX_GRID_X) as u32
}

fn grid_stride_call(args: impl KernelArgs, n: u64, sms: u32) -> Call {
    Call::new(
        args,
        [stride_grid(n, sms, STRIDE_WAVES), 1, 1],
        [BLOCK, 1, 1],
        0,
    )
}

// ---------------------------------------------------------------------------
// Elementwise

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

/// `y[i] = x[i]`.
pub fn copy(y: u64, x: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    unary(y, x, n, sms)?;
    Ok(grid_stride_call(args::Copy { y, x, n }, n, sms))
}

/// `y[i] = alpha * x[i]`.
pub fn scale(y: u64, x: u64, n: u64, alpha: f32, sms: u32) -> Result<Call, SizeError> {
    unary(y, x, n, sms)?;
    Ok(grid_stride_call(args::Scale { y, x, n, alpha }, n, sms))
}

/// `y[i] = x[i] + c`.
pub fn add_scalar(y: u64, x: u64, n: u64, c: f32, sms: u32) -> Result<Call, SizeError> {
    unary(y, x, n, sms)?;
    Ok(grid_stride_call(args::AddScalar { y, x, n, c }, n, sms))
}

/// `y[i] = fmaf(alpha, x[i], y[i])`.
pub fn axpy(y: u64, x: u64, n: u64, alpha: f32, sms: u32) -> Result<Call, SizeError> {
    unary(y, x, n, sms)?;
    Ok(grid_stride_call(args::Axpy { y, x, n, alpha }, n, sms))
}

/// `z[i] = x[i] + y[i]`.
pub fn add(z: u64, x: u64, y: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    binary(["z", "x", "y"], [z, x, y], n, sms)?;
    Ok(grid_stride_call(args::Add { z, x, y, n }, n, sms))
}

/// `z[i] = x[i] * y[i]`.
pub fn mul(z: u64, x: u64, y: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    binary(["z", "x", "y"], [z, x, y], n, sms)?;
    Ok(grid_stride_call(args::Mul { z, x, y, n }, n, sms))
}

/// `y[i] = relu(x[i])` (NaN propagates, -0 becomes +0).
pub fn relu(y: u64, x: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    unary(y, x, n, sms)?;
    Ok(grid_stride_call(args::Relu { y, x, n }, n, sms))
}

/// `dx[i] = x[i] > 0 ? dy[i] : 0`.
pub fn relu_backward(dx: u64, dy: u64, x: u64, n: u64, sms: u32) -> Result<Call, SizeError> {
    binary(["dx", "dy", "x"], [dx, dy, x], n, sms)?;
    Ok(grid_stride_call(
        args::ReluBackward { dx, dy, x, n },
        n,
        sms,
    ))
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
        if !(OP_FILL..=OP_MIN).contains(&op) {
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

// ---------------------------------------------------------------------------
// Reductions

/// Checks a column sum of `dy` (row-major `rows x cols`) into `out` (`cols`
/// floats, named `out_name`); returns the launch shape: grid ceil(cols / 32),
/// block (32, TY) with about 4 rows per thread, TY a power of two up to 32.
fn column_sum_shape(
    out_name: &'static str,
    out: u64,
    dy: u64,
    rows: u32,
    cols: u32,
    sms: u32,
) -> Result<([u32; 3], [u32; 3]), SizeError> {
    positive_sms(sms)?;
    nonzero("rows", rows as u64)?;
    nonzero("cols", cols as u64)?;
    let n = elems("dy", rows as u64, cols as u64)?;
    let o = buf(out_name, out, cols as u64 * F32)?;
    let d = buf("dy", dy, n * F32)?;
    apart(o, d, false)?;
    let ty = ceil_div(rows as u64, 4).next_power_of_two().min(32) as u32;
    Ok(([ceil_div(cols as u64, 32) as u32, 1, 1], [32, ty, 1]))
}

/// `db[c] = sum over r of dy[r, c]` (row-major `rows x cols`), deterministic.
pub fn bias_grad(db: u64, dy: u64, rows: u32, cols: u32, sms: u32) -> Result<Call, SizeError> {
    let (grid, block) = column_sum_shape("db", db, dy, rows, cols, sms)?;
    Ok(Call::new(
        args::BiasGrad { db, dy, rows, cols },
        grid,
        block,
        0,
    ))
}

/// `b[c] -= lr * sum over r of dy[r, c]`, bitwise equal to [`bias_grad`]
/// followed by [`sgd`], without the intermediate buffer.
pub fn bias_sgd(
    b: u64,
    dy: u64,
    rows: u32,
    cols: u32,
    lr: f32,
    sms: u32,
) -> Result<Call, SizeError> {
    let (grid, block) = column_sum_shape("b", b, dy, rows, cols, sms)?;
    Ok(Call::new(
        args::BiasSgd {
            b,
            dy,
            rows,
            cols,
            lr,
        },
        grid,
        block,
        0,
    ))
}

fn mse_blocks(n: u64, sms: u32) -> u32 {
    stride_grid(n, sms.max(1), MSE_WAVES)
}

/// Bytes of workspace [`mse`] needs for `n` elements on a device with `sms`
/// multiprocessors: a counter (16 bytes) and one partial sum per block.
/// The workspace must be zeroed once before its first use; the kernel leaves
/// it zeroed after every launch.
pub fn mse_workspace_bytes(n: u64, sms: u32) -> u64 {
    16 + F32 * mse_blocks(n, sms) as u64
}

/// Sum-of-squares loss and its gradient:
/// `loss[0] = sum (pred[i] - target[i])^2` and, when `grad != 0`,
/// `grad[i] = 2 * grad_scale * (pred[i] - target[i])` (`grad_scale = 1/n`
/// gives the gradient of the mean). `workspace` holds at least
/// [`mse_workspace_bytes`]`(n, sms)` bytes (`workspace_bytes` says how many),
/// zeroed before the first launch and not shared with a concurrent launch.
#[allow(clippy::too_many_arguments)]
pub fn mse(
    loss: u64,
    grad: u64,
    pred: u64,
    target: u64,
    n: u64,
    grad_scale: f32,
    workspace: u64,
    workspace_bytes: u64,
    sms: u32,
) -> Result<Call, SizeError> {
    positive_sms(sms)?;
    let bytes = floats("n", n)?;
    let need = mse_workspace_bytes(n, sms);
    if workspace_bytes < need {
        return Err(SizeError::WorkspaceTooSmall {
            bytes: workspace_bytes,
            needed: need,
        });
    }
    let l = buf("loss", loss, F32)?;
    let g = opt_buf("grad", grad, bytes)?;
    let p = buf("pred", pred, bytes)?;
    let t = buf("target", target, bytes)?;
    let w = buf("workspace", workspace, need)?;
    for other in [g, p, t, w] {
        apart(l, other, false)?;
    }
    for other in [g, p, t] {
        apart(w, other, false)?;
    }
    apart(g, p, true)?;
    apart(g, t, true)?;
    let grid = mse_blocks(n, sms);
    Ok(Call::new(
        args::Mse {
            loss,
            grad,
            pred,
            target,
            n,
            grad_scale,
            workspace,
        },
        [grid, 1, 1],
        [BLOCK, 1, 1],
        0,
    ))
}

// ---------------------------------------------------------------------------
// Linear layers and GEMM

/// A general matrix product for [`gemm`]:
/// `C = act(alpha * op(A) . op(B) + beta * C + bias[col])`, row-major, with
/// `op(A)` `m x k` (`A` stored `k x m` when `trans_a`), `op(B)` `k x n` (`B`
/// stored `n x k` when `trans_b`), `C` `m x n`, and leading dimensions (row
/// strides, in elements) `lda`, `ldb`, `ldc`. `bias` may be 0. With
/// `beta == 0`, `C` is not read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gemm {
    /// Output `m x n`, row stride `ldc`.
    pub c: u64,
    /// Left operand.
    pub a: u64,
    /// Right operand.
    pub b: u64,
    /// Optional per-column bias (length `n`), 0 for none.
    pub bias: u64,
    /// Rows of `C` and `op(A)`.
    pub m: u32,
    /// Columns of `C` and `op(B)`.
    pub n: u32,
    /// The reduction length.
    pub k: u32,
    /// Row stride of `A` as stored.
    pub lda: u32,
    /// Row stride of `B` as stored.
    pub ldb: u32,
    /// Row stride of `C`.
    pub ldc: u32,
    /// `A` is stored `k x m`.
    pub trans_a: bool,
    /// `B` is stored `n x k`.
    pub trans_b: bool,
    /// Apply ReLU last.
    pub relu: bool,
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of the old `C` (0: `C` is write-only).
    pub beta: f32,
}

/// Block tile edge of `gc_gemm_f32`'s `tile` values.
const GEMM_TILES: [u32; 3] = [128, 64, 32];

/// The tile for an `m x n` output with reduction length `k`: 128 x 128
/// when that still fills every SM, else 64 x 64 when that gives half a wave
/// of blocks or the reduction is short, else the 32 x 32 tile that splits K
/// over 4 slices of the block (small outputs, long reductions).
fn gemm_tile(m: u32, n: u32, k: u32, sms: u32) -> u32 {
    let blocks = |t: u64| ceil_div(m as u64, t) * ceil_div(n as u64, t);
    if blocks(128) >= sms as u64 {
        0
    } else if blocks(64) * 2 >= sms as u64 || k < 256 {
        1
    } else {
        2
    }
}

/// Checks a stored matrix of `rows x cols` with row stride `ld`; returns its region.
fn matrix(
    name: &'static str,
    addr: u64,
    rows: u32,
    cols: u32,
    ld: u32,
) -> Result<Region, SizeError> {
    if ld < cols {
        return Err(SizeError::LeadingDimension {
            matrix: name,
            ld,
            cols,
        });
    }
    elems(name, rows as u64, ld as u64)?;
    let bytes = ((rows as u64 - 1) * ld as u64 + cols as u64) * F32;
    buf(name, addr, bytes)
}

/// The block tile (rows x columns of C) of GEMM-shaped `kernel`'s `tile`.
fn gemm_block(kernel: Kernel, tile: u32) -> (u64, u64) {
    match (kernel, tile) {
        (Kernel::GemmWide, 0) | (Kernel::Gemm128x256, _) => (128, 256),
        (Kernel::GemmWide, 1) | (Kernel::GemmTf32, 0) => (128, 128),
        (Kernel::GemmMid, _) => (64, 128),
        (Kernel::LinearCluster, 0) => (128, 64),
        (Kernel::GemmWide, _) | (Kernel::GemmTf32, _) | (Kernel::LinearCluster, _) => (64, 64),
        (_, t) => {
            let e = GEMM_TILES[t as usize] as u64;
            (e, e)
        }
    }
}

/// Whether `kernel`'s `tile` gives an `m x n` output at least 7/8 of a
/// block per SM (about one full wave of one block per SM).
fn fills(kernel: Kernel, tile: u32, m: u32, n: u32, sms: u32) -> bool {
    let (tm, tn) = gemm_block(kernel, tile);
    ceil_div(m as u64, tm) * ceil_div(n as u64, tn) * 8 >= 7 * sms as u64
}

/// The tiles of the linear layout (A `m x k`, B `n x k`), largest first:
/// 128 x 256 (`gc_gemm_wide_f32`'s tile 0 as a kernel of its own: fewer
/// registers, faster on an H100), 128 x 128, 64 x 128, 64 x 64 with K split
/// over 4 slices.
const LINEAR_TILES: [(Kernel, u32); 4] = [
    (Kernel::Gemm128x256, 0),
    (Kernel::GemmWide, 1),
    (Kernel::GemmMid, 0),
    (Kernel::GemmWide, 2),
];

/// The largest tile of [`LINEAR_TILES`] that fills the SMs for an `m x n`
/// output, if any: on an H100 that was the fastest f32 tile of every
/// linear shape measured (M 256-4096, K and N 512-4096; kernels/TUNING.md).
fn linear_tile(m: u32, n: u32, sms: u32) -> Option<(Kernel, u32)> {
    LINEAR_TILES
        .into_iter()
        .find(|&(kernel, tile)| fills(kernel, tile, m, n, sms))
}

/// The kernel and `tile` argument that [`gemm`] launches: for the linear
/// layout, the largest tile of `gc_gemm_wide_f32` / `gc_gemm_mid_f32` that
/// fills the SMs ([`linear_tile`]); otherwise, and where [`gemm_tile`]
/// picks its 32 x 32 split-K tile, `gc_gemm_f32` with [`gemm_tile`]'s tile.
/// Other layouts (the gradients) keep [`gemm_tile`]'s tiles, which the
/// fused training steps share (their bitwise promise). The linear layout's
/// bits depend on the tile (one-thread sums, or 4 K slices for the 64 x 64
/// tile and the 32 x 32 one), so on the shape: a forward pass gives the
/// same bits wherever it runs through [`linear`].
fn gemm_launch(g: &Gemm, sms: u32) -> (Kernel, u32) {
    let tile = gemm_tile(g.m, g.n, g.k, sms);
    if tile == 2 || g.trans_a || !g.trans_b {
        return (Kernel::Gemm, tile);
    }
    linear_tile(g.m, g.n, sms).unwrap_or((Kernel::Gemm, tile))
}

/// The tile of `gc_gemm_tf32` for an `m x n` output: 128 x 128 (0) when
/// that fills the SMs, else 64 x 64 (1).
fn tf32_tile(m: u32, n: u32, sms: u32) -> u32 {
    if fills(Kernel::GemmTf32, 0, m, n, sms) {
        0
    } else {
        1
    }
}

/// Checks a [`Gemm`]'s sizes, strides and overlaps.
fn gemm_sizes(g: &Gemm, sms: u32) -> Result<(), SizeError> {
    positive_sms(sms)?;
    nonzero("m", g.m as u64)?;
    nonzero("n", g.n as u64)?;
    nonzero("k", g.k as u64)?;
    let (ar, ac) = if g.trans_a { (g.k, g.m) } else { (g.m, g.k) };
    let (br, bc) = if g.trans_b { (g.n, g.k) } else { (g.k, g.n) };
    let a = matrix("a", g.a, ar, ac, g.lda)?;
    let b = matrix("b", g.b, br, bc, g.ldb)?;
    let out = matrix("c", g.c, g.m, g.n, g.ldc)?;
    let bias = opt_buf("bias", g.bias, g.n as u64 * F32)?;
    for input in [a, b, bias] {
        apart(out, input, false)?;
    }
    Ok(())
}

/// The argument struct `args::$ty` of a GEMM-shaped kernel (`gc_gemm_f32`,
/// `gc_gemm_wide_f32`, `gc_gemm_128x256_f32`, `gc_gemm_mid_f32` and
/// `gc_gemm_tf32` share one
/// parameter list) for `g`.
macro_rules! gemm_args {
    ($ty:ident, $g:expr, $flags:expr, $tile:expr) => {
        args::$ty {
            c: $g.c,
            a: $g.a,
            b: $g.b,
            bias: $g.bias,
            m: $g.m,
            n: $g.n,
            k: $g.k,
            lda: $g.lda,
            ldb: $g.ldb,
            ldc: $g.ldc,
            flags: $flags,
            alpha: $g.alpha,
            beta: $g.beta,
            tile: $tile,
        }
    };
}

/// The launch of GEMM-shaped `kernel` for `g` with `tile`, in order
/// ([`Call::in_order`]) where its grid fills the SMs.
fn gemm_call(g: &Gemm, kernel: Kernel, tile: u32, sms: u32) -> Result<Call, SizeError> {
    let (tm, tn) = gemm_block(kernel, tile);
    let blocks = ceil_div(g.m as u64, tm) * ceil_div(g.n as u64, tn);
    if blocks > MAX_GRID_X {
        return Err(SizeError::GridTooLarge { blocks });
    }
    let flags = g.trans_a as u32 | (g.trans_b as u32) << 1 | (g.relu as u32) << 2;
    let (grid, block) = ([blocks as u32, 1, 1], [256, 1, 1]);
    let call = match kernel {
        Kernel::GemmWide => Call::new(gemm_args!(GemmWide, g, flags, tile), grid, block, 0),
        Kernel::Gemm128x256 => Call::new(gemm_args!(Gemm128x256, g, flags, tile), grid, block, 0),
        Kernel::GemmMid => Call::new(gemm_args!(GemmMid, g, flags, tile), grid, block, 0),
        Kernel::GemmTf32 => Call::new(gemm_args!(GemmTf32, g, flags, tile), grid, block, 0),
        Kernel::LinearCluster => {
            Call::new(gemm_args!(LinearCluster, g, flags, tile), grid, block, 0)
        }
        _ => Call::new(gemm_args!(Gemm, g, flags, tile), grid, block, 0),
    };
    Ok(if fills(kernel, tile, g.m, g.n, sms) {
        call.in_order()
    } else {
        call
    })
}

fn gemm_checked(g: &Gemm, sms: u32) -> Result<Call, SizeError> {
    gemm_sizes(g, sms)?;
    let (kernel, tile) = gemm_launch(g, sms);
    gemm_call(g, kernel, tile, sms)
}

/// The generic tiled GEMM ([`Gemm`] says what it computes). Deterministic:
/// the same sizes and `sms` give the same bits.
pub fn gemm(g: &Gemm, sms: u32) -> Result<Call, SizeError> {
    gemm_checked(g, sms)
}

/// Weights (`n * k` floats) from which layers of 33 to 256 rows take the
/// cluster split-K kernel: 2^24 (64 MiB, more than an H100's 50 MiB L2).
const CLUSTER_MIN_WEIGHTS: u64 = 1 << 24;

/// The most blocks in a cluster of `gc_linear_cluster_f32` (the portable
/// cluster size).
const CLUSTER_MAX: u32 = 8;

/// The least of K each block of a cluster sums (8 chunks of 16).
const CLUSTER_MIN_SLICE: u32 = 128;

/// The `gc_linear_cluster_f32` launch, `(tile, cluster size)`, of a linear
/// layer `m x k -> n` on a GPU with thread-block clusters (compute
/// capability 9.0), where it measured faster on an H100 (kernels/TUNING.md,
/// "Split-K over a thread-block cluster"), else `None`:
///
/// - 33 to 64 rows with at least [`CLUSTER_MIN_WEIGHTS`] weights: 64 x 64
///   tiles in clusters of 2 where they give 7/8 of a block per SM, K
///   chunks of 32 copied by cp.async (tile 3: 33-64 x 4096 -> 4096 in
///   80.8-81.0 us against tile 2's 83.4-86.0, the small-batch kernel's
///   85.6-113.7 and cuBLAS's 84-95; 64 x 2048 -> 8192: 72.0 against tile
///   1's 76.0, tile 2's 81.2, the small-batch kernel's 109.2, cuBLAS's 90);
/// - 65 to 256 rows with at least [`CLUSTER_MIN_WEIGHTS`] weights: 128 x 64
///   tiles in clusters of 2, where they give 7/8 of a block per SM
///   (128 x 4096 -> 4096: 125 us against the small-batch kernel's 200 and
///   cuBLAS's 168; 256 rows: 227 us against the 64 x 128 tile's 268);
/// - more rows where the GEMM would take its 32 x 32 split-K tile (no
///   tile fills the SMs): 64 x 64 tiles in the smallest cluster of 2, 4 or
///   8 blocks that gives 7/8 of a block per SM (8 where none does), each
///   block summing at least [`CLUSTER_MIN_SLICE`] of K (512 x 1024 -> 512:
///   23.9 us against 37.2, cuBLAS 29.3).
fn cluster_plan(m: u32, n: u32, k: u32, sms: u32) -> Option<(u32, u32)> {
    let tiles = |tm: u64, tn: u64| ceil_div(m as u64, tm) * ceil_div(n as u64, tn);
    let fills = |blocks: u64| blocks * 8 >= 7 * sms as u64;
    let large = n as u64 * k as u64 >= CLUSTER_MIN_WEIGHTS && k >= 2 * CLUSTER_MIN_SLICE;
    if m > SMALL_BATCH_MAX_M / 8 && m <= SMALL_BATCH_MAX_M / 4 {
        return (large && fills(2 * tiles(64, 64))).then_some((3, 2));
    }
    if m > SMALL_BATCH_MAX_M / 4 && m <= SMALL_BATCH_MAX_M {
        return (large && fills(2 * tiles(128, 64))).then_some((0, 2));
    }
    if m <= SMALL_BATCH_MAX_M || gemm_tile(m, n, k, sms) != 2 {
        return None;
    }
    let t = tiles(64, 64);
    let mut size = [2, 4]
        .into_iter()
        .find(|&s| fills(t * s as u64))
        .unwrap_or(CLUSTER_MAX);
    while size > 1 && k / size < CLUSTER_MIN_SLICE {
        size /= 2;
    }
    (size > 1).then_some((1, size))
}

/// The `gc_linear_cluster_f32` launch of `g` (the linear layout, or the
/// plain one with tiles 0 and 2) with `tile` in clusters of `size` blocks,
/// in order ([`Call::in_order`]).
fn cluster_call(g: &Gemm, tile: u32, size: u32, sms: u32) -> Result<Call, SizeError> {
    let call = gemm_call(g, Kernel::LinearCluster, tile, sms)?;
    let blocks = call.grid[0] as u64 * size as u64;
    if blocks > MAX_GRID_X {
        return Err(SizeError::GridTooLarge { blocks });
    }
    Ok(Call {
        grid: [blocks as u32, 1, 1],
        ..call
    }
    .clustered([size, 1, 1])
    .in_order())
}

/// Launch shape of `gc_linear_small_f32`: thread tile `2^lr x 2^lc`
/// (rows x columns) and `2^lgr x 2^lgc` tile groups per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SmallConfig {
    lr: u32,
    lc: u32,
    lgr: u32,
    lgc: u32,
}

impl SmallConfig {
    /// The kernel's `config` argument.
    fn packed(self) -> u32 {
        self.lr | self.lc << 2 | self.lgr << 4 | self.lgc << 6
    }
    /// Rows and columns of a block tile.
    fn block_tile(self) -> (u64, u64) {
        (1 << (self.lr + self.lgr), 1 << (self.lc + self.lgc))
    }
    fn grid(self, m: u32, n: u32) -> [u32; 2] {
        let (bm, bn) = self.block_tile();
        [ceil_div(n as u64, bn) as u32, ceil_div(m as u64, bm) as u32]
    }
}

/// The most inputs (`k`) a warp-per-output launch covers in one batch of
/// loads: 32 lanes, 8 float4 steps each.
const WARP_OUTPUT_MAX_K: u32 = 1024;
/// The largest W (floats) a warp-per-output launch of several rows takes:
/// each row group reads W again, which then should still be in L2 (the
/// kernel's prefetch bound, 16 MB).
const WARP_OUTPUT_MAX_W: u64 = 1 << 22;

/// Picks the launch shape of `gc_linear_small_f32` for `y (m x n) = x (m x k) . W`
/// (`kn`: W stored `k x n`), as measured on an H100 (kernels/TUNING.md):
///
/// - one row (`n x k` layout): 1 x 1 tiles, one warp per output column (8 per
///   block, fewer for narrower outputs): a warp reads a whole row of W with
///   up to 8 float4 loads per lane in flight and reduces it with shuffles;
/// - 2-4 rows, or fewer than 64 outputs for up to 16 rows (`n x k`, `k` up
///   to [`WARP_OUTPUT_MAX_K`], W up to [`WARP_OUTPUT_MAX_W`] floats): one
///   warp per output too, see [`warp_per_output`];
/// - otherwise thread tile 4 x 4 (4 x 1 for narrow outputs, 8 x 4 from 33
///   rows on; the `k x n` layout always has 4 columns) and groups: each
///   block's threads split K, but no more of them than there are float4
///   steps (so a short K gets more, smaller groups); among the shapes whose
///   block tile does not run past the matrix, the one with the fewest blocks
///   that still fills every SM, else the one with the most blocks; ties go
///   to more row groups (x rows shared in a block).
fn small_config(m: u32, n: u32, k: u32, sms: u32, kn: bool) -> SmallConfig {
    if m == 1 && !kn {
        let lgc = (n as u64).next_power_of_two().trailing_zeros().min(3);
        return SmallConfig {
            lr: 0,
            lc: 0,
            lgr: 0,
            lgc,
        };
    }
    if !kn
        && (m <= 4 || (n < 64 && m <= 16))
        && k <= WARP_OUTPUT_MAX_K
        && n as u64 * k as u64 <= WARP_OUTPUT_MAX_W
    {
        if let Some(c) = warp_per_output(m, n) {
            return c;
        }
    }
    let (lr, lc) = if kn {
        (
            if m == 1 {
                0
            } else if m > 32 {
                3
            } else {
                2
            },
            2,
        )
    } else if n < 64 {
        (2, 0)
    } else if m > 32 {
        (3, 2)
    } else {
        (2, 2)
    };
    let rows = (m as u64).next_power_of_two().max(1 << lr);
    let cols = (n as u64).next_power_of_two().max(1 << lc);
    let steps = ceil_div(k as u64, 4).max(32);
    let sms = sms as u64;
    let mut shapes = Vec::new();
    for lgr in 0..=3 {
        for lgc in 0..=3 - lgr {
            let c = SmallConfig { lr, lc, lgr, lgc };
            let (bm, bn) = c.block_tile();
            if bm > rows || bn > cols {
                continue;
            }
            let lanes = 32u64 << (3 - lgr - lgc);
            let blocks = ceil_div(m as u64, bm) * ceil_div(n as u64, bn);
            shapes.push((c, lanes <= steps, blocks));
        }
    }
    if shapes.iter().any(|s| s.1) {
        shapes.retain(|s| s.1);
    }
    let full = shapes.iter().any(|s| s.2 >= sms);
    let key = |s: &(SmallConfig, bool, u64)| {
        let b = if full {
            if s.2 >= sms {
                s.2
            } else {
                u64::MAX
            }
        } else {
            u64::MAX - s.2
        };
        (b, 3 - s.0.lgr)
    };
    shapes
        .iter()
        .min_by_key(|s| key(s))
        .expect("lgr = lgc = 0 always fits")
        .0
}

/// 1 x 1 thread tiles in 8 one-warp groups per block (`lgr + lgc = 3`), each
/// warp one output with 8 float4 loads per lane in flight (one batch for `k`
/// up to [`WARP_OUTPUT_MAX_K`]): of the splits into row and column groups
/// whose block tile fits the matrix (rows and columns rounded up to powers
/// of two), the one whose block reads the fewest rows of x and W (rows +
/// columns), ties to more column groups; `None` when no split fits. On an
/// H100 this beat the 4 x 4 and 4 x 1 tiles by 0.1-0.9 us a layer at 2-4
/// rows and for narrow outputs (kernels/TUNING.md, "Small batches of 2-16 rows").
fn warp_per_output(m: u32, n: u32) -> Option<SmallConfig> {
    let (rows, cols) = (
        (m as u64).next_power_of_two(),
        (n as u64).next_power_of_two(),
    );
    (0..=3u32)
        .rev()
        .map(|lgc| SmallConfig {
            lr: 0,
            lc: 0,
            lgr: 3 - lgc,
            lgc,
        })
        .filter(|c| {
            let (bm, bn) = c.block_tile();
            bm <= rows && bn <= cols
        })
        .min_by_key(|c| {
            let (bm, bn) = c.block_tile();
            bm + bn
        })
}

/// Checks the sizes of a linear layer: x `m x k`, W `n x k`, y `m x n`.
fn linear_sizes(m: u32, n: u32, k: u32) -> Result<(), SizeError> {
    nonzero("m", m as u64)?;
    nonzero("n", n as u64)?;
    nonzero("k", k as u64)?;
    elems("x (m x k)", m as u64, k as u64)?;
    elems("w (n x k)", n as u64, k as u64)?;
    elems("y (m x n)", m as u64, n as u64)?;
    Ok(())
}

/// `gc_linear_small_f32` call: `y (m x out) = x (m x red) . W`, W laid out
/// `out x red` (`kn == false`) or `red x out` (`kn == true`).
#[allow(clippy::too_many_arguments)]
fn small_call(
    y: u64,
    x: u64,
    w: u64,
    b: u64,
    m: u32,
    out: u32,
    red: u32,
    relu: bool,
    kn: bool,
    sms: u32,
) -> Call {
    let config = small_config(m, out, red, sms, kn);
    let [gx, gy] = config.grid(m, out);
    let flags = relu as u32 | (kn as u32) << 1;
    Call::new(
        args::LinearSmall {
            y,
            x,
            w,
            b,
            m,
            n: out,
            k: red,
            flags,
            config: config.packed(),
        },
        [gx, gy, 1],
        [256, 1, 1],
        0,
    )
}

/// Whether [`linear`] takes the small-batch kernel for `m` rows, `n`
/// outputs and `k` inputs: up to [`SMALL_BATCH_MAX_M`] rows, except that
/// from `SMALL_BATCH_MAX_M / 2 + 1` rows on outputs wide enough for a GEMM
/// tile to fill the SMs take the GEMM (on an H100 at m = 256, n = 4096 it
/// was 1.5-1.6x faster; at n <= 1024 the small-batch kernel was), and
/// that with `clusters` (a GPU with thread-block clusters) the layers the
/// cluster split-K kernel takes do not.
pub fn small_batch(m: u32, n: u32, k: u32, sms: u32, clusters: bool) -> bool {
    m <= SMALL_BATCH_MAX_M
        && (m <= SMALL_BATCH_MAX_M / 2 || linear_tile(m, n, sms).is_none())
        && !(clusters && cluster_plan(m, n, k, sms).is_some())
}

/// Linear layer forward: `y = x . W^T + b`, then ReLU when `relu`.
/// x is `m x k`, W is `n x k` (PyTorch's layout), b has `n` entries (0 for
/// no bias), y is `m x n`; all row-major. `clusters`: the GPU has
/// thread-block clusters (compute capability 9.0 or later), where some
/// shapes take `gc_linear_cluster_f32` (K split over the blocks of a
/// cluster); small batches ([`small_batch`]) take the small-batch kernel
/// (K split over the threads of a block), larger ones the tiled GEMM. The
/// choice, and so the result's bits, depends on the shape, `sms` and
/// `clusters` only.
#[allow(clippy::too_many_arguments)]
pub fn linear(
    y: u64,
    x: u64,
    w: u64,
    b: u64,
    m: u32,
    n: u32,
    k: u32,
    relu: bool,
    sms: u32,
    clusters: bool,
) -> Result<Call, SizeError> {
    positive_sms(sms)?;
    linear_sizes(m, n, k)?;
    if let Some((tile, size)) = cluster_plan(m, n, k, sms).filter(|_| clusters) {
        let g = linear_gemm(y, x, w, b, m, n, k, relu);
        gemm_sizes(&g, sms)?;
        return cluster_call(&g, tile, size, sms);
    }
    if !small_batch(m, n, k, sms, clusters) {
        return gemm_checked(&linear_gemm(y, x, w, b, m, n, k, relu), sms);
    }
    let yr = buf("y", y, m as u64 * n as u64 * F32)?;
    let xr = buf("x", x, m as u64 * k as u64 * F32)?;
    let wr = buf("w", w, n as u64 * k as u64 * F32)?;
    let br = opt_buf("b", b, n as u64 * F32)?;
    for input in [xr, wr, br] {
        apart(yr, input, false)?;
    }
    Ok(small_call(y, x, w, b, m, n, k, relu, false, sms))
}

/// The GEMM of a linear layer's forward pass (see [`linear`]).
#[allow(clippy::too_many_arguments)]
fn linear_gemm(y: u64, x: u64, w: u64, b: u64, m: u32, n: u32, k: u32, relu: bool) -> Gemm {
    Gemm {
        c: y,
        a: x,
        b: w,
        bias: b,
        m,
        n,
        k,
        lda: k,
        ldb: k,
        ldc: n,
        trans_a: false,
        trans_b: true,
        relu,
        alpha: 1.0,
        beta: 0.0,
    }
}

/// [`linear`] with TF32 tensor cores: `gc_gemm_tf32` rounds x and W to
/// TF32 (10 mantissa bits) and sums the products in f32 (results differ
/// from [`linear`]'s by that rounding: about 2^-11 relative per product).
/// It runs where [`linear`] takes the GEMM, and from
/// `SMALL_BATCH_MAX_M / 2 + 1` rows on where 64 x 64 tiles give half a
/// wave (on an H100 it then beat the f32 small-batch kernel); other small
/// batches take [`linear`]'s f32 path (with `clusters`, as [`linear`]).
/// `gc_gemm_tf32` needs compute capability 8.0 or later: on older GPUs the
/// caller uses [`linear`] instead.
#[allow(clippy::too_many_arguments)]
pub fn linear_tf32(
    y: u64,
    x: u64,
    w: u64,
    b: u64,
    m: u32,
    n: u32,
    k: u32,
    relu: bool,
    sms: u32,
    clusters: bool,
) -> Result<Call, SizeError> {
    let tensor_cores = !small_batch(m, n, k, sms, false)
        || (m > SMALL_BATCH_MAX_M / 2 && fills(Kernel::GemmTf32, 1, m, n, sms / 2));
    if !tensor_cores {
        return linear(y, x, w, b, m, n, k, relu, sms, clusters);
    }
    positive_sms(sms)?;
    linear_sizes(m, n, k)?;
    let g = linear_gemm(y, x, w, b, m, n, k, relu);
    gemm_sizes(&g, sms)?;
    gemm_call(&g, Kernel::GemmTf32, tf32_tile(m, n, sms), sms)
}

/// Weights (`n * k`) from which an input gradient of [`SMALL_BACKWARD_GEMM_MIN_M`]
/// to [`SMALL_BACKWARD_MAX_M`] rows takes the tiled GEMM: 4096 x 4096 with 32
/// and 64 rows measured 134 and 163 us there against the small-batch
/// kernel's 161 and 180 (H100, kernels/TUNING.md, "The 2-layer training
/// step past its fused form").
const SMALL_BACKWARD_GEMM_MIN_WEIGHTS: u64 = 1 << 24;
/// The fewest rows that [`SMALL_BACKWARD_GEMM_MIN_WEIGHTS`] sends to the GEMM.
const SMALL_BACKWARD_GEMM_MIN_M: u32 = 32;

/// Input gradient of a linear layer: `dx = dy . W` with dy `m x n`, W `n x k`,
/// dx `m x k`. `m <=` [`SMALL_BACKWARD_MAX_M`] takes the small-batch kernel
/// (except from [`SMALL_BACKWARD_GEMM_MIN_M`] rows with at least
/// [`SMALL_BACKWARD_GEMM_MIN_WEIGHTS`] weights), larger `m` the tiled GEMM;
/// with `clusters` (the GPU has thread-block clusters), the shapes whose
/// forward [`cluster_plan`] gives tile 3 (33-64 rows, large weights) or
/// tile 0 (65-256 rows) take `gc_linear_cluster_f32` in its plain layout
/// (C = A . B; tile 2, or tile 0) in the same clusters instead of the tiled
/// GEMM (64 x 4096 -> 4096 on an H200 in 81.4 us against 164.2: see
/// kernels/TUNING.md, "The input gradient on clusters").
#[allow(clippy::too_many_arguments)]
pub fn linear_backward_input(
    dx: u64,
    dy: u64,
    w: u64,
    m: u32,
    n: u32,
    k: u32,
    sms: u32,
    clusters: bool,
) -> Result<Call, SizeError> {
    positive_sms(sms)?;
    linear_sizes(m, n, k)?;
    let large =
        m >= SMALL_BACKWARD_GEMM_MIN_M && n as u64 * k as u64 >= SMALL_BACKWARD_GEMM_MIN_WEIGHTS;
    if m > SMALL_BACKWARD_MAX_M || large {
        let g = Gemm {
            c: dx,
            a: dy,
            b: w,
            bias: 0,
            m,
            n: k,
            k: n,
            lda: n,
            ldb: k,
            ldc: k,
            trans_a: false,
            trans_b: false,
            relu: false,
            alpha: 1.0,
            beta: 0.0,
        };
        // The forward's cluster tile of this shape, in the plain layout.
        let plain = match clusters.then(|| cluster_plan(m, k, n, sms)).flatten() {
            Some((3, size)) => Some((2, size)),
            Some((0, size)) => Some((0, size)),
            _ => None,
        };
        if let Some((tile, size)) = plain {
            gemm_sizes(&g, sms)?;
            return cluster_call(&g, tile, size, sms);
        }
        return gemm_checked(&g, sms);
    }
    let dxr = buf("dx", dx, m as u64 * k as u64 * F32)?;
    let dyr = buf("dy", dy, m as u64 * n as u64 * F32)?;
    let wr = buf("w", w, n as u64 * k as u64 * F32)?;
    apart(dxr, dyr, false)?;
    apart(dxr, wr, false)?;
    Ok(small_call(dx, dy, w, 0, m, k, n, false, true, sms))
}

/// The weight-gradient GEMM `W' = alpha * dy^T . x + beta * W'` (n x k).
#[allow(clippy::too_many_arguments)]
fn weight_gemm(
    out: u64,
    dy: u64,
    x: u64,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    sms: u32,
) -> Result<Call, SizeError> {
    positive_sms(sms)?;
    linear_sizes(m, n, k)?;
    gemm_checked(
        &Gemm {
            c: out,
            a: dy,
            b: x,
            bias: 0,
            m: n,
            n: k,
            k: m,
            lda: n,
            ldb: k,
            ldc: k,
            trans_a: true,
            trans_b: false,
            relu: false,
            alpha,
            beta,
        },
        sms,
    )
}

/// Weight gradient of a linear layer: `dw = dy^T . x` with dy `m x n`, x
/// `m x k`, dw `n x k` (overwritten).
pub fn linear_backward_weight(
    dw: u64,
    dy: u64,
    x: u64,
    m: u32,
    n: u32,
    k: u32,
    sms: u32,
) -> Result<Call, SizeError> {
    weight_gemm(dw, dy, x, m, n, k, 1.0, 0.0, sms)
}

/// Fused weight gradient and SGD step: `W -= lr * dy^T . x`, in place on W
/// (`n x k`), without materialising the gradient. Bitwise equal to
/// [`linear_backward_weight`] followed by [`sgd`] with the same sizes and `sms`.
#[allow(clippy::too_many_arguments)]
pub fn linear_weight_sgd(
    w: u64,
    dy: u64,
    x: u64,
    m: u32,
    n: u32,
    k: u32,
    lr: f32,
    sms: u32,
) -> Result<Call, SizeError> {
    weight_gemm(w, dy, x, m, n, k, -lr, 1.0, sms)
}

// ---------------------------------------------------------------------------
// Conditional-node setters (one thread each)

/// Comparisons of [`cond_set_f32`]: `*x < threshold`, `<=`, `>`, `>=`.
pub const CMP_LT: u32 = 0;
/// `*x <= threshold`.
pub const CMP_LE: u32 = 1;
/// `*x > threshold`.
pub const CMP_GT: u32 = 2;
/// `*x >= threshold`.
pub const CMP_GE: u32 = 3;

const ONE: [u32; 3] = [1, 1, 1];

/// A u32 in device memory (4-byte aligned).
fn word(name: &'static str, addr: u64) -> Result<Region, SizeError> {
    buf(name, addr, 4)
}

/// Sets conditional handle `handle` to the u32 at `value`.
pub fn cond_set_u32(handle: u64, value: u64) -> Result<Call, SizeError> {
    word("value", value)?;
    Ok(Call::new(args::CondSetU32 { handle, value }, ONE, ONE, 0))
}

/// `*counter += 1`; sets `handle` to `*counter < limit` (`limit > 0`).
pub fn cond_count(handle: u64, counter: u64, limit: u32) -> Result<Call, SizeError> {
    word("counter", counter)?;
    if limit == 0 {
        return Err(SizeError::Zero { arg: "limit" });
    }
    Ok(Call::new(
        args::CondCount {
            handle,
            counter,
            limit,
        },
        ONE,
        ONE,
        0,
    ))
}

/// Sets `handle` to the index of the first of the `count` ascending sizes
/// at `sizes` that holds `*rows` rows (`count` when none does).
pub fn cond_set_bucket(handle: u64, rows: u64, sizes: u64, count: u32) -> Result<Call, SizeError> {
    word("rows", rows)?;
    if count == 0 {
        return Err(SizeError::Zero { arg: "count" });
    }
    buf("sizes", sizes, 4 * count as u64)?;
    let a = args::CondSetBucket {
        handle,
        rows,
        sizes,
        count,
    };
    Ok(Call::new(a, ONE, ONE, 0))
}

/// Sets `handle` to `*x cmp threshold` (`cmp` one of `CMP_*`); with a
/// `counter` (non-zero), also `*counter += 1` and 0 once `*counter >=
/// limit` (`limit > 0`).
pub fn cond_set_f32(
    handle: u64,
    x: u64,
    threshold: f32,
    cmp: u32,
    counter: u64,
    limit: u32,
) -> Result<Call, SizeError> {
    let xr = word("x", x)?;
    if cmp > CMP_GE {
        return Err(SizeError::UnknownComparison { cmp });
    }
    if counter != 0 {
        apart(xr, word("counter", counter)?, false)?;
        if limit == 0 {
            return Err(SizeError::Zero { arg: "limit" });
        }
    }
    let a = args::CondSetF32 {
        handle,
        x,
        threshold,
        cmp,
        counter,
        limit,
    };
    Ok(Call::new(a, ONE, ONE, 0))
}

// ---------------------------------------------------------------------------
// Whole MLP forward

/// One layer of an MLP for [`mlp`]: `y = x . W^T + b` (then ReLU when
/// `relu`), W `outputs x inputs` row-major (PyTorch's layout), `b` with
/// `outputs` entries or 0 (no bias).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlpLayer {
    /// Device address of W.
    pub w: u64,
    /// Device address of b, or 0.
    pub b: u64,
    /// Input width (the previous layer's `outputs`).
    pub inputs: u32,
    /// Output width.
    pub outputs: u32,
    /// ReLU after this layer.
    pub relu: bool,
}

/// Most layers one fused launch runs (longer networks take one launch per
/// group of this many layers).
pub const MLP_FUSED_LAYERS: usize = 4;
/// Most rows the fused launch takes; more rows run one launch per layer
/// (past that the per-layer kernels' block tiles, which split K over several
/// warps, win over the launches fusion saves: kernels/TUNING.md).
pub const MLP_FUSED_MAX_ROWS: u32 = 8;
/// Bytes at the start of an MLP workspace for the fused kernel's counter and
/// epoch (the first 4 must be zero before the first launch; every launch
/// leaves them zero).
const MLP_BARRIER_BYTES: u64 = 256;
/// Intermediates start at multiples of this many bytes into the workspace.
const MLP_ALIGN: u64 = 256;
/// Most multiply-adds (rows x inputs x outputs) a layer may take for the
/// network to run fused: past that the per-layer kernels' larger tiles and
/// more warps win over the launches fusion saves (measured on an H100,
/// kernels/TUNING.md).
pub const MLP_FUSED_MAX_MACS: u64 = 1 << 25;
/// Most weights a layer after the first may have for [`MlpForm::Fused`] to
/// fuse the network (with one row and 3 to [`MLP_FUSED_LAYERS`] layers):
/// where it measured faster than, or as fast as, one launch per layer on an
/// H100 (benches/results/mlp_vs_torch.json; kernels/TUNING.md). Past it,
/// every warp that waits re-reads its whole input slice, which slows the
/// warps producing it.
pub const MLP_FUSED_PAYS_MAX_WEIGHTS: u64 = 1 << 17;

/// How [`mlp`] runs the layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlpForm {
    /// One launch per layer.
    PerLayer,
    /// Fused where that measured at least as fast as one launch per layer
    /// ([`mlp_fusion_pays`]); one launch per layer elsewhere.
    Fused,
    /// Fused wherever the fused kernel takes the layers (up to
    /// [`MLP_FUSED_MAX_ROWS`] rows, [`MLP_FUSED_MAX_MACS`] a layer), faster
    /// or not: for measurements and tests.
    FusedAlways,
}

/// True where one fused launch measured at least as fast as one launch per
/// layer on an H100: one row, 3 to [`MLP_FUSED_LAYERS`] layers, and every
/// layer after the first at most [`MLP_FUSED_PAYS_MAX_WEIGHTS`] weights
/// (the notes' 1024 -> 512 -> 256 -> 10 MLP at batch 1 is one), and only
/// where the per-layer launches do not `overlap`: with programmatic
/// dependent launch (compute capability 9.0 and a CUDA 12.3 driver on) each
/// layer's kernel starts while the one before it finishes, and one launch
/// per layer measured faster than the fused cooperative launch (which
/// cannot overlap its neighbours) at every shape of the sweep.
pub fn mlp_fusion_pays(rows: u32, layers: &[MlpLayer], overlap: bool) -> bool {
    !overlap
        && rows == 1
        && (3..=MLP_FUSED_LAYERS).contains(&layers.len())
        && layers[1..]
            .iter()
            .all(|l| l.inputs as u64 * l.outputs as u64 <= MLP_FUSED_PAYS_MAX_WEIGHTS)
}
/// Warp tiles of `gc_mlp_f32` (rows x columns), by its tile code.
const MLP_TILES: [(u32, u32); 4] = [(1, 1), (4, 1), (4, 4), (8, 4)];
/// Blocks per SM of the fused launch (`__launch_bounds__(256, 1)`).
const MLP_BLOCKS_PER_SM: u32 = 1;
/// Blocks per SM the 2-layer step's cooperative launch may have
/// (`gc_mlp2_mse_f32`: `__launch_bounds__(256, 2)`, at most 128 registers).
const MLP2_BLOCKS_PER_SM: u32 = 2;

/// Bytes a layer's output with `outputs` columns takes in an MLP workspace
/// as floats (the per-layer launches' intermediates and the output of a
/// fused group that the next group reads).
fn mlp_plain(rows: u32, outputs: u32) -> u64 {
    (rows as u64 * outputs as u64 * F32).next_multiple_of(MLP_ALIGN)
}

/// Bytes a layer's output takes as the fused kernel's tagged slots (value
/// and launch tag, 8 bytes an element). Kept apart from the float
/// intermediates, so no per-layer output is ever read as a tagged slot.
fn mlp_tagged(rows: u32, outputs: u32) -> u64 {
    (rows as u64 * outputs as u64 * 2 * F32).next_multiple_of(MLP_ALIGN)
}

/// Bytes of workspace [`mlp`] needs for `rows` rows through `layers`: 256
/// bytes (the fused kernel's counter and epoch), then every layer's output
/// but the last as tagged slots (8 bytes an element), then as floats, each
/// rounded up to 256 bytes. The first 4 bytes must be zero before the
/// workspace's first use; every launch leaves them zero.
pub fn mlp_workspace_bytes(rows: u32, layers: &[MlpLayer]) -> u64 {
    let inner = &layers[..layers.len().saturating_sub(1)];
    MLP_BARRIER_BYTES
        + inner
            .iter()
            .map(|l| mlp_tagged(rows, l.outputs) + mlp_plain(rows, l.outputs))
            .sum::<u64>()
}

/// Address of the tagged slots of layer `l`'s output in the workspace.
fn mlp_tagged_region(workspace: u64, rows: u32, layers: &[MlpLayer], l: usize) -> u64 {
    workspace
        + MLP_BARRIER_BYTES
        + layers[..l]
            .iter()
            .map(|x| mlp_tagged(rows, x.outputs))
            .sum::<u64>()
}

/// Address of layer `l`'s output as floats in the workspace (`l` < layers - 1).
fn mlp_region(workspace: u64, rows: u32, layers: &[MlpLayer], l: usize) -> u64 {
    mlp_tagged_region(workspace, rows, layers, layers.len() - 1)
        + layers[..l]
            .iter()
            .map(|x| mlp_plain(rows, x.outputs))
            .sum::<u64>()
}

/// The warp tile (index into [`MLP_TILES`]) for a `rows x outputs` layer
/// run by `warps` warps: the largest tile that fits the rows and still
/// gives every other warp a tile, else 1 x 1 (the most tiles).
fn mlp_tile(rows: u32, outputs: u32, warps: u64) -> usize {
    warp_tile(rows, outputs, warps, &MLP_TILES)
}

/// The tile of `tiles` (ascending, rows x columns) that fits the rows and
/// loads the least per warp: rounds of tiles a warp takes (`warps` of them
/// round-robin) times the rows and columns one tile reads along K; ties go
/// to the larger tile (fewer tiles). Its index.
fn spread_tile(rows: u32, outputs: u32, warps: u64, tiles: &[(u32, u32)]) -> usize {
    let cost = |t: usize| {
        let (r, c) = tiles[t];
        let count = ceil_div(rows as u64, r as u64) * ceil_div(outputs as u64, c as u64);
        ceil_div(count, warps) * (r + c) as u64
    };
    (0..tiles.len())
        .filter(|&t| t == 0 || rows >= tiles[t].0 - 1)
        .rev()
        .min_by_key(|&t| cost(t))
        .unwrap_or(0)
}

/// The largest of `tiles` (ascending, rows x columns) that fits the rows
/// and gives every other of `warps` warps a tile, else the first: its index.
fn warp_tile(rows: u32, outputs: u32, warps: u64, tiles: &[(u32, u32)]) -> usize {
    (1..tiles.len())
        .rev()
        .find(|&t| {
            let (r, c) = tiles[t];
            let count = ceil_div(rows as u64, r as u64) * ceil_div(outputs as u64, c as u64);
            rows >= r - 1 && count * 2 >= warps
        })
        .unwrap_or(0)
}

/// Checks an MLP's arguments: sizes, widths that chain, pointers, overlaps
/// and the workspace.
fn mlp_checks(
    y: u64,
    x: u64,
    workspace: u64,
    workspace_bytes: u64,
    rows: u32,
    layers: &[MlpLayer],
    sms: u32,
) -> Result<(), SizeError> {
    positive_sms(sms)?;
    nonzero("rows", rows as u64)?;
    let (Some(first), Some(last)) = (layers.first(), layers.last()) else {
        return Err(SizeError::Zero { arg: "n_layers" });
    };
    for (i, l) in layers.iter().enumerate() {
        linear_sizes(rows, l.outputs, l.inputs)?;
        if i > 0 && l.inputs != layers[i - 1].outputs {
            return Err(SizeError::LayerWidths {
                layer: i,
                inputs: l.inputs,
                previous: layers[i - 1].outputs,
            });
        }
    }
    let need = mlp_workspace_bytes(rows, layers);
    if workspace_bytes < need {
        return Err(SizeError::WorkspaceTooSmall {
            bytes: workspace_bytes,
            needed: need,
        });
    }
    let yr = buf("y", y, rows as u64 * last.outputs as u64 * F32)?;
    let wsr = buf("workspace", workspace, need)?;
    let mut inputs = vec![buf("x", x, rows as u64 * first.inputs as u64 * F32)?];
    for l in layers {
        inputs.push(buf("w", l.w, l.outputs as u64 * l.inputs as u64 * F32)?);
        inputs.push(opt_buf("b", l.b, l.outputs as u64 * F32)?);
    }
    apart(yr, wsr, false)?;
    for input in inputs {
        apart(yr, input, false)?;
        apart(wsr, input, false)?;
    }
    Ok(())
}

/// Where layer `l` of an MLP reads and writes: (input, output).
fn mlp_io(y: u64, x: u64, workspace: u64, rows: u32, layers: &[MlpLayer], l: usize) -> (u64, u64) {
    let input = if l == 0 {
        x
    } else {
        mlp_region(workspace, rows, layers, l - 1)
    };
    let output = if l + 1 == layers.len() {
        y
    } else {
        mlp_region(workspace, rows, layers, l)
    };
    (input, output)
}

/// The forward pass of an MLP, `rows` rows of `x` (`rows x layers[0].inputs`)
/// through `layers` into `y` (`rows x outputs of the last layer`), all
/// row-major f32. `workspace` (`workspace_bytes` long, at least
/// [`mlp_workspace_bytes`]) holds the fused kernel's counter and epoch and the intermediate
/// activations; its first 4 bytes must be zero before its first use (every
/// launch leaves them zero) and it must not be shared with a concurrent
/// launch. Fused ([`MlpForm`]; the kernel takes up to
/// [`MLP_FUSED_MAX_ROWS`] rows and [`MLP_FUSED_MAX_MACS`] a layer): one
/// cooperative `gc_mlp_f32` launch per [`MLP_FUSED_LAYERS`] layers (outputs bitwise equal to [`mlp_unfused`]; no
/// barrier between the layers: each tile waits only for the tagged
/// activations it reads); otherwise one [`linear`] launch per layer
/// (kernels/TUNING.md has the measurements). `overlap`: the launches are
/// made with programmatic dependent launch (see [`mlp_fusion_pays`]);
/// `clusters`: the GPU has thread-block clusters (as [`linear`]).
#[allow(clippy::too_many_arguments)]
pub fn mlp(
    y: u64,
    x: u64,
    workspace: u64,
    workspace_bytes: u64,
    rows: u32,
    layers: &[MlpLayer],
    form: MlpForm,
    overlap: bool,
    sms: u32,
    clusters: bool,
) -> Result<Vec<Call>, SizeError> {
    mlp_checks(y, x, workspace, workspace_bytes, rows, layers, sms)?;
    let fuse = match form {
        MlpForm::PerLayer => false,
        MlpForm::Fused => mlp_fusion_pays(rows, layers, overlap),
        MlpForm::FusedAlways => true,
    };
    let small = layers.iter().all(|l| {
        l.inputs <= u16::MAX as u32
            && l.outputs <= u16::MAX as u32
            && rows as u64 * l.inputs as u64 * l.outputs as u64 <= MLP_FUSED_MAX_MACS
    });
    if !fuse || rows > MLP_FUSED_MAX_ROWS || !small {
        return (0..layers.len())
            .map(|i| {
                let (input, output) = mlp_io(y, x, workspace, rows, layers, i);
                let l = &layers[i];
                linear(
                    output, input, l.w, l.b, rows, l.outputs, l.inputs, l.relu, sms, clusters,
                )
            })
            .collect();
    }
    let max_blocks = sms as u64 * MLP_BLOCKS_PER_SM as u64;
    let warps = max_blocks * 8;
    let mut calls = Vec::new();
    for start in (0..layers.len()).step_by(MLP_FUSED_LAYERS) {
        let group = &layers[start..(start + MLP_FUSED_LAYERS).min(layers.len())];
        let end = start + group.len();
        let (input, _) = mlp_io(y, x, workspace, rows, layers, start);
        let (_, output) = mlp_io(y, x, workspace, rows, layers, end - 1);
        let act = mlp_tagged_region(workspace, rows, layers, start);
        let mut d = [0u32; MLP_FUSED_LAYERS + 1];
        let mut wb = [(0u64, 0u64); MLP_FUSED_LAYERS];
        let mut flags = (group.len() as u32) << 4;
        let mut most_tiles = 1;
        d[0] = group[0].inputs;
        for (i, l) in group.iter().enumerate() {
            d[i + 1] = l.outputs;
            wb[i] = (l.w, l.b);
            let t = mlp_tile(rows, l.outputs, warps);
            let (r, c) = MLP_TILES[t];
            most_tiles = most_tiles
                .max(ceil_div(rows as u64, r as u64) * ceil_div(l.outputs as u64, c as u64));
            flags |= (l.relu as u32) << i | (t as u32) << (8 + 2 * i);
        }
        let grid = ceil_div(most_tiles, 8).min(max_blocks) as u32;
        calls.push(
            Call::new(
                args::Mlp {
                    y: output,
                    x: input,
                    bar: workspace,
                    act,
                    w0: wb[0].0,
                    b0: wb[0].1,
                    w1: wb[1].0,
                    b1: wb[1].1,
                    w2: wb[2].0,
                    b2: wb[2].1,
                    w3: wb[3].0,
                    b3: wb[3].1,
                    d01: d[0] | d[1] << 16,
                    d23: d[2] | d[3] << 16,
                    d4rows: d[4] | rows << 16,
                    flags,
                },
                [grid, 1, 1],
                [BLOCK, 1, 1],
                0,
            )
            .cooperatively(),
        );
    }
    Ok(calls)
}

/// What [`mlp`] computes, as one `gc_linear_small_f32` launch per layer
/// with the fused launch's warp tiles (one warp per tile group, 8 groups per
/// block): bitwise the fused outputs, for tests and comparisons. The same
/// checks and workspace as [`mlp`]; where [`mlp`] does not fuse it is
/// [`mlp`] (`clusters` as there).
#[allow(clippy::too_many_arguments)]
pub fn mlp_unfused(
    y: u64,
    x: u64,
    workspace: u64,
    workspace_bytes: u64,
    rows: u32,
    layers: &[MlpLayer],
    sms: u32,
    clusters: bool,
) -> Result<Vec<Call>, SizeError> {
    let fused = mlp(
        y,
        x,
        workspace,
        workspace_bytes,
        rows,
        layers,
        MlpForm::FusedAlways,
        false,
        sms,
        clusters,
    )?;
    if fused.iter().any(|c| !c.cooperative) {
        return Ok(fused);
    }
    let warps = sms as u64 * MLP_BLOCKS_PER_SM as u64 * 8;
    Ok((0..layers.len())
        .map(|i| {
            let (input, output) = mlp_io(y, x, workspace, rows, layers, i);
            let l = &layers[i];
            let t = mlp_tile(rows, l.outputs, warps);
            let (r, c) = MLP_TILES[t];
            let config = SmallConfig {
                lr: r.trailing_zeros(),
                lc: c.trailing_zeros(),
                lgr: 0,
                lgc: 3,
            };
            let [gx, gy] = config.grid(rows, l.outputs);
            Call::new(
                args::LinearSmall {
                    y: output,
                    x: input,
                    w: l.w,
                    b: l.b,
                    m: rows,
                    n: l.outputs,
                    k: l.inputs,
                    flags: l.relu as u32,
                    config: config.packed(),
                },
                [gx, gy, 1],
                [BLOCK, 1, 1],
                0,
            )
        })
        .collect())
}

// ---------------------------------------------------------------------------
// Training step of a linear layer (summed squared error, SGD)

/// One training step of a linear layer for [`linear_mse_step`]: the forward
/// pass `p = x . W^T + b` (x `rows x inputs`, W `outputs x inputs` as
/// PyTorch stores it, b `outputs` floats or 0), the loss
/// `loss[0] = sum (p - target)^2`, its gradient
/// `dY = 2 * grad_scale * (p - target)` and the SGD update
/// `W -= lr * dY^T . x`, `b -= lr * colsum(dY)`, all row-major f32.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearMseStep {
    /// Device address of W (updated in place).
    pub w: u64,
    /// Device address of b (updated in place), or 0 for no bias.
    pub b: u64,
    /// Device address of x.
    pub x: u64,
    /// Device address of the target (`rows x outputs`).
    pub target: u64,
    /// Device address of the loss (one float, written).
    pub loss: u64,
    /// Rows of the batch.
    pub rows: u32,
    /// Input width.
    pub inputs: u32,
    /// Output width.
    pub outputs: u32,
    /// The gradient's scale: 1 for the summed loss, `1 / (rows * outputs)`
    /// for the gradient of the mean.
    pub grad_scale: f32,
    /// The learning rate.
    pub lr: f32,
}

/// Offset of the gradient `dY` in a [`linear_mse_step`] workspace.
const STEP_GRAD_ALIGN: u64 = 256;

impl LinearMseStep {
    /// The fused forward's launch shape (`gc_linear_mse_f32`).
    fn forward_config(&self, sms: u32) -> SmallConfig {
        small_config(self.rows, self.outputs, self.inputs, sms, false)
    }

    /// Bytes of the counter and partial sums at the start of the workspace,
    /// for the fused forward ([`small_batch`] rows) or the MSE kernel (more
    /// rows), rounded up to 256 bytes; `dY` follows.
    fn sums_bytes(&self, sms: u32, clusters: bool) -> u64 {
        let bytes = if small_batch(self.rows, self.outputs, self.inputs, sms, clusters) {
            let [gx, gy] = self.forward_config(sms).grid(self.rows, self.outputs);
            16 + F32 * gx as u64 * gy as u64
        } else {
            mse_workspace_bytes(self.rows as u64 * self.outputs as u64, sms)
        };
        bytes.next_multiple_of(STEP_GRAD_ALIGN)
    }
}

/// Bytes of workspace [`linear_mse_step`] needs: the loss's per-block sums
/// (after a 16-byte counter), then the gradient `dY` (`rows x outputs`
/// floats). The first 4 bytes must be zero before the workspace's first use
/// (the counter of the MSE kernel that batches past [`small_batch`] take;
/// every step leaves them zero). `clusters` as for [`linear_mse_step`].
pub fn linear_mse_step_workspace_bytes(
    rows: u32,
    inputs: u32,
    outputs: u32,
    sms: u32,
    clusters: bool,
) -> u64 {
    let step = LinearMseStep {
        w: 0,
        b: 0,
        x: 0,
        target: 0,
        loss: 0,
        rows,
        inputs,
        outputs,
        grad_scale: 1.0,
        lr: 0.0,
    };
    step.sums_bytes(sms.max(1), clusters) + rows as u64 * outputs as u64 * F32
}

/// `gc_linear_sgd_f32`'s weight tile 3: `gc_gemm_f32`'s 64 x 64 tile (1)
/// with the whole reduction staged in shared memory at once, for up to
/// [`STAGED_SGD_ROWS`] rows (bitwise tile 1's result).
const STAGED_SGD_TILE: u32 = 3;
/// The most rows (the weight gradient's reduction length) tile 3 stages.
const STAGED_SGD_ROWS: u32 = 64;

/// `gc_linear_sgd_f32`'s `tile` bit (`gc_mlp2_sgd_f32`'s cfg bit 10) that
/// hands out the weight tiles before the loss and bias blocks.
const SGD_REVERSED: u32 = 4;

/// Blocks per SM of the update kernels (`gc_linear_sgd_f32`,
/// `gc_mlp2_sgd_f32`: `__launch_bounds__(256, 2)`).
const SGD_BLOCKS_PER_SM: u64 = 2;

/// The update kernels' block order: the weight tiles first where the grid
/// has more blocks than fit at once ([`SGD_BLOCKS_PER_SM`] per SM),
/// so that it ends with the short blocks (H200: the Linear step at 4096 x 1
/// 75.4 -> 67.5 us, the notes' 1024 x 64 16.7 -> 16.3); else the loss and
/// bias blocks first, measured 0.1-0.3 us faster on small grids
/// (kernels/TUNING.md, "The update's long blocks first").
fn sgd_reversed(blocks: u64, sms: u32) -> u32 {
    if blocks > SGD_BLOCKS_PER_SM * sms as u64 {
        SGD_REVERSED
    } else {
        0
    }
}

/// The SGD update of a linear layer (`gc_linear_sgd_f32`): `W -= lr * dy^T . x`
/// (W `n x k`, dy `m x n`, x `m x k`) and `b -= lr * colsum(dy)` (b may be
/// 0): bitwise [`linear_weight_sgd`] and [`bias_sgd`] with the same sizes
/// and `sms`, in one launch; with `loss = (address, partials, parts)`, also
/// the loss from the forward's per-block sums. Sizes and pointers are the
/// caller's to check.
#[allow(clippy::too_many_arguments)]
fn linear_sgd(
    w: u64,
    b: u64,
    dy: u64,
    x: u64,
    m: u32,
    n: u32,
    k: u32,
    lr: f32,
    loss: Option<(u64, u64, u32)>,
    sms: u32,
) -> Result<Call, SizeError> {
    // Where gc_gemm_f32 would take its 64 x 64 tile, up to 64 rows take the
    // same tile with the reduction staged at once (measured faster on an
    // H100: kernels/TUNING.md).
    let mut tile = gemm_tile(n, k, m, sms);
    let t = GEMM_TILES[tile as usize] as u64;
    if tile == 1 && m <= STAGED_SGD_ROWS {
        tile = STAGED_SGD_TILE;
    }
    let bias_blocks = if b != 0 { ceil_div(n as u64, 32) } else { 0 };
    let blocks =
        loss.is_some() as u64 + bias_blocks + ceil_div(n as u64, t) * ceil_div(k as u64, t);
    let (loss, partials, parts) = loss.unwrap_or((0, 0, 0));
    if blocks > MAX_GRID_X {
        return Err(SizeError::GridTooLarge { blocks });
    }
    let bias_ty = ceil_div(m as u64, 4).next_power_of_two().min(32) as u32;
    Ok(Call::new(
        args::LinearSgd {
            w,
            b,
            dy,
            x,
            m,
            n,
            k,
            lr,
            tile: tile | sgd_reversed(blocks, sms),
            bias_ty,
            loss,
            partials,
            parts,
        },
        [blocks as u32, 1, 1],
        [256, 1, 1],
        0,
    ))
}

/// One training step of a linear layer ([`LinearMseStep`] says what it
/// computes) in two launches for [`small_batch`] rows (those [`linear`]
/// computes with the small-batch kernel): the forward pass with `dY` and
/// the loss's per-block sums in its epilogue (`gc_linear_mse_f32`), then
/// the weight and bias update with the loss's final sum
/// (`gc_linear_sgd_f32`). Other shapes take three: [`linear`] (`clusters`:
/// the GPU has thread-block clusters, as there), the MSE kernel, the
/// update. `workspace` holds at
/// least [`linear_mse_step_workspace_bytes`] bytes (the loss's partial sums,
/// then `dY`), its first 4 bytes zero before its first use; it must not be
/// shared with a concurrent step. The updated W and b are bitwise those of
/// [`linear`], [`mse`], [`linear_weight_sgd`] and [`bias_sgd`] run one after
/// the other; the loss is summed in another fixed order (deterministic,
/// equal to [`mse`]'s up to rounding).
pub fn linear_mse_step(
    step: &LinearMseStep,
    workspace: u64,
    workspace_bytes: u64,
    sms: u32,
    clusters: bool,
) -> Result<Vec<Call>, SizeError> {
    positive_sms(sms)?;
    let &LinearMseStep {
        w,
        b,
        x,
        target,
        loss,
        rows: m,
        inputs: k,
        outputs: n,
        grad_scale,
        lr,
    } = step;
    linear_sizes(m, n, k)?;
    let need = linear_mse_step_workspace_bytes(m, k, n, sms, clusters);
    if workspace_bytes < need {
        return Err(SizeError::WorkspaceTooSmall {
            bytes: workspace_bytes,
            needed: need,
        });
    }
    let outputs = [
        buf("w", w, n as u64 * k as u64 * F32)?,
        opt_buf("b", b, n as u64 * F32)?,
        buf("loss", loss, F32)?,
        buf("workspace", workspace, need)?,
    ];
    let inputs = [
        buf("x", x, m as u64 * k as u64 * F32)?,
        buf("target", target, m as u64 * n as u64 * F32)?,
    ];
    for (i, &o) in outputs.iter().enumerate() {
        for &other in outputs[i + 1..].iter().chain(&inputs) {
            apart(o, other, false)?;
        }
    }
    let sums = workspace;
    let grad = workspace + step.sums_bytes(sms, clusters);
    let mut calls = Vec::with_capacity(3);
    if small_batch(m, n, k, sms, clusters) {
        let config = step.forward_config(sms);
        let [gx, gy] = config.grid(m, n);
        let partials = sums + 16;
        calls.push(Call::new(
            args::LinearMse {
                grad,
                pred: 0,
                partials,
                x,
                w,
                b,
                target,
                m,
                n,
                k,
                config: config.packed(),
                grad_scale,
            },
            [gx, gy, 1],
            [256, 1, 1],
            0,
        ));
        let sums = Some((loss, partials, gx * gy));
        calls.push(linear_sgd(w, b, grad, x, m, n, k, lr, sums, sms)?);
    } else {
        let len = m as u64 * n as u64;
        calls.push(linear(grad, x, w, b, m, n, k, false, sms, clusters)?);
        calls.push(mse(
            loss,
            grad,
            grad,
            target,
            len,
            grad_scale,
            sums,
            grad - sums,
            sms,
        )?);
        calls.push(linear_sgd(w, b, grad, x, m, n, k, lr, None, sms)?);
    }
    Ok(calls)
}

// ---------------------------------------------------------------------------
// Training step of a 2-layer MLP (ReLU hidden layer, summed squared error, SGD)

/// One training step of a 2-layer MLP for [`mlp2_mse_step`]:
/// `h = relu(x . W1^T + b1)`, `p = h . W2^T + b2`, `loss[0] = sum (p -
/// target)^2`, then the gradients (`dP = 2 * grad_scale * (p - target)`,
/// `dH = (dP . W2) * (h > 0)`) and the SGD update of W1, b1, W2, b2 (all
/// row-major f32, W as PyTorch stores it; b1, b2 may be 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mlp2MseStep {
    /// Device address of W1 (`hidden x inputs`, updated in place).
    pub w1: u64,
    /// Device address of b1 (`hidden`), or 0.
    pub b1: u64,
    /// Device address of W2 (`outputs x hidden`, updated in place).
    pub w2: u64,
    /// Device address of b2 (`outputs`), or 0.
    pub b2: u64,
    /// Device address of x (`rows x inputs`).
    pub x: u64,
    /// Device address of the target (`rows x outputs`).
    pub target: u64,
    /// Device address of the loss (one float, written).
    pub loss: u64,
    /// Rows of the batch.
    pub rows: u32,
    /// Input width.
    pub inputs: u32,
    /// Hidden width.
    pub hidden: u32,
    /// Output width.
    pub outputs: u32,
    /// The gradient's scale (1 for the summed loss).
    pub grad_scale: f32,
    /// The learning rate.
    pub lr: f32,
}

/// Warp tiles of the input gradient in `gc_mlp2_mse_f32` (W read `k x n`).
const KN_TILES: [(u32, u32); 3] = [(1, 4), (4, 4), (8, 4)];

/// Where a [`mlp2_mse_step`] workspace holds what: (bar, partials, h, dP, dH)
/// offsets and the total bytes.
fn mlp2_layout(rows: u32, hidden: u32, outputs: u32, sms: u32) -> ([u64; 5], u64) {
    let a = |bytes: u64| bytes.next_multiple_of(MLP_ALIGN);
    // The per-layer form's MSE takes the barrier and the sums as its workspace.
    let mse_part =
        mse_workspace_bytes(rows as u64 * outputs as u64, sms).saturating_sub(MLP_BARRIER_BYTES);
    let parts = a((F32 * sms.max(1) as u64 * MLP2_BLOCKS_PER_SM as u64).max(mse_part));
    let (h, p) = (
        a(rows as u64 * hidden as u64 * F32),
        a(rows as u64 * outputs as u64 * F32),
    );
    let bar = 0;
    let partials = MLP_BARRIER_BYTES;
    let hd = partials + parts;
    let dp = hd + h;
    let dh = dp + p;
    ([bar, partials, hd, dp, dh], dh + h)
}

/// Bytes of workspace [`mlp2_mse_step`] needs: a grid barrier (256 bytes, the
/// first 4 zero before the first use; every step leaves them zero), the
/// loss's per-block sums (in the per-layer form, the MSE's workspace with
/// the barrier), h, dP and dH (each 256-byte aligned).
pub fn mlp2_mse_step_workspace_bytes(rows: u32, hidden: u32, outputs: u32, sms: u32) -> u64 {
    mlp2_layout(rows, hidden, outputs, sms).1
}

/// Multiply-adds of a 2-layer step's forward pass and input gradient,
/// `rows * hidden * (inputs + 2 * outputs)`, from which [`mlp2_mse_step`]
/// takes one launch per layer operation instead of its cooperative kernel,
/// whose warp tiles lose to the layers' own kernels there (H200: 4096 x 32
/// rows, 1.6 G, fused 332 us against 418; 4096 x 64 rows, 3.2 G, 551
/// against 432; kernels/TUNING.md, "The 2-layer step's warp tiles").
const MLP2_FUSED_MAX_MACS: u64 = 1 << 31;

/// One training step of a 2-layer MLP ([`Mlp2MseStep`] says what it
/// computes) in two launches: a cooperative `gc_mlp2_mse_f32` (the forward
/// pass, the loss's per-block sums, dP and dH, a grid barrier between the
/// phases) and `gc_mlp2_sgd_f32` (the loss, then both layers' updates, as
/// [`linear_mse_step`]'s update does one layer's). From
/// [`MLP2_FUSED_MAX_MACS`] on, seven: [`linear`] twice (`clusters`: the GPU
/// has thread-block clusters, as there), [`mse`], [`linear_backward_input`],
/// [`relu_backward`] and each layer's update (the second launch's
/// arithmetic, one layer each). Widths and rows must be below 2^16.
/// `workspace` holds at least [`mlp2_mse_step_workspace_bytes`] bytes, its
/// first 4 bytes zero before its first use; it must not be shared with a
/// concurrent step. Deterministic: the same sizes and `sms` give the same
/// bits.
pub fn mlp2_mse_step(
    step: &Mlp2MseStep,
    workspace: u64,
    workspace_bytes: u64,
    sms: u32,
    clusters: bool,
) -> Result<Vec<Call>, SizeError> {
    positive_sms(sms)?;
    let &Mlp2MseStep {
        w1,
        b1,
        w2,
        b2,
        x,
        target,
        loss,
        rows: m,
        inputs: k0,
        hidden: k1,
        outputs: k2,
        grad_scale,
        lr,
    } = step;
    linear_sizes(m, k1, k0)?;
    linear_sizes(m, k2, k1)?;
    for (arg, v) in [("rows", m), ("inputs", k0), ("hidden", k1), ("outputs", k2)] {
        if v > u16::MAX as u32 {
            return Err(SizeError::TooLarge {
                arg,
                value: v as u64,
                max: u16::MAX as u64,
            });
        }
    }
    let ([bar, partials, h, dp, dh], need) = mlp2_layout(m, k1, k2, sms);
    if workspace_bytes < need {
        return Err(SizeError::WorkspaceTooSmall {
            bytes: workspace_bytes,
            needed: need,
        });
    }
    let f = |n: u32, k: u32| n as u64 * k as u64 * F32;
    let outputs = [
        buf("w1", w1, f(k1, k0))?,
        opt_buf("b1", b1, k1 as u64 * F32)?,
        buf("w2", w2, f(k2, k1))?,
        opt_buf("b2", b2, k2 as u64 * F32)?,
        buf("loss", loss, F32)?,
        buf("workspace", workspace, need)?,
    ];
    let inputs = [buf("x", x, f(m, k0))?, buf("target", target, f(m, k2))?];
    for (i, &o) in outputs.iter().enumerate() {
        for &other in outputs[i + 1..].iter().chain(&inputs) {
            apart(o, other, false)?;
        }
    }
    let ws = |o: u64| workspace + o;
    if m as u64 * k1 as u64 * (k0 as u64 + 2 * k2 as u64) >= MLP2_FUSED_MAX_MACS {
        let (h, dp, dh) = (ws(h), ws(dp), ws(dh));
        return Ok(vec![
            linear(h, x, w1, b1, m, k1, k0, true, sms, clusters)?,
            linear(dp, h, w2, b2, m, k2, k1, false, sms, clusters)?,
            mse(
                loss,
                dp,
                dp,
                target,
                m as u64 * k2 as u64,
                grad_scale,
                workspace,
                h - workspace,
                sms,
            )?,
            linear_backward_input(dh, dp, w2, m, k2, k1, sms, clusters)?,
            relu_backward(dh, dh, h, m as u64 * k1 as u64, sms)?,
            linear_sgd(w2, b2, dp, h, m, k2, k1, lr, None, sms)?,
            linear_sgd(w1, b1, dh, x, m, k1, k0, lr, None, sms)?,
        ]);
    }
    // Tiles for one block (8 warps) an SM.
    let warps = sms as u64 * 8;
    let (ta, tb) = (
        spread_tile(m, k1, warps, &MLP_TILES),
        spread_tile(m, k2, warps, &MLP_TILES),
    );
    let tc = spread_tile(m, k1, warps, &KN_TILES);
    let count =
        |(r, c): (u32, u32), n: u32| ceil_div(m as u64, r as u64) * ceil_div(n as u64, c as u64);
    let most = count(MLP_TILES[ta], k1)
        .max(count(MLP_TILES[tb], k2))
        .max(count(KN_TILES[tc], k1));
    // A block for each tile of the phase with the most, up to one per SM
    // (the kernel spreads a phase's tiles over every block); past one tile
    // a warp, 8 tiles a block, up to two per SM. More blocks make each grid
    // barrier dearer, so only tiles that fill every warp of one block per
    // SM take the second (kernels/TUNING.md, "The 2-layer step's warp
    // tiles").
    let grid = if most <= warps {
        most.min(sms as u64)
    } else {
        ceil_div(most, 8).min(sms as u64 * MLP2_BLOCKS_PER_SM as u64)
    } as u32;
    let (d01, d2m) = (k0 | k1 << 16, k2 | m << 16);
    let forward = Call::new(
        args::Mlp2Mse {
            x,
            w1,
            b1,
            w2,
            b2,
            target,
            h: ws(h),
            dp: ws(dp),
            dh: ws(dh),
            partials: ws(partials),
            bar: ws(bar),
            d01,
            d2m,
            tiles: ta as u32 | (tb as u32) << 2 | (tc as u32) << 4,
            grad_scale,
        },
        [grid, 1, 1],
        [BLOCK, 1, 1],
        0,
    )
    .cooperatively();
    let (tile1, tile2) = (gemm_tile(k1, k0, m, sms), gemm_tile(k2, k1, m, sms));
    let layer_blocks = |b: u64, n: u32, k: u32, tile: u32| {
        let t = GEMM_TILES[tile as usize] as u64;
        (if b != 0 { ceil_div(n as u64, 32) } else { 0 })
            + ceil_div(n as u64, t) * ceil_div(k as u64, t)
    };
    let blocks = 1 + layer_blocks(b1, k1, k0, tile1) + layer_blocks(b2, k2, k1, tile2);
    if blocks > MAX_GRID_X {
        return Err(SizeError::GridTooLarge { blocks });
    }
    let ty = ceil_div(m as u64, 4).next_power_of_two().min(32) as u32;
    let update = Call::new(
        args::Mlp2Sgd {
            w1,
            b1,
            w2,
            b2,
            x,
            h: ws(h),
            dp: ws(dp),
            dh: ws(dh),
            loss,
            partials: ws(partials),
            d01,
            d2m,
            lr,
            cfg: tile1 | tile2 << 2 | ty << 4 | sgd_reversed(blocks, sms) << 8 | grid << 16,
        },
        [blocks as u32, 1, 1],
        [256, 1, 1],
        0,
    );
    Ok(vec![forward, update])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Kernel, Value};

    const SMS: u32 = 132;
    // Buffers far enough apart for 2^40 floats each.
    const A: u64 = 1 << 44;
    const B: u64 = 2 << 44;
    const C: u64 = 3 << 44;
    const D: u64 = 4 << 44;
    const WS: u64 = 5 << 44;

    fn err<T: core::fmt::Debug>(r: Result<T, SizeError>, needle: &str) {
        match r {
            Ok(v) => panic!("expected an error containing {needle:?}, got {v:?}"),
            Err(e) => assert!(
                e.to_string().contains(needle),
                "{e:?} ({e}) does not contain {needle:?}"
            ),
        }
    }

    fn arg(call: &Call, name: &str) -> Value {
        let i = call
            .kernel
            .info()
            .args
            .iter()
            .position(|(n, _)| *n == name)
            .expect(name);
        call.args()[i]
    }

    fn u32_arg(call: &Call, name: &str) -> u32 {
        match arg(call, name) {
            Value::U32(v) => v,
            v => panic!("{name} = {v:?}"),
        }
    }

    fn ptr_arg(call: &Call, name: &str) -> u64 {
        match arg(call, name) {
            Value::Ptr(v) => v,
            v => panic!("{name} = {v:?}"),
        }
    }

    /// Grid-stride coverage: within limits, and every thread gets work.
    fn check_stride(call: &Call, n: u64, sms: u32) {
        let [gx, gy, gz] = call.grid;
        assert_eq!((gy, gz), (1, 1));
        assert_eq!(call.block, [BLOCK, 1, 1]);
        assert!(gx >= 1 && gx as u64 <= MAX_GRID_X);
        assert!(gx as u64 <= sms as u64 * STRIDE_WAVES);
        let units = n.div_ceil(4);
        // Threads x iterations x 4 floats cover n.
        let iters = units.div_ceil(call.threads());
        assert!(call.threads() * iters * 4 >= n);
        // No block entirely idle.
        assert!((gx as u64 - 1) * BLOCK as u64 * 4 < n.max(1));
        assert_eq!(call.shared_bytes, 0);
    }

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
            chain(A, B, 10, &[(OP_MUL, 1.0), (7, 1.0)], SMS),
            Err(SizeError::UnknownOpcode {
                index: 1,
                opcode: 7
            })
        );
        err(chain(A, B, 10, &[(0, 1.0)], SMS), "unknown opcode 0");
        err(chain(A, B, 10, &[(7, 1.0)], SMS), "unknown opcode 7");
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

    #[test]
    fn column_sums() {
        for (rows, cols) in [(1, 1), (64, 1024), (1000, 3), (5, 33), (1 << 20, 1)] {
            for call in [
                bias_grad(A, B, rows, cols, SMS).unwrap(),
                bias_sgd(A, B, rows, cols, 0.1, SMS).unwrap(),
            ] {
                assert_eq!(call.block[0], 32);
                assert!((1..=32).contains(&call.block[1]));
                assert!(call.block[1].is_power_of_two());
                assert_eq!(call.grid[0] as u64 * 32, (cols as u64).div_ceil(32) * 32);
                assert!(call.grid[0] as u64 * 32 >= cols as u64);
            }
            // Same block shape for both, so bias_sgd == bias_grad + sgd bitwise.
            assert_eq!(
                bias_grad(A, B, rows, cols, SMS).unwrap().block,
                bias_sgd(A, B, rows, cols, 0.1, SMS).unwrap().block
            );
        }
        err(bias_grad(A, B, 0, 3, SMS), "rows must be > 0");
        err(bias_grad(A, B, 1 << 20, 1 << 12, SMS), "2^32");
        err(bias_grad(A, A, 4, 4, SMS), "overlap");
        err(bias_sgd(0, B, 4, 4, 0.1, SMS), "b is a null pointer");
    }

    #[test]
    fn mse_workspace_and_grid() {
        for n in [1u64, 5, 1024, 1 << 20, (1 << 20) + 3, 1 << 36] {
            for sms in [1, 132] {
                let ws = mse_workspace_bytes(n, sms);
                let call = mse(A, B, C, D, n, 1.0, WS, ws, sms).unwrap();
                assert_eq!(ws, 16 + 4 * call.grid[0] as u64);
                assert!(call.grid[0] as u64 <= sms as u64 * MSE_WAVES);
                assert_eq!(call.block, [BLOCK, 1, 1]);
                assert_eq!(
                    mse(A, B, C, D, n, 1.0, WS, ws - 1, sms),
                    Err(SizeError::WorkspaceTooSmall {
                        bytes: ws - 1,
                        needed: ws
                    })
                );
            }
        }
        let ws = mse_workspace_bytes(100, SMS);
        assert!(mse(A, 0, C, D, 100, 1.0, WS, ws, SMS).is_ok());
        assert!(mse(A, C, C, D, 100, 1.0, WS, ws, SMS).is_ok());
        err(mse(A, B, C, D, 0, 1.0, WS, ws, SMS), "n must be > 0");
        err(mse(0, B, C, D, 100, 1.0, WS, ws, SMS), "loss is a null");
        err(mse(A, B, C, D, 100, 1.0, 0, ws, SMS), "workspace is a null");
        err(mse(C + 4, B, C, D, 100, 1.0, WS, ws, SMS), "overlap");
        err(mse(A, B, C, D, 100, 1.0, D + 8, ws, SMS), "overlap");
        err(mse(A, C + 4, C, D, 100, 1.0, WS, ws, SMS), "overlap");
    }

    /// The (thread tile, groups) of a `gc_linear_small_f32` call, checked:
    /// a supported tile, at most 8 groups, a grid that covers `m x n`
    /// without blocks entirely past it.
    fn small_shape(call: &Call, m: u32, n: u32, kn: bool) -> SmallConfig {
        assert_eq!(call.kernel, Kernel::LinearSmall);
        assert_eq!(call.block, [256, 1, 1]);
        let packed = u32_arg(call, "config");
        assert_eq!(packed >> 8, 0);
        let c = SmallConfig {
            lr: packed & 3,
            lc: (packed >> 2) & 3,
            lgr: (packed >> 4) & 3,
            lgc: (packed >> 6) & 3,
        };
        assert_eq!(c.packed(), packed);
        assert!(c.lgr + c.lgc <= 3);
        let tiles: &[(u32, u32)] = if kn {
            &[(1, 4), (4, 4), (8, 4)]
        } else {
            &[(1, 1), (4, 1), (4, 4), (8, 4)]
        };
        assert!(tiles.contains(&(1 << c.lr, 1 << c.lc)), "{c:?}");
        let (bm, bn) = c.block_tile();
        let [gx, gy, gz] = call.grid;
        assert_eq!(gz, 1);
        assert!(gx as u64 * bn >= n as u64 && (gx as u64 - 1) * bn < n as u64);
        assert!(gy as u64 * bm >= m as u64 && (gy as u64 - 1) * bm < m as u64);
        c
    }

    #[test]
    fn linear_picks_path_and_covers_columns() {
        for m in [1, 2, 8, 9, 16, 17, 32, 33, 64, 65, 100, 128, 255, 256] {
            for n in [1, 3, 10, 256, 512, 1000, 1024, 4096] {
                for k in [1, 3, 1024] {
                    let call = linear(A, B, C, D, m, n, k, true, SMS, false).unwrap();
                    if small_batch(m, n, k, SMS, false) {
                        small_shape(&call, m, n, false);
                        assert_eq!(u32_arg(&call, "flags"), 1);
                    } else {
                        // Wide outputs past 128 rows (see small_batch).
                        assert!(m > 128 && n == 4096, "{m} x {n}");
                        assert_eq!(call.kernel, Kernel::GemmMid);
                    }
                    if m > SMALL_BACKWARD_MAX_M {
                        continue;
                    }
                    let back = linear_backward_input(A, B, C, m, n, k, SMS, true).unwrap();
                    small_shape(&back, m, k, true);
                    assert_eq!(u32_arg(&back, "flags"), 2);
                    assert_eq!(u32_arg(&back, "n"), k);
                    assert_eq!(u32_arg(&back, "k"), n);
                }
            }
        }
        // The big-M paths.
        let call = linear(A, B, C, 0, 257, 1024, 1024, false, SMS, false).unwrap();
        assert_eq!(call.kernel, Kernel::Gemm);
        assert_eq!(u32_arg(&call, "flags"), 2);
        assert_eq!(arg(&call, "bias"), Value::Ptr(0));
        let call = linear_backward_input(A, B, C, 65, 1024, 512, SMS, true).unwrap();
        assert_eq!(call.kernel, Kernel::Gemm);
        assert_eq!(
            (
                u32_arg(&call, "m"),
                u32_arg(&call, "n"),
                u32_arg(&call, "k")
            ),
            (65, 512, 1024)
        );
    }

    #[test]
    fn small_batch_choice_is_sane() {
        let pick = |m, n, k| small_config(m, n, k, SMS, false);
        // One row: a warp per column, 8 per block.
        let c = pick(1, 1024, 1024);
        assert_eq!((c.lr, c.lc, c.lgr, c.lgc), (0, 0, 0, 3));
        let c = pick(1, 3, 1024);
        assert_eq!((c.lr, c.lc, c.lgr, c.lgc), (0, 0, 0, 2));
        // 2-4 rows: a warp per output, block tiles of 2 x 4 outputs.
        for (m, n, k) in [(4, 512, 1024), (2, 256, 512), (3, 10, 256)] {
            let c = pick(m, n, k);
            assert_eq!((c.lr, c.lc, c.lgr, c.lgc), (0, 0, 1, 2), "{m} {n} {k}");
        }
        // Narrow outputs up to 16 rows, too; 4 x 2 where 4 columns would
        // lie past the matrix.
        let c = pick(16, 10, 256);
        assert_eq!((c.lr, c.lc, c.lgr, c.lgc), (0, 0, 1, 2));
        let c = pick(16, 2, 1024);
        assert_eq!((c.lr, c.lc, c.lgr, c.lgc), (0, 0, 2, 1));
        // Not for long K, large W, wider outputs past 4 rows, or where 8
        // one-warp groups do not fit (2 x 2 outputs).
        for (m, n, k) in [
            (4, 512, 2048),
            (4, 8192, 1024),
            (8, 512, 1024),
            (32, 10, 256),
            (2, 2, 64),
        ] {
            let c = pick(m, n, k);
            assert_ne!((c.lr, c.lc), (0, 0), "{m} {n} {k}");
        }
        // 8 rows: 4 x 4 tiles, both row tiles in one block.
        let c = pick(8, 1024, 1024);
        assert_eq!((c.lr, c.lc, c.lgr, c.lgc), (2, 2, 1, 0));
        // 64 rows: 8 x 4 tiles, at least a block per SM.
        let c = pick(64, 1024, 1024);
        assert_eq!((c.lr, c.lc), (3, 2));
        assert!(c.grid(64, 1024).iter().product::<u32>() >= SMS);
        // A short K gets more groups: no more K lanes than float4 steps.
        let c = pick(32, 10, 256);
        assert_eq!((c.lr, c.lc), (2, 0));
        assert!(32 << (3 - c.lgr - c.lgc) <= 64);
        // Every shape: a tile group never lies wholly past the matrix.
        for m in 1..=64 {
            for n in [1, 2, 5, 63, 64, 100, 4096] {
                for k in [1, 4, 100, 4096] {
                    for kn in [false, true] {
                        let c = small_config(m, n, k, SMS, kn);
                        let (bm, bn) = c.block_tile();
                        assert!(bm <= (m as u64).next_power_of_two().max(1 << c.lr));
                        assert!(bn <= (n as u64).next_power_of_two().max(1 << c.lc));
                    }
                }
            }
        }
    }

    #[test]
    fn linear_rejects_bad_arguments() {
        err(
            linear(A, B, C, D, 0, 4, 4, false, SMS, false),
            "m must be > 0",
        );
        err(
            linear(A, B, C, D, 4, 0, 4, false, SMS, false),
            "n must be > 0",
        );
        err(
            linear(A, B, C, D, 4, 4, 0, false, SMS, false),
            "k must be > 0",
        );
        err(
            linear(A, B, C, D, 1 << 16, 4, 1 << 16, false, SMS, false),
            "2^32",
        );
        err(
            linear(A, B, C, D, 4, 1 << 16, 1 << 16, false, SMS, false),
            "2^32",
        );
        err(
            linear(0, B, C, D, 4, 4, 4, false, SMS, false),
            "y is a null",
        );
        err(
            linear(A, B, 0, D, 4, 4, 4, false, SMS, false),
            "w is a null",
        );
        err(
            linear(A, B, C, D + 1, 4, 4, 4, false, SMS, false),
            "aligned",
        );
        err(linear(A, A, C, D, 4, 4, 4, false, SMS, false), "overlap");
        err(
            linear(A, B, A + 60, D, 4, 4, 4, false, SMS, false),
            "overlap",
        );
        err(
            linear(A, B, C, A + 4, 4, 4, 4, false, SMS, false),
            "overlap",
        );
        err(linear(A, A, C, D, 100, 4, 4, false, SMS, false), "overlap");
        assert!(linear(A, B, C, 0, 4, 4, 4, false, SMS, false).is_ok());
        err(
            linear_backward_input(A, A, C, 4, 4, 4, SMS, true),
            "overlap",
        );
        err(linear_backward_weight(A, B, A, 4, 4, 4, SMS), "overlap");
        err(linear_weight_sgd(A, A, C, 4, 4, 4, 0.1, SMS), "overlap");
        err(linear_backward_weight(A, B, C, 4, 4, 4, 0), "sms");
    }

    fn mlp_net(widths: &[u32]) -> Vec<MlpLayer> {
        widths
            .windows(2)
            .enumerate()
            .map(|(i, w)| MlpLayer {
                w: B + (i as u64) * (1 << 26),
                b: 0,
                inputs: w[0],
                outputs: w[1],
                relu: i + 2 < widths.len(),
            })
            .collect()
    }

    #[test]
    fn mlp_plans_one_cooperative_launch_per_four_layers() {
        let ws = 1u64 << 40;
        let net = mlp_net(&[1024, 512, 256, 10]);
        assert_eq!(mlp_workspace_bytes(2, &mlp_net(&[4, 4, 2])), 768);
        assert_eq!(
            mlp_workspace_bytes(8, &net),
            256 + (8 * 512 + 8 * 256) * (8 + 4),
            "8-byte tagged slots, then floats"
        );
        let bytes = mlp_workspace_bytes(8, &net);
        // Without `fuse`: one linear launch per layer.
        let plain = mlp(
            A,
            C,
            ws,
            bytes,
            8,
            &net,
            MlpForm::PerLayer,
            false,
            SMS,
            false,
        )
        .unwrap();
        assert_eq!(plain.len(), 3);
        assert!(plain.iter().all(|c| !c.cooperative));
        let calls = mlp(
            A,
            C,
            ws,
            bytes,
            8,
            &net,
            MlpForm::FusedAlways,
            false,
            SMS,
            false,
        )
        .unwrap();
        assert_eq!(calls.len(), 1);
        let c = &calls[0];
        assert!(c.cooperative && c.kernel == Kernel::Mlp);
        assert!(c.grid[0] >= 1 && c.grid[0] <= SMS && c.block == [256, 1, 1]);
        let flags = u32_arg(c, "flags");
        assert_eq!(flags & 15, 0b011, "ReLU after the first two layers");
        assert_eq!((flags >> 4) & 7, 3);
        assert_eq!(u32_arg(c, "d01"), 1024 | 512 << 16);
        assert_eq!(u32_arg(c, "d4rows"), 8 << 16);
        assert_eq!(arg(c, "act"), Value::Ptr(ws + 256));
        // The per-layer form's intermediates: after the tagged slots.
        assert_eq!(plain[1].kernel, Kernel::LinearSmall);
        assert_eq!(
            arg(&plain[0], "y"),
            Value::Ptr(ws + 256 + (8 * 512 + 8 * 256) * 8)
        );
        // Tiles: 1 x 1 for one row; 4 x 4 where that still gives every other warp a tile.
        assert_eq!(mlp_tile(1, 512, 1056), 0);
        assert_eq!(mlp_tile(64, 512, 1056), 3);
        assert_eq!(mlp_tile(32, 512, 1056), 2);
        assert_eq!(mlp_tile(16, 512, 1056), 1);
        // Five layers: two launches, the second reading the first's output.
        let net5 = mlp_net(&[100, 37, 7, 3, 5, 9]);
        let bytes5 = mlp_workspace_bytes(3, &net5);
        let calls = mlp(
            A,
            C,
            ws,
            bytes5,
            3,
            &net5,
            MlpForm::FusedAlways,
            false,
            SMS,
            false,
        )
        .unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(arg(&calls[0], "y"), Value::Ptr(mlp_region(ws, 3, &net5, 3)));
        assert_eq!(arg(&calls[1], "x"), arg(&calls[0], "y"));
        assert_eq!(arg(&calls[1], "y"), Value::Ptr(A));
        // The calls for `rows` rows through `net` in `form`, on a workspace
        // of the size it needs.
        let plan = |rows, net: &[MlpLayer], form| {
            let bytes = mlp_workspace_bytes(rows, net);
            mlp(A, C, ws, bytes, rows, net, form, false, SMS, false).unwrap()
        };
        // More rows than the fused form takes, or a layer past its work
        // limit: one linear launch per layer.
        let calls = plan(9, &net, MlpForm::FusedAlways);
        assert_eq!(calls.len(), 3);
        assert!(calls.iter().all(|c| !c.cooperative));
        let wide = mlp_net(&[4096, 4096, 10]);
        let calls = plan(2, &wide, MlpForm::FusedAlways);
        assert_eq!(calls.len(), 1, "2 x 4096 x 4096 is within the limit");
        assert!(calls[0].cooperative);
        assert_eq!(plan(3, &wide, MlpForm::FusedAlways).len(), 2);
        // Fused only where it pays: the notes' MLP at one row, not at 8,
        // and not a network with a wide later layer or only two layers.
        let pays = |rows, net: &[MlpLayer]| {
            plan(rows, net, MlpForm::Fused)
                .iter()
                .all(|c| c.cooperative)
        };
        assert!(pays(1, &net));
        assert!(!pays(8, &net));
        assert!(!pays(1, &mlp_net(&[1024, 1024, 1024, 10])));
        assert!(!pays(1, &mlp_net(&[256, 256, 10])));
        assert!(pays(1, &mlp_net(&[256, 256, 256, 10])));
        assert!(
            !pays(1, &mlp_net(&[64, 64, 64, 64, 64, 10])),
            "two launches: not measured"
        );
        // Never where the per-layer launches overlap (programmatic
        // dependent launch): one launch per layer is faster there.
        let bytes1 = mlp_workspace_bytes(1, &net);
        let overlapped = mlp(A, C, ws, bytes1, 1, &net, MlpForm::Fused, true, SMS, false).unwrap();
        assert!(overlapped.iter().all(|c| !c.cooperative));
        assert!(!mlp_fusion_pays(1, &net, true) && mlp_fusion_pays(1, &net, false));
        let always = mlp(
            A,
            C,
            ws,
            bytes1,
            1,
            &net,
            MlpForm::FusedAlways,
            true,
            SMS,
            false,
        )
        .unwrap();
        assert!(always[0].cooperative, "FusedAlways ignores the overlap");
        // The per-layer form of the fused launch: the same tiles, 8 one-warp groups.
        let un = mlp_unfused(A, C, ws, bytes, 8, &net, SMS, false).unwrap();
        assert_eq!(un.len(), 3);
        assert!(un.iter().all(|c| c.kernel == Kernel::LinearSmall));
    }

    #[test]
    fn mlp_rejects_bad_arguments() {
        let ws = 1u64 << 40;
        let net = mlp_net(&[8, 4, 2]);
        let bytes = mlp_workspace_bytes(2, &net);
        // y, x, workspace, its bytes, rows, layers, SMs; the fused form.
        let fused = |y, x, w, b, rows, layers: &[MlpLayer], sms| {
            mlp(
                y,
                x,
                w,
                b,
                rows,
                layers,
                MlpForm::FusedAlways,
                false,
                sms,
                false,
            )
        };
        err(fused(A, C, ws, bytes, 2, &[], SMS), "n_layers must be > 0");
        err(fused(A, C, ws, bytes, 0, &net, SMS), "rows must be > 0");
        err(fused(A, C, ws, bytes - 1, 2, &net, SMS), "workspace has");
        let mut bad = net.clone();
        bad[1].inputs = 5;
        err(
            fused(A, C, ws, bytes, 2, &bad, SMS),
            "layer 1 takes 5 inputs",
        );
        err(fused(ws, C, ws, bytes, 2, &net, SMS), "overlap");
        err(fused(A, ws + 8, ws, bytes, 2, &net, SMS), "overlap");
        err(fused(A, C, 0, bytes, 2, &net, SMS), "workspace is a null");
        err(fused(A, C, ws, bytes, 2, &net, 0), "sms");
    }

    #[test]
    fn weight_update_matches_weight_gradient() {
        for (m, n, k) in [(64, 1024, 1024), (1, 10, 3), (200, 33, 7)] {
            let g = linear_backward_weight(A, B, C, m, n, k, SMS).unwrap();
            let s = linear_weight_sgd(A, B, C, m, n, k, 0.1, SMS).unwrap();
            assert_eq!(g.grid, s.grid);
            assert_eq!(u32_arg(&g, "tile"), u32_arg(&s, "tile"));
            assert_eq!(arg(&s, "alpha"), Value::F32(-0.1));
            assert_eq!(arg(&s, "beta"), Value::F32(1.0));
            assert_eq!(arg(&g, "alpha"), Value::F32(1.0));
            assert_eq!(arg(&g, "beta"), Value::F32(0.0));
            assert_eq!(u32_arg(&g, "flags"), 1, "dy is read transposed");
            assert_eq!(
                (u32_arg(&g, "m"), u32_arg(&g, "n"), u32_arg(&g, "k")),
                (n, k, m)
            );
        }
    }

    #[test]
    fn linear_layout_takes_the_largest_tile_that_fills_the_sms() {
        let lin = |m, n, k| linear_gemm(A, B, C, 0, m, n, k, false);
        // The measured best tile of each sweep shape (kernels/TUNING.md).
        for ((m, n), want) in [
            ((4096, 4096), (Kernel::Gemm128x256, 0)),
            ((1024, 4096), (Kernel::Gemm128x256, 0)),
            ((4096, 1024), (Kernel::Gemm128x256, 0)),
            ((512, 4096), (Kernel::GemmWide, 1)),
            ((2048, 1024), (Kernel::GemmWide, 1)),
            ((4096, 512), (Kernel::GemmWide, 1)),
            ((1024, 1024), (Kernel::GemmMid, 0)),
            ((256, 4096), (Kernel::GemmMid, 0)),
            ((2048, 512), (Kernel::GemmMid, 0)),
            ((512, 1024), (Kernel::GemmWide, 2)),
            ((1024, 512), (Kernel::GemmWide, 2)),
        ] {
            assert_eq!(gemm_launch(&lin(m, n, 1024), SMS), want, "{m} x {n}");
        }
        // None fills: gc_gemm_f32's tiles, the split-K one where gemm_tile picks it.
        assert_eq!(gemm_launch(&lin(512, 512, 1024), SMS), (Kernel::Gemm, 2));
        assert_eq!(gemm_launch(&lin(512, 512, 128), SMS), (Kernel::Gemm, 1));
        // Other layouts keep gc_gemm_f32 (the weight gradient's tiles stay those
        // of the fused training step).
        let weight = Gemm {
            trans_a: true,
            trans_b: false,
            ..lin(4096, 4096, 1024)
        };
        assert_eq!(gemm_launch(&weight, SMS), (Kernel::Gemm, 0));
        assert_eq!(gemm_block(Kernel::GemmWide, 0), (128, 256));
        assert_eq!(gemm_block(Kernel::Gemm128x256, 0), (128, 256));
        assert_eq!(gemm_block(Kernel::GemmWide, 2), (64, 64));
        assert_eq!(gemm_block(Kernel::GemmMid, 0), (64, 128));
        assert_eq!(gemm_block(Kernel::GemmTf32, 1), (64, 64));
        assert_eq!(gemm_block(Kernel::Gemm, 2), (32, 32));
        let call = linear(A, B, C, 0, 4096, 4096, 1024, true, SMS, false).unwrap();
        assert_eq!(
            (call.kernel, call.grid),
            (Kernel::Gemm128x256, [32 * 16, 1, 1])
        );
        assert_eq!(u32_arg(&call, "flags"), 6);
    }

    #[test]
    fn wide_outputs_leave_the_small_batch_kernel_from_129_rows() {
        assert!(small_batch(256, 1024, 1024, SMS, false));
        assert!(small_batch(256, 512, 1024, SMS, false));
        assert!(!small_batch(256, 4096, 1024, SMS, false));
        assert!(small_batch(128, 1 << 16, 1024, SMS, false));
        assert!(!small_batch(257, 10, 1024, SMS, false));
        let call = linear(A, B, C, 0, 256, 4096, 1024, false, SMS, false).unwrap();
        assert_eq!(call.kernel, Kernel::GemmMid);
        let call = linear(A, B, C, 0, 256, 1024, 1024, false, SMS, false).unwrap();
        assert_eq!(call.kernel, Kernel::LinearSmall);
    }

    /// The cluster plan of `linear` with `clusters`: (tile, cluster size, grid).
    fn cluster_of(m: u32, n: u32, k: u32) -> Option<(u32, u32, u32)> {
        let call = linear(A, B, C, D, m, n, k, false, SMS, true).unwrap();
        if call.kernel != Kernel::LinearCluster {
            assert_eq!(call.cluster, None);
            assert_eq!(
                call,
                linear(A, B, C, D, m, n, k, false, SMS, false).unwrap()
            );
            return None;
        }
        assert!(call.in_order, "{m} x {k} -> {n}");
        assert_eq!(u32_arg(&call, "flags"), 2, "the linear layout");
        let [size, 1, 1] = call.cluster.expect("a cluster launch") else {
            panic!("clusters along x only");
        };
        assert_eq!(call.grid[0] % size, 0, "whole clusters");
        Some((u32_arg(&call, "tile"), size, call.grid[0]))
    }

    #[test]
    fn input_gradients_of_forward_cluster_shapes_take_the_plain_cluster_tiles() {
        // dx = dy . W at 33-64 rows with large weights: tile 2, C = A . B, in
        // the forward's clusters of 2 over 64 x 64 tiles of dx.
        for (m, n, k) in [(64, 4096, 4096), (33, 4096, 4096), (64, 2048, 8192)] {
            let call = linear_backward_input(A, B, C, m, n, k, SMS, true).unwrap();
            assert_eq!(call.kernel, Kernel::LinearCluster, "{m} x {n} -> {k}");
            assert!(call.in_order);
            assert_eq!(u32_arg(&call, "flags"), 0, "the plain layout");
            assert_eq!(u32_arg(&call, "tile"), 2);
            assert_eq!(call.cluster, Some([2, 1, 1]));
            let tiles = m.div_ceil(64) * k.div_ceil(64);
            assert_eq!(call.grid, [2 * tiles, 1, 1]);
            assert_eq!(
                (
                    u32_arg(&call, "m"),
                    u32_arg(&call, "n"),
                    u32_arg(&call, "k")
                ),
                (m, k, n)
            );
            assert_eq!((u32_arg(&call, "lda"), u32_arg(&call, "ldb")), (n, k));
            // Without clusters: the tiled GEMM, same products' layout.
            let plain = linear_backward_input(A, B, C, m, n, k, SMS, false).unwrap();
            assert_eq!(plain.kernel, Kernel::Gemm);
        }
        // 65-256 rows: the forward's tile 0 (128 x 64), plain.
        for m in [65, 128, 256] {
            let call = linear_backward_input(A, B, C, m, 4096, 4096, SMS, true).unwrap();
            assert_eq!(call.kernel, Kernel::LinearCluster, "{m} rows");
            assert_eq!(u32_arg(&call, "flags"), 0, "the plain layout");
            assert_eq!(u32_arg(&call, "tile"), 0);
            assert_eq!(call.cluster, Some([2, 1, 1]));
            assert_eq!(call.grid, [2 * m.div_ceil(128) * (4096 / 64), 1, 1]);
        }
        // Elsewhere the cluster flag changes nothing: 32 rows (tiled GEMM),
        // 257 rows (the forward's GEMM), weights that fit L2.
        for (m, n, k) in [
            (32, 4096, 4096),
            (257, 4096, 4096),
            (64, 1024, 1024),
            (200, 1024, 512),
        ] {
            assert_eq!(
                linear_backward_input(A, B, C, m, n, k, SMS, true).unwrap(),
                linear_backward_input(A, B, C, m, n, k, SMS, false).unwrap(),
                "{m} x {n} -> {k}"
            );
        }
        // Its checks are the GEMM's.
        err(
            linear_backward_input(A, A, C, 64, 4096, 4096, SMS, true),
            "overlap",
        );
    }

    #[test]
    fn clusters_take_long_reductions_the_other_kernels_do_slowly() {
        // 65-256 rows with 64 MiB of weights: 128 x 64 tiles in clusters of 2.
        assert_eq!(cluster_of(65, 4096, 4096), Some((0, 2, 2 * 64)));
        assert_eq!(cluster_of(128, 4096, 4096), Some((0, 2, 2 * 64)));
        assert_eq!(cluster_of(256, 4096, 4096), Some((0, 2, 2 * 2 * 64)));
        assert_eq!(cluster_of(200, 16384, 1024), Some((0, 2, 2 * 2 * 256)));
        // 33-64 rows: 64 x 64 tiles in clusters of 2, K chunks of 32 by
        // cp.async.
        assert_eq!(cluster_of(64, 4096, 4096), Some((3, 2, 2 * 64)));
        assert_eq!(cluster_of(33, 4096, 4096), Some((3, 2, 2 * 64)));
        assert_eq!(cluster_of(64, 8192, 2048), Some((3, 2, 2 * 128)));
        // Not at 32 rows or fewer (the small-batch kernel wins), nor with
        // weights that fit L2, nor where the tiles leave SMs idle.
        for (m, n, k) in [
            (32, 4096, 4096),
            (1, 4096, 4096),
            (64, 2048, 8192),
            (64, 1024, 1024),
            (128, 1024, 1024),
            (256, 4096, 1024),
            (256, 1024, 16384),
            (128, 64, 1 << 18),
        ] {
            assert_eq!(cluster_of(m, n, k), None, "{m} x {k} -> {n}");
        }
        // Past 256 rows where the GEMM would take its 32 x 32 split-K tile:
        // 64 x 64 tiles in the smallest cluster that fills the SMs (8 where
        // none does), at least 128 of K a block.
        assert_eq!(cluster_of(512, 512, 1024), Some((1, 2, 2 * 64)));
        assert_eq!(cluster_of(512, 512, 256), Some((1, 2, 2 * 64)));
        assert_eq!(cluster_of(300, 256, 1024), Some((1, 8, 8 * 20)));
        assert_eq!(cluster_of(300, 512, 1024), Some((1, 4, 4 * 40)));
        assert_eq!(cluster_of(300, 64, 4096), Some((1, 8, 8 * 5)));
        assert_eq!(cluster_of(300, 64, 512), Some((1, 4, 4 * 5)));
        for (m, n, k) in [(512, 512, 128), (1024, 4096, 1024), (2048, 1024, 1024)] {
            assert_eq!(cluster_of(m, n, k), None, "{m} x {k} -> {n}");
        }
        // The small-batch predicate (the training step's) follows.
        assert!(small_batch(128, 4096, 4096, SMS, false));
        assert!(!small_batch(128, 4096, 4096, SMS, true));
        assert!(small_batch(64, 4096, 4096, SMS, false));
        assert!(!small_batch(64, 4096, 4096, SMS, true));
        assert!(small_batch(32, 4096, 4096, SMS, true));
    }

    #[test]
    fn every_linear_path_takes_the_same_plan() {
        // An MLP's per-layer launches and the training step's forward are
        // `linear`'s, so a forward has the same bits wherever it runs.
        let net = mlp_net(&[4096, 4096, 4096]);
        let bytes = mlp_workspace_bytes(128, &net);
        for clusters in [false, true] {
            let calls = mlp(
                A,
                C,
                WS,
                bytes,
                128,
                &net,
                MlpForm::PerLayer,
                false,
                SMS,
                clusters,
            )
            .unwrap();
            for (l, call) in net.iter().zip(&calls) {
                let (input, output) = (call.args[1], call.args[0]);
                let want = match (input, output) {
                    (Value::Ptr(x), Value::Ptr(y)) => linear(
                        y, x, l.w, l.b, 128, l.outputs, l.inputs, l.relu, SMS, clusters,
                    ),
                    _ => panic!("pointer arguments"),
                };
                assert_eq!(call, &want.unwrap());
                assert_eq!(call.kernel == Kernel::LinearCluster, clusters);
            }
        }
        let step = LinearMseStep {
            w: A,
            b: 0,
            x: B,
            target: C,
            loss: D,
            rows: 128,
            inputs: 4096,
            outputs: 4096,
            grad_scale: 1.0,
            lr: 0.1,
        };
        for clusters in [false, true] {
            let bytes = linear_mse_step_workspace_bytes(128, 4096, 4096, SMS, clusters);
            let calls = linear_mse_step(&step, WS, bytes, SMS, clusters).unwrap();
            let first = if clusters {
                Kernel::LinearCluster
            } else {
                Kernel::LinearMse
            };
            assert_eq!(calls[0].kernel, first);
            assert_eq!(calls.len(), if clusters { 3 } else { 2 });
        }
    }

    #[test]
    fn linear_tf32_takes_the_tensor_cores_past_the_small_batch_range() {
        // 256 x 512: a quarter wave of 64 x 64 tiles: the f32 small-batch kernel.
        let small = linear_tf32(A, B, C, 0, 256, 512, 1024, false, SMS, false).unwrap();
        assert_eq!(
            small,
            linear(A, B, C, 0, 256, 512, 1024, false, SMS, false).unwrap()
        );
        assert_eq!(small.kernel, Kernel::LinearSmall);
        let small = linear_tf32(A, B, C, 0, 128, 4096, 1024, false, SMS, false).unwrap();
        assert_eq!(small.kernel, Kernel::LinearSmall);
        // 256 x 1024: half a wave: tensor cores.
        let half = linear_tf32(A, B, C, 0, 256, 1024, 1024, false, SMS, false).unwrap();
        assert_eq!((half.kernel, u32_arg(&half, "tile")), (Kernel::GemmTf32, 1));
        let call = linear_tf32(A, B, C, 0, 257, 1000, 77, true, SMS, false).unwrap();
        assert_eq!(call.kernel, Kernel::GemmTf32);
        // A m x k and B n x k (transpose bits 2), ReLU (4).
        assert_eq!(u32_arg(&call, "flags"), 6);
        assert_eq!(u32_arg(&call, "tile"), 1);
        assert_eq!(call.grid, [5 * 16, 1, 1]);
        let big = linear_tf32(A, B, C, 0, 2048, 1024, 1024, false, SMS, false).unwrap();
        assert_eq!((u32_arg(&big, "tile"), big.grid), (0, [16 * 8, 1, 1]));
        // Sizes are checked as for the f32 path.
        err(
            linear_tf32(A, A + 4, C, 0, 300, 64, 64, false, SMS, false),
            "overlap",
        );
        err(
            linear_tf32(A, B, C, 0, 300, 0, 64, false, SMS, false),
            "n must be > 0",
        );
    }

    #[test]
    fn gemm_checks_and_tiles() {
        let base = Gemm {
            c: A,
            a: B,
            b: C,
            bias: 0,
            m: 100,
            n: 70,
            k: 33,
            lda: 33,
            ldb: 70,
            ldc: 70,
            trans_a: false,
            trans_b: false,
            relu: false,
            alpha: 1.0,
            beta: 0.0,
        };
        for (m, n) in [
            (1, 1),
            (64, 64),
            (65, 1024),
            (1024, 1024),
            (4096, 4096),
            (1, 1 << 20),
        ] {
            for sms in [1, 132] {
                let g = Gemm {
                    m,
                    n,
                    ldc: n,
                    ldb: n,
                    ..base
                };
                let call = gemm(&g, sms).unwrap();
                let (tm, tn) = gemm_block(call.kernel, u32_arg(&call, "tile"));
                assert_eq!(
                    call.grid,
                    [
                        ((m as u64).div_ceil(tm) * (n as u64).div_ceil(tn)) as u32,
                        1,
                        1
                    ]
                );
                assert_eq!(call.block, [256, 1, 1]);
                // Grids that fill the SMs are never started early.
                let (kernel, tile) = (call.kernel, u32_arg(&call, "tile"));
                assert_eq!(call.in_order, fills(kernel, tile, m, n, sms));
            }
        }
        assert!(
            gemm(
                &Gemm {
                    m: 1024,
                    n: 1024,
                    ldc: 1024,
                    ldb: 1024,
                    ..base
                },
                SMS
            )
            .unwrap()
            .in_order
        );
        assert!(
            !gemm(
                &Gemm {
                    m: 64,
                    n: 64,
                    ldc: 64,
                    ldb: 64,
                    ..base
                },
                SMS
            )
            .unwrap()
            .in_order
        );
        // 128 x 128 tiles when they fill the SMs, 64 x 64 for half a wave or
        // a short K (the weight gradient), else 32 x 32 with split K.
        assert_eq!(gemm_tile(4096, 1024, 1024, SMS), 0);
        assert_eq!(gemm_tile(1024, 1024, 1024, SMS), 1);
        assert_eq!(gemm_tile(1024, 1024, 64, SMS), 1);
        assert_eq!(gemm_tile(128, 1024, 33, SMS), 1);
        assert_eq!(gemm_tile(128, 1024, 1024, SMS), 2);
        assert_eq!(gemm_tile(1, 1, 1, 1), 0);
        let call = gemm(
            &Gemm {
                m: 1024,
                n: 1024,
                ldb: 1024,
                ldc: 1024,
                ..base
            },
            SMS,
        )
        .unwrap();
        assert_eq!(u32_arg(&call, "tile"), 1);
        err(
            gemm(&Gemm { lda: 32, ..base }, SMS),
            "leading dimension of a",
        );
        err(
            gemm(&Gemm { ldb: 69, ..base }, SMS),
            "leading dimension of b",
        );
        err(
            gemm(&Gemm { ldc: 69, ..base }, SMS),
            "leading dimension of c",
        );
        // Transposed A is k x m: lda >= m.
        err(
            gemm(
                &Gemm {
                    trans_a: true,
                    ..base
                },
                SMS,
            ),
            "leading dimension of a",
        );
        assert!(gemm(
            &Gemm {
                trans_a: true,
                lda: 100,
                ..base
            },
            SMS
        )
        .is_ok());
        assert!(gemm(
            &Gemm {
                trans_b: true,
                ldb: 33,
                ..base
            },
            SMS
        )
        .is_ok());
        err(gemm(&Gemm { m: 0, ..base }, SMS), "m must be > 0");
        err(gemm(&Gemm { c: B + 4, ..base }, SMS), "overlap");
        err(
            gemm(
                &Gemm {
                    bias: A + 8,
                    ..base
                },
                SMS,
            ),
            "overlap",
        );
        err(
            gemm(
                &Gemm {
                    m: 1 << 20,
                    k: 1 << 12,
                    lda: 1 << 12,
                    ..base
                },
                SMS,
            ),
            "2^32",
        );
        assert!(gemm(
            &Gemm {
                bias: D,
                relu: true,
                beta: 1.0,
                ..base
            },
            SMS
        )
        .is_ok());
    }

    fn step(rows: u32, inputs: u32, outputs: u32) -> LinearMseStep {
        LinearMseStep {
            w: A,
            b: B,
            x: C,
            target: D,
            loss: 6 << 44,
            rows,
            inputs,
            outputs,
            grad_scale: 1.0,
            lr: 1e-3,
        }
    }

    #[test]
    fn linear_mse_step_is_two_launches_matching_the_unfused_ones() {
        let s = step(64, 1024, 1024);
        let need = linear_mse_step_workspace_bytes(64, 1024, 1024, SMS, false);
        let calls = linear_mse_step(&s, WS, need, SMS, false).unwrap();
        assert_eq!(calls.len(), 2);
        let (fwd, upd) = (&calls[0], &calls[1]);
        assert_eq!(
            (fwd.kernel, upd.kernel),
            (Kernel::LinearMse, Kernel::LinearSgd)
        );
        assert!(!fwd.cooperative && !upd.cooperative);
        // The forward has the plain linear layer's shape (bitwise its outputs).
        let plain = linear(D, C, A, B, 64, 1024, 1024, false, SMS, false).unwrap();
        assert_eq!((fwd.grid, fwd.block), (plain.grid, plain.block));
        assert_eq!(u32_arg(fwd, "config"), u32_arg(&plain, "config"));
        let blocks = (fwd.grid[0] * fwd.grid[1]) as u64;
        assert_eq!(arg(fwd, "partials"), Value::Ptr(WS + 16));
        assert_eq!(arg(upd, "partials"), Value::Ptr(WS + 16));
        assert_eq!(u32_arg(upd, "parts") as u64, blocks);
        assert_eq!(arg(upd, "loss"), Value::Ptr(6 << 44));
        let grad = WS + (16 + 4 * blocks).next_multiple_of(256);
        assert_eq!(arg(fwd, "grad"), Value::Ptr(grad));
        assert_eq!(need, grad - WS + 64 * 1024 * 4);
        // The update: the weight SGD's tile and the bias SGD's block rows.
        let wsgd = linear_weight_sgd(A, grad, C, 64, 1024, 1024, 1e-3, SMS).unwrap();
        let bsgd = bias_sgd(B, grad, 64, 1024, 1e-3, SMS).unwrap();
        // gc_gemm_f32's 64 x 64 tile, staged at once (tile 3: its bits).
        assert_eq!(u32_arg(&wsgd, "tile"), 1);
        // 289 blocks, more than fit at once on 132 SMs: weight tiles first.
        assert_eq!(u32_arg(upd, "tile"), STAGED_SGD_TILE | SGD_REVERSED);
        assert_eq!(u32_arg(upd, "bias_ty"), bsgd.block[1]);
        assert_eq!(upd.grid[0], 1 + wsgd.grid[0] + bsgd.grid[0]);
        let few = linear_mse_step(&s, WS, need, 146, false).unwrap();
        assert_eq!(
            u32_arg(&few[1], "tile"),
            STAGED_SGD_TILE,
            "289 blocks fit on 146 SMs"
        );
        assert_eq!(arg(upd, "dy"), Value::Ptr(grad));
        // No bias: no bias blocks.
        let nb = LinearMseStep { b: 0, ..s };
        let upd = &linear_mse_step(&nb, WS, need, SMS, false).unwrap()[1];
        assert_eq!(upd.grid[0], 1 + wsgd.grid[0]);
    }

    #[test]
    fn the_update_stages_short_reductions_in_the_64_x_64_tile() {
        // Up to 64 rows where gc_gemm_f32 takes its 64 x 64 tile: tile 3
        // (same grid); more rows, or another tile, as gc_gemm_f32.
        for (m, n, k) in [
            (64, 1024, 1024),
            (1, 1024, 1024),
            (65, 1024, 1024),
            (64, 40, 36),
        ] {
            let plain = linear_weight_sgd(A, D, C, m, n, k, 1e-3, SMS).unwrap();
            let fused = linear_sgd(A, 0, D, C, m, n, k, 1e-3, None, SMS).unwrap();
            let tile = u32_arg(&plain, "tile");
            let want = if tile == 1 && m <= STAGED_SGD_ROWS {
                STAGED_SGD_TILE
            } else {
                tile
            };
            assert_eq!(u32_arg(&fused, "tile"), want, "{m}x{n}x{k}");
            assert_eq!(fused.grid, plain.grid, "{m}x{n}x{k}");
        }
        let fused = linear_sgd(A, 0, D, C, 64, 1024, 1024, 1e-3, None, SMS).unwrap();
        assert_eq!(u32_arg(&fused, "tile"), STAGED_SGD_TILE);
    }

    #[test]
    fn linear_mse_step_with_many_rows_takes_three_launches() {
        let s = step(300, 64, 32);
        let need = linear_mse_step_workspace_bytes(300, 64, 32, SMS, false);
        let calls = linear_mse_step(&s, WS, need, SMS, false).unwrap();
        let kernels: Vec<Kernel> = calls.iter().map(|c| c.kernel).collect();
        assert_eq!(kernels, [Kernel::Gemm, Kernel::Mse, Kernel::LinearSgd]);
        let grad = WS + mse_workspace_bytes(300 * 32, SMS).next_multiple_of(256);
        assert_eq!(arg(&calls[1], "grad"), Value::Ptr(grad));
        assert_eq!(arg(&calls[1], "pred"), Value::Ptr(grad));
        assert_eq!(
            arg(&calls[2], "loss"),
            Value::Ptr(0),
            "the MSE kernel wrote the loss"
        );
    }

    #[test]
    fn linear_mse_step_rejects_bad_arguments() {
        let s = step(64, 128, 32);
        let need = linear_mse_step_workspace_bytes(64, 128, 32, SMS, false);
        err(linear_mse_step(&s, WS, need - 1, SMS, false), "workspace");
        err(
            linear_mse_step(&step(0, 128, 32), WS, need, SMS, false),
            "m",
        );
        err(
            linear_mse_step(&LinearMseStep { w: 0, ..s }, WS, need, SMS, false),
            "w",
        );
        err(
            linear_mse_step(&LinearMseStep { x: A + 4, ..s }, WS, need, SMS, false),
            "overlap",
        );
        err(
            linear_mse_step(&LinearMseStep { loss: WS, ..s }, WS, need, SMS, false),
            "overlap",
        );
        err(
            linear_mse_step(
                &LinearMseStep {
                    target: WS + 64,
                    ..s
                },
                WS,
                need,
                SMS,
                false,
            ),
            "overlap",
        );
        err(linear_mse_step(&s, WS, need, 0, false), "multiprocessor");
        assert!(linear_mse_step(&LinearMseStep { b: 0, ..s }, WS, need, SMS, false).is_ok());
    }

    /// A 2-layer step of these sizes on buffers far apart.
    fn mlp2_step_of(rows: u32, inputs: u32, hidden: u32, outputs: u32) -> Mlp2MseStep {
        Mlp2MseStep {
            w1: A,
            b1: B,
            w2: C,
            b2: D,
            x: 6 << 44,
            target: 7 << 44,
            loss: 8 << 44,
            rows,
            inputs,
            hidden,
            outputs,
            grad_scale: 1.0,
            lr: 1e-3,
        }
    }

    #[test]
    fn mlp2_mse_step_is_a_cooperative_launch_and_an_update() {
        let s = mlp2_step_of(64, 1024, 512, 10);
        let need = mlp2_mse_step_workspace_bytes(64, 512, 10, SMS);
        let calls = mlp2_mse_step(&s, WS, need, SMS, true).unwrap();
        assert_eq!(calls.len(), 2);
        let (fwd, upd) = (&calls[0], &calls[1]);
        assert!(fwd.cooperative && fwd.kernel == Kernel::Mlp2Mse);
        assert!(!upd.cooperative && upd.kernel == Kernel::Mlp2Sgd);
        assert!(fwd.grid[0] >= 1 && fwd.grid[0] <= SMS);
        // Tiles that load the least per warp: at 8 rows of 1024, 4 x 4
        // (512 tiles, one round) over 4 x 1 (2048, two rounds of 5 loads);
        // one block per SM, the kernel spreading 512 tiles over them.
        let w = SMS as u64 * 8;
        assert_eq!(spread_tile(8, 1024, w, &MLP_TILES), 2);
        assert_eq!(spread_tile(8, 1024, w, &KN_TILES), 1);
        assert_eq!(spread_tile(32, 256, w, &MLP_TILES), 2);
        assert_eq!(spread_tile(64, 1024, w, &MLP_TILES), 3);
        assert_eq!(spread_tile(64, 10, w, &MLP_TILES), 0);
        assert_eq!(spread_tile(1, 4096, w, &MLP_TILES), 0);
        assert_eq!(spread_tile(2, 4096, w, &MLP_TILES), 0, "4 rows need 3");
        let eight = mlp2_mse_step(
            &mlp2_step_of(8, 1024, 1024, 1024),
            WS,
            u64::MAX >> 8,
            SMS,
            true,
        );
        let fwd8 = &eight.unwrap()[0];
        assert_eq!(u32_arg(fwd8, "tiles"), 2 | 2 << 2 | 1 << 4);
        assert_eq!(fwd8.grid[0], SMS);
        // Past 8 tiles a block per SM, a block per 8 tiles, up to two per SM.
        let grid = |m, k| {
            let s = mlp2_step_of(m, k, k, k);
            mlp2_mse_step(&s, WS, u64::MAX >> 8, SMS, true).unwrap()[0].grid[0]
        };
        assert_eq!(grid(64, 1024), 2048 / 8, "8 x 4 tiles of 64 x 1024");
        assert_eq!(grid(1, 4096), 2 * SMS);
        let tiny = mlp2_mse_step(&mlp2_step_of(5, 37, 19, 3), WS, u64::MAX >> 8, SMS, true);
        assert_eq!(
            tiny.unwrap()[0].grid[0],
            5 * 19,
            "a block a tile of 5 x 19 (1 x 1)"
        );
        assert_eq!(
            u32_arg(upd, "cfg") >> 16,
            fwd.grid[0],
            "parts = forward blocks"
        );
        assert_eq!(arg(fwd, "bar"), Value::Ptr(WS));
        assert_eq!(arg(fwd, "h"), arg(upd, "h"));
        assert_eq!(arg(fwd, "dh"), arg(upd, "dh"));
        // The workspace holds h, dP and dH after the barrier and the sums.
        let dh = ptr_arg(fwd, "dh");
        assert_eq!(dh + 64 * 512 * 4, WS + need);
        err(mlp2_mse_step(&s, WS, need - 1, SMS, true), "workspace");
        err(
            mlp2_mse_step(
                &Mlp2MseStep {
                    hidden: 1 << 16,
                    ..s
                },
                WS,
                u64::MAX >> 8,
                SMS,
                true,
            ),
            "hidden",
        );
        err(
            mlp2_mse_step(&Mlp2MseStep { loss: WS + 8, ..s }, WS, need, SMS, true),
            "overlap",
        );
        err(
            mlp2_mse_step(&Mlp2MseStep { w2: A, ..s }, WS, need, SMS, true),
            "overlap",
        );
        err(
            mlp2_mse_step(&Mlp2MseStep { x: 0, ..s }, WS, need, SMS, true),
            "x",
        );
        assert!(mlp2_mse_step(&Mlp2MseStep { b1: 0, b2: 0, ..s }, WS, need, SMS, true).is_ok());
    }

    #[test]
    fn mlp2_mse_step_past_its_fused_form_takes_a_launch_per_layer_operation() {
        let s = mlp2_step_of(64, 4096, 4096, 4096);
        let need = mlp2_mse_step_workspace_bytes(64, 4096, 4096, SMS);
        let calls = mlp2_mse_step(&s, WS, need, SMS, true).unwrap();
        assert_eq!(calls.len(), 7);
        assert!(calls.iter().all(|c| !c.cooperative));
        assert_eq!(calls[2].kernel, Kernel::Mse);
        assert_eq!(calls[4].kernel, Kernel::ReluBackward);
        // The MSE's workspace is the barrier and the sums, before h.
        let h = ptr_arg(&calls[4], "x");
        assert_eq!(arg(&calls[2], "workspace"), Value::Ptr(WS));
        assert!(WS + mse_workspace_bytes(64 * 4096, SMS) <= h);
        // Each layer's update is the single-layer step's.
        let dh = ptr_arg(&calls[4], "dx");
        assert_eq!(
            calls[6],
            linear_sgd(A, B, dh, 6 << 44, 64, 4096, 4096, 1e-3, None, SMS).unwrap()
        );
        // Its input gradient (64 rows, 4096 x 4096 weights) is the cluster
        // kernel's plain layout (the tiled GEMM without clusters); 31 rows
        // keep the small-batch kernel.
        assert_eq!(calls[3].kernel, Kernel::LinearCluster);
        assert_eq!(u32_arg(&calls[3], "flags"), 0, "the plain layout");
        assert_eq!(u32_arg(&calls[3], "tile"), 2);
        assert_eq!(calls[3].cluster, Some([2, 1, 1]));
        assert_eq!((ptr_arg(&calls[3], "c"), ptr_arg(&calls[3], "b")), (dh, C));
        let plain = mlp2_mse_step(&s, WS, need, SMS, false).unwrap();
        assert_eq!(plain[3].kernel, Kernel::Gemm);
        let small_dx = linear_backward_input(A, B, C, 31, 4096, 4096, SMS, true).unwrap();
        assert_eq!(small_dx.kernel, Kernel::LinearSmall);
        // Eight rows stay in the fused form.
        let small = Mlp2MseStep { rows: 8, ..s };
        let need8 = mlp2_mse_step_workspace_bytes(8, 4096, 4096, SMS);
        assert_eq!(
            mlp2_mse_step(&small, WS, need8, SMS, true).unwrap().len(),
            2
        );
    }
}
