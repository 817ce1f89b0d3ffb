//! The vendor GEMM (cuBLASLt, loaded at run time) behind gc_op_linear:
//! its results against graphcore's kernel and float64 for several shapes,
//! every epilogue, f32 and TF32, aligned and unaligned pointers; a capture
//! of it (its plan made inside the capture) replayed with its arguments
//! rebound. These tests need cuBLASLt: scripts/gpu-check's stage sets
//! GRAPHCORE_CUBLASLT from the pip wheel nvidia-cublas where the loader's
//! path has none. (The fallback without cuBLASLt, and the dispatch through
//! the C ABI, are python/tests/test_gpu.py's.)

use super::*;
use graphcore_core::kernels::ops;
use graphcore_core::vendor::{self, LinearShape};
use graphcore_core::{declare_capture_arg, launch_op, Binding, CaptureMode, Exec};

/// cuBLASLt must load on the GPU machine: these tests say how if not.
fn need_cublaslt() {
    if let Err(e) = vendor::available() {
        panic!(
            "cuBLASLt is not loaded ({}): set GRAPHCORE_CUBLASLT to libcublasLt.so.<major> \
             (scripts/gpu-check's stage does, from the pip wheel nvidia-cublas)",
            e.message()
        );
    }
}

/// y = act(x . W^T + b) in float64, and per output the sum of |products|
/// and |b| (the rounding scale).
fn reference(
    x: &[f32],
    w: &[f32],
    b: Option<&[f32]>,
    (m, n, k): (usize, usize, usize),
    relu: bool,
) -> (Vec<f64>, Vec<f64>) {
    let mut y = vec![0f64; m * n];
    let mut scale = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut a) = (0f64, 0f64);
            for l in 0..k {
                let p = x[i * k + l] as f64 * w[j * k + l] as f64;
                s += p;
                a += p.abs();
            }
            if let Some(b) = b {
                s += b[j] as f64;
                a += (b[j] as f64).abs();
            }
            y[i * n + j] = if relu { s.max(0.0) } else { s };
            scale[i * n + j] = a.max(1e-30);
        }
    }
    (y, scale)
}

/// The largest |got - want| / scale.
fn err(got: &[f32], want: &[f64], scale: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .zip(scale)
        .map(|((g, w), s)| (*g as f64 - w).abs() / s)
        .fold(0.0, f64::max)
}

struct Case {
    x: Vec<f32>,
    w: Vec<f32>,
    b: Vec<f32>,
}

impl Case {
    fn new(seed: u64, (m, n, k): (usize, usize, usize)) -> Case {
        Case {
            x: random(seed ^ 1, m * k),
            w: random(seed ^ 2, n * k),
            b: random(seed ^ 3, n),
        }
    }
}

/// `values` on the device in a fresh pool block, shifted 4 bytes when
/// `shift` (4-byte aligned only).
fn put(s: &Stream, p: &Pool, values: &[f32], shift: bool) -> u64 {
    let a = p.alloc((values.len() as u64 + 4) * 4).unwrap() + if shift { 4 } else { 0 };
    upload(s, a, values);
    a
}

/// `n` floats set to NaN.
fn poisoned(s: &Stream, p: &Pool, n: usize, shift: bool) -> u64 {
    let a = p.alloc((n as u64 + 4) * 4).unwrap() + if shift { 4 } else { 0 };
    // SAFETY: a live allocation of at least n floats past `a`.
    unsafe { graphcore_core::set_async(s, a, 0xff, n * 4) }.unwrap();
    a
}

/// Bindings of a replay: argument `i` to `ptrs[i]`.
fn bind(ptrs: &[u64]) -> Vec<Binding> {
    ptrs.iter()
        .enumerate()
        .map(|(index, &ptr)| Binding {
            index,
            ptr,
            bytes: 0,
        })
        .collect()
}

/// A capture on `s` of what `body` launches, each `(ptr, floats)` of
/// `args` declared an argument in turn, instantiated.
fn captured(s: &Stream, args: &[(u64, usize)], body: impl FnOnce()) -> Exec {
    graphcore_core::begin_capture(s, None, CaptureMode::ThreadLocal).unwrap();
    for &(ptr, len) in args {
        declare_capture_arg(s, ptr, len * 4, false).unwrap();
    }
    body();
    let g = graphcore_core::end_capture(s).unwrap();
    Exec::new(&g, 0).unwrap()
}

