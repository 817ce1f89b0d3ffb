//! The vendor GEMM behind gc_op_linear: the backend flags, the dispatch
//! (graphcore's kernels or cuBLASLt, per shape, from the committed table),
//! and the calls that report the choice.

use super::{launch_calls, this_export, GC_LINEAR_RELU, GC_LINEAR_TF32};
use crate::status::{boundary, gc_status};
use crate::stream::{gc_stream, stream};
use graphcore_core::kernels::ops::{self, Backend};
use graphcore_core::kernels::Call;
use graphcore_core::vendor::{self, LinearShape};
use graphcore_core::{launch_op, Context, Error, ErrorKind, Stream};
use std::ffi::c_int;

/// gc_op_linear flag: run graphcore's own kernels whatever the dispatch
/// table says (for measurements and A/B checks).
pub const GC_LINEAR_GRAPHCORE: u32 = 4;

/// gc_op_linear flag: run cuBLASLt whatever the dispatch table says;
/// GC_ERROR_NOT_SUPPORTED (nothing launched) where cuBLASLt is not loaded
/// or has no algorithm for the shape. Not with GC_LINEAR_GRAPHCORE.
pub const GC_LINEAR_CUBLASLT: u32 = 8;

/// gc_op_linear_backend: graphcore's own kernels.
pub const GC_LINEAR_BACKEND_GRAPHCORE: c_int = 0;

/// gc_op_linear_backend: cuBLASLt.
pub const GC_LINEAR_BACKEND_CUBLASLT: c_int = 1;

/// Every gc_op_linear flag.
const LINEAR_FLAGS: u32 =
    GC_LINEAR_RELU | GC_LINEAR_TF32 | GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT;

/// Checks gc_op_linear's flags.
fn check_flags(f: u32) -> Result<(), Error> {
    if f & !LINEAR_FLAGS != 0 {
        return Err(Error::invalid_argument(format!(
            "unknown flags {f:#x} (GC_LINEAR_RELU, GC_LINEAR_TF32, GC_LINEAR_GRAPHCORE and \
             GC_LINEAR_CUBLASLT are the flags)"
        )));
    }
    if f & GC_LINEAR_GRAPHCORE != 0 && f & GC_LINEAR_CUBLASLT != 0 {
        return Err(Error::invalid_argument(
            "GC_LINEAR_GRAPHCORE and GC_LINEAR_CUBLASLT exclude each other",
        ));
    }
    Ok(())
}

/// Whether flags `f` allow TF32 and `ctx`'s device has it (compute
/// capability 8.0 or more; below that TF32 requests run f32).
fn tf32_allowed(ctx: &Context, f: u32) -> bool {
    f & GC_LINEAR_TF32 != 0 && ctx.compute_capability().0 >= 8
}

/// The backend for `shape` with flags `f` on `ctx`'s device: the forced
/// one, or the table's where cuBLASLt takes the shape, else graphcore's.
/// Forced cuBLASLt that is missing or refuses the shape is an error
/// (`NotSupported`, saying why).
fn backend(ctx: &Context, f: u32, shape: &LinearShape) -> Result<Backend, Error> {
    decide(
        f,
        ops::choose_backend(shape.m, shape.n, shape.k, shape.tf32),
        vendor::loaded,
        || vendor::linear_plan(ctx, shape),
        shape,
    )
}

/// [`backend`]'s rule (pure but for its arguments): flags `f`, the table's
/// choice `table`, whether cuBLASLt loaded, and its plan of `shape` (true:
/// it takes the shape; false: it has no algorithm), asked only where
/// cuBLASLt could run it.
fn decide(
    f: u32,
    table: Backend,
    loaded: impl FnOnce() -> bool,
    plan: impl FnOnce() -> graphcore_core::Result<bool>,
    shape: &LinearShape,
) -> Result<Backend, Error> {
    if f & GC_LINEAR_GRAPHCORE != 0 {
        return Ok(Backend::Graphcore);
    }
    let forced = f & GC_LINEAR_CUBLASLT != 0;
    if !forced && (table == Backend::Graphcore || !loaded()) {
        return Ok(Backend::Graphcore);
    }
    match plan() {
        Ok(true) => Ok(Backend::CublasLt),
        Ok(false) if forced => Err(Error::new(
            ErrorKind::NotSupported,
            format!(
                "cuBLASLt has no algorithm for m = {}, n = {}, k = {} ({})",
                shape.m,
                shape.n,
                shape.k,
                if shape.tf32 { "TF32" } else { "f32" }
            ),
        )),
        Err(e) if forced => Err(e),
        _ => Ok(Backend::Graphcore),
    }
}

