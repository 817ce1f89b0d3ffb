//! The tiled GEMMs against float64: every f32 tile that sums an output in
//! one thread (gc_gemm_f32's tiles 0 and 1 for every transpose, and for
//! the linear layout also gc_gemm_wide_f32's tiles 0 and 1,
//! gc_gemm_128x256_f32's and gc_gemm_mid_f32's) gives the same bits, the split-K tiles (gc_gemm_f32's
//! tile 2, gc_gemm_wide_f32's tile 2) the same bits as each other, and the
//! TF32 path (gc_gemm_tf32, `ops::linear_tf32`) stays within the TF32
//! rounding bound. The cluster split-K kernel (gc_linear_cluster_f32,
//! compute capability 9.0) against float64 at every cluster size, run
//! twice and replayed from a captured graph bit for bit, its tile 3 (the
//! cp.async pipeline) with tile 2's bits, and tiles 0 and 2 in the plain
//! layout (the input gradients `ops::linear_backward_input` gives it).

use super::*;
use graphcore_core::kernels::{args, ops, Call, Kernel};
use graphcore_core::launch_op;

struct Dev {
    s: Stream,
    p: Pool,
    sms: u32,
    cc: (i32, i32),
}

impl Dev {
    fn new() -> Dev {
        let c = ctx();
        Dev {
            s: Stream::new(&c).unwrap(),
            p: pool(&c),
            sms: c.sm_count(),
            cc: c.compute_capability(),
        }
    }
    /// `values` on the device, starting one float past a 16-byte boundary
    /// when `shift` (scalar-load paths).
    fn put(&self, values: &[f32], shift: bool) -> u64 {
        let b = self.p.alloc((values.len() as u64 + 1) * 4).unwrap() + if shift { 4 } else { 0 };
        upload(&self.s, b, values);
        b
    }
    /// `n` floats with every bit set (NaN), so unwritten outputs show.
    fn poisoned(&self, n: usize) -> u64 {
        let b = self.p.alloc(n as u64 * 4).unwrap();
        // SAFETY: a live allocation of n floats, kept until the stream is synchronized.
        unsafe { graphcore_core::set_async(&self.s, b, 0xff, n * 4) }.unwrap();
        b
    }
    fn run(&self, call: Call) -> &Self {
        // SAFETY: the buffers are live device allocations of this test holding the
        // elements the kernel reads and writes.
        unsafe { launch_op(&self.s, Ok(call)) }.unwrap();
        self
    }
    fn get(&self, b: u64, n: usize) -> Vec<f32> {
        download(&self.s, b, n)
    }
}

/// One GEMM problem: C (m x n) = act(op(A) . op(B) + bias), and its float64
/// reference with the sum of |products| per output (the rounding scale).
struct Problem {
    m: usize,
    n: usize,
    k: usize,
    ta: bool,
    tb: bool,
    relu: bool,
    a: Vec<f32>,
    b: Vec<f32>,
    bias: Vec<f32>,
}

impl Problem {
    fn new(seed: u64, m: usize, n: usize, k: usize, ta: bool, tb: bool, relu: bool) -> Problem {
        Problem {
            m,
            n,
            k,
            ta,
            tb,
            relu,
            a: random(seed ^ 0xa, m * k),
            b: random(seed ^ 0xb, n * k)
                .iter()
                .map(|v| v / (k as f32).sqrt())
                .collect(),
            bias: random(seed ^ 0xc, n),
        }
    }
    fn at(&self, i: usize, r: usize) -> f64 {
        (if self.ta {
            self.a[r * self.m + i]
        } else {
            self.a[i * self.k + r]
        }) as f64
    }
    fn bt(&self, r: usize, j: usize) -> f64 {
        (if self.tb {
            self.b[j * self.k + r]
        } else {
            self.b[r * self.n + j]
        }) as f64
    }
    /// (reference, sum of |a b| + |bias|) per output.
    fn reference(&self) -> (Vec<f64>, Vec<f64>) {
        let (mut y, mut s) = (vec![0.0; self.m * self.n], vec![0.0; self.m * self.n]);
        for i in 0..self.m {
            for j in 0..self.n {
                let (mut acc, mut mag) = (self.bias[j] as f64, (self.bias[j] as f64).abs());
                for r in 0..self.k {
                    let p = self.at(i, r) * self.bt(r, j);
                    acc += p;
                    mag += p.abs();
                }
                y[i * self.n + j] = if self.relu { acc.max(0.0) } else { acc };
                s[i * self.n + j] = mag;
            }
        }
        (y, s)
    }
    fn flags(&self) -> u32 {
        self.ta as u32 | (self.tb as u32) << 1 | (self.relu as u32) << 2
    }
    fn ld(&self) -> (u32, u32) {
        let lda = if self.ta { self.m } else { self.k };
        let ldb = if self.tb { self.k } else { self.n };
        (lda as u32, ldb as u32)
    }
}

