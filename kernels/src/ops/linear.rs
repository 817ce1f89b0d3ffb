//! Linear layers and GEMM: the small-batch kernel, the tiled and cluster GEMMs, the
//! TF32 path and the backward passes.

use super::check::{apart, buf, elems, nonzero, opt_buf, positive_sms, Region, F32};
use super::grid::MAX_GRID_X;
use crate::{args, Call, Kernel, SizeError};

/// Largest m for which the linear forward takes the small-batch kernel
/// (larger m: the tiled GEMM).
pub const SMALL_BATCH_MAX_M: u32 = 256;
/// Largest m for which the input gradient takes the small-batch kernel.
pub const SMALL_BACKWARD_MAX_M: u32 = 64;

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
pub(super) const GEMM_TILES: [u32; 3] = [128, 64, 32];

/// The tile for an `m x n` output with reduction length `k`: 128 x 128
/// when that still fills every SM, else 64 x 64 when that gives half a wave
/// of blocks or the reduction is short, else the 32 x 32 tile that splits K
/// over 4 slices of the block (small outputs, long reductions).
pub(super) fn gemm_tile(m: u32, n: u32, k: u32, sms: u32) -> u32 {
    let blocks = |t: u64| (m as u64).div_ceil(t) * (n as u64).div_ceil(t);
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
    (m as u64).div_ceil(tm) * (n as u64).div_ceil(tn) * 8 >= 7 * sms as u64
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
/// linear shape measured (M 256-4096, K and N 512-4096; perf/TUNING.md).
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
    let blocks = (g.m as u64).div_ceil(tm) * (g.n as u64).div_ceil(tn);
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
/// capability 9.0), where it measured faster on an H100 (perf/TUNING.md,
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
    let tiles = |tm: u64, tn: u64| (m as u64).div_ceil(tm) * (n as u64).div_ceil(tn);
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
pub(super) struct SmallConfig {
    pub(super) lr: u32,
    pub(super) lc: u32,
    pub(super) lgr: u32,
    pub(super) lgc: u32,
}

impl SmallConfig {
    /// The kernel's `config` argument.
    pub(super) fn packed(self) -> u32 {
        self.lr | self.lc << 2 | self.lgr << 4 | self.lgc << 6
    }
    /// Rows and columns of a block tile.
    fn block_tile(self) -> (u64, u64) {
        (1 << (self.lr + self.lgr), 1 << (self.lc + self.lgc))
    }
    pub(super) fn grid(self, m: u32, n: u32) -> [u32; 2] {
        let (bm, bn) = self.block_tile();
        [
            (n as u64).div_ceil(bn) as u32,
            (m as u64).div_ceil(bm) as u32,
        ]
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
/// (`kn`: W stored `k x n`), as measured on an H100 (perf/TUNING.md):
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
pub(super) fn small_config(m: u32, n: u32, k: u32, sms: u32, kn: bool) -> SmallConfig {
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
    let steps = (k as u64).div_ceil(4).max(32);
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
            let blocks = (m as u64).div_ceil(bm) * (n as u64).div_ceil(bn);
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
/// rows and for narrow outputs (perf/TUNING.md, "Small batches of 2-16 rows").
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
pub(super) fn linear_sizes(m: u32, n: u32, k: u32) -> Result<(), SizeError> {
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

/// [`linear`] with its row count in device memory: `rows` is the address
/// of a `u32` the kernel reads when it runs (`gc_linear_small_rows_f32`),
/// and `m = min(*rows, max_m)` rows are computed (a count above `max_m` is
/// clamped), so one launch, captured once, serves any row count up to
/// `max_m` (a bucket) with x and y of exactly that many rows. Always the
/// small-batch kernel, with the grid and config [`linear`]'s small-batch
/// path has for `max_m` rows: the first m rows of y are bitwise that
/// launch's. `max_m` at most [`SMALL_BATCH_MAX_M`]; x and y are checked
/// for `max_m` rows (the bucket's buffers).
#[allow(clippy::too_many_arguments)]
pub fn linear_rows(
    y: u64,
    x: u64,
    w: u64,
    b: u64,
    rows: u64,
    max_m: u32,
    n: u32,
    k: u32,
    relu: bool,
    sms: u32,
) -> Result<Call, SizeError> {
    positive_sms(sms)?;
    linear_sizes(max_m, n, k)?;
    if max_m > SMALL_BATCH_MAX_M {
        return Err(SizeError::TooLarge {
            arg: "max_rows",
            value: max_m as u64,
            max: SMALL_BATCH_MAX_M as u64,
        });
    }
    let yr = buf("y", y, max_m as u64 * n as u64 * F32)?;
    let xr = buf("x", x, max_m as u64 * k as u64 * F32)?;
    let wr = buf("w", w, n as u64 * k as u64 * F32)?;
    let br = opt_buf("b", b, n as u64 * F32)?;
    let rr = buf("rows", rows, 4)?;
    for input in [xr, wr, br, rr] {
        apart(yr, input, false)?;
    }
    // small_call's choice for max_m rows (n x k layout).
    let config = small_config(max_m, n, k, sms, false);
    let [gx, gy] = config.grid(max_m, n);
    Ok(Call::new(
        args::LinearSmallRows {
            y,
            x,
            w,
            b,
            rows,
            max_m,
            n,
            k,
            flags: relu as u32,
            config: config.packed(),
        },
        [gx, gy, 1],
        [256, 1, 1],
        0,
    ))
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
/// kernel's 161 and 180 (H100, perf/TUNING.md, "The 2-layer training
/// step past its fused form").
const SMALL_BACKWARD_GEMM_MIN_WEIGHTS: u64 = 1 << 24;
/// The fewest rows that [`SMALL_BACKWARD_GEMM_MIN_WEIGHTS`] sends to the GEMM.
const SMALL_BACKWARD_GEMM_MIN_M: u32 = 32;

/// Input gradient of a linear layer: `dx = dy . W` with dy `m x n`, W `n x k`,
/// dx `m x k`. `m <=` [`SMALL_BACKWARD_MAX_M`] takes the small-batch kernel
/// (except from 32 rows with at least 2^24 weights), larger `m` the tiled
/// GEMM; with `clusters` (the GPU has thread-block clusters), the shapes
/// whose forward takes the cluster kernel's tile 3 (33-64 rows, large
/// weights) or tile 0 (65-256 rows) take `gc_linear_cluster_f32` in its plain layout
/// (C = A . B; tile 2, or tile 0) in the same clusters instead of the tiled
/// GEMM (64 x 4096 -> 4096 on an H200 in 81.4 us against 164.2: see
/// perf/TUNING.md, "The input gradient on clusters").
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
/// [`linear_backward_weight`] followed by [`sgd`](super::sgd) with the same
/// sizes and `sms`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::*;
    use crate::ops::*;
    use crate::{Kernel, Value};

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
        // The measured best tile of each sweep shape (perf/TUNING.md).
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

    #[test]
    fn linear_rows_is_the_small_batch_launch_of_max_rows_with_a_device_count() {
        const R: u64 = 0x9000_0000;
        for (max_m, n, k) in [
            (1u32, 10u32, 1024u32),
            (4, 512, 1024),
            (64, 4096, 4096),
            (256, 1024, 256),
        ] {
            let call = linear_rows(A, B, C, D, R, max_m, n, k, true, SMS).unwrap();
            assert_eq!(call.kernel, Kernel::LinearSmallRows);
            // The small-batch launch gc_op_linear would make for max_m rows.
            let small = small_call(A, B, C, D, max_m, n, k, true, false, SMS);
            assert_eq!((call.grid, call.block), (small.grid, small.block));
            let (a, s) = (call.args(), small.args());
            assert_eq!(&a[..4], &s[..4]);
            assert_eq!(a[4], Value::Ptr(R));
            assert_eq!(&a[5..], &s[4..], "max_m, n, k, flags, config");
        }
        err(
            linear_rows(A, B, C, D, R, 257, 8, 8, false, SMS),
            "max_rows",
        );
        err(
            linear_rows(A, B, C, D, 0, 4, 8, 8, false, SMS),
            "rows is a null",
        );
        err(linear_rows(A, B, C, D, R + 1, 4, 8, 8, false, SMS), "rows");
        err(
            linear_rows(A, B, C, D, A + 4, 4, 8, 8, false, SMS),
            "overlap",
        );
        err(
            linear_rows(A, B, C, D, R, 0, 8, 8, false, SMS),
            "m must be > 0",
        );
        assert!(linear_rows(A, B, C, 0, R, 4, 8, 8, false, SMS).is_ok());
    }
}
