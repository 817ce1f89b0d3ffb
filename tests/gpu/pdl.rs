//! Programmatic dependent launch of the built-in kernels (compute
//! capability 9.0 and a CUDA 12.3 driver; `set_programmatic_launch`, the
//! environment's `GC_PDL`): a chain of built-in ops (linear, elementwise,
//! linear with ReLU, the MLP's per-layer and fused launches) gives bitwise
//! the same results with programmatic launches on and off, eagerly,
//! captured (plain, fused, updated) and built node by node; captured with
//! them on, consecutive launches are joined by programmatic edges, except
//! into cooperative launches and GEMMs that fill the SMs (in order).

use super::*;
use graphcore_core::graph::{EdgeKind, NodeKind};
use graphcore_core::instantiate_flags::FUSE_ELEMENTWISE;
use graphcore_core::kernels::{ops, Call};
use graphcore_core::{
    launch_op, programmatic_launch, set_programmatic_launch, CaptureMode, Exec, Graph, Node,
};

/// Runs `f` with programmatic launches `on`, then puts the switch back.
pub(crate) fn with_pdl<T>(on: bool, f: impl FnOnce() -> T) -> T {
    let before = programmatic_launch();
    set_programmatic_launch(on);
    let r = f();
    set_programmatic_launch(before);
    r
}

/// The chain's network and buffers on the device.
struct Chain {
    s: Stream,
    _p: Pool,
    sms: u32,
    rows: usize,
    x: u64,
    /// (w, b) of 1024 -> 512, 512 -> 256, and the MLP's 256 -> 128 -> 10.
    params: [(u64, u64); 4],
    h1: u64,
    h2: u64,
    y: u64,
    ws: (u64, u64),
}

const WIDTHS: [usize; 5] = [1024, 512, 256, 128, 10];

impl Chain {
    fn new(seed: u64, rows: usize) -> Chain {
        let (c, s, p) = setup();
        let put = |v: &[f32]| {
            let d = p.alloc(v.len() as u64 * 4).unwrap();
            upload(&s, d, v);
            d
        };
        let params = std::array::from_fn(|l| {
            let (k, n) = (WIDTHS[l], WIDTHS[l + 1]);
            let a = 1.0 / (k as f32).sqrt();
            let w: Vec<f32> = random(seed ^ (2 * l as u64 + 1), n * k)
                .into_iter()
                .map(|v| v * a)
                .collect();
            let b: Vec<f32> = random(seed ^ (2 * l as u64 + 2), n)
                .into_iter()
                .map(|v| v * a)
                .collect();
            (put(&w), put(&b))
        });
        let x = put(&random(seed, rows * WIDTHS[0]));
        let layers = Chain::mlp_layers(&params);
        let bytes = ops::mlp_workspace_bytes(rows as u32, &layers);
        let ws = p.alloc(bytes).unwrap();
        // SAFETY: a live allocation of `bytes` bytes of this test.
        unsafe { graphcore_core::set_async(&s, ws, 0, bytes as usize) }.unwrap();
        Chain {
            sms: c.sm_count(),
            h1: p.alloc((rows * WIDTHS[1]) as u64 * 4).unwrap(),
            h2: p.alloc((rows * WIDTHS[2]) as u64 * 4).unwrap(),
            y: p.alloc((rows * WIDTHS[4]) as u64 * 4).unwrap(),
            ws: (ws, bytes),
            s,
            _p: p,
            rows,
            x,
            params,
        }
    }

    fn mlp_layers(params: &[(u64, u64); 4]) -> [ops::MlpLayer; 2] {
        std::array::from_fn(|i| ops::MlpLayer {
            w: params[2 + i].0,
            b: params[2 + i].1,
            inputs: WIDTHS[2 + i] as u32,
            outputs: WIDTHS[3 + i] as u32,
            relu: i == 0,
        })
    }

