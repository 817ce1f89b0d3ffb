//! A whole MLP's forward pass (gc_op_mlp: one cooperative launch where it
//! pays, one launch per layer otherwise) and its workspace size.

use super::vendor::{GC_LINEAR_CUBLASLT, GC_LINEAR_GRAPHCORE};
use super::{launch_all, p, this_export, GC_LINEAR_TF32};
use crate::args::Out;
use crate::status::{boundary, gc_status};
use crate::stream::gc_stream;
use graphcore_core::kernels::ops;
use graphcore_core::Error;
use std::ffi::{c_int, c_void};

/// One layer of gc_op_mlp: y = x * W^T + b, then ReLU when relu != 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct gc_mlp_layer {
    /// W, outputs x inputs floats, row-major (as torch.nn.Linear stores it):
    /// device memory of the stream's context.
    pub w: *const f32,
    /// b, outputs floats (device memory), or NULL for no bias.
    pub b: *const f32,
    /// Input width: the previous layer's outputs (the first: x's columns).
    pub inputs: u32,
    /// Output width.
    pub outputs: u32,
    /// Non-zero: ReLU after this layer.
    pub relu: c_int,
}

/// gc_op_mlp flag: one fused launch where that measured at least as fast as
/// one launch per layer on an H100 (one row, 3 or 4 layers, every layer
/// after the first at most 2^17 weights: the notes' 1024-512-256-10 MLP at
/// batch 1), and only where graphcore does not launch its kernels with
/// programmatic dependent launch (below compute capability 9.0, a driver
/// older than CUDA 12.3, or GC_PDL=0): with it, one launch per layer
/// measured faster at every shape; one launch per layer elsewhere.
pub const GC_MLP_FUSED: u32 = 1;

/// gc_op_mlp flag: fused wherever the fused kernel takes the layers (up to 8
/// rows, at most 2^25 multiply-adds a layer; one launch per 4 layers),
/// faster or not: for measurements. Takes precedence over GC_MLP_FUSED.
pub const GC_MLP_FUSED_ALWAYS: u32 = 2;

/// gc_op_mlp flag: allow TF32 in the per-layer form (gc_op_linear's
/// GC_LINEAR_TF32, whose value 2 is GC_MLP_FUSED_ALWAYS here): each layer
/// runs as gc_op_linear with GC_LINEAR_TF32 would, through cuBLASLt's
/// FAST_TF32 where the dispatch gives it the layer and it is loaded, else
/// graphcore's TF32 kernel (f32 below compute capability 8.0). Not with
/// GC_MLP_FUSED or GC_MLP_FUSED_ALWAYS (the fused kernel is f32).
pub const GC_MLP_TF32: u32 = 16;

/// Most layers one gc_op_mlp call takes.
pub const GC_MLP_MAX_LAYERS: u32 = 64;

/// The `n_layers` layers at `list` as typed layers; `list` is read only
/// when `n_layers` is within GC_MLP_MAX_LAYERS.
fn mlp_layers(list: *const gc_mlp_layer, n_layers: u32) -> Result<Vec<ops::MlpLayer>, Error> {
    if n_layers > GC_MLP_MAX_LAYERS {
        return Err(Error::invalid_argument(format!(
            "{n_layers} layers; at most {GC_MLP_MAX_LAYERS} per call"
        )));
    }
    if n_layers == 0 {
        return Err(Error::invalid_argument("`n_layers` is 0"));
    }
    if list.is_null() {
        return Err(Error::invalid_argument("`layers` is NULL"));
    }
    // SAFETY: the caller passes `n_layers` readable layers (at most
    // GC_MLP_MAX_LAYERS, checked above).
    let list = unsafe { std::slice::from_raw_parts(list, n_layers as usize) };
    Ok(list
        .iter()
        .map(|l| ops::MlpLayer {
            w: p(l.w),
            b: p(l.b),
            inputs: l.inputs,
            outputs: l.outputs,
            relu: l.relu != 0,
        })
        .collect())
}