/// gc_op_linear's body: checks the flags and the arguments (graphcore's
/// plan of the call: the same checks on both paths), picks the backend
/// and launches.
#[allow(clippy::too_many_arguments)]
pub(crate) fn linear(
    func: &'static str,
    stream: *mut gc_stream,
    y: u64,
    x: u64,
    w: u64,
    b: u64,
    m: u32,
    n: u32,
    k: u32,
    flags: c_int,
) -> gc_status {
    boundary(func, || {
        let f = flags as u32;
        check_flags(f)?;
        let s: Stream = self::stream(stream, "stream")?;
        let ctx = s.context();
        let relu = f & GC_LINEAR_RELU != 0;
        let tf32 = tf32_allowed(ctx, f);
        let plan = if tf32 { ops::linear_tf32 } else { ops::linear };
        let call = plan(
            y,
            x,
            w,
            b,
            m,
            n,
            k,
            relu,
            ctx.sm_count(),
            ctx.has_clusters(),
        )?;
        let shape = LinearShape::of(y, x, w, b, m, n, k, tf32, relu);
        match backend(ctx, f, &shape)? {
            // SAFETY: the C caller promises (gc_op_linear's docs) that every
            // pointer is device memory of the stream's context holding the
            // elements the op reads or writes, alive until the launch has
            // run (or, captured, while the graph runs); the plan checked
            // sizes, alignment and that y overlaps no input.
            Backend::CublasLt => unsafe { vendor::linear(&s, y, x, w, b, &shape) },
            // SAFETY: as above.
            Backend::Graphcore => unsafe { launch_op(&s, Ok(call)) },
        }
    })
}

/// gc_op_mlp's launches, and where its per-layer form reads and writes.
pub(crate) struct MlpPlan {
    /// What graphcore's kernels launch, in order.
    pub(crate) calls: Vec<Call>,
    /// Each layer's (input, output) when `calls` is one linear layer per
    /// layer (`ops::mlp_with_layer_io`), else `None`.
    pub(crate) io: Option<Vec<(u64, u64)>>,
    /// The layers.
    pub(crate) layers: Vec<ops::MlpLayer>,
    /// Rows of x.
    pub(crate) rows: u32,
    /// gc_op_linear flags every layer of the per-layer form takes
    /// (GC_LINEAR_TF32 and the backend flags).
    pub(crate) flags: u32,
}

/// gc_op_mlp's body: in the per-layer form each layer takes gc_op_linear's
/// dispatch with the plan's flags (cuBLASLt where forced, or where the
/// table picks it and it takes the shape; else graphcore's kernel, its TF32
/// one with GC_LINEAR_TF32), the fused form graphcore's kernels; launched in order on the stream, a
/// failed launch stopping the rest.
pub(crate) fn mlp(
    func: &'static str,
    stream: *mut gc_stream,
    plan: impl FnOnce(&Context) -> Result<MlpPlan, Error>,
) -> gc_status {
    boundary(func, || {
        let s: Stream = self::stream(stream, "stream")?;
        let ctx = s.context();
        let mut plan = plan(ctx)?;
        let f = plan.flags;
        let tf32 = tf32_allowed(ctx, f);
        let mut vendor_layers = Vec::new();
        if let Some(io) = &plan.io {
            for (i, (l, &(input, output))) in plan.layers.iter().zip(io).enumerate() {
                let shape = LinearShape::of(
                    output, input, l.w, l.b, plan.rows, l.outputs, l.inputs, tf32, l.relu,
                );
                let on_vendor = backend(ctx, f, &shape)? == Backend::CublasLt;
                if tf32 && !on_vendor {
                    plan.calls[i] = ops::linear_tf32(
                        output,
                        input,
                        l.w,
                        l.b,
                        plan.rows,
                        l.outputs,
                        l.inputs,
                        l.relu,
                        ctx.sm_count(),
                        ctx.has_clusters(),
                    )?;
                }
                vendor_layers.push(on_vendor.then_some((output, input, l.w, l.b, shape)));
            }
        }
        for (i, call) in plan.calls.into_iter().enumerate() {
            match vendor_layers.get(i) {
                // SAFETY: the C caller promises (gc_op_mlp's docs) that every
                // pointer is device memory of the stream's context holding
                // the elements the layers read and write, alive while the
                // launches (or the captured graph) run;
                // ops::mlp_with_layer_io checked the sizes and overlaps and
                // gave this layer's input and output.
                Some(Some((y, x, w, b, shape))) => unsafe {
                    vendor::linear(&s, *y, *x, *w, *b, shape)
                },
                // SAFETY: as above.
                _ => unsafe { launch_op(&s, Ok(call)) },
            }?;
        }
        Ok(())
    })
}