/// The input gradient `dX = dY . W` (m x k) of dY (m x n) and W (n x k)
/// in float64, and per element the sum of |terms|.
fn input_grad_ref(dy: &[f32], w: &[f32], (m, n, k): (usize, usize, usize)) -> (Vec<f64>, Vec<f64>) {
    let (mut want, mut scale) = (vec![0f64; m * k], vec![0f64; m * k]);
    for r in 0..m {
        for j in 0..n {
            let d = dy[r * n + j] as f64;
            for col in 0..k {
                let t = d * w[j * k + col] as f64;
                want[r * k + col] += t;
                scale[r * k + col] += t.abs();
            }
        }
    }
    (want, scale)
}

/// The weight gradient `dY^T . x` (n x k) of dY (m x n) and x (m x k) in
/// float64, and per element the sum of |terms|.
fn weight_grad_ref(
    dy: &[f32],
    x: &[f32],
    (m, n, k): (usize, usize, usize),
) -> (Vec<f64>, Vec<f64>) {
    let (mut want, mut scale) = (vec![0f64; n * k], vec![0f64; n * k]);
    for r in 0..n {
        for col in 0..k {
            for row in 0..m {
                let t = dy[row * n + r] as f64 * x[row * k + col] as f64;
                want[r * k + col] += t;
                scale[r * k + col] += t.abs();
            }
        }
    }
    (want, scale)
}

/// The weight update `W - lr * dY^T . x` in float64 and its rounding scale
/// (|W| + lr * the sum of |terms|).
fn sgd_ref(
    w: &[f32],
    dy: &[f32],
    x: &[f32],
    lr: f32,
    mnk: (usize, usize, usize),
) -> (Vec<f64>, Vec<f64>) {
    let (g, a) = weight_grad_ref(dy, x, mnk);
    w.iter()
        .zip(g.iter().zip(&a))
        .map(|(&w0, (g, a))| {
            let w0 = w0 as f64;
            (w0 - lr as f64 * g, (w0.abs() + lr as f64 * a).max(1e-30))
        })
        .unzip()
}

