//! The fused training step of a linear layer (`ops::linear_mse_step`, C
//! `gc_op_linear_mse_step`): against a float64 reference, bitwise against
//! the unfused operations (linear, mse, weight SGD, bias SGD), as two graph
//! nodes, and bitwise deterministic over replays.

use super::*;
use graphcore_core::kernels::ops::{self, LinearMseStep};
use graphcore_core::kernels::{Call, SizeError};
use graphcore_core::{launch_op, CaptureMode, Exec};

const LR: f32 = 1e-3;

/// A linear layer and its batch on the device, with host copies.
struct Layer {
    s: Stream,
    p: Pool,
    sms: u32,
    rows: usize,
    inputs: usize,
    outputs: usize,
    bias: bool,
    w0: Vec<f32>,
    b0: Vec<f32>,
    x: Vec<f32>,
    t: Vec<f32>,
    xd: u64,
    td: u64,
}

/// One trainable copy of the parameters with its loss and workspace.
struct Params {
    w: u64,
    b: u64,
    loss: u64,
    ws: u64,
    ws_bytes: u64,
    /// Unfused path only: the forward output and dY.
    pred: u64,
    grad: u64,
}

impl Layer {
    fn new(seed: u64, rows: usize, inputs: usize, outputs: usize, bias: bool) -> Layer {
        let (c, s, p) = setup();
        let scale = |v: Vec<f32>, a: f32| v.into_iter().map(|x| x * a).collect::<Vec<f32>>();
        let w0 = scale(random(seed, outputs * inputs), 1.0 / (inputs as f32).sqrt());
        let b0 = scale(random(seed ^ 1, outputs), 1.0 / (inputs as f32).sqrt());
        let x = scale(random(seed ^ 2, rows * inputs), 0.1);
        let t = random(seed ^ 3, rows * outputs);
        let put = |v: &[f32]| {
            let d = p.alloc(v.len() as u64 * 4).unwrap();
            upload(&s, d, v);
            d
        };
        let (xd, td) = (put(&x), put(&t));
        Layer {
            sms: c.sm_count(),
            s,
            p,
            rows,
            inputs,
            outputs,
            bias,
            w0,
            b0,
            x,
            t,
            xd,
            td,
        }
    }

    fn params(&self) -> Params {
        let put = |v: &[f32]| {
            let d = self.p.alloc(v.len() as u64 * 4).unwrap();
            upload(&self.s, d, v);
            d
        };
        let ws_bytes = ops::linear_mse_step_workspace_bytes(
            self.rows as u32,
            self.inputs as u32,
            self.outputs as u32,
            self.sms,
            false,
        )
        .max(ops::mse_workspace_bytes(
            (self.rows * self.outputs) as u64,
            self.sms,
        ));
        let ws = self.p.alloc(ws_bytes).unwrap();
        // SAFETY: a live allocation of ws_bytes bytes of this test.
        unsafe { graphcore_core::set_async(&self.s, ws, 0, ws_bytes as usize) }.unwrap();
        let n = (self.rows * self.outputs) as u64 * 4;
        Params {
            w: put(&self.w0),
            b: if self.bias { put(&self.b0) } else { 0 },
            loss: self.p.alloc(4).unwrap(),
            ws,
            ws_bytes,
            pred: self.p.alloc(n).unwrap(),
            grad: self.p.alloc(n).unwrap(),
        }
    }

    fn run(&self, calls: Result<Vec<Call>, SizeError>) {
        for c in calls.unwrap() {
            // SAFETY: every buffer is a live allocation of this test holding
            // the elements the step reads and writes.
            unsafe { launch_op(&self.s, Ok(c)) }.unwrap();
        }
    }

    /// One fused step on `p`.
    fn fused(&self, p: &Params) {
        let step = LinearMseStep {
            w: p.w,
            b: p.b,
            x: self.xd,
            target: self.td,
            loss: p.loss,
            rows: self.rows as u32,
            inputs: self.inputs as u32,
            outputs: self.outputs as u32,
            grad_scale: 1.0,
            lr: LR,
        };
        self.run(ops::linear_mse_step(
            &step, p.ws, p.ws_bytes, self.sms, false,
        ));
    }