/// gc_op_linear_mse_step's body: graphcore's launches, or where the step
/// takes its GEMM path (past the small-batch sizes) and the dispatch gives
/// its forward shape (rows, outputs, inputs, f32) to cuBLASLt, the forward
/// and the weight update as cuBLASLt matmuls (`dY = x . W^T + b` into the
/// workspace's gradient, the MSE kernel in place as before, `W -= lr *
/// dY^T . x` with beta 1, then graphcore's bias update `b -= lr *
/// colsum(dY)`), in order on the stream.
pub(crate) fn linear_mse_step(
    func: &'static str,
    stream: *mut gc_stream,
    step: ops::LinearMseStep,
    workspace: u64,
    workspace_bytes: u64,
    flags: c_int,
) -> gc_status {
    boundary(func, || {
        let f = flags as u32;
        let (s, tf32, sms, clusters) = step_stream(stream, f)?;
        let ctx = s.context();
        let calls = ops::linear_mse_step(&step, workspace, workspace_bytes, sms, clusters)?;
        let (m, n, k) = (step.rows, step.outputs, step.inputs);
        let mut vendor_path = None;
        if let (Some(grad), 3) = (
            ops::linear_mse_step_grad(&step, workspace, sms, clusters),
            calls.len(),
        ) {
            let fwd = LinearShape::of(grad, step.x, step.w, step.b, m, n, k, tf32, false);
            let upd = LinearShape {
                tf32,
                ..LinearShape::weight_sgd(step.w, grad, step.x, m, n, k)
            };
            if step_vendor(ctx, f, tf32, &[fwd, upd])? {
                let bias = (step.b != 0)
                    .then(|| ops::bias_sgd(step.b, grad, m, n, step.lr, sms))
                    .transpose()?;
                vendor_path = Some((grad, fwd, upd, bias));
            }
        } else {
            small_step(f)?;
        }
        let Some((grad, fwd, upd, bias)) = vendor_path else {
            // SAFETY: the C caller promises (gc_op_linear_mse_step's docs)
            // that every pointer is device memory of the stream's context
            // holding what the step reads and writes, alive while the
            // launches (or the captured graph) run; the plan checked sizes
            // and overlaps.
            return unsafe { launch_calls(&s, calls) };
        };
        let mse = calls.into_iter().nth(1).expect("three calls");
        // SAFETY: as above; grad is the workspace's gradient of m x n
        // floats (ops::linear_mse_step_grad), apart from every input.
        unsafe {
            vendor::linear(&s, grad, step.x, step.w, step.b, &fwd)?;
            launch_op(&s, Ok(mse))?;
            update(&s, (step.w, grad, step.x), step.lr, &upd, bias)?;
        }
        Ok(())
    })
}

/// A step layer's update on cuBLASLt: `W -= lr * dY^T . x` (beta 1, the
/// weight update's plan `shape`), then its bias update `bias` (graphcore's
/// bias_sgd kernel) where it has one.
///
/// # Safety
/// As [`vendor::weight_sgd`] and [`launch_op`]: w, dy, x and the bias call's
/// pointers are device memory of the stream's context holding what they
/// read and write, alive while the launches (or the captured graph) run.
unsafe fn update(
    s: &Stream,
    (w, dy, x): (u64, u64, u64),
    lr: f32,
    shape: &LinearShape,
    bias: Option<Call>,
) -> Result<(), Error> {
    // SAFETY: the caller vouches for the pointers (see above).
    unsafe {
        vendor::weight_sgd(s, w, dy, x, lr, shape)?;
        if let Some(bias) = bias {
            launch_op(s, Ok(bias))?;
        }
    }
    Ok(())
}

/// Whether every plan of `shapes` is cuBLASLt's: the dispatch gives the
/// first (a layer's forward) to cuBLASLt and cuBLASLt plans them all.
fn all_vendor(ctx: &Context, shapes: &[LinearShape]) -> Result<bool, Error> {
    if backend(ctx, 0, &shapes[0])? != Backend::CublasLt {
        return Ok(false);
    }
    Ok(shapes[1..]
        .iter()
        .all(|s| vendor::linear_plan(ctx, s).unwrap_or(false)))
}

/// Every training-step flag (gc_op_linear_mse_step_flags,
/// gc_op_mlp2_mse_step_flags).
const STEP_FLAGS: u32 = GC_LINEAR_TF32 | GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT;

/// What both training steps' bodies start from: flags `f` checked
/// ([`check_step_flags`]), then the stream, whether TF32 is allowed on its
/// device, and the device's SM count and whether it has clusters.
fn step_stream(stream: *mut gc_stream, f: u32) -> Result<(Stream, bool, u32, bool), Error> {
    check_step_flags(f)?;
    let s: Stream = self::stream(stream, "stream")?;
    let ctx = s.context();
    let tf32 = tf32_allowed(ctx, f);
    let (sms, clusters) = (ctx.sm_count(), ctx.has_clusters());
    Ok((s, tf32, sms, clusters))
}

/// Checks a training step's flags: unknown or contradictory ones are
/// invalid; TF32 with graphcore's kernels forced is not supported
/// (graphcore has no TF32 form of the steps).
fn check_step_flags(f: u32) -> Result<(), Error> {
    if f & !STEP_FLAGS != 0 {
        return Err(Error::invalid_argument(format!(
            "unknown flags {f:#x} (GC_LINEAR_TF32, GC_LINEAR_GRAPHCORE and GC_LINEAR_CUBLASLT \
             are the flags)"
        )));
    }
    check_flags(f)?;
    if f & GC_LINEAR_TF32 != 0 && f & GC_LINEAR_GRAPHCORE != 0 {
        return Err(Error::new(
            ErrorKind::NotSupported,
            "GC_LINEAR_TF32 with GC_LINEAR_GRAPHCORE: graphcore has no TF32 form of the \
             training steps (their TF32 GEMMs are cuBLASLt's)",
        ));
    }
    Ok(())
}