/// Writes to *bytes the workspace gc_op_mlp needs for rows rows through the
/// n_layers layers at layers (a pure computation: nothing is allocated or
/// launched; only the widths are read): 256 bytes (the fused kernel's
/// counter and epoch), then every layer's output but the last twice: as the
/// fused kernel's tagged activations (8 bytes an element) and as floats,
/// each rounded up to 256 bytes.
/// Errors: GC_ERROR_INVALID_ARGUMENT (layers or bytes NULL, n_layers 0 or more
/// than GC_MLP_MAX_LAYERS).
#[no_mangle]
pub extern "C" fn gc_op_mlp_workspace_bytes(
    rows: u32,
    layers: *const gc_mlp_layer,
    n_layers: u32,
    bytes: *mut u64,
) -> gc_status {
    boundary(this_export!(), || {
        let out = Out::new(bytes, "bytes")?;
        let list = mlp_layers(layers, n_layers)?;
        out.set(ops::mlp_workspace_bytes(rows, &list));
        Ok(())
    })
}

/// The forward pass of an MLP: rows rows of x (rows x `layers[0].inputs`)
/// through n_layers layers (each y = x * W^T + b, then ReLU when asked) into
/// y (rows x layers[n_layers - 1].outputs), all f32 row-major. flags 0: one
/// launch per layer (the small-batch or GEMM kernel of gc_op_linear), the
/// faster form on an H100 for most shapes measured (perf/TUNING.md).
/// GC_MLP_FUSED: fused where that pays (see the flag), one launch per
/// layer elsewhere; GC_MLP_FUSED_ALWAYS: fused wherever the fused kernel
/// takes the layers (up to 8 rows, at most 2^25 multiply-adds a layer).
/// Fused: one launch per 4 layers, a cooperative kernel with no barrier
/// between layers (each tile waits only for the
/// activations it reads, which carry a per-launch tag); a 2- to 4-layer MLP
/// is one kernel node when captured; elsewhere one launch per layer. Fused
/// outputs are bitwise those of per-layer launches with the fused kernel's
/// tiles. Results
/// are deterministic (the same bits on every run and replay) and within
/// float rounding of float64. One launch per layer goes through
/// gc_op_linear's GEMM dispatch: a layer the dispatch table gives to
/// cuBLASLt (where it is loaded; see gc_op_linear) runs as one
/// cublasLtMatmul with its bias and ReLU fused, the others as above.
/// In that form flags may also hold GC_LINEAR_GRAPHCORE or
/// GC_LINEAR_CUBLASLT (gc_op_linear's backend flags, the same bits: every
/// layer on that backend; forced cuBLASLt that is not loaded or refuses a
/// layer is GC_ERROR_NOT_SUPPORTED with nothing launched) and GC_MLP_TF32
/// (every layer as gc_op_linear with GC_LINEAR_TF32: cuBLASLt's FAST_TF32
/// where the dispatch picks it and it loads, else graphcore's TF32 kernel;
/// results within TF32 rounding of float64, not bitwise the f32 form's).
/// workspace holds workspace_bytes >= gc_op_mlp_workspace_bytes(rows,
/// layers, n_layers) bytes (a gc_pool_alloc block is the usual choice); its
/// first 4 bytes must be zero before its first use (gc_memset_async once;
/// every launch leaves them zero); do not share it between launches that
/// may run concurrently. The caller keeps layers; graphcore reads it only
/// during the call (a captured launch keeps the pointers in it).
/// Pointers: y, x, workspace and every layer's w and b are device memory of
/// the stream's context (gc_pool_alloc blocks, cudaMalloc, managed memory;
/// not host memory), 4-byte aligned (float alignment); float4 loads where a
/// layer's inputs is a multiple of 4 and its x and W are 16-byte aligned
/// (workspace 16-byte aligned for the intermediates).
/// In place: not allowed; y and workspace must not overlap each other, x
/// or any weight or bias.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (a layer's w NULL, an unknown
/// flag, GC_LINEAR_GRAPHCORE with GC_LINEAR_CUBLASLT, GC_MLP_TF32 or
/// GC_LINEAR_CUBLASLT with a fused flag, n_layers more than GC_MLP_MAX_LAYERS (layers is then not read), a
/// layer's inputs not the previous layer's outputs, a matrix of 2^32 elements
/// or more, workspace_bytes too small, a refused overlap),
/// GC_ERROR_NOT_SUPPORTED (GC_LINEAR_CUBLASLT and cuBLASLt is not loaded or
/// refuses a layer; nothing launched), GC_ERROR_CUDA (also: a device without
/// cooperative launch).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn gc_op_mlp(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    rows: u32,
    layers: *const gc_mlp_layer,
    n_layers: u32,
    workspace: *mut c_void,
    workspace_bytes: u64,
    flags: u32,
) -> gc_status {
    super::vendor::mlp(this_export!(), stream, |ctx| {
        let sms = ctx.sm_count();
        let linear_flags = mlp_linear_flags(flags)?;
        let form = if flags & GC_MLP_FUSED_ALWAYS != 0 {
            ops::MlpForm::FusedAlways
        } else if flags & GC_MLP_FUSED != 0 {
            ops::MlpForm::Fused
        } else {
            ops::MlpForm::PerLayer
        };
        let list = mlp_layers(layers, n_layers)?;
        let overlap = form == ops::MlpForm::Fused && ctx.launches_builtins_programmatically()?;
        let (calls, io) = ops::mlp_with_layer_io(
            p(y),
            p(x),
            p(workspace),
            workspace_bytes,
            rows,
            &list,
            form,
            overlap,
            sms,
            ctx.has_clusters(),
        )?;
        Ok(super::vendor::MlpPlan {
            calls,
            io,
            layers: list,
            rows,
            flags: linear_flags,
        })
    })
}

