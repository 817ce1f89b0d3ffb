//! Training step of a 2-layer MLP (ReLU hidden layer, summed squared error, SGD).

use super::check::{apart, buf, opt_buf, positive_sms, F32};
use super::elementwise::relu_backward;
use super::grid::{BLOCK, MAX_GRID_X};
use super::linear::{gemm_tile, linear, linear_backward_input, linear_sizes, GEMM_TILES};
use super::linear_step::{linear_sgd, sgd_reversed};
use super::mlp::{spread_tile, MLP2_BLOCKS_PER_SM, MLP_ALIGN, MLP_BARRIER_BYTES, MLP_TILES};
use super::reduce::{mse, mse_workspace_bytes};
use crate::{args, Call, SizeError};

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
/// against 432; perf/TUNING.md, "The 2-layer step's warp tiles").
const MLP2_FUSED_MAX_MACS: u64 = 1 << 31;

/// One training step of a 2-layer MLP ([`Mlp2MseStep`] says what it
/// computes) in two launches: a cooperative `gc_mlp2_mse_f32` (the forward
/// pass, the loss's per-block sums, dP and dH, a grid barrier between the
/// phases) and `gc_mlp2_sgd_f32` (the loss, then both layers' updates, as
/// [`linear_mse_step`](super::linear_mse_step)'s update does one layer's). From
/// 2^31 multiply-adds a step on, seven: [`linear`] twice (`clusters`: the GPU
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
        |(r, c): (u32, u32), n: u32| (m as u64).div_ceil(r as u64) * (n as u64).div_ceil(c as u64);
    let most = count(MLP_TILES[ta], k1)
        .max(count(MLP_TILES[tb], k2))
        .max(count(KN_TILES[tc], k1));
    // A block for each tile of the phase with the most, up to one per SM
    // (the kernel spreads a phase's tiles over every block); past one tile
    // a warp, 8 tiles a block, up to two per SM. More blocks make each grid
    // barrier dearer, so only tiles that fill every warp of one block per
    // SM take the second (perf/TUNING.md, "The 2-layer step's warp
    // tiles").
    let grid = if most <= warps {
        most.min(sms as u64)
    } else {
        most.div_ceil(8).min(sms as u64 * MLP2_BLOCKS_PER_SM as u64)
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
        (if b != 0 { (n as u64).div_ceil(32) } else { 0 })
            + (n as u64).div_ceil(t) * (k as u64).div_ceil(t)
    };
    let blocks = 1 + layer_blocks(b1, k1, k0, tile1) + layer_blocks(b2, k2, k1, tile2);
    if blocks > MAX_GRID_X {
        return Err(SizeError::GridTooLarge { blocks });
    }
    let ty = (m as u64).div_ceil(4).next_power_of_two().min(32) as u32;
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

/// Where [`mlp2_mse_step`]'s per-layer form keeps `h`, `dP` and `dH` in
/// `workspace`, when a step of these sizes takes that form (its calls are
/// then, in order: the two forward [`linear`]s (`h` with ReLU, then `dP`),
/// the MSE in place on `dP`, the input gradient `dH = dP . W2`, the ReLU
/// backward in place on `dH`, and the two weight and bias updates, W2's
/// then W1's: the C layer may run the GEMMs through the vendor GEMM
/// instead), else `None` (the fused kernel). Pure: the arguments are
/// checked by [`mlp2_mse_step`].
pub fn mlp2_mse_step_buffers(step: &Mlp2MseStep, workspace: u64, sms: u32) -> Option<[u64; 3]> {
    let (m, k0, k1, k2) = (step.rows, step.inputs, step.hidden, step.outputs);
    let ([_, _, h, dp, dh], _) = mlp2_layout(m, k1, k2, sms);
    (m as u64 * k1 as u64 * (k0 as u64 + 2 * k2 as u64) >= MLP2_FUSED_MAX_MACS).then_some([
        workspace + h,
        workspace + dp,
        workspace + dh,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::*;
    use crate::{Kernel, Value};

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