/// The worst |out - ref| / scale over the outputs (NaN: unwritten).
fn worst(out: &[f32], want: &[f64], scale: &[f64]) -> f64 {
    out.iter()
        .zip(want)
        .zip(scale)
        .map(|((&o, &w), &s)| {
            if o.is_finite() {
                (o as f64 - w).abs() / s.max(1e-30)
            } else {
                f64::INFINITY
            }
        })
        .fold(0.0, f64::max)
}

/// A `gc_gemm_f32`-shaped launch of `kernel` with `tile` (block tile tm x tn).
fn launch(p: &Problem, kernel: Kernel, tile: u32, tm: usize, tn: usize, bufs: [u64; 4]) -> Call {
    let [c, a, b, bias] = bufs;
    let (lda, ldb) = p.ld();
    let (m, n, k) = (p.m as u32, p.n as u32, p.k as u32);
    let grid = [(p.m.div_ceil(tm) * p.n.div_ceil(tn)) as u32, 1, 1];
    macro_rules! gemm {
        ($ty:ident) => {
            Call::new(
                args::$ty {
                    c,
                    a,
                    b,
                    bias,
                    m,
                    n,
                    k,
                    lda,
                    ldb,
                    ldc: n,
                    flags: p.flags(),
                    alpha: 1.0,
                    beta: 0.0,
                    tile,
                },
                grid,
                [256, 1, 1],
                0,
            )
        };
    }
    match kernel {
        Kernel::GemmWide => gemm!(GemmWide),
        Kernel::Gemm128x256 => gemm!(Gemm128x256),
        Kernel::GemmMid => gemm!(GemmMid),
        Kernel::GemmTf32 => gemm!(GemmTf32),
        Kernel::LinearCluster => gemm!(LinearCluster),
        _ => gemm!(Gemm),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_tiles_match_float64_and_each_other_bitwise() {
    let d = Dev::new();
    let seed = seed();
    // (kernel, tile, block tile, summation class: 0 one thread, 1 four K slices)
    let tiles = [
        (Kernel::Gemm, 0, 128, 128, 0),
        (Kernel::Gemm, 1, 64, 64, 0),
        (Kernel::GemmWide, 0, 128, 256, 0),
        (Kernel::GemmWide, 1, 128, 128, 0),
        (Kernel::Gemm128x256, 0, 128, 256, 0),
        (Kernel::GemmMid, 0, 64, 128, 0),
        (Kernel::Gemm, 2, 32, 32, 1),
        (Kernel::GemmWide, 2, 64, 64, 1),
    ];
    for (m, n, k) in [
        (300usize, 260usize, 1000usize),
        (513, 130, 77),
        (257, 1024, 256),
    ] {
        for (ta, tb) in [(false, true), (false, false), (true, false), (true, true)] {
            let shift = k % 4 != 0;
            let p = Problem::new(seed ^ (m * n + k) as u64, m, n, k, ta, tb, (m + k) % 2 == 1);
            let (want, scale) = p.reference();
            let (a, b, bias) = (
                d.put(&p.a, shift),
                d.put(&p.b, shift),
                d.put(&p.bias, false),
            );
            let mut first: [Option<Vec<f32>>; 2] = [None, None];
            for &(kernel, tile, tm, tn, class) in &tiles {
                if kernel != Kernel::Gemm && (ta, tb) != (false, true) {
                    continue; // the linear layout's kernels
                }
                let c = d.poisoned(m * n);
                let out = d
                    .run(launch(&p, kernel, tile, tm, tn, [c, a, b, bias]))
                    .get(c, m * n);
                let e = worst(&out, &want, &scale);
                assert!(
                    e <= 1e-5,
                    "{kernel:?} tile {tile} m={m} n={n} k={k} ta={ta} tb={tb}: error {e:e} (seed {seed})"
                );
                match &first[class] {
                    None => first[class] = Some(out),
                    Some(f) => assert!(
                        f.iter().zip(&out).all(|(x, y)| x.to_bits() == y.to_bits()),
                        "{kernel:?} tile {tile} m={m} n={n} k={k} ta={ta} tb={tb}: bits differ from \
                         gc_gemm_f32's tile of the same summation (seed {seed})"
                    ),
                }
                d.p.free(c).unwrap();
            }
            for buf in [a, b, bias] {
                d.p.free(buf - buf % 16).unwrap();
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_tf32_is_within_the_tf32_bound_and_deterministic() {
    let d = Dev::new();
    if d.cc.0 < 8 {
        eprintln!(
            "compute capability {}.{}: no TF32 tensor cores, skipped",
            d.cc.0, d.cc.1
        );
        return;
    }
    let seed = seed();
    // Each operand rounded to 10 mantissa bits (to nearest): a product is
    // off by at most about 2^-10 of its size; the f32 sums add little.
    let bound = 1.5 * (2.0f64).powi(-10);
    for (m, n, k) in [
        (257usize, 130usize, 77usize),
        (300, 1000, 1024),
        (1024, 512, 1024),
        (2048, 256, 256),
    ] {
        let relu = (m + n) % 2 == 0;
        let p = Problem::new(seed ^ (m * n + k) as u64, m, n, k, false, true, relu);
        let (want, scale) = p.reference();
        for shift in [false, true] {
            let (x, w, b) = (
                d.put(&p.a, shift),
                d.put(&p.b, shift),
                d.put(&p.bias, false),
            );
            let (y1, y2) = (d.poisoned(m * n), d.poisoned(m * n));
            let call = || {
                ops::linear_tf32(
                    y1, x, w, b, m as u32, n as u32, k as u32, relu, d.sms, false,
                )
                .unwrap()
            };
            assert_eq!(call().kernel, Kernel::GemmTf32);
            d.run(call());
            d.run(
                ops::linear_tf32(
                    y2, x, w, b, m as u32, n as u32, k as u32, relu, d.sms, false,
                )
                .unwrap(),
            );
            let (o1, o2) = (d.get(y1, m * n), d.get(y2, m * n));
            let e = worst(&o1, &want, &scale);
            assert!(
                e <= bound,
                "tf32 m={m} n={n} k={k} shift={shift}: error {e:e} > {bound:e} (seed {seed})"
            );
            // The tensor cores ran: f32 sums would be far closer.
            assert!(
                e > 1e-6,
                "tf32 m={m} n={n} k={k}: error {e:e} looks like f32"
            );
            assert!(
                o1.iter().zip(&o2).all(|(p, q)| p.to_bits() == q.to_bits()),
                "tf32 m={m} n={n} k={k}: two runs differ"
            );
            for buf in [x, w, b] {
                d.p.free(buf - buf % 16).unwrap();
            }
            for buf in [y1, y2] {
                d.p.free(buf).unwrap();
            }
        }
    }
}

/// The cluster kernel's tiles and cluster sizes on odd shapes.
#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_cluster_matches_float64_and_replays_bitwise() {
    linear_cluster_checks(ClusterShapes::Odd);
}

/// Every tile in clusters of 2 and 3 on one tiny shape: small enough for
/// racecheck, which `stage/run.sh` runs over this test.
#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_cluster_tiny_for_racecheck() {
    linear_cluster_checks(ClusterShapes::Tiny);
}

/// The shapes `ops::linear` gives the cluster kernel, and `add_op`'s
/// refusal of a cluster launch.
#[test]
#[ignore = "needs a CUDA GPU"]
fn linear_cluster_is_what_ops_linear_takes_for_long_reductions() {
    linear_cluster_checks(ClusterShapes::Ops);
}

/// Which shapes [`linear_cluster_checks`] runs.
#[derive(Clone, Copy, PartialEq)]
enum ClusterShapes {
    /// Every tile and cluster size by hand on odd shapes.
    Odd,
    /// One tiny shape, clusters of 2 and 3.
    Tiny,
    /// The shapes `ops::linear` picks the kernel for.
    Ops,
}

fn linear_cluster_checks(shapes: ClusterShapes) {
    let d = Dev::new();
    if d.cc.0 < 9 {
        eprintln!(
            "compute capability {}.{}: no thread-block clusters, skipped",
            d.cc.0, d.cc.1
        );
        return;
    }
    let seed = seed();
    let check = |p: &Problem, call: &dyn Fn(u64, u64, u64, u64) -> Call, what: &str| {
        let (want, scale) = p.reference();
        let (m, n) = (p.m, p.n);
        let shift = !p.k.is_multiple_of(4);
        let (a, b, bias) = (
            d.put(&p.a, shift),
            d.put(&p.b, shift),
            d.put(&p.bias, false),
        );
        let (c1, c2) = (d.poisoned(m * n), d.poisoned(m * n));
        let out = d.run(call(c1, a, b, bias)).get(c1, m * n);
        let e = worst(&out, &want, &scale);
        assert!(e <= 1e-5, "{what}: error {e:e} (seed {seed})");
        let again = d.run(call(c2, a, b, bias)).get(c2, m * n);
        let same = |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
        assert!(same(&out, &again), "{what}: two runs differ (seed {seed})");
        // Captured on a stream (the cluster dimension stays on the node),
        // replayed twice.
        let c3 = d.poisoned(m * n);
        graphcore_core::begin_capture(&d.s, None, graphcore_core::CaptureMode::ThreadLocal)
            .unwrap();
        // SAFETY: the buffers are live allocations of this test, kept while the graph runs.
        unsafe { launch_op(&d.s, Ok(call(c3, a, b, bias))) }.unwrap();
        let g = graphcore_core::end_capture(&d.s).unwrap();
        let e = graphcore_core::Exec::new(&g, 0).unwrap();
        for _ in 0..2 {
            e.launch(&d.s).unwrap();
            assert!(
                same(&out, &d.get(c3, m * n)),
                "{what}: a replay differs (seed {seed})"
            );
        }
        for buf in [a, b, bias] {
            d.p.free(buf - buf % 16).unwrap();
        }
        for buf in [c1, c2, c3] {
            d.p.free(buf).unwrap();
        }
        out
    };
    // Every tile and cluster size by hand, odd shapes (K shorter than the
    // cluster's chunks, misaligned rows, partial tiles).
    let (odd, sizes): (&[(usize, usize, usize)], &[u32]) = match shapes {
        ClusterShapes::Ops => (&[], &[]),
        ClusterShapes::Tiny => (&[(67, 65, 300)], &[2, 3]),
        ClusterShapes::Odd => (
            &[(130, 130, 4097), (67, 257, 1001), (1, 5, 33), (64, 64, 20)],
            &[1, 2, 3, 8],
        ),
    };
    // The linear layout (every tile), then the plain one (C = A . B, B k x n:
    // the input gradient; tiles 0 and 2).
    for &(m, n, k) in odd {
        for tb in [true, false] {
            let p = Problem::new(
                seed ^ (m * n + k) as u64 ^ if tb { 0 } else { 0x9e },
                m,
                n,
                k,
                false,
                tb,
                (m + k + tb as usize) % 2 == 1,
            );
            let tiles: &[(u32, usize, usize)] = if tb {
                &[(0, 128, 64), (1, 64, 64), (2, 64, 64), (3, 64, 64)]
            } else {
                &[(0, 128, 64), (2, 64, 64)]
            };
            let layout = if tb { "" } else { "plain " };
            // Tile 2's outputs by cluster size: tile 3 must give their bits.
            let mut tile2 = Vec::new();
            for &(tile, tm, tn) in tiles {
                for (i, &size) in sizes.iter().enumerate() {
                    let call = |c, a, b, bias| {
                        let one = launch(&p, Kernel::LinearCluster, tile, tm, tn, [c, a, b, bias]);
                        Call {
                            grid: [one.grid[0] * size, 1, 1],
                            ..one
                        }
                        .clustered([size, 1, 1])
                    };
                    let what = format!("{layout}tile {tile} cluster {size} m={m} n={n} k={k}");
                    let out = check(&p, &call, &what);
                    match tile {
                        2 => tile2.push(out),
                        3 => assert!(
                            out.iter()
                                .zip(&tile2[i])
                                .all(|(x, y)| x.to_bits() == y.to_bits()),
                            "{what}: bits differ from tile 2's (seed {seed})"
                        ),
                        _ => {}
                    }
                }
            }
        }
    }
    if shapes != ClusterShapes::Ops {
        return;
    }
    // The input gradients `ops::linear_backward_input` gives the kernel
    // (33-256 rows with large weights): dx (m x k) = dy (m x n) . W (n x k),
    // so the problem's n is the op's k and its k the op's n; no bias.
    for (m, n, k) in [(64usize, 4096usize, 4096usize), (128, 4096, 4096)] {
        let mut p = Problem::new(seed ^ 0xd0 ^ m as u64, m, k, n, false, false, false);
        p.bias = vec![0.0; k];
        let call = |c, a, b, _bias| {
            ops::linear_backward_input(c, a, b, m as u32, n as u32, k as u32, d.sms, true).unwrap()
        };
        let at = |i: u64| i << 30;
        assert_eq!(
            call(at(1), at(2), at(3), 0).kernel,
            Kernel::LinearCluster,
            "dx m={m} n={n} k={k}"
        );
        check(
            &p,
            &call,
            &format!("ops::linear_backward_input m={m} n={n} k={k}"),
        );
    }
    // The shapes `ops::linear` gives the kernel (33-256 rows with large
    // weights; more rows where the 32 x 32 split-K tile would run).
    for (m, n, k) in [
        (64usize, 4096usize, 4096usize),
        (64, 8192, 2048),
        (128, 4096, 4096),
        (512, 512, 1024),
    ] {
        let p = Problem::new(seed ^ (m * n + k) as u64, m, n, k, false, true, false);
        let call = |c, a, b, bias| {
            ops::linear(
                c, a, b, bias, m as u32, n as u32, k as u32, false, d.sms, true,
            )
            .unwrap()
        };
        let at = |i: u64| i << 30;
        assert_eq!(
            call(at(1), at(2), at(3), 0).kernel,
            Kernel::LinearCluster,
            "m={m} n={n} k={k}"
        );
        check(&p, &call, &format!("ops::linear m={m} n={n} k={k}"));
    }
    // A graph built node by node cannot hold a cluster launch.
    let g = graphcore_core::Graph::new(d.s.context()).unwrap();
    let call = ops::linear(
        1 << 30,
        2 << 30,
        3 << 30,
        0,
        512,
        512,
        1024,
        false,
        d.sms,
        true,
    );
    // SAFETY: refused before anything is added.
    let e = unsafe { g.add_op(call, &[]) }.unwrap_err();
    assert_eq!(e.kind(), graphcore_core::ErrorKind::InvalidArgument, "{e}");
}