/// For each shape, epilogue, precision and alignment: cuBLASLt within the
/// f32 (1e-5) or TF32 (2e-3) bound of float64, as graphcore's kernel is.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_linear_matches_graphcores_kernel_and_float64() {
    need_cublaslt();
    let (c, s, p) = setup();
    let seed = seed();
    let tf32_ok = c.compute_capability().0 >= 8;
    let mut checked = 0;
    for (i, &(m, n, k)) in [
        (1usize, 64usize, 64usize),
        (37, 100, 52),
        (256, 384, 130),
        (512, 1024, 1024),
        (600, 300, 257),
        (1024, 512, 2048),
    ]
    .iter()
    .enumerate()
    {
        let case = Case::new(seed ^ (i as u64) << 8, (m, n, k));
        for (bias, relu, tf32, shift) in [
            (true, false, false, false),
            (true, true, false, false),
            (false, false, false, false),
            (false, true, false, false),
            (true, true, true, false),
            (true, false, false, true),
            (false, true, true, true),
        ] {
            let tf32 = tf32 && tf32_ok;
            let what = format!(
                "m={m} n={n} k={k} bias={bias} relu={relu} tf32={tf32} shift={shift} seed {seed}"
            );
            let x = put(&s, &p, &case.x, shift);
            let w = put(&s, &p, &case.w, shift);
            let b = if bias { put(&s, &p, &case.b, shift) } else { 0 };
            let y_lt = poisoned(&s, &p, m * n, shift);
            let y_gc = poisoned(&s, &p, m * n, shift);
            let (mu, nu, ku) = (m as u32, n as u32, k as u32);
            let shape = LinearShape::of(y_lt, x, w, b, mu, nu, ku, tf32, relu);
            assert!(
                vendor::linear_plan(&c, &shape).unwrap(),
                "cuBLASLt refused {what}"
            );
            // SAFETY: every buffer is a live pool allocation of this test
            // holding the elements the layer reads and writes.
            unsafe { vendor::linear(&s, y_lt, x, w, b, &shape) }.unwrap();
            let plan = if tf32 { ops::linear_tf32 } else { ops::linear };
            let call = plan(
                y_gc,
                x,
                w,
                b,
                mu,
                nu,
                ku,
                relu,
                c.sm_count(),
                c.has_clusters(),
            );
            // SAFETY: as above.
            unsafe { launch_op(&s, call) }.unwrap();
            let got_lt = download(&s, y_lt, m * n);
            let got_gc = download(&s, y_gc, m * n);
            let (want, scale) = reference(
                &case.x,
                &case.w,
                bias.then_some(&case.b[..]),
                (m, n, k),
                relu,
            );
            let bound = if tf32 { 2e-3 } else { 1e-5 };
            let (e_lt, e_gc) = (err(&got_lt, &want, &scale), err(&got_gc, &want, &scale));
            assert!(
                e_lt <= bound,
                "cuBLASLt off by {e_lt:e} (bound {bound:e}): {what}"
            );
            assert!(
                e_gc <= bound,
                "graphcore off by {e_gc:e} (bound {bound:e}): {what}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 42);
}

/// A cuBLASLt linear layer captured (its plan made inside the capture, a
/// shape not seen before) with x, W, b and y declared arguments: the
/// capture is not broken, every argument has a use in cuBLASLt's kernels,
/// and replays bound to other buffers compute on those (float64 bound),
/// leaving the captured buffers alone; binding back gives the first
/// result again, bitwise.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_linear_captures_and_replays_with_rebound_arguments() {
    need_cublaslt();
    let (c, s, p) = setup();
    let seed = seed();
    for (tf32, relu, (m, n, k)) in [
        (false, true, (768usize, 640usize, 320usize)),
        (true, false, (520, 1032, 264)),
    ] {
        let tf32 = tf32 && c.compute_capability().0 >= 8;
        let (mu, nu, ku) = (m as u32, n as u32, k as u32);
        let a = Case::new(seed ^ 0xa, (m, n, k));
        let bset = Case::new(seed ^ 0xb, (m, n, k));
        let bufs = |case: &Case| {
            (
                put(&s, &p, &case.x, false),
                put(&s, &p, &case.w, false),
                put(&s, &p, &case.b, false),
                poisoned(&s, &p, m * n, false),
            )
        };
        let (xa, wa, ba, ya) = bufs(&a);
        let (xb, wb, bb, yb) = bufs(&bset);
        let shape = LinearShape::of(ya, xa, wa, ba, mu, nu, ku, tf32, relu);
        graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
        for (ptr, len) in [(xa, m * k), (wa, n * k), (ba, n), (ya, m * n)] {
            declare_capture_arg(&s, ptr, len * 4, false).unwrap();
        }
        // SAFETY: live pool allocations of this test, kept while the graph runs.
        unsafe { vendor::linear(&s, ya, xa, wa, ba, &shape) }.unwrap();
        let g = graphcore_core::end_capture(&s).unwrap();
        let e = Exec::new(&g, 0).unwrap();
        for i in 0..4 {
            assert!(
                e.arg_uses(i).unwrap() > 0,
                "argument {i} has no use in cuBLASLt's kernels (tf32={tf32}): the scan did \
                 not find it"
            );
        }
        let what = format!("m={m} n={n} k={k} tf32={tf32} relu={relu} seed {seed}");
        let bound = if tf32 { 2e-3 } else { 1e-5 };
        e.launch(&s).unwrap();
        let first = download(&s, ya, m * n);
        let (want_a, scale_a) = reference(&a.x, &a.w, Some(&a.b), (m, n, k), relu);
        assert!(err(&first, &want_a, &scale_a) <= bound, "captured: {what}");
        let to = |x, w, b, y| bind(&[x, w, b, y]);
        // SAFETY: ya is a live allocation of m * n floats.
        unsafe { graphcore_core::set_async(&s, ya, 0xff, m * n * 4) }.unwrap();
        e.launch_with(&s, &to(xb, wb, bb, yb)).unwrap();
        let got = download(&s, yb, m * n);
        let (want_b, scale_b) = reference(&bset.x, &bset.w, Some(&bset.b), (m, n, k), relu);
        let e_b = err(&got, &want_b, &scale_b);
        assert!(e_b <= bound, "rebound replay off by {e_b:e}: {what}");
        assert!(
            download(&s, ya, m * n).iter().all(|v| v.is_nan()),
            "the rebound replay wrote the captured y: {what}"
        );
        e.launch_with(&s, &to(xa, wa, ba, ya)).unwrap();
        let again = download(&s, ya, m * n);
        assert!(
            again
                .iter()
                .zip(&first)
                .all(|(p, q)| p.to_bits() == q.to_bits()),
            "binding back differs from the first replay: {what}"
        );
    }
}

/// Plans are kept: asking twice gives the same answer without a second
/// heuristic call's cost mattering, and a shape's plan differs by
/// alignment (a 4-byte aligned call is planned apart from a 16-byte one).
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_plans_are_per_shape_and_alignment() {
    need_cublaslt();
    let c = ctx();
    let a16 = LinearShape::of(256, 512, 768, 1024, 512, 512, 512, false, false);
    let a4 = LinearShape::of(256 + 4, 512, 768, 1024, 512, 512, 512, false, false);
    assert_eq!((a16.align, a4.align), (16, 4));
    assert!(vendor::linear_plan(&c, &a16).unwrap());
    assert!(vendor::linear_plan(&c, &a16).unwrap());
    assert!(vendor::linear_plan(&c, &a4).unwrap());
    assert!(vendor::version().unwrap() >= 11000);
}

/// Run to run, the cuBLASLt path gives the same bits (graphcore's kernels
/// are deterministic, and so must be what the dispatch puts in their
/// place), eagerly and replayed from a capture, including shapes whose
/// algorithms split K (few rows, long reductions).
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_linear_is_deterministic_run_to_run() {
    need_cublaslt();
    let (c, s, p) = setup();
    let seed = seed();
    for (tf32, (m, n, k)) in [
        (false, (64usize, 256usize, 8192usize)),
        (true, (64, 256, 8192)),
        (false, (1024, 1024, 1024)),
        (true, (2048, 512, 4096)),
    ] {
        let tf32 = tf32 && c.compute_capability().0 >= 8;
        let case = Case::new(seed ^ k as u64, (m, n, k));
        let (x, w, b) = (
            put(&s, &p, &case.x, false),
            put(&s, &p, &case.w, false),
            put(&s, &p, &case.b, false),
        );
        let y = poisoned(&s, &p, m * n, false);
        let (mu, nu, ku) = (m as u32, n as u32, k as u32);
        let shape = LinearShape::of(y, x, w, b, mu, nu, ku, tf32, true);
        let run = || {
            // SAFETY: live pool allocations of this test.
            unsafe { vendor::linear(&s, y, x, w, b, &shape) }.unwrap();
            download(&s, y, m * n)
        };
        let first = run();
        let what = format!("m={m} n={n} k={k} tf32={tf32} seed {seed}");
        for _ in 0..3 {
            assert!(
                run()
                    .iter()
                    .zip(&first)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "cuBLASLt gave other bits on a second run: {what}"
            );
        }
        graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
        // SAFETY: as above; kept while the graph runs.
        unsafe { vendor::linear(&s, y, x, w, b, &shape) }.unwrap();
        let g = graphcore_core::end_capture(&s).unwrap();
        let e = Exec::new(&g, 0).unwrap();
        for _ in 0..3 {
            // SAFETY: y is a live allocation of m * n floats.
            unsafe { graphcore_core::set_async(&s, y, 0xff, m * n * 4) }.unwrap();
            e.launch(&s).unwrap();
            let got = download(&s, y, m * n);
            assert!(
                got.iter()
                    .zip(&first)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "a replay gave other bits than the eager call: {what}"
            );
        }
    }
}

/// The training step's weight update through cuBLASLt, `W -= lr * dY^T .
/// x` in place (beta 1), against float64 (the f32 bound on the update's
/// sum of |terms|), for shapes of the step's GEMM path, and replayed from
/// a capture (each replay applies the update once more).
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_weight_sgd_matches_float64_and_replays() {
    need_cublaslt();
    let (c, s, p) = setup();
    let seed = seed();
    let lr = 0.05f32;
    for (i, &(m, n, k)) in [
        (512usize, 256usize, 384usize),
        (1024, 1024, 64),
        (300, 130, 1000),
    ]
    .iter()
    .enumerate()
    {
        let w0 = random(seed ^ 0x51 ^ i as u64, n * k);
        let dy = random(seed ^ 0x52 ^ i as u64, m * n);
        let x = random(seed ^ 0x53 ^ i as u64, m * k);
        let (wd, dyd, xd) = (
            put(&s, &p, &w0, false),
            put(&s, &p, &dy, false),
            put(&s, &p, &x, false),
        );
        let (mu, nu, ku) = (m as u32, n as u32, k as u32);
        let shape = LinearShape::weight_sgd(wd, dyd, xd, mu, nu, ku);
        assert!(
            vendor::linear_plan(&c, &shape).unwrap(),
            "refused m={m} n={n} k={k}"
        );
        // The float64 update and its rounding scale.
        let step = |w: &[f64]| -> (Vec<f64>, Vec<f64>) {
            let mut out = w.to_vec();
            let mut scale = vec![0f64; n * k];
            for r in 0..n {
                for col in 0..k {
                    let (mut g, mut a) = (0f64, 0f64);
                    for row in 0..m {
                        let t = dy[row * n + r] as f64 * x[row * k + col] as f64;
                        g += t;
                        a += t.abs();
                    }
                    out[r * k + col] -= lr as f64 * g;
                    scale[r * k + col] = (w[r * k + col].abs() + lr as f64 * a).max(1e-30);
                }
            }
            (out, scale)
        };
        let what = format!("m={m} n={n} k={k} seed {seed}");
        // SAFETY: live pool allocations of this test.
        unsafe { vendor::weight_sgd(&s, wd, dyd, xd, lr, &shape) }.unwrap();
        let w64: Vec<f64> = w0.iter().map(|&v| v as f64).collect();
        let (want1, scale1) = step(&w64);
        let got1 = download(&s, wd, n * k);
        let e1 = err(&got1, &want1, &scale1);
        assert!(e1 <= 1e-5, "eager update off by {e1:e}: {what}");
        graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
        // SAFETY: as above; kept while the graph runs.
        unsafe { vendor::weight_sgd(&s, wd, dyd, xd, lr, &shape) }.unwrap();
        let g = graphcore_core::end_capture(&s).unwrap();
        let e = Exec::new(&g, 0).unwrap();
        e.launch(&s).unwrap();
        let from1: Vec<f64> = got1.iter().map(|&v| v as f64).collect();
        let (want2, scale2) = step(&from1);
        let e2 = err(&download(&s, wd, n * k), &want2, &scale2);
        assert!(e2 <= 1e-5, "replayed update off by {e2:e}: {what}");
    }
}

/// The input gradient through cuBLASLt, `dX = dY . W`, against float64
/// (the two-layer step's dH), eager and replayed from a capture.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_backward_input_matches_float64() {
    need_cublaslt();
    let (c, s, p) = setup();
    let seed = seed();
    for (i, &(m, n, k)) in [
        (1024usize, 512usize, 1024usize),
        (640, 96, 200),
        (512, 1000, 36),
    ]
    .iter()
    .enumerate()
    {
        let dy = random(seed ^ 0x61 ^ i as u64, m * n);
        let w = random(seed ^ 0x62 ^ i as u64, n * k);
        let (dyd, wd) = (put(&s, &p, &dy, false), put(&s, &p, &w, false));
        let dx = poisoned(&s, &p, m * k, false);
        let (mu, nu, ku) = (m as u32, n as u32, k as u32);
        let shape = LinearShape::backward_input(dx, dyd, wd, mu, nu, ku);
        assert!(
            vendor::linear_plan(&c, &shape).unwrap(),
            "refused m={m} n={n} k={k}"
        );
        let (want, scale) = input_grad_ref(&dy, &w, (m, n, k));
        let what = format!("m={m} n={n} k={k} seed {seed}");
        // SAFETY: live pool allocations of this test.
        unsafe { vendor::backward_input(&s, dx, dyd, wd, &shape) }.unwrap();
        let e1 = err(&download(&s, dx, m * k), &want, &scale);
        assert!(e1 <= 1e-5, "eager dX off by {e1:e}: {what}");
        // SAFETY: dx is a live allocation of m * k floats.
        unsafe { graphcore_core::set_async(&s, dx, 0xff, m * k * 4) }.unwrap();
        graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
        // SAFETY: as above; kept while the graph runs.
        unsafe { vendor::backward_input(&s, dx, dyd, wd, &shape) }.unwrap();
        let g = graphcore_core::end_capture(&s).unwrap();
        Exec::new(&g, 0).unwrap().launch(&s).unwrap();
        let e2 = err(&download(&s, dx, m * k), &want, &scale);
        assert!(e2 <= 1e-5, "replayed dX off by {e2:e}: {what}");
    }
}