/// gc_op_mlp's flags checked, and its per-layer dispatch's as gc_op_linear
/// flags (GC_LINEAR_TF32 for GC_MLP_TF32, the backend flags as they are).
fn mlp_linear_flags(flags: u32) -> Result<u32, Error> {
    const FUSED: u32 = GC_MLP_FUSED | GC_MLP_FUSED_ALWAYS;
    const BACKEND: u32 = GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT;
    if flags & !(FUSED | BACKEND | GC_MLP_TF32) != 0 {
        return Err(Error::invalid_argument(format!(
            "unknown flags {flags:#x} (GC_MLP_FUSED, GC_MLP_FUSED_ALWAYS, GC_MLP_TF32, \
             GC_LINEAR_GRAPHCORE and GC_LINEAR_CUBLASLT are the flags)"
        )));
    }
    if flags & BACKEND == BACKEND {
        return Err(Error::invalid_argument(
            "GC_LINEAR_GRAPHCORE and GC_LINEAR_CUBLASLT exclude each other",
        ));
    }
    if flags & FUSED != 0 && flags & (GC_MLP_TF32 | GC_LINEAR_CUBLASLT) != 0 {
        return Err(Error::invalid_argument(
            "GC_MLP_TF32 and GC_LINEAR_CUBLASLT take the per-layer form: not with \
             GC_MLP_FUSED or GC_MLP_FUSED_ALWAYS",
        ));
    }
    let tf32 = if flags & GC_MLP_TF32 != 0 {
        GC_LINEAR_TF32
    } else {
        0
    };
    Ok(flags & BACKEND | tf32)
}

