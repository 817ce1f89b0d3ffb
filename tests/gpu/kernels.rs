//! Every built-in kernel against a float64 CPU reference, on fresh random
//! inputs, with the output poisoned (all bits set: NaN) before each run.
//! Bounds: elementwise results within 1 ulp-ish (2e-7 relative); linear
//! layers and reductions ‖out − ref‖ / ‖ref‖ ≤ 1e-5.

use super::*;
use graphcore_core::kernels::ops::{self, OP_ADD, OP_FILL, OP_MAX, OP_MIN, OP_MUL, OP_RELU};
use graphcore_core::{launch_op, CaptureMode, Exec};

/// Sizes that hit every path: one element, primes, non-multiples of 4 and
/// of the block size, and a large one with a tail.
const SIZES: [usize; 6] = [1, 7, 1021, 4099, 65_537, (1 << 20) + 3];

/// A launch decided by `ops`, or why it was refused.
type Planned = Result<graphcore_core::kernels::Call, graphcore_core::kernels::SizeError>;

/// An operation under test: its name, how to launch it writing to an
/// output address, and the float64 reference.
type Case<'a> = (&'a str, Box<dyn Fn(u64) -> Planned + 'a>, Vec<f64>);

struct Dev {
    s: Stream,
    p: Pool,
    sms: u32,
}

impl Dev {
    fn new() -> Dev {
        let c = ctx();
        Dev {
            s: Stream::new(&c).unwrap(),
            p: pool(&c),
            sms: c.sm_count(),
        }
    }
    /// A device buffer of `n` floats (plus one, so `misaligned` can shift
    /// the start by one float).
    fn buf(&self, n: usize) -> u64 {
        self.p.alloc((n as u64 + 1) * 4).unwrap()
    }
    fn put(&self, values: &[f32], shift: bool) -> u64 {
        let b = self.buf(values.len()) + if shift { 4 } else { 0 };
        upload(&self.s, b, values);
        b
    }
    fn poisoned(&self, n: usize, shift: bool) -> u64 {
        let b = self.buf(n) + if shift { 4 } else { 0 };
        // SAFETY: the ranges are live allocations of this test of at least `bytes`
        // bytes, kept until the stream is synchronized.
        unsafe { graphcore_core::set_async(&self.s, b, 0xff, n * 4) }.unwrap();
        b
    }
    fn get(&self, b: u64, n: usize) -> Vec<f32> {
        download(&self.s, b, n)
    }
    fn run(&self, call: Planned) {
        // SAFETY: the buffers are live device allocations of this test holding the
        // elements the operation reads and writes.
        unsafe { launch_op(&self.s, call) }.unwrap();
    }
}

/// Elementwise check: every element within 2e-7 relative (or exact).
fn close(out: &[f32], want: &[f64], what: &str, seed: u64) {
    assert_eq!(out.len(), want.len());
    for (i, (&o, &w)) in out.iter().zip(want).enumerate() {
        let tol = 2e-7 * w.abs().max(1e-30);
        assert!(
            (o as f64 - w).abs() <= tol || (o.is_nan() && w.is_nan()),
            "{what}: element {i} is {o}, reference {w} (seed {seed})"
        );
    }
}

/// Norm-wise relative error ‖out − ref‖ / ‖ref‖.
fn rel_err(out: &[f32], want: &[f64]) -> f64 {
    assert!(
        out.iter().all(|v| v.is_finite()),
        "output has NaN/inf (unwritten?)"
    );
    let num: f64 = out
        .iter()
        .zip(want)
        .map(|(&o, &w)| (o as f64 - w).powi(2))
        .sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den.max(1e-300)).sqrt()
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_kernels_match_float64() {
    let d = Dev::new();
    let seed = seed();
    for &n in &SIZES {
        for shift in [false, true] {
            let x = random(seed ^ n as u64, n);
            let yv = random(seed.rotate_left(7) ^ n as u64, n);
            let (xb, yb) = (d.put(&x, shift), d.put(&yv, shift));
            let nn = n as u64;
            let (xf, yf) = (f64s(&x), f64s(&yv));
            let cases: Vec<Case> = vec![
                (
                    "fill",
                    Box::new(|o| ops::fill(o, nn, 0.75, d.sms)),
                    vec![0.75; n],
                ),
                (
                    "copy",
                    Box::new(|o| ops::copy(o, xb, nn, d.sms)),
                    xf.clone(),
                ),
                (
                    "scale",
                    Box::new(|o| ops::scale(o, xb, nn, -1.5, d.sms)),
                    xf.iter().map(|v| v * -1.5).collect(),
                ),
                (
                    "add_scalar",
                    Box::new(|o| ops::add_scalar(o, xb, nn, 0.25, d.sms)),
                    xf.iter().map(|v| ((v + 0.25) as f32) as f64).collect(),
                ),
                (
                    "add",
                    Box::new(|o| ops::add(o, xb, yb, nn, d.sms)),
                    xf.iter()
                        .zip(&yf)
                        .map(|(a, b)| ((a + b) as f32) as f64)
                        .collect(),
                ),
                (
                    "mul",
                    Box::new(|o| ops::mul(o, xb, yb, nn, d.sms)),
                    xf.iter().zip(&yf).map(|(a, b)| a * b).collect(),
                ),
                (
                    "relu",
                    Box::new(|o| ops::relu(o, xb, nn, d.sms)),
                    xf.iter().map(|v| v.max(0.0)).collect(),
                ),
                (
                    "relu_backward",
                    Box::new(|o| ops::relu_backward(o, yb, xb, nn, d.sms)),
                    xf.iter()
                        .zip(&yf)
                        .map(|(x, dy)| if *x > 0.0 { *dy } else { 0.0 })
                        .collect(),
                ),
            ];
            for (name, op, want) in cases {
                let out = d.poisoned(n, shift);
                d.run(op(out));
                close(
                    &d.get(out, n),
                    &want,
                    &format!("{name} n={n} shift={shift}"),
                    seed,
                );
            }
            // In place: axpy and sgd update their first operand.
            let acc = d.put(&yv, shift);
            d.run(ops::axpy(acc, xb, nn, 0.5, d.sms));
            let want: Vec<f64> = xf.iter().zip(&yf).map(|(x, y)| 0.5 * x + y).collect();
            close(&d.get(acc, n), &want, &format!("axpy n={n}"), seed);
            let w = d.put(&yv, shift);
            d.run(ops::sgd(w, xb, nn, 1e-3, d.sms));
            let want: Vec<f64> = xf
                .iter()
                .zip(&yf)
                .map(|(g, w)| w - 1e-3f32 as f64 * g)
                .collect();
            close(&d.get(w, n), &want, &format!("sgd n={n}"), seed);
            let inplace = d.put(&x, shift);
            d.run(ops::scale(inplace, inplace, nn, 3.0, d.sms));
            close(
                &d.get(inplace, n),
                &xf.iter().map(|v| v * 3.0).collect::<Vec<_>>(),
                "scale in place",
                seed,
            );
        }
    }
}