    /// One step on `p` with the four unfused operations.
    fn unfused(&self, p: &Params) {
        let (m, n, k, sms) = (
            self.rows as u32,
            self.outputs as u32,
            self.inputs as u32,
            self.sms,
        );
        let calls = vec![
            ops::linear(p.pred, self.xd, p.w, p.b, m, n, k, false, sms, false).unwrap(),
            ops::mse(
                p.loss,
                p.grad,
                p.pred,
                self.td,
                m as u64 * n as u64,
                1.0,
                p.ws,
                p.ws_bytes,
                sms,
            )
            .unwrap(),
            ops::linear_weight_sgd(p.w, p.grad, self.xd, m, n, k, LR, sms).unwrap(),
        ];
        let mut calls = calls;
        if self.bias {
            calls.push(ops::bias_sgd(p.b, p.grad, m, n, LR, sms).unwrap());
        }
        self.run(Ok(calls));
    }

    /// (W, b, loss) of `p`.
    fn state(&self, p: &Params) -> (Vec<f32>, Vec<f32>, f32) {
        let w = download(&self.s, p.w, self.outputs * self.inputs);
        let b = if self.bias {
            download(&self.s, p.b, self.outputs)
        } else {
            Vec::new()
        };
        (w, b, download(&self.s, p.loss, 1)[0])
    }