/// The TF32 forms the MLP's and the steps' TF32 paths hand to cuBLASLt
/// (`CUBLAS_COMPUTE_32F_FAST_TF32`): the input gradient `dX = dY . W` and
/// the weight update `W -= lr * dY^T . x`, eager against float64 within the
/// TF32 bound (2e-3 of the sum of |terms|), then captured with every
/// pointer a declared argument and replayed bound to a second set of
/// buffers: the replay computes on those (float64 bound) and leaves the
/// captured ones alone.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_tf32_backward_input_and_weight_sgd_match_float64_and_rebind() {
    need_cublaslt();
    let (c, s, p) = setup();
    if c.compute_capability().0 < 8 {
        eprintln!("TF32 needs compute capability 8.0: nothing to check");
        return;
    }
    let seed = seed();
    let lr = 0.05f32;
    let (m, n, k) = (640usize, 264usize, 136usize);
    let (mu, nu, ku) = (m as u32, n as u32, k as u32);
    let bound = 2e-3;
    // Two sets of inputs: dY (m x n), W (n x k), x (m x k).
    let sets: Vec<_> = (0..2u64)
        .map(|j| {
            (
                random(seed ^ 0x71 ^ j << 8, m * n),
                random(seed ^ 0x72 ^ j << 8, n * k),
                random(seed ^ 0x73 ^ j << 8, m * k),
            )
        })
        .collect();
    // dX = dY . W and its scale, in float64.
    let dx_ref = |dy: &[f32], w: &[f32]| input_grad_ref(dy, w, (m, n, k));
    let bufs: Vec<_> = sets
        .iter()
        .map(|(dy, w, x)| {
            (
                put(&s, &p, dy, false),
                put(&s, &p, w, false),
                put(&s, &p, x, false),
                poisoned(&s, &p, m * k, false),
            )
        })
        .collect();
    let (dya, wa, xa, dxa) = bufs[0];
    let (dyb, wb, xb, dxb) = bufs[1];
    let bwd = LinearShape {
        tf32: true,
        ..LinearShape::backward_input(dxa, dya, wa, mu, nu, ku)
    };
    let upd = LinearShape {
        tf32: true,
        ..LinearShape::weight_sgd(wa, dya, xa, mu, nu, ku)
    };
    for shape in [&bwd, &upd] {
        assert!(vendor::linear_plan(&c, shape).unwrap(), "refused {shape:?}");
    }
    let what = format!("m={m} n={n} k={k} seed {seed}");
    // Eager: dX, then the update of W (set a).
    // SAFETY: live pool allocations of this test.
    unsafe { vendor::backward_input(&s, dxa, dya, wa, &bwd) }.unwrap();
    let (want, scale) = dx_ref(&sets[0].0, &sets[0].1);
    let e = err(&download(&s, dxa, m * k), &want, &scale);
    assert!(e <= bound, "eager TF32 dX off by {e:e}: {what}");
    // SAFETY: as above.
    unsafe { vendor::weight_sgd(&s, wa, dya, xa, lr, &upd) }.unwrap();
    let (want, scale) = sgd_ref(&sets[0].1, &sets[0].0, &sets[0].2, lr, (m, n, k));
    let e = err(&download(&s, wa, n * k), &want, &scale);
    assert!(e <= bound, "eager TF32 update off by {e:e}: {what}");
    // Captured with set a's pointers declared, replayed bound to set b's.
    let wa_now = download(&s, wa, n * k);
    let args = [(dya, m * n), (wa, n * k), (xa, m * k), (dxa, m * k)];
    let ex = captured(&s, &args, || {
        // SAFETY: as above; kept while the graph runs.
        unsafe {
            vendor::backward_input(&s, dxa, dya, wa, &bwd).unwrap();
            vendor::weight_sgd(&s, wa, dya, xa, lr, &upd).unwrap();
        }
    });
    // SAFETY: dxa is a live allocation of m * k floats.
    unsafe { graphcore_core::set_async(&s, dxa, 0xff, m * k * 4) }.unwrap();
    ex.launch_with(&s, &bind(&[dyb, wb, xb, dxb])).unwrap();
    let (want, scale) = dx_ref(&sets[1].0, &sets[1].1);
    let e = err(&download(&s, dxb, m * k), &want, &scale);
    assert!(e <= bound, "rebound TF32 dX off by {e:e}: {what}");
    let (want, scale) = sgd_ref(&sets[1].1, &sets[1].0, &sets[1].2, lr, (m, n, k));
    let e = err(&download(&s, wb, n * k), &want, &scale);
    assert!(e <= bound, "rebound TF32 update off by {e:e}: {what}");
    assert!(
        download(&s, dxa, m * k).iter().all(|v| v.is_nan()),
        "the rebound replay wrote the captured dX: {what}"
    );
    assert!(
        download(&s, wa, n * k)
            .iter()
            .zip(&wa_now)
            .all(|(p, q)| p.to_bits() == q.to_bits()),
        "the rebound replay updated the captured W: {what}"
    );
}