/// Every map op declared in kernels/src/table.rs (`map:` entries) against
/// its declared float64 reference and bound, over every size, aligned and
/// shifted, inputs in [-6, 6) with the specials (±0, NaN, ±inf, large
/// values, gelu's far tail); then the same op as a chain-kernel opcode, bitwise equal to the
/// standalone kernel, alone and between two other operations, and through
/// the fusion planner: captured nodes fused at instantiate (a chain of 4
/// and of 12 nodes, the built-in chain kernel and a generated one), bitwise
/// equal to the unfused graph.
#[test]
#[ignore = "needs a CUDA GPU"]
fn map_ops_match_float64() {
    use graphcore_core::instantiate_flags::FUSE_ELEMENTWISE;
    use graphcore_core::kernels::map::MapOp;
    let d = Dev::new();
    let seed = seed();
    let specials = [
        0.0,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        -f32::INFINITY,
        1e30,
        -1e30,
        1e-30,
        20.0,
        -20.0,
        -9.0,
        -10.4,
        9.5,
    ];
    let mut count = 0;
    for m in MapOp::all() {
        count += 1;
        let (rel, abs) = m.map.tolerance;
        let c = -1.5f32;
        for &n in &SIZES {
            for shift in [false, true] {
                let mut x: Vec<f32> = random(seed ^ n as u64 ^ count as u64, n)
                    .iter()
                    .map(|v| v * 6.0)
                    .collect();
                for (i, &v) in specials.iter().enumerate().take(n) {
                    x[(i * 7919) % n] = v;
                }
                let xb = d.put(&x, shift);
                let nn = n as u64;
                let o = d.poisoned(n, shift);
                d.run(ops::map(m, o, xb, nn, c, d.sms));
                let out = d.get(o, n);
                for (i, (&v, &xi)) in out.iter().zip(&x).enumerate() {
                    let want = (m.map.reference)(xi as f64, c as f64);
                    // Within the bound, or the float32 rounding of the
                    // reference (infinities, -0 and underflow included).
                    let ok = (v as f64 - want).abs() <= rel * want.abs() + abs
                        || v.to_bits() == (want as f32).to_bits()
                        || (v.is_nan() && want.is_nan());
                    assert!(
                        ok,
                        "{}: element {i} of {n} (shift {shift}): f({xi}) = {v}, reference {want} (seed {seed})",
                        m.name()
                    );
                }
                // The chain opcode: alone, and between two scales by 1
                // (exact), bitwise.
                if let Some(op) = m.chain_op(c) {
                    for ops_list in [vec![op], vec![(OP_MUL, 1.0), op, (OP_MUL, 1.0)]] {
                        let ch = d.poisoned(n, shift);
                        d.run(ops::chain(ch, xb, nn, &ops_list, d.sms));
                        let got = d.get(ch, n);
                        assert!(
                            got.iter().zip(&out).all(|(a, b)| a.to_bits() == b.to_bits()
                                || (a.is_nan() && b.is_nan() && ops_list.len() > 1)),
                            "{}: the chain {ops_list:?} differs from the standalone kernel (n {n})",
                            m.name()
                        );
                    }
                }
            }
        }
        // Fusion at instantiate: `len` nodes alternating this op and a
        // scale, captured in place on one buffer; fused == unfused bitwise.
        for len in [4usize, 12] {
            let n = 4099usize;
            let y = d.buf(n);
            let input: Vec<f32> = random(seed ^ 99, n).iter().map(|v| v * 3.0).collect();
            graphcore_core::begin_capture(&d.s, None, CaptureMode::ThreadLocal).unwrap();
            for i in 0..len {
                let call = if i % 2 == 0 {
                    ops::map(m, y, y, n as u64, 0.5, d.sms)
                } else {
                    ops::scale(y, y, n as u64, 1.25, d.sms)
                };
                d.run(call);
            }
            let g = graphcore_core::end_capture(&d.s).unwrap();
            let plain = Exec::new(&g, 0).unwrap();
            let fused = Exec::new(&g, FUSE_ELEMENTWISE).unwrap();
            let mut results = Vec::new();
            for e in [&plain, &fused] {
                upload(&d.s, y, &input);
                e.launch(&d.s).unwrap();
                results.push(d.get(y, n));
            }
            assert!(
                results[0]
                    .iter()
                    .zip(&results[1])
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{}: {len} nodes fused differ from unfused",
                m.name()
            );
            if m.chain_op(0.0).is_some() {
                assert!(
                    fused.stats().unwrap().fused_away > 0,
                    "{}: {len} nodes fuse",
                    m.name()
                );
            }
        }
    }
    assert!(count >= 5);
}