/// A step in its small-batch fused form (no GEMM to hand over): forced
/// cuBLASLt is not supported there; TF32 is allowed and runs f32.
fn small_step(f: u32) -> Result<(), Error> {
    if f & GC_LINEAR_CUBLASLT != 0 {
        return Err(Error::new(
            ErrorKind::NotSupported,
            "GC_LINEAR_CUBLASLT: at these sizes the step runs graphcore's fused kernels \
             (no GEMM to give to cuBLASLt)",
        ));
    }
    Ok(())
}

/// Whether a step's layer runs its GEMMs `shapes` (the forward first) on
/// cuBLASLt under flags `f` on `ctx`'s device: see [`step_rule`].
fn step_vendor(ctx: &Context, f: u32, tf32: bool, shapes: &[LinearShape]) -> Result<bool, Error> {
    step_rule(
        f,
        tf32,
        || all_vendor(ctx, shapes),
        |s| vendor::linear_plan(ctx, s),
        shapes,
    )
}

/// [`step_vendor`]'s rule (pure but for its arguments): graphcore's kernels
/// forced: no; TF32 (where the device has it) or cuBLASLt forced: yes,
/// every shape planned by cuBLASLt (`plan`), else `NotSupported` naming the
/// flag (nothing launched); otherwise the dispatch's choice (`dispatch`).
fn step_rule(
    f: u32,
    tf32: bool,
    dispatch: impl FnOnce() -> Result<bool, Error>,
    mut plan: impl FnMut(&LinearShape) -> graphcore_core::Result<bool>,
    shapes: &[LinearShape],
) -> Result<bool, Error> {
    if f & GC_LINEAR_GRAPHCORE != 0 {
        return Ok(false);
    }
    if !tf32 && f & GC_LINEAR_CUBLASLT == 0 {
        return dispatch();
    }
    let flag = if tf32 {
        "GC_LINEAR_TF32 (graphcore has no TF32 form of the step)"
    } else {
        "GC_LINEAR_CUBLASLT"
    };
    for s in shapes {
        match plan(s) {
            Ok(true) => {}
            Ok(false) => {
                return Err(Error::new(
                    ErrorKind::NotSupported,
                    format!(
                        "{flag}: cuBLASLt has no algorithm for the step's {:?} of m = {}, \
                         n = {}, k = {}",
                        s.op, s.m, s.n, s.k
                    ),
                ))
            }
            Err(e) => {
                return Err(Error::new(
                    ErrorKind::NotSupported,
                    format!("{flag}: the step's GEMMs need cuBLASLt: {}", e.message()),
                ))
            }
        }
    }
    Ok(true)
}

/// gc_op_mlp2_mse_step's body: graphcore's launches, or in the per-layer
/// form (`ops::mlp2_mse_step_buffers`) each layer's GEMMs through cuBLASLt
/// where the dispatch gives that layer's forward shape to it (layer 2: its
/// forward, the input gradient dH = dP . W2 and W2's update; layer 1: its
/// forward with ReLU and W1's update), the biases' updates then as
/// graphcore's bias_sgd kernel; the MSE and the ReLU backward as before.
pub(crate) fn mlp2_mse_step(
    func: &'static str,
    stream: *mut gc_stream,
    step: ops::Mlp2MseStep,
    workspace: u64,
    workspace_bytes: u64,
    flags: c_int,
) -> gc_status {
    boundary(func, || {
        let f = flags as u32;
        let (s, tf32, sms, clusters) = step_stream(stream, f)?;
        let ctx = s.context();
        let calls = ops::mlp2_mse_step(&step, workspace, workspace_bytes, sms, clusters)?;
        let buffers =
            ops::mlp2_mse_step_buffers(&step, workspace, sms).filter(|_| calls.len() == 7);
        if buffers.is_none() {
            small_step(f)?;
        }
        let Some([h, dp, dh]) = buffers else {
            // SAFETY: the C caller promises (gc_op_mlp2_mse_step's docs) that
            // every pointer is device memory of the stream's context holding
            // what the step reads and writes, alive while the launches (or
            // the captured graph) run; the plan checked sizes and overlaps.
            return unsafe { launch_calls(&s, calls) };
        };
        let (m, k0, k1, k2) = (step.rows, step.inputs, step.hidden, step.outputs);
        let (x, w1, b1, w2, b2) = (step.x, step.w1, step.b1, step.w2, step.b2);
        let t = |shape: LinearShape| LinearShape { tf32, ..shape };
        let l1 = [
            LinearShape::of(h, x, w1, b1, m, k1, k0, tf32, true),
            t(LinearShape::weight_sgd(w1, dh, x, m, k1, k0)),
        ];
        let l2 = [
            LinearShape::of(dp, h, w2, b2, m, k2, k1, tf32, false),
            t(LinearShape::backward_input(dh, dp, w2, m, k2, k1)),
            t(LinearShape::weight_sgd(w2, dp, h, m, k2, k1)),
        ];
        let (v1, v2) = (
            step_vendor(ctx, f, tf32, &l1)?,
            step_vendor(ctx, f, tf32, &l2)?,
        );
        let bias = |use_vendor: bool, b: u64, dy: u64, n: u32| {
            (use_vendor && b != 0)
                .then(|| ops::bias_sgd(b, dy, m, n, step.lr, sms))
                .transpose()
        };
        let (bias1, bias2) = (bias(v1, b1, dh, k1)?, bias(v2, b2, dp, k2)?);
        let [f1, f2, mse, bwd, relu_bwd, upd2, upd1]: [_; 7] =
            calls.try_into().expect("seven calls");
        // SAFETY: as above; h, dp and dh are the workspace's buffers
        // (ops::mlp2_mse_step_buffers), apart from every input and weight.
        unsafe {
            let launch = |c| launch_op(&s, Ok(c));
            if v1 {
                vendor::linear(&s, h, x, w1, b1, &l1[0])?;
            } else {
                launch(f1)?;
            }
            if v2 {
                vendor::linear(&s, dp, h, w2, b2, &l2[0])?;
            } else {
                launch(f2)?;
            }
            launch(mse)?;
            if v2 {
                vendor::backward_input(&s, dh, dp, w2, &l2[1])?;
            } else {
                launch(bwd)?;
            }
            launch(relu_bwd)?;
            if v2 {
                update(&s, (w2, dp, h), step.lr, &l2[2], bias2)?;
            } else {
                launch(upd2)?;
            }
            if v1 {
                update(&s, (w1, dh, x), step.lr, &l1[1], bias1)?;
            } else {
                launch(upd1)?;
            }
        }
        Ok(())
    })
}

