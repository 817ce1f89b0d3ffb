//! The whole MLP forward: one cooperative launch, or a launch per layer.

use super::check::{apart, buf, nonzero, opt_buf, positive_sms, F32};
use super::grid::BLOCK;
use super::linear::{linear, linear_rows, linear_sizes, SmallConfig, SMALL_BATCH_MAX_M};
use crate::{args, Call, SizeError};

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
/// warps, win over the launches fusion saves: perf/TUNING.md).
pub const MLP_FUSED_MAX_ROWS: u32 = 8;
/// Bytes at the start of an MLP workspace for the fused kernel's counter and
/// epoch (the first 4 must be zero before the first launch; every launch
/// leaves them zero).
pub(super) const MLP_BARRIER_BYTES: u64 = 256;
/// Intermediates start at multiples of this many bytes into the workspace.
pub(super) const MLP_ALIGN: u64 = 256;
/// Most multiply-adds (rows x inputs x outputs) a layer may take for the
/// network to run fused: past that the per-layer kernels' larger tiles and
/// more warps win over the launches fusion saves (measured on an H100,
/// perf/TUNING.md).
pub const MLP_FUSED_MAX_MACS: u64 = 1 << 25;
/// Most weights a layer after the first may have for [`MlpForm::Fused`] to
/// fuse the network (with one row and 3 to [`MLP_FUSED_LAYERS`] layers):
/// where it measured faster than, or as fast as, one launch per layer on an
/// H100 (perf/results/mlp_vs_torch.json; perf/TUNING.md). Past it,
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
pub(super) const MLP_TILES: [(u32, u32); 4] = [(1, 1), (4, 1), (4, 4), (8, 4)];
/// Blocks per SM of the fused launch (`__launch_bounds__(256, 1)`).
const MLP_BLOCKS_PER_SM: u32 = 1;
/// Blocks per SM the 2-layer step's cooperative launch may have
/// (`gc_mlp2_mse_f32`: `__launch_bounds__(256, 2)`, at most 128 registers).
pub(super) const MLP2_BLOCKS_PER_SM: u32 = 2;

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
pub(super) fn spread_tile(rows: u32, outputs: u32, warps: u64, tiles: &[(u32, u32)]) -> usize {
    let cost = |t: usize| {
        let (r, c) = tiles[t];
        let count = (rows as u64).div_ceil(r as u64) * (outputs as u64).div_ceil(c as u64);
        count.div_ceil(warps) * (r + c) as u64
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
            let count = (rows as u64).div_ceil(r as u64) * (outputs as u64).div_ceil(c as u64);
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

/// Whether [`mlp`] takes its per-layer form (one [`linear`] per layer)
/// for `rows` rows through `layers` in `form`.
fn per_layer_form(rows: u32, layers: &[MlpLayer], form: MlpForm, overlap: bool) -> bool {
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
    !fuse || rows > MLP_FUSED_MAX_ROWS || !small
}

/// Where [`mlp`]'s per-layer form reads and writes: each layer's (input,
/// output) address, in order, when [`mlp`] takes that form for these
/// arguments (its calls are then one [`linear`] per layer, in this order:
/// the C layer may run any of them through the vendor GEMM instead), else
/// `None` (the fused kernel runs). Checks the arguments as [`mlp`] does.
#[allow(clippy::too_many_arguments)]
pub fn mlp_layer_io(
    y: u64,
    x: u64,
    workspace: u64,
    workspace_bytes: u64,
    rows: u32,
    layers: &[MlpLayer],
    form: MlpForm,
    overlap: bool,
    sms: u32,
) -> Result<Option<Vec<(u64, u64)>>, SizeError> {
    mlp_checks(y, x, workspace, workspace_bytes, rows, layers, sms)?;
    Ok(per_layer_form(rows, layers, form, overlap).then(|| {
        (0..layers.len())
            .map(|i| mlp_io(y, x, workspace, rows, layers, i))
            .collect()
    }))
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
/// (perf/TUNING.md has the measurements). `overlap`: the launches are
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
    let (calls, _) = mlp_with_layer_io(
        y,
        x,
        workspace,
        workspace_bytes,
        rows,
        layers,
        form,
        overlap,
        sms,
        clusters,
    )?;
    Ok(calls)
}

/// [`mlp`]'s launches together with [`mlp_layer_io`]'s addresses (each
/// layer's (input, output) in the per-layer form, else `None`), for one
/// check of the arguments.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn mlp_with_layer_io(
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
) -> Result<(Vec<Call>, Option<Vec<(u64, u64)>>), SizeError> {
    let io = mlp_layer_io(
        y,
        x,
        workspace,
        workspace_bytes,
        rows,
        layers,
        form,
        overlap,
        sms,
    )?;
    if let Some(io) = io {
        let calls = io
            .iter()
            .zip(layers)
            .map(|(&(input, output), l)| {
                linear(
                    output, input, l.w, l.b, rows, l.outputs, l.inputs, l.relu, sms, clusters,
                )
            })
            .collect::<Result<_, _>>()?;
        return Ok((calls, Some(io)));
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
                .max((rows as u64).div_ceil(r as u64) * (l.outputs as u64).div_ceil(c as u64));
            flags |= (l.relu as u32) << i | (t as u32) << (8 + 2 * i);
        }
        let grid = most_tiles.div_ceil(8).min(max_blocks) as u32;
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
    Ok((calls, None))
}

/// [`mlp`] with its row count in device memory, for exact-size requests:
/// `rows` is the address of a `u32` each layer's kernel reads when it runs
/// (`gc_linear_small_rows_f32`, see [`linear_rows`]), and
/// `m = min(*rows, max_rows)` rows of x go through the layers into y (x
/// read and y written below row m only; a count above `max_rows` is
/// clamped). One launch per layer, the small-batch kernel with the config
/// [`linear`]'s small-batch path has for `max_rows` rows (each layer's
/// first m rows bitwise that launch's), so `max_rows` is at most
/// [`SMALL_BATCH_MAX_M`]. The workspace is [`mlp`]'s for `max_rows` rows
/// (only its intermediates are used); x, y and the workspace are checked
/// for `max_rows` rows, and `rows` must overlap neither y nor the
/// workspace.
#[allow(clippy::too_many_arguments)]
pub fn mlp_rows(
    y: u64,
    x: u64,
    workspace: u64,
    workspace_bytes: u64,
    rows: u64,
    max_rows: u32,
    layers: &[MlpLayer],
    sms: u32,
) -> Result<Vec<Call>, SizeError> {
    mlp_checks(y, x, workspace, workspace_bytes, max_rows, layers, sms)?;
    if max_rows > SMALL_BATCH_MAX_M {
        return Err(SizeError::TooLarge {
            arg: "max_rows",
            value: max_rows as u64,
            max: SMALL_BATCH_MAX_M as u64,
        });
    }
    let outputs = layers.last().map_or(0, |l| l.outputs);
    let rr = buf("rows", rows, 4)?;
    apart(
        buf("y", y, max_rows as u64 * outputs as u64 * F32)?,
        rr,
        false,
    )?;
    apart(
        buf(
            "workspace",
            workspace,
            mlp_workspace_bytes(max_rows, layers),
        )?,
        rr,
        false,
    )?;
    (0..layers.len())
        .map(|i| {
            let (input, output) = mlp_io(y, x, workspace, max_rows, layers, i);
            let l = &layers[i];
            linear_rows(
                output, input, l.w, l.b, rows, max_rows, l.outputs, l.inputs, l.relu, sms,
            )
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testing::*;
    use crate::{Kernel, Value};

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
    fn mlp_rows_is_one_linear_rows_launch_per_layer_of_the_bucket() {
        const R: u64 = 0x9000_0000;
        let ws = 1u64 << 40;
        let net = mlp_net(&[1024, 512, 256, 10]);
        for max_rows in [1u32, 4, 32, 256] {
            let bytes = mlp_workspace_bytes(max_rows, &net);
            let calls = mlp_rows(A, C, ws, bytes, R, max_rows, &net, SMS).unwrap();
            assert_eq!(calls.len(), 3);
            for (i, c) in calls.iter().enumerate() {
                let (input, output) = mlp_io(A, C, ws, max_rows, &net, i);
                let l = &net[i];
                let want = linear_rows(
                    output, input, l.w, l.b, R, max_rows, l.outputs, l.inputs, l.relu, SMS,
                )
                .unwrap();
                assert_eq!(c.kernel, Kernel::LinearSmallRows);
                assert_eq!(
                    (c.grid, c.block, c.args()),
                    (want.grid, want.block, want.args())
                );
            }
        }
        let bytes = mlp_workspace_bytes(257, &net);
        err(mlp_rows(A, C, ws, bytes, R, 257, &net, SMS), "max_rows");
        let bytes = mlp_workspace_bytes(4, &net);
        err(mlp_rows(A, C, ws, bytes, 0, 4, &net, SMS), "rows is a null");
        err(mlp_rows(A, C, ws, bytes, ws + 4, 4, &net, SMS), "overlap");
        err(mlp_rows(A, C, ws, bytes, A, 4, &net, SMS), "overlap");
        err(
            mlp_rows(A, C, ws, bytes - 1, R, 4, &net, SMS),
            "workspace has",
        );
        err(
            mlp_rows(A, C, ws, bytes, R, 0, &net, SMS),
            "rows must be > 0",
        );
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
}
