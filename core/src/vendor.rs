//! The vendor GEMM: linear layers (`y = act(x . W^T + b)`, row-major f32)
//! through cuBLASLt, loaded at run time (`driver::cublaslt`), with the
//! bias and ReLU fused as cuBLASLt epilogues; and for the training steps a
//! linear layer's weight update (`W -= lr * dY^T . x`, in place) and input
//! gradient (`dX = dY . W`) ([`VendorOp`]).
//!
//! Plans: the descriptors and the heuristic's algorithm for one shape
//! (device, operation, m, n, k, TF32, epilogue, pointer alignment) are made
//! on the first call of that shape and kept for the process, refusals
//! included (cuBLASLt having no algorithm is remembered, so it is asked
//! once). A plan is host work (descriptors, the heuristic query); each
//! device's cuBLASLt handle is made with its first plan. Both happen, and
//! every `cublasLtMatmul` is enqueued, in relaxed capture mode, so nothing
//! cuBLASLt does besides its launches can break a capture open on the
//! thread (its launches are captured as usual). Planning ahead, outside any
//! capture, is what [`linear_plan`] is for. Only `cublasLtMatmul` is
//! enqueued, with no workspace: nothing is allocated per call, calls on
//! several streams at once share nothing on the device, and a captured call
//! records kernels whose parameters hold the matrices' addresses (rebound
//! by the graph-argument scan like any foreign kernel's).
//!
//! cuBLASLt runs in the calling thread's current context (it launches
//! through the CUDA runtime): each call makes the stream's context current
//! for itself and puts the thread's own back before returning, as the
//! built-in ops' launches leave it.
//!
//! Row-major to cuBLASLt's column-major: `y^T = W . x^T` with A = W read
//! as the k x n column-major matrix transposed, B = x as k x m, D = y as
//! n x m (ld n); the bias runs along D's rows, one per output feature.

use crate::context::Context;
use crate::driver::cublaslt::{self as lt, epilogue, Algo, LtHandle, MatmulDesc, MatrixLayout};
use crate::driver::device::KeepCurrent;
use crate::driver::RelaxedCaptureMode;
use crate::error::{Error, ErrorKind, Result};
use crate::lock::lock;
use crate::stream::{Stream, StreamOp};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a plan computes (row-major, f32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VendorOp {
    /// `y = act(x . W^T + b)`: y `m x n`, x `m x k`, W `n x k`.
    Linear,
    /// The SGD step of a linear layer's weights, `W -= lr * dY^T . x`: W
    /// `n x k` updated in place, dY `m x n`, x `m x k` (`relu` unused); with
    /// `bias`, the bias gradient `db = colsum(dY)` (n floats) written too,
    /// by cuBLASLt's BGRADB epilogue ([`weight_sgd_bgrad`]).
    WeightSgd,
    /// A linear layer's input gradient, `dX = dY . W`: dX `m x k`, dY
    /// `m x n`, W `n x k` (`bias` and `relu` unused).
    BackwardInput,
}

/// A linear layer's shape as a plan is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinearShape {
    /// What is computed.
    pub op: VendorOp,
    /// Rows of x and y.
    pub m: u32,
    /// Rows of W, columns of y, length of b.
    pub n: u32,
    /// Columns of x and W.
    pub k: u32,
    /// Multiply on the TF32 tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    pub tf32: bool,
    /// Add a bias.
    pub bias: bool,
    /// ReLU last.
    pub relu: bool,
    /// The alignment (bytes: 4, 8 or 16) every pointer of the call has.
    pub align: u32,
}