/// gc_op_mlp with its row count in device memory, for exact-size requests:
/// each layer's kernel reads `m = *rows` (a uint32_t) when it runs, so one
/// set of launches, captured once for a bucket of max_rows rows, serves any
/// 1 <= m <= max_rows with x and y of exactly m rows (x m x
/// `layers[0].inputs`, y m x the last layer's outputs: x is read and y
/// written below row m only; no padding). A count above max_rows is
/// clamped to max_rows (nothing past the bucket's rows is read or
/// written); a count of 0 computes nothing. One launch per layer, each the
/// launch gc_op_linear_rows makes for max_rows rows (the small-batch
/// kernel with gc_op_linear's small-batch tiles for max_rows rows): each
/// layer's first m rows are bitwise that launch's for max_rows rows, within
/// float rounding of float64. The workspace is gc_op_mlp's for max_rows
/// rows (gc_op_mlp_workspace_bytes(max_rows, ...); its first 4 bytes need
/// not be zero: only the intermediates are used). flags: 0 (reserved).
/// In a runner's exact-size capture (gc_runner_capture_exact), pass the
/// `rows` the record function was given and declare x and y with
/// GC_ARG_ROWS. The caller keeps layers; graphcore reads it only during the
/// call.
/// Pointers: y, x, rows, workspace and every layer's w and b are device
/// memory of the stream's context (gc_pool_alloc blocks, cudaMalloc,
/// managed memory; not host memory), 4-byte aligned; y, x and workspace
/// are checked for max_rows rows when this is called (the bucket's
/// buffers); rows may be written by a kernel before these on the stream,
/// or bound as a graph argument.
/// In place: not allowed; y and workspace must not overlap each other, x,
/// rows, or any weight or bias.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (rows NULL, max_rows 0 or
/// more than 256, a layer's w NULL, a nonzero flag, n_layers 0 or more than
/// GC_MLP_MAX_LAYERS (layers is then not read), a layer's inputs not the
/// previous layer's outputs, a matrix of 2^32 elements or more,
/// workspace_bytes too small, a refused overlap).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn gc_op_mlp_rows(
    stream: *mut gc_stream,
    y: *mut f32,
    x: *const f32,
    rows: *const u32,
    max_rows: u32,
    layers: *const gc_mlp_layer,
    n_layers: u32,
    workspace: *mut c_void,
    workspace_bytes: u64,
    flags: u32,
) -> gc_status {
    launch_all(this_export!(), stream, |ctx| {
        if flags != 0 {
            return Err(Error::invalid_argument(format!(
                "unknown flags {flags:#x} (none are defined: pass 0)"
            )));
        }
        let list = mlp_layers(layers, n_layers)?;
        Ok(ops::mlp_rows(
            p(y),
            p(x),
            p(workspace),
            workspace_bytes,
            p(rows),
            max_rows,
            &list,
            ctx.sm_count(),
        )?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gc_op_mlp's flags map to gc_op_linear's for the per-layer dispatch;
    /// unknown, contradictory and fused-with-TF32/cuBLASLt ones are refused.
    #[test]
    fn mlp_flags_map_to_the_per_layer_dispatch() {
        assert_eq!(mlp_linear_flags(0).unwrap(), 0);
        assert_eq!(mlp_linear_flags(GC_MLP_TF32).unwrap(), GC_LINEAR_TF32);
        assert_eq!(
            mlp_linear_flags(GC_MLP_TF32 | GC_LINEAR_CUBLASLT).unwrap(),
            GC_LINEAR_TF32 | GC_LINEAR_CUBLASLT
        );
        assert_eq!(
            mlp_linear_flags(GC_MLP_TF32 | GC_LINEAR_GRAPHCORE).unwrap(),
            GC_LINEAR_TF32 | GC_LINEAR_GRAPHCORE
        );
        // The fused flags are gc_op_mlp's own: no per-layer flag comes of them.
        assert_eq!(mlp_linear_flags(GC_MLP_FUSED).unwrap(), 0);
        assert_eq!(
            mlp_linear_flags(GC_MLP_FUSED_ALWAYS | GC_LINEAR_GRAPHCORE).unwrap(),
            GC_LINEAR_GRAPHCORE
        );
        for bad in [
            0x100,
            32,
            GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT,
            GC_MLP_FUSED | GC_MLP_TF32,
            GC_MLP_FUSED_ALWAYS | GC_MLP_TF32,
            GC_MLP_FUSED | GC_LINEAR_CUBLASLT,
        ] {
            let e = mlp_linear_flags(bad).unwrap_err();
            assert_eq!(
                e.kind(),
                graphcore_core::ErrorKind::InvalidArgument,
                "{bad:#x}"
            );
        }
    }
}