/// The weight gradient through cuBLASLt (what a direct
/// gc_op_linear_backward_weight runs where the dispatch picks cuBLASLt),
/// `dW = dY^T . x` with beta 0 on the weight update's plan, against
/// float64 (f32 bound) over a NaN-filled dW (not read), eager and then
/// captured with its pointers declared arguments and replayed bound to a
/// second set: that set's dW is computed, the captured one left alone.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_backward_weight_matches_float64_and_rebinds() {
    need_cublaslt();
    let (c, s, p) = setup();
    let seed = seed();
    let (m, n, k) = (768usize, 200usize, 136usize);
    let (mu, nu, ku) = (m as u32, n as u32, k as u32);
    let sets: Vec<_> = (0..2u64)
        .map(|j| {
            (
                random(seed ^ 0x81 ^ j << 8, m * n),
                random(seed ^ 0x82 ^ j << 8, m * k),
            )
        })
        .collect();
    let reference = |dy: &[f32], x: &[f32]| weight_grad_ref(dy, x, (m, n, k));
    let bufs: Vec<_> = sets
        .iter()
        .map(|(dy, x)| {
            (
                put(&s, &p, dy, false),
                put(&s, &p, x, false),
                poisoned(&s, &p, n * k, false),
            )
        })
        .collect();
    let (dya, xa, dwa) = bufs[0];
    let (dyb, xb, dwb) = bufs[1];
    let shape = LinearShape::weight_sgd(dwa, dya, xa, mu, nu, ku);
    assert!(
        vendor::linear_plan(&c, &shape).unwrap(),
        "refused {shape:?}"
    );
    let what = format!("m={m} n={n} k={k} seed {seed}");
    // SAFETY: live pool allocations of this test.
    unsafe { vendor::backward_weight(&s, dwa, dya, xa, &shape) }.unwrap();
    let (want, scale) = reference(&sets[0].0, &sets[0].1);
    let e = err(&download(&s, dwa, n * k), &want, &scale);
    assert!(e <= 1e-5, "eager dW off by {e:e}: {what}");
    // SAFETY: dwa is a live allocation of n * k floats.
    unsafe { graphcore_core::set_async(&s, dwa, 0xff, n * k * 4) }.unwrap();
    let ex = captured(&s, &[(dya, m * n), (xa, m * k), (dwa, n * k)], || {
        // SAFETY: as above; kept while the graph runs.
        unsafe { vendor::backward_weight(&s, dwa, dya, xa, &shape) }.unwrap();
    });
    ex.launch_with(&s, &bind(&[dyb, xb, dwb])).unwrap();
    let (want, scale) = reference(&sets[1].0, &sets[1].1);
    let e = err(&download(&s, dwb, n * k), &want, &scale);
    assert!(e <= 1e-5, "rebound dW off by {e:e}: {what}");
    assert!(
        download(&s, dwa, n * k).iter().all(|v| v.is_nan()),
        "the rebound replay wrote the captured dW: {what}"
    );
}