impl LinearShape {
    /// The shape of a call with these pointers: `align` is the largest of
    /// 16, 8, 4 dividing every one of them.
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        y: u64,
        x: u64,
        w: u64,
        b: u64,
        m: u32,
        n: u32,
        k: u32,
        tf32: bool,
        relu: bool,
    ) -> LinearShape {
        let all = y | x | w | b;
        let align = [16u32, 8, 4]
            .into_iter()
            .find(|&a| all % a as u64 == 0)
            .unwrap_or(4);
        LinearShape {
            op: VendorOp::Linear,
            m,
            n,
            k,
            tf32,
            bias: b != 0,
            relu,
            align,
        }
    }

    /// The shape of a [`backward_input`] call with these pointers (f32).
    pub fn backward_input(dx: u64, dy: u64, w: u64, m: u32, n: u32, k: u32) -> LinearShape {
        LinearShape {
            op: VendorOp::BackwardInput,
            bias: false,
            ..LinearShape::of(dx, dy, w, 0, m, n, k, false, false)
        }
    }

    /// The shape of a [`weight_sgd`] call with these pointers (f32).
    pub fn weight_sgd(w: u64, dy: u64, x: u64, m: u32, n: u32, k: u32) -> LinearShape {
        LinearShape {
            op: VendorOp::WeightSgd,
            bias: false,
            ..LinearShape::of(w, dy, x, 0, m, n, k, false, false)
        }
    }

    /// The shape of a [`weight_sgd_bgrad`] call with these pointers (f32).
    #[allow(clippy::too_many_arguments)]
    pub fn weight_sgd_bgrad(
        w: u64,
        dy: u64,
        x: u64,
        db: u64,
        m: u32,
        n: u32,
        k: u32,
    ) -> LinearShape {
        LinearShape {
            op: VendorOp::WeightSgd,
            bias: true,
            ..LinearShape::of(w, dy, x, db, m, n, k, false, false)
        }
    }

    /// The cuBLASLt epilogue.
    fn epilogue(&self) -> u32 {
        if self.op != VendorOp::Linear {
            return if self.bias && self.op == VendorOp::WeightSgd {
                epilogue::BGRADB
            } else {
                epilogue::DEFAULT
            };
        }
        match (self.bias, self.relu) {
            (false, false) => epilogue::DEFAULT,
            (false, true) => epilogue::RELU,
            (true, false) => epilogue::BIAS,
            (true, true) => epilogue::RELU_BIAS,
        }
    }
}

/// One shape's descriptors and algorithm, and its device's handle.
struct Plan {
    handle: LtHandle,
    /// Locked while a call sets its bias pointer and enqueues.
    desc: Mutex<MatmulDesc>,
    a: MatrixLayout,
    b: MatrixLayout,
    c: MatrixLayout,
    algo: Algo,
}

/// Plans by (device ordinal, shape); `None`: cuBLASLt refused the shape.
type Plans = HashMap<(i32, LinearShape), Option<Arc<Plan>>>;

/// The process's plans (with the library and the handles, the only state
/// kept here).
static PLANS: Mutex<Option<Plans>> = Mutex::new(None);

/// One cuBLASLt handle per device ordinal, made on the device's first plan
/// (with its context current) and kept for the process.
static HANDLES: Mutex<Option<HashMap<i32, LtHandle>>> = Mutex::new(None);

/// The handle of `ordinal`'s device, made now if it has none (the caller
/// has the device's context current, in relaxed capture mode while a
/// capture is open).
fn handle(lib: &lt::Lt, ordinal: i32) -> Result<LtHandle> {
    let mut handles = lock(&HANDLES);
    let map = handles.get_or_insert_with(HashMap::new);
    if let Some(h) = map.get(&ordinal) {
        return Ok(*h);
    }
    let h = lib.create_handle()?;
    map.insert(ordinal, h);
    Ok(h)
}

/// Whether cuBLASLt loaded (loading it on first call); the error says why
/// not (`NotSupported`).
pub fn available() -> Result<()> {
    lt::library().map(|_| ())
}

/// Whether cuBLASLt loaded (loading it on first call); cheaper than
/// [`available`] when it did not (no message is made).
pub fn loaded() -> bool {
    lt::library_loaded()
}

/// The loaded cuBLASLt's version (`cublasLtGetVersion`), if it loaded.
pub fn version() -> Option<usize> {
    lt::library().ok().map(|l| l.version())
}