/// The GEMM a direct call of a linear layer's backward op
/// (gc_op_linear_backward_input, gc_op_linear_backward_weight,
/// gc_op_linear_weight_sgd) runs: graphcore's `call`, or cuBLASLt's plan of
/// `shape` where the dispatch table gives the layer's forward shape (m, n,
/// k; f32) to cuBLASLt, it is loaded and it plans `shape`; anything else
/// falls back to graphcore's kernel.
fn direct_backend(ctx: &Context, shape: &LinearShape) -> bool {
    direct_rule(
        ops::choose_backend(shape.m, shape.n, shape.k, false),
        vendor::loaded,
        || vendor::linear_plan(ctx, shape).unwrap_or(false),
    )
}

/// [`direct_backend`]'s rule (pure but for its arguments): the table's
/// choice, whether cuBLASLt loaded (asked only where the table says
/// cuBLASLt), whether it plans the shape (asked only where it loaded).
fn direct_rule(
    table: Backend,
    loaded: impl FnOnce() -> bool,
    plans: impl FnOnce() -> bool,
) -> bool {
    table == Backend::CublasLt && loaded() && plans()
}

/// What a direct backward call runs on cuBLASLt.
pub(crate) enum Backward {
    /// `dX = dY . W`: (dx, dy, w).
    Input(u64, u64, u64),
    /// `dW = dY^T . x`: (dw, dy, x).
    Weight(u64, u64, u64),
    /// `W -= lr * dY^T . x`: (w, dy, x, lr).
    WeightSgd(u64, u64, u64, f32),
}

/// The body of gc_op_linear_backward_input, gc_op_linear_backward_weight
/// and gc_op_linear_weight_sgd: graphcore's plan of the call (its checks
/// on both paths), then the GEMM [`direct_backend`] picks.
#[allow(clippy::too_many_arguments)]
pub(crate) fn backward(
    func: &'static str,
    stream: *mut gc_stream,
    op: Backward,
    (m, n, k): (u32, u32, u32),
    plan: impl FnOnce(&Context) -> Result<Call, Error>,
) -> gc_status {
    boundary(func, || {
        let s: Stream = self::stream(stream, "stream")?;
        let ctx = s.context();
        let call = plan(ctx)?;
        let shape = match op {
            Backward::Input(dx, dy, w) => LinearShape::backward_input(dx, dy, w, m, n, k),
            Backward::Weight(dw, dy, x) | Backward::WeightSgd(dw, dy, x, _) => {
                LinearShape::weight_sgd(dw, dy, x, m, n, k)
            }
        };
        if !direct_backend(ctx, &shape) {
            // SAFETY: the C caller promises (the op's docs) that every
            // pointer is device memory of the stream's context holding what
            // the op reads and writes, alive until the launch has run (or,
            // captured, while the graph runs); the plan checked sizes and
            // overlaps.
            return unsafe { launch_op(&s, Ok(call)) };
        }
        // SAFETY: as above; the plan checked the same pointers and sizes.
        unsafe {
            match op {
                Backward::Input(dx, dy, w) => vendor::backward_input(&s, dx, dy, w, &shape),
                Backward::Weight(dw, dy, x) => vendor::backward_weight(&s, dw, dy, x, &shape),
                Backward::WeightSgd(w, dy, x, lr) => vendor::weight_sgd(&s, w, dy, x, lr, &shape),
            }
        }?;
        Ok(())
    })
}