    /// Float64 step from the initial parameters: (W', b', loss).
    fn reference(&self) -> (Vec<f64>, Vec<f64>, f64) {
        let (m, n, k) = (self.rows, self.outputs, self.inputs);
        let mut dy = vec![0f64; m * n];
        let mut loss = 0f64;
        for i in 0..m {
            for j in 0..n {
                let mut p = if self.bias { self.b0[j] as f64 } else { 0.0 };
                for r in 0..k {
                    p += self.x[i * k + r] as f64 * self.w0[j * k + r] as f64;
                }
                let d = p - self.t[i * n + j] as f64;
                loss += d * d;
                dy[i * n + j] = 2.0 * d;
            }
        }
        let lr = LR as f64;
        let mut w = vec![0f64; n * k];
        for j in 0..n {
            for r in 0..k {
                let g: f64 = (0..m)
                    .map(|i| dy[i * n + j] * self.x[i * k + r] as f64)
                    .sum();
                w[j * k + r] = self.w0[j * k + r] as f64 - lr * g;
            }
        }
        let b = if self.bias {
            (0..n)
                .map(|j| self.b0[j] as f64 - lr * (0..m).map(|i| dy[i * n + j]).sum::<f64>())
                .collect()
        } else {
            Vec::new()
        };
        (w, b, loss)
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// ‖got − want‖ / ‖want − base‖: the error relative to the size of the update.
fn update_err(got: &[f32], want: &[f64], base: &[f32]) -> f64 {
    let num: f64 = got
        .iter()
        .zip(want)
        .map(|(&g, &w)| (g as f64 - w).powi(2))
        .sum();
    let den: f64 = want
        .iter()
        .zip(base)
        .map(|(&w, &b)| (w - b as f64).powi(2))
        .sum();
    (num / den.max(1e-300)).sqrt()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_mse_step_matches_float64_and_the_unfused_ops() {
    let seed = seed();
    // The notes' step (its update on the staged weight tile 3), odd sizes,
    // no bias, and more rows than the fused forward takes (three launches).
    for (rows, inputs, outputs, bias) in [
        (64, 1024, 1024, true),
        (40, 1000, 200, true),
        (5, 37, 13, true),
        (33, 100, 70, false),
        (300, 64, 40, true),
    ] {
        let l = Layer::new(seed ^ rows as u64, rows, inputs, outputs, bias);
        let (fused, plain) = (l.params(), l.params());
        l.fused(&fused);
        l.unfused(&plain);
        let (w1, b1, loss1) = l.state(&fused);
        let (w2, b2, loss2) = l.state(&plain);
        let what = format!("{rows}x{inputs}->{outputs} bias={bias} (seed {seed})");
        assert_eq!(
            bits(&w1),
            bits(&w2),
            "{what}: W differs from the unfused ops"
        );
        assert_eq!(
            bits(&b1),
            bits(&b2),
            "{what}: b differs from the unfused ops"
        );
        assert!(
            ((loss1 - loss2) / loss2).abs() <= 1e-5,
            "{what}: loss {loss1} vs unfused {loss2}"
        );
        let (wr, br, lr) = l.reference();
        assert!(
            ((loss1 as f64 - lr) / lr).abs() <= 1e-5,
            "{what}: loss {loss1} vs float64 {lr}"
        );
        let e = update_err(&w1, &wr, &l.w0);
        assert!(e <= 1e-3, "{what}: W update rel err {e:e}");
        if bias {
            let e = update_err(&b1, &br, &l.b0);
            assert!(e <= 1e-3, "{what}: b update rel err {e:e}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_mse_step_is_two_nodes_and_replays_bitwise() {
    let seed = seed();
    let l = Layer::new(seed, 64, 1024, 1024, true);
    let (replayed, eager, unfused) = (l.params(), l.params(), l.params());
    graphcore_core::begin_capture(&l.s, None, CaptureMode::ThreadLocal).unwrap();
    l.fused(&replayed);
    let g = graphcore_core::end_capture(&l.s).unwrap();
    assert_eq!(
        g.node_count().unwrap(),
        2,
        "the step captures as two kernel nodes"
    );
    let e = Exec::new(&g, 0).unwrap();
    for step in 1..=20 {
        e.launch(&l.s).unwrap();
        l.fused(&eager);
        l.unfused(&unfused);
        let (w1, b1, loss1) = l.state(&replayed);
        let (w2, b2, loss2) = l.state(&eager);
        let (w3, b3, loss3) = l.state(&unfused);
        assert!(
            bits(&w1) == bits(&w2) && bits(&b1) == bits(&b2) && loss1.to_bits() == loss2.to_bits(),
            "step {step}: a replay differs from the eager fused step (seed {seed})"
        );
        assert!(
            bits(&w1) == bits(&w3) && bits(&b1) == bits(&b3),
            "step {step}: the fused step's parameters differ from the unfused ops' (seed {seed})"
        );
        assert!(
            ((loss1 - loss3) / loss3).abs() <= 1e-5,
            "step {step}: loss {loss1} vs unfused {loss3} (seed {seed})"
        );
    }
}

/// A 2-layer MLP step's float64 reference from host parameters: (W1', b1',
/// W2', b2', loss).
#[allow(clippy::type_complexity)]
fn mlp2_reference(
    dims: (usize, usize, usize, usize),
    p: &[Vec<f32>; 4],
    x: &[f32],
    t: &[f32],
) -> ([Vec<f64>; 4], f64) {
    let (m, k0, k1, k2) = dims;
    let [w1, b1, w2, b2] = p;
    let mut h = vec![0f64; m * k1];
    for i in 0..m {
        for j in 0..k1 {
            let v: f64 = b1[j] as f64
                + (0..k0)
                    .map(|r| x[i * k0 + r] as f64 * w1[j * k0 + r] as f64)
                    .sum::<f64>();
            h[i * k1 + j] = v.max(0.0);
        }
    }
    let (mut dp, mut loss) = (vec![0f64; m * k2], 0f64);
    for i in 0..m {
        for j in 0..k2 {
            let v: f64 = b2[j] as f64
                + (0..k1)
                    .map(|r| h[i * k1 + r] * w2[j * k1 + r] as f64)
                    .sum::<f64>();
            let d = v - t[i * k2 + j] as f64;
            loss += d * d;
            dp[i * k2 + j] = 2.0 * d;
        }
    }
    let mut dh = vec![0f64; m * k1];
    for i in 0..m {
        for r in 0..k1 {
            if h[i * k1 + r] > 0.0 {
                dh[i * k1 + r] = (0..k2)
                    .map(|j| dp[i * k2 + j] * w2[j * k1 + r] as f64)
                    .sum();
            }
        }
    }
    let lr = LR as f64;
    let update = |w: &[f32],
                  b: &[f32],
                  dy: &[f64],
                  input: &dyn Fn(usize, usize) -> f64,
                  n: usize,
                  k: usize| {
        let nw = (0..n * k)
            .map(|e| {
                let (j, r) = (e / k, e % k);
                w[e] as f64 - lr * (0..m).map(|i| dy[i * n + j] * input(i, r)).sum::<f64>()
            })
            .collect();
        let nb = (0..n)
            .map(|j| b[j] as f64 - lr * (0..m).map(|i| dy[i * n + j]).sum::<f64>())
            .collect();
        (nw, nb)
    };
    let (nw2, nb2) = update(w2, b2, &dp, &|i, r| h[i * k1 + r], k2, k1);
    let (nw1, nb1) = update(w1, b1, &dh, &|i, r| x[i * k0 + r] as f64, k1, k0);
    ([nw1, nb1, nw2, nb2], loss)
}

/// One 2-layer MLP on the device: parameters (w1, b1, w2, b2), loss, workspace.
struct Mlp2Params {
    p: [u64; 4],
    loss: u64,
    ws: u64,
    ws_bytes: u64,
}

fn mlp2_params(l: &Layer, host: &[Vec<f32>; 4], dims: (usize, usize, usize, usize)) -> Mlp2Params {
    let put = |v: &[f32]| {
        let d = l.p.alloc(v.len() as u64 * 4).unwrap();
        upload(&l.s, d, v);
        d
    };
    let ws_bytes =
        ops::mlp2_mse_step_workspace_bytes(dims.0 as u32, dims.2 as u32, dims.3 as u32, l.sms);
    let ws = l.p.alloc(ws_bytes).unwrap();
    // SAFETY: a live allocation of ws_bytes bytes of this test.
    unsafe { graphcore_core::set_async(&l.s, ws, 0, ws_bytes as usize) }.unwrap();
    Mlp2Params {
        p: [put(&host[0]), put(&host[1]), put(&host[2]), put(&host[3])],
        loss: l.p.alloc(4).unwrap(),
        ws,
        ws_bytes,
    }
}

fn mlp2_step(l: &Layer, q: &Mlp2Params, dims: (usize, usize, usize, usize)) {
    let step = ops::Mlp2MseStep {
        w1: q.p[0],
        b1: q.p[1],
        w2: q.p[2],
        b2: q.p[3],
        x: l.xd,
        target: l.td,
        loss: q.loss,
        rows: dims.0 as u32,
        inputs: dims.1 as u32,
        hidden: dims.2 as u32,
        outputs: dims.3 as u32,
        grad_scale: 1.0,
        lr: LR,
    };
    let clusters = l.s.context().has_clusters();
    l.run(ops::mlp2_mse_step(&step, q.ws, q.ws_bytes, l.sms, clusters));
}

fn mlp2_state(
    l: &Layer,
    q: &Mlp2Params,
    dims: (usize, usize, usize, usize),
) -> (Vec<Vec<f32>>, f32) {
    let (_, k0, k1, k2) = dims;
    let lens = [k1 * k0, k1, k2 * k1, k2];
    let p = (0..4).map(|i| download(&l.s, q.p[i], lens[i])).collect();
    (p, download(&l.s, q.loss, 1)[0])
}

/// Host parameters of a 2-layer MLP (PyTorch-like scales).
fn mlp2_host(seed: u64, k0: usize, k1: usize, k2: usize) -> [Vec<f32>; 4] {
    let scale = |v: Vec<f32>, a: usize| -> Vec<f32> {
        let s = 1.0 / (a as f32).sqrt();
        v.into_iter().map(|x| x * s).collect()
    };
    [
        scale(random(seed ^ 11, k1 * k0), k0),
        scale(random(seed ^ 12, k1), k0),
        scale(random(seed ^ 13, k2 * k1), k1),
        scale(random(seed ^ 14, k2), k1),
    ]
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mlp2_mse_step_matches_float64() {
    let seed = seed();
    // The last is past the fused form: one launch per layer operation.
    for dims in [
        (64, 1024, 512, 10),
        (5, 37, 19, 3),
        (33, 64, 128, 70),
        (64, 1024, 4096, 4096),
    ] {
        let (m, k0, k1, k2) = dims;
        // The Layer supplies x (m x k0) and the target (m x k2).
        let l = Layer::new(seed ^ m as u64, m, k0, k2, false);
        let host = mlp2_host(seed, k0, k1, k2);
        let q = mlp2_params(&l, &host, dims);
        mlp2_step(&l, &q, dims);
        let (got, loss) = mlp2_state(&l, &q, dims);
        let (want, want_loss) = mlp2_reference(dims, &host, &l.x, &l.t);
        let what = format!("{dims:?} (seed {seed})");
        assert!(
            ((loss as f64 - want_loss) / want_loss).abs() <= 1e-5,
            "{what}: loss {loss} vs float64 {want_loss}"
        );
        for (i, name) in ["W1", "b1", "W2", "b2"].iter().enumerate() {
            let e = update_err(&got[i], &want[i], &host[i]);
            assert!(e <= 1e-3, "{what}: {name} update rel err {e:e}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mlp2_mse_step_is_two_nodes_and_replays_bitwise() {
    let seed = seed();
    let dims = (64, 1024, 512, 10);
    let l = Layer::new(seed, dims.0, dims.1, dims.3, false);
    let host = mlp2_host(seed, dims.1, dims.2, dims.3);
    let (replayed, eager) = (mlp2_params(&l, &host, dims), mlp2_params(&l, &host, dims));
    graphcore_core::begin_capture(&l.s, None, CaptureMode::ThreadLocal).unwrap();
    mlp2_step(&l, &replayed, dims);
    let g = graphcore_core::end_capture(&l.s).unwrap();
    assert_eq!(
        g.node_count().unwrap(),
        2,
        "the step captures as two kernel nodes"
    );
    let e = Exec::new(&g, 0).unwrap();
    let mut first = None;
    for step in 1..=10 {
        e.launch(&l.s).unwrap();
        mlp2_step(&l, &eager, dims);
        let (a, la) = mlp2_state(&l, &replayed, dims);
        let (b, lb) = mlp2_state(&l, &eager, dims);
        let same = a.iter().zip(&b).all(|(p, q)| bits(p) == bits(q));
        assert!(
            same && la.to_bits() == lb.to_bits(),
            "step {step}: a replay differs from the eager step (seed {seed})"
        );
        let first_loss = *first.get_or_insert(la);
        assert!(
            la <= first_loss,
            "step {step}: the loss rose ({first_loss} -> {la})"
        );
    }
}

/// Both fused training steps and the unfused linear step, eager and
/// replayed, give bitwise the same parameters and losses over several
/// steps with programmatic launches on and off (on compute capability 9.0:
/// each step's second launch waits on its first through a programmatic
/// edge, and the next step's first on the previous update).
#[test]
#[ignore = "needs a CUDA GPU"]
fn training_steps_are_bitwise_equal_with_and_without_programmatic_launches() {
    use super::pdl::with_pdl;
    let seed = seed();
    const STEPS: usize = 5;
    let l = Layer::new(seed, 64, 1024, 1024, true);
    let linear = |on: bool, captured: bool, fused: bool| {
        with_pdl(on, || {
            let p = l.params();
            let step = |p: &Params| {
                if fused {
                    l.fused(p)
                } else {
                    l.unfused(p)
                }
            };
            if captured {
                graphcore_core::begin_capture(&l.s, None, CaptureMode::ThreadLocal).unwrap();
                for _ in 0..STEPS {
                    step(&p);
                }
                let e = Exec::new(&graphcore_core::end_capture(&l.s).unwrap(), 0).unwrap();
                e.launch(&l.s).unwrap();
            } else {
                for _ in 0..STEPS {
                    step(&p);
                }
            }
            let (w, b, loss) = l.state(&p);
            (bits(&w), bits(&b), loss.to_bits())
        })
    };
    for fused in [true, false] {
        let want = linear(false, false, fused);
        for (on, captured) in [(true, false), (false, true), (true, true)] {
            assert!(
                linear(on, captured, fused) == want,
                "linear step (fused {fused}), programmatic {on}, captured {captured} (seed {seed})"
            );
        }
    }
    let dims = (64, 1024, 512, 10);
    let l = Layer::new(seed, dims.0, dims.1, dims.3, false);
    let host = mlp2_host(seed, dims.1, dims.2, dims.3);
    let mlp2 = |on: bool, captured: bool| {
        with_pdl(on, || {
            let q = mlp2_params(&l, &host, dims);
            if captured {
                graphcore_core::begin_capture(&l.s, None, CaptureMode::ThreadLocal).unwrap();
                for _ in 0..STEPS {
                    mlp2_step(&l, &q, dims);
                }
                let e = Exec::new(&graphcore_core::end_capture(&l.s).unwrap(), 0).unwrap();
                e.launch(&l.s).unwrap();
            } else {
                for _ in 0..STEPS {
                    mlp2_step(&l, &q, dims);
                }
            }
            let (p, loss) = mlp2_state(&l, &q, dims);
            (
                p.iter().map(|v| bits(v)).collect::<Vec<_>>(),
                loss.to_bits(),
            )
        })
    };
    let want = mlp2(false, false);
    for (on, captured) in [(true, false), (false, true), (true, true)] {
        assert!(
            mlp2(on, captured) == want,
            "2-layer MLP step, programmatic {on}, captured {captured} (seed {seed})"
        );
    }
}