/// Makes `shape`'s plan with `handle`.
fn make(shape: &LinearShape, handle: LtHandle) -> Result<Option<Plan>> {
    let lib = lt::library()?;
    let compute = if shape.tf32 {
        lt::COMPUTE_32F_FAST_TF32
    } else {
        lt::COMPUTE_32F
    };
    let (m, n, k) = (shape.m as u64, shape.n as u64, shape.k as u64);
    let (desc, a, b, c) = match shape.op {
        VendorOp::Linear => (
            lib.matmul_desc(compute, lt::OP_T, lt::OP_N, shape.epilogue())?,
            lib.layout(k, n, k as i64)?,
            lib.layout(k, m, k as i64)?,
            lib.layout(n, m, n as i64)?,
        ),
        // W^T (k x n column-major, W row-major) += -lr * x^T . dY: A = x
        // as k x m, B = dY as n x m transposed, C = D = W.
        VendorOp::WeightSgd => (
            lib.matmul_desc(compute, lt::OP_N, lt::OP_T, shape.epilogue())?,
            lib.layout(k, m, k as i64)?,
            lib.layout(n, m, n as i64)?,
            lib.layout(k, n, k as i64)?,
        ),
        // dX^T (k x m) = W^T . dY^T: A = W as k x n, B = dY as n x m, C =
        // D = dX as k x m.
        VendorOp::BackwardInput => (
            lib.matmul_desc(compute, lt::OP_N, lt::OP_N, epilogue::DEFAULT)?,
            lib.layout(k, n, k as i64)?,
            lib.layout(n, m, n as i64)?,
            lib.layout(k, m, k as i64)?,
        ),
    };
    if shape.bias {
        // The heuristic may look at the epilogue's pointer: any non-null
        // address of the shape's alignment stands in for the calls' own.
        lib.set(&desc, lt::desc_attr::BIAS_POINTER, &(shape.align as u64))?;
    }
    Ok(lib
        .best_algo(handle, &desc, &a, &b, &c, 0, shape.align)?
        .map(|algo| Plan {
            handle,
            desc: Mutex::new(desc),
            a,
            b,
            c,
            algo,
        }))
}

/// The plan of `shape` on `ctx`'s device (made on first use, in relaxed
/// capture mode while a graphcore capture is open in `ctx`).
fn plan(ctx: &Context, shape: &LinearShape) -> Result<Option<Arc<Plan>>> {
    let key = (ctx.ordinal(), *shape);
    if let Some(p) = lock(&PLANS).as_ref().and_then(|m| m.get(&key)) {
        return Ok(p.clone());
    }
    let lib = lt::library()?;
    // cuBLASLt works in the current context (the runtime's device): bound
    // for the call, the thread's own put back after it. A capture may be
    // open on this thread (graphcore's, or the caller's on a stream it
    // wrapped): relaxed mode, so that making the handle (which may set up
    // device resources) and the plan cannot break it.
    let _keep = KeepCurrent::enter();
    ctx.bind()?;
    let _relaxed = RelaxedCaptureMode::enter()?;
    let made = make(shape, handle(lib, ctx.ordinal())?)?.map(Arc::new);
    let mut plans = lock(&PLANS);
    let entry = plans
        .get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert(made);
    Ok(entry.clone())
}

/// Whether cuBLASLt takes `shape` on `ctx`'s device: `Ok(true)` with a
/// plan made (so later calls and captures of the shape make none),
/// `Ok(false)` when cuBLASLt has no algorithm for it; an error
/// (`NotSupported`) when cuBLASLt is not loaded, saying why.
pub fn linear_plan(ctx: &Context, shape: &LinearShape) -> Result<bool> {
    Ok(plan(ctx, shape)?.is_some())
}