/// Which GEMM gc_op_linear runs for these sizes and flags on the stream's
/// device: *backend is set to GC_LINEAR_BACKEND_GRAPHCORE or
/// GC_LINEAR_BACKEND_CUBLASLT. Asked as for a call with a bias and
/// 16-byte aligned pointers (pool blocks are); a call with less aligned
/// pointers or no bias may be planned apart, and falls back the same way.
/// The choice: GC_LINEAR_GRAPHCORE or GC_LINEAR_CUBLASLT in flags force
/// one; otherwise the dispatch table compiled into the library (measured
/// by perf/side_by_side/gemm_dispatch.py; until measured, graphcore's
/// kernels below 512 rows and cuBLASLt from 512 rows and for TF32), or the
/// table file the environment variable GRAPHCORE_GEMM_TABLE names (the
/// same format, measured on the machine at hand by that script; read once
/// per process at the first choice; a file that cannot be read or parsed
/// is reported once on stderr and the compiled-in table used), falling
/// back to graphcore's kernels where cuBLASLt is not loaded (see
/// gc_cublaslt_version) or has no algorithm for the shape. Where cuBLASLt
/// is chosen, this also makes and caches its plan for the shape (host work
/// only), so a later capture of the call makes none: call it before
/// capturing to keep cuBLASLt's planning out of the capture.
/// Pointers: backend is host memory.
/// Errors: common, and GC_ERROR_INVALID_ARGUMENT (backend NULL, an unknown
/// or contradictory flag), GC_ERROR_NOT_SUPPORTED (GC_LINEAR_CUBLASLT and
/// cuBLASLt is not loaded or refuses the shape; gc_last_error says which).
/// Any thread may ask, on any stream, concurrently with launches.
#[no_mangle]
pub extern "C" fn gc_op_linear_backend(
    stream: *mut gc_stream,
    m: u32,
    n: u32,
    k: u32,
    flags: c_int,
    backend: *mut c_int,
) -> gc_status {
    boundary(this_export!(), || {
        let f = flags as u32;
        check_flags(f)?;
        if backend.is_null() {
            return Err(Error::invalid_argument("`backend` is NULL"));
        }
        if m == 0 || n == 0 || k == 0 {
            return Err(Error::invalid_argument(format!(
                "m, n and k must be non-zero (m = {m}, n = {n}, k = {k})"
            )));
        }
        let s = self::stream(stream, "stream")?;
        let ctx = s.context();
        let tf32 = tf32_allowed(ctx, f);
        let shape = LinearShape::of(256, 256, 256, 256, m, n, k, tf32, f & GC_LINEAR_RELU != 0);
        let b = match self::backend(ctx, f, &shape)? {
            Backend::Graphcore => GC_LINEAR_BACKEND_GRAPHCORE,
            Backend::CublasLt => GC_LINEAR_BACKEND_CUBLASLT,
        };
        // SAFETY: checked non-NULL; the caller passes a writable int.
        unsafe { backend.write(b) };
        Ok(())
    })
}