    /// The chain's launches: linear, relu, scale, add_scalar (a fusable
    /// run), linear with ReLU, then the MLP in `form`.
    fn calls(&self, form: ops::MlpForm) -> Vec<Call> {
        let (m, sms) = (self.rows as u32, self.sms);
        let n1 = (self.rows * WIDTHS[1]) as u64;
        let [(w1, b1), (w2, b2), ..] = self.params;
        let (k0, k1, k2) = (WIDTHS[0] as u32, WIDTHS[1] as u32, WIDTHS[2] as u32);
        let mut calls = vec![
            ops::linear(self.h1, self.x, w1, b1, m, k1, k0, false, sms, false).unwrap(),
            ops::relu(self.h1, self.h1, n1, sms).unwrap(),
            ops::scale(self.h1, self.h1, n1, 0.5, sms).unwrap(),
            ops::add_scalar(self.h1, self.h1, n1, 0.25, sms).unwrap(),
            ops::linear(self.h2, self.h1, w2, b2, m, k2, k1, true, sms, false).unwrap(),
        ];
        let layers = Chain::mlp_layers(&self.params);
        calls.extend(
            ops::mlp(
                self.y, self.h2, self.ws.0, self.ws.1, m, &layers, form, false, sms, false,
            )
            .unwrap(),
        );
        calls
    }

    /// NaN in every output, so a result that was not written shows.
    fn poison(&self) {
        for (d, w) in [(self.h1, 1), (self.h2, 2), (self.y, 4)] {
            upload(&self.s, d, &vec![f32::NAN; self.rows * WIDTHS[w]]);
        }
    }

    /// The outputs' bits: h1, h2, y.
    fn outputs(&self) -> Vec<u32> {
        [(self.h1, 1), (self.h2, 2), (self.y, 4)]
            .iter()
            .flat_map(|&(d, w)| download(&self.s, d, self.rows * WIDTHS[w]))
            .map(f32::to_bits)
            .collect()
    }

    fn eager(&self, calls: &[Call]) -> Vec<u32> {
        self.poison();
        for c in calls {
            // SAFETY: every buffer is a live allocation of this test holding
            // what the call reads and writes.
            unsafe { launch_op(&self.s, Ok(c.clone())) }.unwrap();
        }
        self.outputs()
    }

    fn capture(&self, calls: &[Call]) -> Graph {
        graphcore_core::begin_capture(&self.s, None, CaptureMode::ThreadLocal).unwrap();
        for c in calls {
            // SAFETY: as in `eager`, for as long as the graph runs.
            unsafe { launch_op(&self.s, Ok(c.clone())) }.unwrap();
        }
        graphcore_core::end_capture(&self.s).unwrap()
    }

    /// Node by node; with `programmatic`, consecutive nodes are joined by
    /// programmatic edges (built-in kernels wait on them).
    fn build(&self, calls: &[Call], programmatic: bool) -> Graph {
        let g = Graph::new(self.s.context()).unwrap();
        let mut prev: Option<Node> = None;
        for c in calls {
            let deps: Vec<Node> = prev.filter(|_| !programmatic).into_iter().collect();
            // SAFETY: as in `eager`, for as long as the graph runs.
            let node = unsafe { g.add_op(Ok(c.clone()), &deps) }.unwrap();
            if let (Some(p), true) = (prev, programmatic) {
                g.add_programmatic_dependency(p, node).unwrap();
            }
            prev = Some(node);
        }
        g
    }

    fn replay(&self, e: &Exec) -> Vec<u32> {
        self.poison();
        e.launch(&self.s).unwrap();
        self.outputs()
    }
}

/// Every edge of `g` and its kind: (programmatic, full).
fn edge_kinds(g: &Graph) -> (usize, usize) {
    let d = g.desc().unwrap();
    let (mut prog, mut full) = (0, 0);
    for i in 0..d.len() {
        for &from in d.deps(i) {
            match d.edge_kind(from, i) {
                EdgeKind::Programmatic => prog += 1,
                EdgeKind::Full => full += 1,
                EdgeKind::LaunchOrder => panic!("a launch-order edge {from} -> {i}"),
            }
        }
    }
    (prog, full)
}