/// Enqueues `y = act(x . W^T + b)` through cuBLASLt on `stream`, with
/// `shape` from [`LinearShape::of`] of these pointers. `NotSupported`,
/// with nothing enqueued, when cuBLASLt is not loaded or has no algorithm
/// for the shape.
///
/// # Safety
///
/// `y` (m x n), `x` (m x k), `w` (n x k) and `b` (n, or 0 with
/// `shape.bias` false) are device memory of the stream's context, alive
/// until the work has run (or, captured, while the graph may run); y
/// overlaps none of the others.
pub unsafe fn linear(
    stream: &Stream,
    y: u64,
    x: u64,
    w: u64,
    b: u64,
    shape: &LinearShape,
) -> Result<()> {
    // SAFETY: passed through from this function's contract.
    unsafe { run(stream, (w, x, y), b, (1.0, 0.0), shape) }
}

/// Enqueues `W -= lr * dY^T . x` through cuBLASLt on `stream` (one
/// `cublasLtMatmul`, W read and written in place), with `shape` from
/// [`LinearShape::weight_sgd`] of these pointers. `NotSupported`, with
/// nothing enqueued, as for [`linear`].
///
/// # Safety
///
/// `w` (n x k), `dy` (m x n) and `x` (m x k) are device memory of the
/// stream's context, alive until the work has run (or, captured, while
/// the graph may run); w overlaps neither of the others.
pub unsafe fn weight_sgd(
    stream: &Stream,
    w: u64,
    dy: u64,
    x: u64,
    lr: f32,
    shape: &LinearShape,
) -> Result<()> {
    // SAFETY: passed through from this function's contract.
    unsafe { run(stream, (x, dy, w), 0, (-lr, 1.0), shape) }
}

/// Enqueues `W -= lr * dY^T . x` as [`weight_sgd`] does and, in the same
/// `cublasLtMatmul` (epilogue BGRADB), the bias gradient `db[j] = sum_i
/// dY[i][j]` into `db` (n floats, overwritten), with `shape` from
/// [`LinearShape::weight_sgd_bgrad`] of these pointers. `NotSupported`,
/// with nothing enqueued, as for [`linear`] (cuBLASLt may have no BGRADB
/// algorithm for a shape that [`weight_sgd`] takes).
///
/// # Safety
///
/// As [`weight_sgd`]; `db` (n floats) is device memory of the stream's
/// context overlapping none of the others.
pub unsafe fn weight_sgd_bgrad(
    stream: &Stream,
    w: u64,
    dy: u64,
    x: u64,
    lr: f32,
    db: u64,
    shape: &LinearShape,
) -> Result<()> {
    // SAFETY: passed through from this function's contract.
    unsafe { run(stream, (x, dy, w), db, (-lr, 1.0), shape) }
}

/// Enqueues the weight gradient `dW = dY^T . x` through cuBLASLt on
/// `stream` (one `cublasLtMatmul`, beta 0: dW overwritten, not read), with
/// `shape` from [`LinearShape::weight_sgd`] of (dw, dy, x): the same plan
/// as [`weight_sgd`]'s (alpha and beta are the call's, not the plan's).
/// `NotSupported`, with nothing enqueued, as for [`linear`].
///
/// # Safety
///
/// `dw` (n x k), `dy` (m x n) and `x` (m x k) are device memory of the
/// stream's context, alive until the work has run (or, captured, while
/// the graph may run); dw overlaps neither of the others.
pub unsafe fn backward_weight(
    stream: &Stream,
    dw: u64,
    dy: u64,
    x: u64,
    shape: &LinearShape,
) -> Result<()> {
    // SAFETY: passed through from this function's contract.
    unsafe { run(stream, (x, dy, dw), 0, (1.0, 0.0), shape) }
}

/// Enqueues `dX = dY . W` through cuBLASLt on `stream` (one
/// `cublasLtMatmul`), with `shape` from [`LinearShape::backward_input`] of
/// these pointers. `NotSupported`, with nothing enqueued, as for
/// [`linear`].
///
/// # Safety
///
/// `dx` (m x k), `dy` (m x n) and `w` (n x k) are device memory of the
/// stream's context, alive until the work has run (or, captured, while the
/// graph may run); dx overlaps neither of the others.
pub unsafe fn backward_input(
    stream: &Stream,
    dx: u64,
    dy: u64,
    w: u64,
    shape: &LinearShape,
) -> Result<()> {
    // SAFETY: passed through from this function's contract.
    unsafe { run(stream, (w, dy, dx), 0, (1.0, 0.0), shape) }
}