/// The weight update with the bias gradient fused (cuBLASLt's BGRADB
/// epilogue): `W -= lr * dY^T . x` and `db = colsum(dY)` in one
/// `cublasLtMatmul`, against float64 (f32 bounds), eager and replayed from
/// a capture bound to a second set of buffers. Where cuBLASLt has no
/// BGRADB algorithm for a shape, the plan says so (nothing to check for
/// it; the test fails only if it refuses every shape). A failure message
/// says whether db came out scaled by alpha (-lr) instead.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_weight_sgd_with_bgradb_matches_float64_and_rebinds() {
    need_cublaslt();
    let (c, s, p) = setup();
    let seed = seed();
    let lr = 0.05f32;
    let mut planned = 0;
    for (i, &(m, n, k)) in [(512usize, 256usize, 384usize), (1024, 136, 200)]
        .iter()
        .enumerate()
    {
        let (mu, nu, ku) = (m as u32, n as u32, k as u32);
        let sets: Vec<_> = (0..2u64)
            .map(|j| {
                (
                    random(seed ^ 0x91 ^ (i as u64) << 4 ^ j << 8, n * k),
                    random(seed ^ 0x92 ^ (i as u64) << 4 ^ j << 8, m * n),
                    random(seed ^ 0x93 ^ (i as u64) << 4 ^ j << 8, m * k),
                )
            })
            .collect();
        let bufs: Vec<_> = sets
            .iter()
            .map(|(w, dy, x)| {
                (
                    put(&s, &p, w, false),
                    put(&s, &p, dy, false),
                    put(&s, &p, x, false),
                    poisoned(&s, &p, n, false),
                )
            })
            .collect();
        let (wa, dya, xa, dba) = bufs[0];
        let (wb, dyb, xb, dbb) = bufs[1];
        let shape = LinearShape::weight_sgd_bgrad(wa, dya, xa, dba, mu, nu, ku);
        if !vendor::linear_plan(&c, &shape).unwrap() {
            eprintln!("no BGRADB algorithm for m={m} n={n} k={k}");
            continue;
        }
        planned += 1;
        // W's update and db, with their rounding scales, in float64.
        let reference = |w: &[f32], dy: &[f32], x: &[f32]| {
            let (want, scale) = sgd_ref(w, dy, x, lr, (m, n, k));
            let db: Vec<f64> = (0..n)
                .map(|j| (0..m).map(|row| dy[row * n + j] as f64).sum())
                .collect();
            let db_scale: Vec<f64> = (0..n)
                .map(|j| {
                    (0..m)
                        .map(|row| (dy[row * n + j] as f64).abs())
                        .sum::<f64>()
                })
                .collect();
            (want, scale, db, db_scale)
        };
        let what = format!("m={m} n={n} k={k} seed {seed}");
        let check = |set: usize, w: u64, db: u64, when: &str| {
            let (ws, dys, xs) = &sets[set];
            let (want, scale, want_db, db_scale) = reference(ws, dys, xs);
            let e = err(&download(&s, w, n * k), &want, &scale);
            assert!(e <= 1e-5, "{when} update off by {e:e}: {what}");
            let got_db = download(&s, db, n);
            let e = err(&got_db, &want_db, &db_scale);
            let scaled: Vec<f64> = want_db.iter().map(|v| -lr as f64 * v).collect();
            let e_scaled = err(&got_db, &scaled, &db_scale);
            assert!(
                e <= 1e-5,
                "{when} db off by {e:e} (against -lr * colsum(dY): {e_scaled:e}): {what}"
            );
        };
        // SAFETY: live pool allocations of this test.
        unsafe { vendor::weight_sgd_bgrad(&s, wa, dya, xa, lr, dba, &shape) }.unwrap();
        check(0, wa, dba, "eager");
        // Captured with set a's pointers declared, replayed bound to set b.
        let args = [(wa, n * k), (dya, m * n), (xa, m * k), (dba, n)];
        let ex = captured(&s, &args, || {
            // SAFETY: as above; kept while the graph runs.
            unsafe { vendor::weight_sgd_bgrad(&s, wa, dya, xa, lr, dba, &shape) }.unwrap();
        });
        ex.launch_with(&s, &bind(&[wb, dyb, xb, dbb])).unwrap();
        check(1, wb, dbb, "rebound");
    }
    assert!(planned > 0, "cuBLASLt planned BGRADB for no shape");
}