/// Every zip op declared in kernels/src/table.rs (`zip:` entries) against
/// its declared float64 reference and bound, over every size, aligned and
/// shifted, with ±0 and NaN among the inputs, out of place and in place
/// (the output equal to either input).
#[test]
#[ignore = "needs a CUDA GPU"]
fn zip_ops_match_float64() {
    use graphcore_core::kernels::map::ZipOp;
    let d = Dev::new();
    let seed = seed();
    let mut count = 0;
    for z in ZipOp::all() {
        count += 1;
        let (rel, abs) = z.zip.tolerance;
        for &n in &SIZES {
            for shift in [false, true] {
                let mut a = random(seed ^ n as u64 ^ count as u64, n);
                let mut b = random(seed.rotate_left(9) ^ n as u64, n);
                a[0] = -0.0;
                b[n / 2] = f32::NAN;
                let want: Vec<f64> = a
                    .iter()
                    .zip(&b)
                    .map(|(&x, &y)| (z.zip.reference)(x as f64, y as f64))
                    .collect();
                let (ab, bb) = (d.put(&a, shift), d.put(&b, shift));
                let nn = n as u64;
                let o = d.poisoned(n, shift);
                d.run(ops::zip(z, o, ab, bb, nn, d.sms));
                let out = d.get(o, n);
                // In place: out == a, then out == b (fresh copies).
                let ia = d.put(&a, shift);
                d.run(ops::zip(z, ia, ia, bb, nn, d.sms));
                let ib = d.put(&b, shift);
                d.run(ops::zip(z, ib, ab, ib, nn, d.sms));
                for (what, got) in [
                    ("", &out),
                    (" (out == a)", &d.get(ia, n)),
                    (" (out == b)", &d.get(ib, n)),
                ] {
                    for (i, (&v, &w)) in got.iter().zip(&want).enumerate() {
                        let ok = (v as f64 - w).abs() <= rel * w.abs() + abs
                            || v.to_bits() == (w as f32).to_bits()
                            || (v.is_nan() && w.is_nan());
                        assert!(
                            ok,
                            "{}{what}: element {i} of {n} (shift {shift}): f({}, {}) = {v}, reference {w} (seed {seed})",
                            z.name(),
                            a[i],
                            b[i]
                        );
                    }
                }
            }
        }
    }
    assert!(count >= 3);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bias_add_and_chain_match_float64() {
    let d = Dev::new();
    let seed = seed();
    for (rows, cols) in [(1, 1), (3, 37), (64, 1024), (200, 10)] {
        let n = rows * cols;
        let x = random(seed ^ n as u64, n);
        let b = random(seed ^ 99, cols);
        let (xb, bb) = (d.put(&x, false), d.put(&b, false));
        let out = d.poisoned(n, false);
        d.run(ops::bias_add(out, xb, bb, rows as u32, cols as u32, d.sms));
        let want: Vec<f64> = (0..n).map(|i| (x[i] + b[i % cols]) as f64).collect();
        close(&d.get(out, n), &want, "bias_add", seed);
    }
    // Random chains of 1..=8 operations.
    let mut r = seed;
    for &n in &SIZES {
        r = r
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let len = 1 + (r >> 60) as usize % 8;
        let codes = [OP_FILL, OP_MUL, OP_ADD, OP_RELU, OP_MAX, OP_MIN];
        let program: Vec<(u32, f32)> = (0..len)
            .map(|i| {
                let k = ((r >> (i * 7)) % codes.len() as u64) as usize;
                (codes[k], ((r >> (i * 5)) % 17) as f32 * 0.25 - 2.0)
            })
            .collect();
        let x = random(r, n);
        let xb = d.put(&x, n % 2 == 1);
        let out = d.poisoned(n, n % 2 == 1);
        d.run(ops::chain(out, xb, n as u64, &program, d.sms));
        let want: Vec<f64> = x
            .iter()
            .map(|&v| {
                let mut v = v;
                for &(op, c) in &program {
                    v = match op {
                        OP_FILL => c,
                        OP_MUL => v * c,
                        OP_ADD => v + c,
                        OP_RELU => v.max(0.0),
                        OP_MAX => v.max(c),
                        _ => v.min(c),
                    };
                }
                v as f64
            })
            .collect();
        close(&d.get(out, n), &want, &format!("chain {program:?}"), seed);
    }
}

/// y = x·Wᵀ + b (ReLU optional), in float64.
fn linear_ref(
    x: &[f32],
    w: &[f32],
    b: &[f32],
    m: usize,
    n: usize,
    k: usize,
    relu: bool,
) -> Vec<f64> {
    let mut y = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = b[j] as f64;
            for t in 0..k {
                acc += x[i * k + t] as f64 * w[j * k + t] as f64;
            }
            y[i * n + j] = if relu { acc.max(0.0) } else { acc };
        }
    }
    y
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_forward_matches_float64_on_every_shape() {
    let d = Dev::new();
    let seed = seed();
    for m in [1usize, 2, 3, 4, 8, 16, 32, 64, 200] {
        for (k, n) in [
            (1024usize, 512usize),
            (512, 256),
            (256, 10),
            (1024, 1024),
            (1000, 37),
        ] {
            let relu = (m + n) % 2 == 0;
            let x = random(seed ^ (m * k) as u64, m * k);
            let w: Vec<f32> = random(seed ^ (n * k) as u64, n * k)
                .iter()
                .map(|v| v / (k as f32).sqrt())
                .collect();
            let b = random(seed ^ n as u64, n);
            let (xb, wb, bb) = (d.put(&x, false), d.put(&w, false), d.put(&b, false));
            let out = d.poisoned(m * n, false);
            d.run(ops::linear(
                out, xb, wb, bb, m as u32, n as u32, k as u32, relu, d.sms, false,
            ));
            let e = rel_err(&d.get(out, m * n), &linear_ref(&x, &w, &b, m, n, k, relu));
            assert!(
                e <= 1e-5,
                "linear m={m} k={k} n={n} relu={relu}: rel err {e:e} (seed {seed})"
            );
            for buf in [xb, wb, bb, out] {
                d.p.free(buf).unwrap();
            }
        }
    }
}