/// Loads cuBLASLt if not yet tried, and sets *version to its
/// cublasLtGetVersion() (for example 120804 for 12.8.4). graphcore never
/// links cuBLASLt: on first use (this call, or a gc_op_linear the dispatch
/// sends to it) it opens the library named by the environment variable
/// GRAPHCORE_CUBLASLT (a path; `0` or `off`: never load it), or else the
/// first of libcublasLt.so.13, libcublasLt.so.12, libcublasLt.so the
/// dynamic loader finds (LD_LIBRARY_PATH; for the pip wheel nvidia-cublas,
/// point GRAPHCORE_CUBLASLT at site-packages/nvidia/cublas/lib/
/// libcublasLt.so.N, N the major version). The outcome is kept for the process. Where it
/// does not load, gc_op_linear runs graphcore's own kernels.
/// Pointers: version is host memory, written only on success.
/// Errors: GC_ERROR_INVALID_ARGUMENT (version NULL), GC_ERROR_NOT_SUPPORTED
/// (cuBLASLt is not loaded: gc_last_error says what was tried, or that
/// GRAPHCORE_CUBLASLT turned it off), GC_ERROR_CUDA (cublasLtCreate failed).
/// Any thread may call it, concurrently with anything (the library is
/// opened once, under a lock).
#[no_mangle]
pub extern "C" fn gc_cublaslt_version(version: *mut usize) -> gc_status {
    boundary(this_export!(), || {
        if version.is_null() {
            return Err(Error::invalid_argument("`version` is NULL"));
        }
        vendor::available()?;
        let v = vendor::version().unwrap_or(0);
        // SAFETY: checked non-NULL; the caller passes a writable size_t.
        unsafe { version.write(v) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::gc_last_error;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: gc_last_error returns a NUL-terminated string.
        unsafe { CStr::from_ptr(gc_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn backend_flags_are_checked_before_anything_else() {
        check_flags(0).unwrap();
        check_flags(GC_LINEAR_RELU | GC_LINEAR_TF32 | GC_LINEAR_CUBLASLT).unwrap();
        check_flags(GC_LINEAR_GRAPHCORE).unwrap();
        let e = check_flags(GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("exclude"), "{}", e.message());
        let e = check_flags(16).unwrap_err();
        assert!(
            e.message().contains("unknown flags 0x10"),
            "{}",
            e.message()
        );
    }

    /// The dispatch rule: forced graphcore never asks cuBLASLt; the table's
    /// graphcore choice, or cuBLASLt not loaded, falls back without asking
    /// for a plan; a refused shape (no algorithm) or a failed plan falls
    /// back, except when cuBLASLt is forced: then GC_ERROR_NOT_SUPPORTED
    /// (or the plan's error), so nothing is launched.
    #[test]
    fn the_dispatch_falls_back_unless_cublaslt_is_forced() {
        use graphcore_core::kernels::ops::Backend::{CublasLt, Graphcore};
        let shape = LinearShape::of(256, 256, 256, 0, 1024, 512, 256, false, false);
        let never = || -> graphcore_core::Result<bool> { panic!("planned") };
        let missing = || {
            Err(Error::new(
                ErrorKind::NotSupported,
                "cuBLASLt could not be loaded (/nonexistent)",
            ))
        };
        let d = |f, table, loaded: bool, plan: &dyn Fn() -> graphcore_core::Result<bool>| {
            decide(f, table, || loaded, plan, &shape)
        };
        // Forced graphcore, and the table's graphcore choice: no plan asked.
        assert_eq!(
            d(GC_LINEAR_GRAPHCORE, CublasLt, true, &never).unwrap(),
            Graphcore
        );
        assert_eq!(d(0, Graphcore, true, &never).unwrap(), Graphcore);
        // cuBLASLt not loaded: graphcore, no plan asked.
        assert_eq!(d(0, CublasLt, false, &never).unwrap(), Graphcore);
        // The table's cuBLASLt choice: taken where it plans the shape.
        assert_eq!(d(0, CublasLt, true, &|| Ok(true)).unwrap(), CublasLt);
        // A refused shape, a failed plan: graphcore.
        assert_eq!(d(0, CublasLt, true, &|| Ok(false)).unwrap(), Graphcore);
        assert_eq!(d(0, CublasLt, true, &missing).unwrap(), Graphcore);
        // Forced cuBLASLt: whatever the table says, or an error.
        for table in [Graphcore, CublasLt] {
            assert_eq!(
                d(GC_LINEAR_CUBLASLT, table, true, &|| Ok(true)).unwrap(),
                CublasLt
            );
            let e = d(GC_LINEAR_CUBLASLT, table, true, &|| Ok(false)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotSupported);
            assert!(
                e.message()
                    .contains("no algorithm for m = 1024, n = 512, k = 256"),
                "{}",
                e.message()
            );
            let e = d(GC_LINEAR_CUBLASLT, table, false, &missing).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotSupported);
            assert!(e.message().contains("/nonexistent"), "{}", e.message());
        }
    }

    /// The training steps' flags: unknown and contradictory ones invalid,
    /// TF32 with graphcore forced not supported, all before the stream is
    /// looked at; forced cuBLASLt in the small-batch form not supported.
    #[test]
    fn step_flags_are_checked_before_anything_else() {
        for ok in [
            0,
            GC_LINEAR_TF32,
            GC_LINEAR_GRAPHCORE,
            GC_LINEAR_CUBLASLT,
            GC_LINEAR_TF32 | GC_LINEAR_CUBLASLT,
        ] {
            check_step_flags(ok).unwrap();
        }
        for (bad, kind) in [
            (GC_LINEAR_RELU, ErrorKind::InvalidArgument),
            (0x100, ErrorKind::InvalidArgument),
            (
                GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT,
                ErrorKind::InvalidArgument,
            ),
            (
                GC_LINEAR_TF32 | GC_LINEAR_GRAPHCORE,
                ErrorKind::NotSupported,
            ),
        ] {
            assert_eq!(check_step_flags(bad).unwrap_err().kind(), kind, "{bad:#x}");
        }
        small_step(GC_LINEAR_TF32).unwrap();
        let e = small_step(GC_LINEAR_CUBLASLT).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported);
        assert!(
            e.message().contains("GC_LINEAR_CUBLASLT"),
            "{}",
            e.message()
        );
        // Through the exports: refused with a NULL stream, so before it.
        let st = gc_op_linear_mse_step_flags_for_test(GC_LINEAR_RELU);
        assert_eq!(st, gc_status::GC_ERROR_INVALID_ARGUMENT);
        assert!(last().contains("unknown flags 0x1"), "{}", last());
        let st = gc_op_linear_mse_step_flags_for_test(GC_LINEAR_TF32 | GC_LINEAR_GRAPHCORE);
        assert_eq!(st, gc_status::GC_ERROR_NOT_SUPPORTED);
        assert!(last().contains("GC_LINEAR_TF32"), "{}", last());
    }

    fn gc_op_linear_mse_step_flags_for_test(f: u32) -> gc_status {
        crate::ops::gc_op_linear_mse_step_flags(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null_mut(),
            4,
            4,
            4,
            1.0,
            0.1,
            std::ptr::null_mut(),
            0,
            f as c_int,
        )
    }

    /// A step layer's rule: graphcore forced never plans; flags 0 is the
    /// dispatch's choice; TF32 or forced cuBLASLt plans every GEMM and is
    /// GC_ERROR_NOT_SUPPORTED naming the flag where cuBLASLt is missing or
    /// refuses one (so nothing is launched), never a silent fallback.
    #[test]
    fn a_step_layer_takes_cublaslt_for_tf32_or_says_why_not() {
        let fwd = LinearShape::of(256, 256, 256, 0, 1024, 512, 256, true, false);
        let upd = LinearShape {
            tf32: true,
            ..LinearShape::weight_sgd(256, 256, 256, 1024, 512, 256)
        };
        let shapes = [fwd, upd];
        let never_d = || -> Result<bool, Error> { panic!("dispatched") };
        let never_p = |_: &LinearShape| -> graphcore_core::Result<bool> { panic!("planned") };
        let missing = |_: &LinearShape| -> graphcore_core::Result<bool> {
            Err(Error::new(
                ErrorKind::NotSupported,
                "cuBLASLt could not be loaded (/nonexistent)",
            ))
        };
        // Graphcore forced: no, nothing asked (TF32 never reaches here with it).
        assert!(!step_rule(GC_LINEAR_GRAPHCORE, false, never_d, never_p, &shapes).unwrap());
        // Flags 0, f32: the dispatch decides.
        assert!(step_rule(0, false, || Ok(true), never_p, &shapes).unwrap());
        assert!(!step_rule(0, false, || Ok(false), never_p, &shapes).unwrap());
        for (f, tf32, name) in [
            (GC_LINEAR_TF32, true, "GC_LINEAR_TF32"),
            (GC_LINEAR_CUBLASLT, false, "GC_LINEAR_CUBLASLT"),
            (GC_LINEAR_TF32 | GC_LINEAR_CUBLASLT, true, "GC_LINEAR_TF32"),
        ] {
            assert!(step_rule(f, tf32, never_d, |_| Ok(true), &shapes).unwrap());
            let e = step_rule(f, tf32, never_d, missing, &shapes).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotSupported);
            assert!(e.message().contains(name), "{}", e.message());
            assert!(e.message().contains("/nonexistent"), "{}", e.message());
            // The weight update refused: not supported, naming it.
            let e = step_rule(
                f,
                tf32,
                never_d,
                |s| Ok(s.op != vendor::VendorOp::WeightSgd),
                &shapes,
            )
            .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotSupported);
            assert!(e.message().contains("WeightSgd"), "{}", e.message());
        }
        // TF32 asked on a device without it (tf32 false) and no forcing: the dispatch.
        assert!(!step_rule(GC_LINEAR_TF32, false, || Ok(false), never_p, &shapes).unwrap());
    }

    /// Direct backward calls: cuBLASLt only where the table gives the
    /// forward shape to it, it loaded and it plans the call; loading and
    /// planning asked only when needed; every other case graphcore's kernel.
    #[test]
    fn direct_backward_calls_follow_the_forward_shapes_table_entry() {
        use graphcore_core::kernels::ops::Backend::{CublasLt, Graphcore};
        let never = || -> bool { panic!("asked") };
        assert!(!direct_rule(Graphcore, never, never));
        assert!(!direct_rule(CublasLt, || false, never));
        assert!(!direct_rule(CublasLt, || true, || false));
        assert!(direct_rule(CublasLt, || true, || true));
        // The table entry is the forward's (m, n, k; f32): the default rule
        // gives 512 rows and more to cuBLASLt, fewer to graphcore.
        assert_eq!(ops::choose_backend(8, 256, 256, false), Graphcore);
    }

    /// Bad input is refused before the stream is looked at: nothing runs.
    #[test]
    fn the_backend_query_refuses_bad_input() {
        let mut out: c_int = -7;
        let st = gc_op_linear_backend(std::ptr::null_mut(), 4, 4, 4, 0, std::ptr::null_mut());
        assert_eq!(st, gc_status::GC_ERROR_INVALID_ARGUMENT);
        assert!(last().contains("`backend` is NULL"), "{}", last());
        let st = gc_op_linear_backend(std::ptr::null_mut(), 0, 4, 4, 0, &mut out);
        assert_eq!(st, gc_status::GC_ERROR_INVALID_ARGUMENT);
        let st = gc_op_linear_backend(std::ptr::null_mut(), 4, 4, 4, 12, &mut out);
        assert_eq!(st, gc_status::GC_ERROR_INVALID_ARGUMENT);
        let st = gc_op_linear_backend(std::ptr::null_mut(), 4, 4, 4, 0, &mut out);
        assert_eq!(st, gc_status::GC_ERROR_INVALID_ARGUMENT);
        assert!(last().contains("`stream` is NULL"), "{}", last());
        assert_eq!(out, -7, "written only on success");
        assert_eq!(
            gc_cublaslt_version(std::ptr::null_mut()),
            gc_status::GC_ERROR_INVALID_ARGUMENT
        );
    }

    /// gc_op_linear's new flags: contradictory or unknown ones are refused
    /// before anything is looked at.
    #[test]
    fn gc_op_linear_refuses_contradictory_backend_flags() {
        let st = linear(
            "gc_op_linear",
            std::ptr::null_mut(),
            256,
            512,
            768,
            0,
            4,
            4,
            4,
            (GC_LINEAR_GRAPHCORE | GC_LINEAR_CUBLASLT) as c_int,
        );
        assert_eq!(st, gc_status::GC_ERROR_INVALID_ARGUMENT);
        assert!(last().contains("exclude each other"), "{}", last());
    }
}
