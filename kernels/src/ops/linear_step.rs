//! Training step of a linear layer (summed squared error, SGD).

use super::check::{apart, buf, opt_buf, positive_sms, F32};
use super::grid::MAX_GRID_X;
use super::linear::{
    gemm_tile, linear, linear_sizes, small_batch, small_config, SmallConfig, GEMM_TILES,
};
use super::reduce::{mse, mse_workspace_bytes};
use crate::{args, Call, SizeError};

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
/// (perf/TUNING.md, "The update's long blocks first").
pub(super) fn sgd_reversed(blocks: u64, sms: u32) -> u32 {
    if blocks > SGD_BLOCKS_PER_SM * sms as u64 {
        SGD_REVERSED
    } else {
        0
    }
}

/// The SGD update of a linear layer (`gc_linear_sgd_f32`): `W -= lr * dy^T . x`
/// (W `n x k`, dy `m x n`, x `m x k`) and `b -= lr * colsum(dy)` (b may be
/// 0): bitwise [`linear_weight_sgd`](super::linear_weight_sgd) and
/// [`bias_sgd`](super::bias_sgd) with the same sizes and `sms`, in one
/// launch; with `loss = (address, partials, parts)`, also
/// the loss from the forward's per-block sums. Sizes and pointers are the
/// caller's to check.
#[allow(clippy::too_many_arguments)]
pub(super) fn linear_sgd(
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
    // H100: perf/TUNING.md).
    let mut tile = gemm_tile(n, k, m, sms);
    let t = GEMM_TILES[tile as usize] as u64;
    if tile == 1 && m <= STAGED_SGD_ROWS {
        tile = STAGED_SGD_TILE;
    }
    let bias_blocks = if b != 0 { (n as u64).div_ceil(32) } else { 0 };
    let blocks =
        loss.is_some() as u64 + bias_blocks + (n as u64).div_ceil(t) * (k as u64).div_ceil(t);
    let (loss, partials, parts) = loss.unwrap_or((0, 0, 0));
    if blocks > MAX_GRID_X {
        return Err(SizeError::GridTooLarge { blocks });
    }
    let bias_ty = (m as u64).div_ceil(4).next_power_of_two().min(32) as u32;
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
/// [`linear`], [`mse`], [`linear_weight_sgd`](super::linear_weight_sgd)
/// and [`bias_sgd`](super::bias_sgd) run one after the other; the loss is
/// summed in another fixed order (deterministic, equal to [`mse`]'s up to
/// rounding).
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

/// Where [`linear_mse_step`]'s GEMM path keeps the gradient `dY`: its
/// address in `workspace` when the step of these sizes takes that path
/// (its calls are then the forward [`linear`] into `dY`, the MSE in place,
/// and one `W`/`b` update, in this order: the C layer may run the forward
/// and the weight update through the vendor GEMM instead), else `None` (the
/// small-batch path's fused forward). Pure: the arguments are checked by
/// [`linear_mse_step`].
pub fn linear_mse_step_grad(
    step: &LinearMseStep,
    workspace: u64,
    sms: u32,
    clusters: bool,
) -> Option<u64> {
    (!small_batch(step.rows, step.outputs, step.inputs, sms, clusters))
        .then(|| workspace + step.sums_bytes(sms, clusters))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::*;
    use crate::ops::*;
    use crate::{Kernel, Value};

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
}