/// Enqueues `shape`'s plan on `stream`: `D = C = c`, `A = a`, `B = b`.
///
/// # Safety
///
/// As [`linear`] and [`weight_sgd`] say for their pointers.
unsafe fn run(
    stream: &Stream,
    (a, b, c): (u64, u64, u64),
    bias: u64,
    scales: (f32, f32),
    shape: &LinearShape,
) -> Result<()> {
    let ctx = stream.context();
    let plan = plan(ctx, shape)?.ok_or_else(|| {
        Error::new(
            ErrorKind::NotSupported,
            format!(
                "cuBLASLt has no algorithm for {} of m = {}, n = {}, k = {} ({}, \
                 {}-byte aligned pointers)",
                match shape.op {
                    VendorOp::Linear => "a linear layer",
                    VendorOp::WeightSgd => "a weight update",
                    VendorOp::BackwardInput => "an input gradient",
                },
                shape.m,
                shape.n,
                shape.k,
                if shape.tf32 { "TF32" } else { "f32" },
                shape.align
            ),
        )
    })?;
    let lib = lt::library()?;
    // As in `plan`: the stream's context current for cuBLASLt (its kernels
    // go through the runtime), the thread's own put back after.
    let _keep = KeepCurrent::enter();
    ctx.bind()?;
    let desc = lock(&plan.desc);
    if shape.bias {
        lib.set(&desc, lt::desc_attr::BIAS_POINTER, &bias)?;
    }
    let _relaxed = RelaxedCaptureMode::enter()?;
    stream.launch_noted(StreamOp::Launch, || {
        // SAFETY: the pointers are valid by this function's contract; the
        // plan's algorithm was chosen for these descriptors with no
        // workspace; the descriptor is locked.
        unsafe {
            lib.matmul(
                plan.handle,
                &desc,
                (a, &plan.a),
                (b, &plan.b),
                (c, &plan.c),
                scales,
                &plan.algo,
                stream.raw(),
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alignment_is_the_largest_every_pointer_has() {
        let s = |y, x, w, b| LinearShape::of(y, x, w, b, 1, 2, 3, false, false);
        assert_eq!(s(256, 512, 1024, 0).align, 16);
        assert_eq!(s(256, 512, 1024, 2048 + 8).align, 8);
        assert_eq!(s(256 + 4, 512, 1024, 0).align, 4);
        assert!(!s(256, 512, 1024, 0).bias);
        assert!(s(256, 512, 1024, 64).bias);
    }

    #[test]
    fn epilogues_follow_bias_and_relu() {
        let e = |b, relu| LinearShape::of(16, 16, 16, b, 1, 1, 1, false, relu).epilogue();
        assert_eq!(e(0, false), epilogue::DEFAULT);
        assert_eq!(e(0, true), epilogue::RELU);
        assert_eq!(e(16, false), epilogue::BIAS);
        assert_eq!(e(16, true), epilogue::RELU_BIAS);
        // The weight update: BGRADB with a bias-gradient buffer, else none;
        // the other plan kinds never take an epilogue.
        assert_eq!(
            LinearShape::weight_sgd_bgrad(16, 16, 16, 16, 1, 1, 1).epilogue(),
            epilogue::BGRADB
        );
        assert_eq!(
            LinearShape::weight_sgd(16, 16, 16, 1, 1, 1).epilogue(),
            epilogue::DEFAULT
        );
        assert_eq!(
            LinearShape::backward_input(16, 16, 16, 1, 1, 1).epilogue(),
            epilogue::DEFAULT
        );
        assert_eq!(
            LinearShape::weight_sgd_bgrad(16, 16, 16, 16 + 4, 1, 1, 1).align,
            4
        );
    }
}