/// The calling thread's current context (NULL when none).
fn current() -> cudarc::driver::sys::CUcontext {
    use cudarc::driver::sys;
    let mut cur = std::ptr::null_mut();
    // SAFETY: writes the calling thread's current context to `cur`.
    let r = unsafe { sys::cuCtxGetCurrent(&mut cur) };
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    cur
}

/// As the built-in ops' launches, the cuBLASLt path leaves the thread's
/// current context as it was (none, here), planning included, and runs
/// from a thread with no current context.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cublaslt_calls_leave_the_threads_current_context_as_it_was() {
    use cudarc::driver::sys;
    need_cublaslt();
    let (c, s, p) = setup();
    let (m, n, k) = (544usize, 136usize, 72usize);
    let case = Case::new(seed(), (m, n, k));
    let (x, w, b) = (
        put(&s, &p, &case.x, false),
        put(&s, &p, &case.w, false),
        put(&s, &p, &case.b, false),
    );
    let y = poisoned(&s, &p, m * n, false);
    s.synchronize().unwrap();
    let shape = LinearShape::of(y, x, w, b, m as u32, n as u32, k as u32, false, true);
    // SAFETY: NULL unbinds the calling thread's context.
    let r = unsafe { sys::cuCtxSetCurrent(std::ptr::null_mut()) };
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    // A shape not planned yet: the plan is made in this call.
    assert!(vendor::linear_plan(&c, &shape).unwrap());
    assert!(current().is_null(), "planning left a context current");
    // SAFETY: live pool allocations of this test.
    unsafe { vendor::linear(&s, y, x, w, b, &shape) }.unwrap();
    assert!(
        current().is_null(),
        "the cuBLASLt call left a context current"
    );
    let (want, scale) = reference(&case.x, &case.w, Some(&case.b), (m, n, k), true);
    assert!(err(&download(&s, y, m * n), &want, &scale) <= 1e-5);
}