/// The kernel names of `g`'s nodes that a full edge enters.
fn full_edge_targets(g: &Graph) -> Vec<String> {
    let d = g.desc().unwrap();
    let mut out = Vec::new();
    for i in 0..d.len() {
        for &from in d.deps(i) {
            if d.edge_kind(from, i) == EdgeKind::Full {
                if let NodeKind::Kernel { name, .. } = d.node(i) {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn builtin_chains_are_bitwise_equal_with_and_without_programmatic_launches() {
    let seed = seed();
    let capable = with_pdl(true, || ctx().launches_builtins_programmatically().unwrap());
    if !capable {
        eprintln!("programmatic launches need compute capability 9.0 and CUDA 12.3: comparing plain launches only");
    }
    // 4096 rows: the GEMMs fill the SMs and launch in order (Call::in_order).
    for rows in [1usize, 4, 32, 300, 4096] {
        let ch = Chain::new(seed ^ rows as u64, rows);
        let forms: &[ops::MlpForm] = if rows <= 8 {
            &[ops::MlpForm::PerLayer, ops::MlpForm::FusedAlways]
        } else {
            &[ops::MlpForm::PerLayer]
        };
        for &form in forms {
            let calls = ch.calls(form);
            let coop = calls.iter().filter(|c| c.cooperative).count();
            // The launches a full edge must enter even with programmatic
            // launches on: cooperative ones and those marked in order.
            let ordered = calls[1..]
                .iter()
                .filter(|c| c.cooperative || c.in_order)
                .count();
            assert!(rows < 4096 || ordered > 0, "rows {rows}: no in-order GEMM");
            let what = format!("rows {rows}, {form:?} (seed {seed})");
            let want = with_pdl(false, || ch.eager(&calls));
            assert!(
                want.iter().all(|&b| !f32::from_bits(b).is_nan()),
                "{what}: NaN left"
            );
            for on in [false, true] {
                let what = format!("{what}, programmatic launches {on}");
                with_pdl(on, || {
                    assert!(ch.eager(&calls) == want, "{what}: eager");
                    let g = ch.capture(&calls);
                    let (prog, full) = edge_kinds(&g);
                    assert_eq!(prog + full, calls.len() - 1, "{what}: a chain");
                    if on && capable {
                        // Every launch but a cooperative or in-order one
                        // is programmatic.
                        assert_eq!(full, ordered, "{what}: {:?}", full_edge_targets(&g));
                        assert!(prog > 0);
                    } else {
                        assert_eq!(prog, 0, "{what}");
                    }
                    let e = Exec::new(&g, 0).unwrap();
                    for round in 0..3 {
                        assert!(ch.replay(&e) == want, "{what}: replay {round}");
                    }
                    // A second capture updates the exec in place.
                    e.update(&ch.capture(&calls)).unwrap();
                    assert!(ch.replay(&e) == want, "{what}: after update");
                    let fused = Exec::new(&g, FUSE_ELEMENTWISE).unwrap();
                    assert!(ch.replay(&fused) == want, "{what}: fused");
                    if coop == 0 {
                        let built = ch.build(&calls, on && capable);
                        assert_eq!(edge_kinds(&built).0 > 0, on && capable, "{what}");
                        let e = Exec::new(&built, 0).unwrap();
                        assert!(ch.replay(&e) == want, "{what}: built");
                        let e = Exec::new(&built, FUSE_ELEMENTWISE).unwrap();
                        assert!(ch.replay(&e) == want, "{what}: built, fused");
                    }
                });
            }
        }
    }
}

/// Many short programmatic launches in a row, replayed many times: each
/// kernel reads what the one before wrote a moment earlier (a missing
/// wait shows as a wrong sum).
#[test]
#[ignore = "needs a CUDA GPU"]
fn long_programmatic_chains_of_small_kernels_replay_exactly() {
    let (c, s, p) = setup();
    let n = 1u64 << 16;
    let (a, b) = (p.alloc(n * 4).unwrap(), p.alloc(n * 4).unwrap());
    let sms = c.sm_count();
    let mut calls = vec![ops::fill(a, n, 1.0, sms).unwrap()];
    for i in 0..64 {
        let (src, dst) = if i % 2 == 0 { (a, b) } else { (b, a) };
        calls.push(ops::add_scalar(dst, src, n, 1.0, sms).unwrap());
    }
    let run = |on: bool| {
        with_pdl(on, || {
            graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
            for call in &calls {
                // SAFETY: a and b are live allocations of n floats.
                unsafe { launch_op(&s, Ok(call.clone())) }.unwrap();
            }
            let g = graphcore_core::end_capture(&s).unwrap();
            let e = Exec::new(&g, 0).unwrap();
            for round in 0..50 {
                upload(&s, a, &vec![f32::NAN; n as usize]);
                e.launch(&s).unwrap();
                let got = download(&s, a, n as usize);
                assert!(
                    got.iter().all(|&v| v == 65.0),
                    "programmatic {on}, round {round}: {:?}",
                    got.iter().find(|&&v| v != 65.0)
                );
            }
        })
    };
    run(true);
    run(false);
}