/// ops::linear_rows (gc_op_linear_rows): one launch captured for a bucket
/// of 64 rows serves every row count written to device memory before a
/// replay: the first m rows bitwise the 64-row gc_op_linear launch's, the
/// rows past m untouched, and a count above the bucket clamped to it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_rows_reads_its_row_count_at_replay_and_clamps_past_the_bucket() {
    let d = Dev::new();
    let seed = seed();
    let (max_m, n, k) = (64usize, 256usize, 1024usize);
    let x = random(seed ^ 11, max_m * k);
    let w: Vec<f32> = random(seed ^ 12, n * k)
        .iter()
        .map(|v| v / (k as f32).sqrt())
        .collect();
    let b = random(seed ^ 13, n);
    let (xb, wb, bb) = (d.put(&x, false), d.put(&w, false), d.put(&b, false));
    let full = d.poisoned(max_m * n, false);
    d.run(ops::linear(
        full,
        xb,
        wb,
        bb,
        max_m as u32,
        n as u32,
        k as u32,
        true,
        d.sms,
        false,
    ));
    let want = d.get(full, max_m * n);
    assert!(
        rel_err(&want, &linear_ref(&x, &w, &b, max_m, n, k, true)) <= 1e-5,
        "seed {seed}"
    );
    let rows = d.buf(1);
    let y = d.buf(max_m * n);
    graphcore_core::begin_capture(&d.s, None, CaptureMode::ThreadLocal).unwrap();
    d.run(ops::linear_rows(
        y,
        xb,
        wb,
        bb,
        rows,
        max_m as u32,
        n as u32,
        k as u32,
        true,
        d.sms,
    ));
    let g = graphcore_core::end_capture(&d.s).unwrap();
    let e = Exec::new(&g, 0).unwrap();
    for m in [1usize, 3, 17, 63, 64, 65, 1000, u32::MAX as usize] {
        upload(&d.s, rows, &[f32::from_bits(m as u32)]);
        // SAFETY: y is a live allocation of this test of max_m * n floats.
        unsafe { graphcore_core::set_async(&d.s, y, 0xff, max_m * n * 4) }.unwrap();
        e.launch(&d.s).unwrap();
        let got = d.get(y, max_m * n);
        let done = m.min(max_m) * n;
        assert!(
            got[..done]
                .iter()
                .zip(&want[..done])
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "m={m}: the first rows differ from the 64-row launch (seed {seed})"
        );
        assert!(
            got[done..].iter().all(|v| v.to_bits() == u32::MAX),
            "m={m}: a row past m was written"
        );
    }
    for buf in [xb, wb, bb, full, rows, y] {
        d.p.free(buf).unwrap();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn backward_and_update_kernels_match_float64() {
    let d = Dev::new();
    let seed = seed();
    for (m, n, k) in [
        (1usize, 10usize, 256usize),
        (64, 1024, 1024),
        (200, 37, 1000),
        (3, 512, 1024),
        (32, 4096, 4096), // the input gradient's tiled GEMM below 65 rows
        (64, 4096, 4096), // its cluster kernel (compute capability 9.0)
    ] {
        let dy = random(seed ^ 1 ^ m as u64, m * n);
        let x = random(seed ^ 2 ^ k as u64, m * k);
        let w = random(seed ^ 3 ^ n as u64, n * k);
        let (dyb, xb, wb) = (d.put(&dy, false), d.put(&x, false), d.put(&w, false));
        // dX = dY·W
        let dx = d.poisoned(m * k, false);
        d.run(ops::linear_backward_input(
            dx,
            dyb,
            wb,
            m as u32,
            n as u32,
            k as u32,
            d.sms,
            d.s.context().has_clusters(),
        ));
        let want: Vec<f64> = (0..m * k)
            .map(|ij| {
                (0..n)
                    .map(|t| dy[ij / k * n + t] as f64 * w[t * k + ij % k] as f64)
                    .sum()
            })
            .collect();
        let e = rel_err(&d.get(dx, m * k), &want);
        assert!(e <= 1e-5, "dX m={m} n={n} k={k}: {e:e} (seed {seed})");
        // dW = dYᵀ·X
        let dw = d.poisoned(n * k, false);
        d.run(ops::linear_backward_weight(
            dw, dyb, xb, m as u32, n as u32, k as u32, d.sms,
        ));
        let dw_ref: Vec<f64> = (0..n * k)
            .map(|ij| {
                (0..m)
                    .map(|t| dy[t * n + ij / k] as f64 * x[t * k + ij % k] as f64)
                    .sum()
            })
            .collect();
        let e = rel_err(&d.get(dw, n * k), &dw_ref);
        assert!(e <= 1e-5, "dW m={m} n={n} k={k}: {e:e} (seed {seed})");
        // W -= lr·dYᵀ·X, fused, bitwise equal to dW then sgd.
        let lr = 1e-3f32;
        let (w1, w2) = (d.put(&w, false), d.put(&w, false));
        d.run(ops::linear_weight_sgd(
            w1, dyb, xb, m as u32, n as u32, k as u32, lr, d.sms,
        ));
        d.run(ops::sgd(w2, dw, (n * k) as u64, lr, d.sms));
        let (a, b) = (d.get(w1, n * k), d.get(w2, n * k));
        assert!(
            a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
            "fused weight SGD differs"
        );
        let want: Vec<f64> = w
            .iter()
            .zip(&dw_ref)
            .map(|(&w, g)| w as f64 - lr as f64 * g)
            .collect();
        assert!(rel_err(&a, &want) <= 1e-6);
        // Bias gradient and fused bias SGD.
        let db = d.poisoned(n, false);
        d.run(ops::bias_grad(db, dyb, m as u32, n as u32, d.sms));
        let db_ref: Vec<f64> = (0..n)
            .map(|j| (0..m).map(|i| dy[i * n + j] as f64).sum())
            .collect();
        assert!(rel_err(&d.get(db, n), &db_ref) <= 1e-5, "bias_grad");
        let bias = random(seed ^ 4, n);
        let (b1, b2) = (d.put(&bias, false), d.put(&bias, false));
        d.run(ops::bias_sgd(b1, dyb, m as u32, n as u32, lr, d.sms));
        d.run(ops::sgd(b2, db, n as u64, lr, d.sms));
        let (p, q) = (d.get(b1, n), d.get(b2, n));
        assert!(
            p.iter().zip(&q).all(|(a, b)| a.to_bits() == b.to_bits()),
            "fused bias SGD differs"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mse_loss_gradient_and_finite_differences() {
    let d = Dev::new();
    let seed = seed();
    for &n in &[1usize, 1021, 65_536, (1 << 20) + 3] {
        let pred = random(seed ^ n as u64, n);
        let target = random(seed ^ 77 ^ n as u64, n);
        let (pb, tb) = (d.put(&pred, false), d.put(&target, false));
        let ws_bytes = ops::mse_workspace_bytes(n as u64, d.sms);
        let ws = d.p.alloc(ws_bytes).unwrap();
        // SAFETY: the ranges are live allocations of this test of at least `bytes`
        // bytes, kept until the stream is synchronized.
        unsafe { graphcore_core::set_async(&d.s, ws, 0, ws_bytes as usize) }.unwrap();
        let (loss, grad) = (d.poisoned(1, false), d.poisoned(n, false));
        d.run(ops::mse(
            loss, grad, pb, tb, n as u64, 1.0, ws, ws_bytes, d.sms,
        ));
        let want: f64 = pred
            .iter()
            .zip(&target)
            .map(|(p, t)| (*p as f64 - *t as f64).powi(2))
            .sum();
        let l32 = d.get(loss, 1)[0];
        let l = l32 as f64;
        assert!(
            (l - want).abs() <= 1e-5 * want,
            "mse n={n}: {l} vs {want} (seed {seed})"
        );
        let g = d.get(grad, n);
        let gref: Vec<f64> = pred
            .iter()
            .zip(&target)
            .map(|(p, t)| 2.0 * (*p as f64 - *t as f64))
            .collect();
        close(&g, &gref, "mse gradient", seed);
        // Finite differences on a few elements: dL/dp_i ≈ (L(p+h) − L(p−h)) / 2h.
        if n <= 1021 {
            for i in [0, n / 2, n - 1] {
                let h = 1e-2f32;
                let lp = |delta: f32| {
                    let mut q = pred.clone();
                    q[i] += delta;
                    q.iter()
                        .zip(&target)
                        .map(|(p, t)| (*p as f64 - *t as f64).powi(2))
                        .sum::<f64>()
                };
                let fd = (lp(h) - lp(-h)) / (2.0 * h as f64);
                assert!(
                    (fd - g[i] as f64).abs() <= 1e-3 * fd.abs().max(1.0),
                    "finite difference at {i}"
                );
            }
        }
        // Replays of the same launch give the same bits (fixed-order sums).
        d.run(ops::mse(
            loss, grad, pb, tb, n as u64, 1.0, ws, ws_bytes, d.sms,
        ));
        assert_eq!(
            d.get(loss, 1)[0].to_bits(),
            l32.to_bits(),
            "mse replay differs"
        );
    }
}

/// nn.MSELoss()'s mean (ops::mse_reduced): the sum-reduction's loss times
/// the float reciprocal of n, bitwise (as PyTorch's CUDA mean scales its
/// sum), within float rounding of float64; the gradient bitwise
/// `d * (2 * (1 / n))`; the sum form bitwise ops::mse with grad_scale 1.
#[test]
#[ignore = "needs a CUDA GPU"]
fn mse_mean_is_the_sum_times_the_reciprocal_and_matches_float64() {
    use graphcore_core::kernels::ops::Reduction;
    let d = Dev::new();
    let seed = seed();
    for &n in &[1usize, 3, 1000, 65_537, (1 << 20) + 3] {
        let pred = random(seed ^ 5 ^ n as u64, n);
        let target = random(seed ^ 91 ^ n as u64, n);
        let (pb, tb) = (d.put(&pred, false), d.put(&target, false));
        let ws_bytes = ops::mse_workspace_bytes(n as u64, d.sms);
        let ws = d.p.alloc(ws_bytes).unwrap();
        // SAFETY: the range is a live allocation of this test of ws_bytes bytes,
        // kept until the stream is synchronized.
        unsafe { graphcore_core::set_async(&d.s, ws, 0, ws_bytes as usize) }.unwrap();
        let (loss, grad) = (d.poisoned(1, false), d.poisoned(n, false));
        let (loss2, grad2) = (d.poisoned(1, false), d.poisoned(n, false));
        d.run(ops::mse(
            loss, grad, pb, tb, n as u64, 1.0, ws, ws_bytes, d.sms,
        ));
        let (sum, gsum) = (d.get(loss, 1)[0], d.get(grad, n));
        d.run(ops::mse_reduced(
            loss2,
            grad2,
            pb,
            tb,
            n as u64,
            Reduction::Sum,
            ws,
            ws_bytes,
            d.sms,
        ));
        assert_eq!(d.get(loss2, 1)[0].to_bits(), sum.to_bits(), "sum n={n}");
        assert!(
            d.get(grad2, n)
                .iter()
                .zip(&gsum)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "sum gradient n={n}"
        );
        d.run(ops::mse_reduced(
            loss2,
            grad2,
            pb,
            tb,
            n as u64,
            Reduction::Mean,
            ws,
            ws_bytes,
            d.sms,
        ));
        let s = 1.0f32 / n as f32;
        let mean = d.get(loss2, 1)[0];
        assert_eq!(
            mean.to_bits(),
            (sum * s).to_bits(),
            "mean n={n}: {mean} vs {sum} * {s}"
        );
        let want: f64 = pred
            .iter()
            .zip(&target)
            .map(|(p, t)| (*p as f64 - *t as f64).powi(2))
            .sum::<f64>()
            / n as f64;
        assert!(
            (mean as f64 - want).abs() <= 1e-5 * want,
            "mean n={n}: {mean} vs float64 {want} (seed {seed})"
        );
        let g = d.get(grad2, n);
        for (i, ((g, p), t)) in g.iter().zip(&pred).zip(&target).enumerate() {
            let want = (p - t) * (2.0 * s);
            assert_eq!(g.to_bits(), want.to_bits(), "mean gradient at {i} (n={n})");
        }
        // The mean's scale is PyTorch's backward scale 2 / n, as a float.
        assert_eq!(2.0 * s, (2.0 / n as f64) as f32);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn replays_are_bitwise_deterministic() {
    let d = Dev::new();
    let seed = seed();
    let (m, n, k) = (64usize, 1024usize, 1024usize);
    let x = d.put(&random(seed, m * k), false);
    let w = d.put(&random(seed ^ 1, n * k), false);
    let b = d.put(&random(seed ^ 2, n), false);
    let t = d.put(&random(seed ^ 3, m * n), false);
    let y = d.buf(m * n);
    let grad = d.buf(m * n);
    let loss = d.buf(1);
    let ws_bytes = ops::mse_workspace_bytes((m * n) as u64, d.sms);
    let ws = d.p.alloc(ws_bytes).unwrap();
    // SAFETY: the ranges are live allocations of this test of at least `bytes`
    // bytes, kept until the stream is synchronized.
    unsafe { graphcore_core::set_async(&d.s, ws, 0, ws_bytes as usize) }.unwrap();
    graphcore_core::begin_capture(&d.s, None, CaptureMode::ThreadLocal).unwrap();
    d.run(ops::linear(
        y, x, w, b, m as u32, n as u32, k as u32, false, d.sms, false,
    ));
    d.run(ops::mse(
        loss,
        grad,
        y,
        t,
        (m * n) as u64,
        1.0,
        ws,
        ws_bytes,
        d.sms,
    ));
    let dw = d.buf(n * k);
    d.run(ops::linear_backward_weight(
        dw, grad, x, m as u32, n as u32, k as u32, d.sms,
    ));
    let g = graphcore_core::end_capture(&d.s).unwrap();
    let e = Exec::new(&g, 0).unwrap();
    e.launch(&d.s).unwrap();
    let first = (d.get(y, m * n), d.get(loss, 1), d.get(dw, n * k));
    for _ in 0..3 {
        e.launch(&d.s).unwrap();
        let again = (d.get(y, m * n), d.get(loss, 1), d.get(dw, n * k));
        let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits());
        assert!(same(&first.0, &again.0) && same(&first.1, &again.1) && same(&first.2, &again.2));
    }
}

/// Float64 forward of an MLP (intermediates kept in float64).
fn mlp_ref(
    x: &[f32],
    layers: &[(Vec<f32>, Vec<f32>, bool)],
    widths: &[usize],
    rows: usize,
) -> Vec<f64> {
    let mut h: Vec<f64> = f64s(x);
    for (l, (w, b, relu)) in layers.iter().enumerate() {
        let (k, n) = (widths[l], widths[l + 1]);
        let mut out = vec![0f64; rows * n];
        for i in 0..rows {
            for j in 0..n {
                let mut acc = b[j] as f64;
                for t in 0..k {
                    acc += h[i * k + t] * w[j * k + t] as f64;
                }
                out[i * n + j] = if *relu { acc.max(0.0) } else { acc };
            }
        }
        h = out;
    }
    h
}

/// An MLP on the device: its layers for `ops::mlp` and the host copies.
struct Net {
    layers: Vec<ops::MlpLayer>,
    host: Vec<(Vec<f32>, Vec<f32>, bool)>,
}

impl Net {
    /// Random layers of the given widths (W scaled by 1/sqrt(inputs)), ReLU
    /// after all but the last; the second layer has no bias.
    fn new(d: &Dev, seed: u64, widths: &[usize]) -> Net {
        let mut layers = Vec::new();
        let mut host = Vec::new();
        for l in 0..widths.len() - 1 {
            let (k, n) = (widths[l], widths[l + 1]);
            let w: Vec<f32> = random(seed ^ (l as u64 * 77 + 1), n * k)
                .iter()
                .map(|v| v / (k as f32).sqrt())
                .collect();
            let b = if l == 1 {
                vec![0.0; n]
            } else {
                random(seed ^ (l as u64 * 77 + 2), n)
            };
            let relu = l + 2 < widths.len();
            layers.push(ops::MlpLayer {
                w: d.put(&w, false),
                b: if l == 1 { 0 } else { d.put(&b, false) },
                inputs: k as u32,
                outputs: n as u32,
                relu,
            });
            host.push((w, b, relu));
        }
        Net { layers, host }
    }
    /// A zeroed workspace for `rows` rows, and its size.
    fn workspace(&self, d: &Dev, rows: usize) -> (u64, u64) {
        let bytes = ops::mlp_workspace_bytes(rows as u32, &self.layers);
        let ws = d.p.alloc(bytes).unwrap();
        // SAFETY: a live allocation of `bytes` bytes, kept until the stream is synchronized.
        unsafe { graphcore_core::set_async(&d.s, ws, 0, bytes as usize) }.unwrap();
        (ws, bytes)
    }
    /// `ops::mlp`'s calls for `rows` rows of `x` into `y` on the workspace
    /// `ws` (address, bytes), in `form`.
    fn mlp(
        &self,
        y: u64,
        x: u64,
        ws: (u64, u64),
        rows: usize,
        form: ops::MlpForm,
        sms: u32,
    ) -> Vec<graphcore_core::kernels::Call> {
        ops::mlp(
            y,
            x,
            ws.0,
            ws.1,
            rows as u32,
            &self.layers,
            form,
            false,
            sms,
            false,
        )
        .unwrap()
    }
    fn free(&self, d: &Dev) {
        for l in &self.layers {
            d.p.free(l.w).unwrap();
            if l.b != 0 {
                d.p.free(l.b).unwrap();
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mlp_matches_float64_and_the_per_layer_launches() {
    let d = Dev::new();
    let seed = seed();
    let nets: [&[usize]; 5] = [
        &[1024, 512, 256, 10],
        &[256, 4096, 256],
        &[100, 37, 7, 3, 5, 9],
        &[64, 64],
        &[2048, 1024, 1024, 512, 128],
    ];
    for widths in nets {
        let net = Net::new(&d, seed ^ widths.len() as u64, widths);
        for rows in [1usize, 3, 4, 16, 32, 64, 65, 100] {
            let x = random(seed ^ rows as u64, rows * widths[0]);
            let xb = d.put(&x, false);
            let out_n = rows * widths[widths.len() - 1];
            let (ws, bytes) = net.workspace(&d, rows);
            let y = d.poisoned(out_n, false);
            let calls = net.mlp(y, xb, (ws, bytes), rows, ops::MlpForm::FusedAlways, d.sms);
            let fused = calls.iter().all(|c| c.cooperative);
            if fused {
                assert_eq!(
                    calls.len(),
                    net.layers.len().div_ceil(ops::MLP_FUSED_LAYERS)
                );
            } else {
                assert_eq!(calls.len(), net.layers.len());
            }
            if rows == 1
                || widths == [1024, 512, 256, 10] && rows <= ops::MLP_FUSED_MAX_ROWS as usize
            {
                assert!(fused, "{widths:?} rows={rows} runs fused");
            }
            // GC_MLP_FUSED's form: fused exactly where that pays.
            let pays = net
                .mlp(y, xb, (ws, bytes), rows, ops::MlpForm::Fused, d.sms)
                .iter()
                .all(|c| c.cooperative);
            assert_eq!(pays, ops::mlp_fusion_pays(rows as u32, &net.layers, false));
            for c in calls {
                d.run(Ok(c));
            }
            let got = d.get(y, out_n);
            let e = rel_err(&got, &mlp_ref(&x, &net.host, widths, rows));
            assert!(
                e <= 1e-5,
                "mlp {widths:?} rows={rows}: rel err {e:e} (seed {seed})"
            );
            // The default form (one launch per layer) against float64 too.
            let y3 = d.poisoned(out_n, false);
            for c in net.mlp(y3, xb, (ws, bytes), rows, ops::MlpForm::PerLayer, d.sms) {
                assert!(!c.cooperative);
                d.run(Ok(c));
            }
            let e = rel_err(&d.get(y3, out_n), &mlp_ref(&x, &net.host, widths, rows));
            assert!(
                e <= 1e-5,
                "mlp per layer {widths:?} rows={rows}: rel err {e:e} (seed {seed})"
            );
            d.p.free(y3).unwrap();
            // Again (the epoch advanced: the first run's tagged slots must
            // not be taken for this one's), after a one-row run on the same
            // workspace (its intermediates at other offsets): the same bits.
            for r in [1, rows] {
                for c in net.mlp(y, xb, (ws, bytes), r, ops::MlpForm::FusedAlways, d.sms) {
                    d.run(Ok(c));
                }
            }
            let again = d.get(y, out_n);
            assert!(got
                .iter()
                .zip(&again)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
            if fused {
                let y2 = d.poisoned(out_n, false);
                for c in ops::mlp_unfused(y2, xb, ws, bytes, rows as u32, &net.layers, d.sms, false)
                    .unwrap()
                {
                    assert!(!c.cooperative);
                    d.run(Ok(c));
                }
                let unfused = d.get(y2, out_n);
                assert!(
                    got.iter()
                        .zip(&unfused)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "mlp {widths:?} rows={rows}: fused and per-layer outputs differ"
                );
                d.p.free(y2).unwrap();
            }
            for b in [xb, ws, y] {
                d.p.free(b).unwrap();
            }
        }
        net.free(&d);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mlp_captured_is_one_node_and_replays_bitwise() {
    let d = Dev::new();
    let seed = seed();
    let widths = [1024usize, 512, 256, 10];
    let net = Net::new(&d, seed, &widths);
    for rows in [1usize, 4, ops::MLP_FUSED_MAX_ROWS as usize] {
        let x = random(seed ^ rows as u64, rows * widths[0]);
        let xb = d.put(&x, false);
        let out_n = rows * 10;
        let (ws, bytes) = net.workspace(&d, rows);
        let y = d.poisoned(out_n, false);
        for c in net.mlp(y, xb, (ws, bytes), rows, ops::MlpForm::FusedAlways, d.sms) {
            d.run(Ok(c));
        }
        let eager = d.get(y, out_n);
        let y2 = d.poisoned(out_n, false);
        graphcore_core::begin_capture(&d.s, None, CaptureMode::ThreadLocal).unwrap();
        for c in net.mlp(y2, xb, (ws, bytes), rows, ops::MlpForm::FusedAlways, d.sms) {
            d.run(Ok(c));
        }
        let g = graphcore_core::end_capture(&d.s).unwrap();
        assert_eq!(
            g.node_count().unwrap(),
            1,
            "a 3-layer MLP captures as one kernel node"
        );
        // In an explicitly built graph too, as a child graph.
        let built = graphcore_core::Graph::new(d.s.context()).unwrap();
        built.add_child(&g, &[]).unwrap();
        for graph in [&g, &built] {
            let e = Exec::new(graph, 0).unwrap();
            for _ in 0..3 {
                e.launch(&d.s).unwrap();
                let got = d.get(y2, out_n);
                assert!(
                    eager
                        .iter()
                        .zip(&got)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "rows={rows}: a replay differs from the eager run"
                );
            }
        }
        for b in [xb, ws, y, y2] {
            d.p.free(b).unwrap();
        }
    }
    net.free(&d);
}
