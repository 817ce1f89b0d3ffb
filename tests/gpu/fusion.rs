//! Fusion at instantiate: fused and unfused execs of the same graph give
//! bitwise-equal results on random chains; built and captured graphs;
//! updates and argument changes after fusion.

use super::foundation::add_one;
use super::*;
use graphcore_core::instantiate_flags::FUSE_ELEMENTWISE;
use graphcore_core::kernels::ops::{self, OP_ADD, OP_MUL, OP_RELU};
use graphcore_core::{
    launch_op, CaptureMode, ErrorKind, Exec, Function, Graph, LaunchConfig, Node,
};
use std::ffi::c_void;

/// One elementwise step of a random chain on buffer `y` (in place).
fn step(s: &Stream, r: u64, y: u64, n: u64) {
    let sms = s.context().sm_count();
    let c = ((r >> 20) % 64) as f32 / 32.0 - 1.0;
    let calls = match r % 5 {
        0 => vec![ops::scale(y, y, n, 1.0 + c / 4.0, sms)],
        1 => vec![ops::add_scalar(y, y, n, c, sms)],
        2 => vec![ops::relu(y, y, n, sms)],
        3 => vec![ops::chain(
            y,
            y,
            n,
            &[(OP_MUL, 0.75), (OP_ADD, c), (OP_RELU, 0.0)],
            sms,
        )],
        _ => vec![ops::fill(y, n, c, sms), ops::scale(y, y, n, -1.25, sms)],
    };
    for call in calls {
        // SAFETY: the buffers are live device allocations of this test holding the
        // elements the operation reads and writes.
        unsafe { launch_op(s, call) }.unwrap();
    }
}

fn lcg(r: &mut u64) -> u64 {
    *r = r
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *r >> 11
}

/// Runs `e` on `y` starting from `input`, returns the result.
fn run(e: &Exec, s: &Stream, y: u64, input: &[f32]) -> Vec<f32> {
    upload(s, y, input);
    e.launch(s).unwrap();
    download(s, y, input.len())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_chains_are_bitwise_equal_to_unfused() {
    let (c, s, p) = setup();
    let mut r = seed();
    for trial in 0..24 {
        let len = 1 + (lcg(&mut r) % 300) as usize;
        let n = [1usize, 7, 1021, 65_537][trial % 4];
        let x = p.alloc(n as u64 * 4 + 4).unwrap();
        let y = p.alloc(n as u64 * 4 + 4).unwrap();
        let input = random(r, n);
        upload(&s, x, &input);
        graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
        // SAFETY: the buffers are live device allocations of this test holding the
        // elements the operation reads and writes.
        unsafe { launch_op(&s, ops::scale(y, x, n as u64, 1.5, c.sm_count())) }.unwrap();
        for _ in 1..len {
            step(&s, lcg(&mut r), y, n as u64);
        }
        let g = graphcore_core::end_capture(&s).unwrap();
        let plain = Exec::new(&g, 0).unwrap();
        let fused = Exec::new(&g, FUSE_ELEMENTWISE).unwrap();
        let st = fused.stats().unwrap();
        assert_eq!(st.graph_nodes, g.node_count().unwrap());
        assert_eq!(st.instantiated_nodes + st.fused_away, st.graph_nodes);
        if g.node_count().unwrap() > 1 {
            assert!(
                st.fused_away > 0,
                "a chain of {} nodes fuses",
                g.node_count().unwrap()
            );
        }
        let want = run(&plain, &s, y, &vec![0.0; n]);
        let got = run(&fused, &s, y, &vec![0.0; n]);
        assert!(
            want.iter()
                .zip(&got)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "trial {trial}: {} ops over {n} floats differ fused vs unfused",
            g.node_count().unwrap()
        );
        if g.node_count().unwrap() > 1 {
            assert!(
                fused.to_dot("f").unwrap().contains("gc_chain_f32")
                    || fused.to_dot("f").unwrap().contains("gc_fused_chain")
            );
        }
        p.free(x).unwrap();
        p.free(y).unwrap();
    }
}

/// Eleven kernel nodes in a line over `n` floats at `y`: five scales
/// (gc_scale_f32, alpha 1 + i/8 for node i), the user kernel `add_one` (node
/// 5), five more scales. Fusion makes two chains of it around node 5.
pub(crate) fn scales_around_a_user_kernel(c: &Context, user: &Function, y: u64, n: usize) -> Graph {
    scales_around(c, Some(user), y, n, |_| {})
}

/// The chain of [`scales_around_a_user_kernel`] with node 5 `user`, or a
/// scale by 2 where `user` is `None`; `after_first` runs on the graph once
/// its first node is added.
pub(crate) fn scales_around(
    c: &Context,
    user: Option<&Function>,
    y: u64,
    n: usize,
    mut after_first: impl FnMut(&Graph),
) -> Graph {
    let scale = graphcore_core::Function::from_builtin(c, "gc_scale_f32").unwrap();
    let cfg = LaunchConfig {
        grid: [8, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    let g = Graph::new(c).unwrap();
    let mut prev: Option<Node> = None;
    for i in 0..11 {
        let deps: Vec<Node> = prev.into_iter().collect();
        let node = match user.filter(|_| i == 5) {
            Some(user) => {
                let (mut a0, mut a1) = (y, n as u32);
                let mut args = [
                    &mut a0 as *mut u64 as *mut c_void,
                    &mut a1 as *mut u32 as *mut c_void,
                ];
                let ucfg = LaunchConfig {
                    grid: [(n as u32).div_ceil(256), 1, 1],
                    ..cfg
                };
                // SAFETY: add_one(u64, u32).
                unsafe { g.add_kernel(user, &ucfg, args.as_mut_ptr(), &deps) }.unwrap()
            }
            None => {
                let alpha = if i == 5 { 2.0 } else { 1.0 + i as f32 / 8.0 };
                let (mut yy, mut xx, mut nn, mut a) = (y, y, n as u64, alpha);
                let mut args = [
                    &mut yy as *mut u64 as *mut c_void,
                    &mut xx as *mut u64 as *mut c_void,
                    &mut nn as *mut u64 as *mut c_void,
                    &mut a as *mut f32 as *mut c_void,
                ];
                // SAFETY: gc_scale_f32(y, x, n, alpha).
                unsafe { g.add_kernel(&scale, &cfg, args.as_mut_ptr(), &deps) }.unwrap()
            }
        };
        if i == 0 {
            after_first(&g);
        }
        prev = Some(node);
    }
    g
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn built_graphs_fuse_around_user_kernels() {
    let (c, s, p) = setup();
    let n = 4099usize;
    let y = p.alloc(n as u64 * 4).unwrap();
    let g = scales_around_a_user_kernel(&c, &add_one(&c), y, n);
    let plain = Exec::new(&g, 0).unwrap();
    let fused = Exec::new(&g, FUSE_ELEMENTWISE).unwrap();
    assert_eq!(fused.stats().unwrap().chains, 2);
    assert_eq!(fused.stats().unwrap().instantiated_nodes, 3);
    let input = random(seed(), n);
    let want = run(&plain, &s, y, &input);
    let got = run(&fused, &s, y, &input);
    assert!(want
        .iter()
        .zip(&got)
        .all(|(a, b)| a.to_bits() == b.to_bits()));

    // An argument change inside a chain updates the chain's program.
    let (mut yy, mut xx, mut nn, mut a) = (y, y, n as u64, -3.0f32);
    let mut args = [
        &mut yy as *mut u64 as *mut c_void,
        &mut xx as *mut u64 as *mut c_void,
        &mut nn as *mut u64 as *mut c_void,
        &mut a as *mut f32 as *mut c_void,
    ];
    let node = Node {
        graph: g.id(),
        index: 2,
    };
    // SAFETY: gc_scale_f32 arguments.
    unsafe { fused.set_kernel_args(node, args.as_mut_ptr()).unwrap() };
    // SAFETY: as above.
    unsafe { plain.set_kernel_args(node, args.as_mut_ptr()).unwrap() };
    let want = run(&plain, &s, y, &input);
    let got = run(&fused, &s, y, &input);
    assert!(want
        .iter()
        .zip(&got)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    // A change that breaks the chain (another buffer) is a clear error.
    let other = p.alloc(n as u64 * 4).unwrap();
    // SAFETY: args[1] points to `xx`.
    unsafe { *(args[1] as *mut u64) = other };
    // SAFETY: as above.
    let e = unsafe { fused.set_kernel_args(node, args.as_mut_ptr()) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UpdateMismatch);
    assert!(e.message().contains("fused"), "{}", e.message());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_execs_update_from_graphs_that_fuse_alike() {
    let (c, s, p) = setup();
    let n = 1000usize;
    let y = p.alloc(n as u64 * 4).unwrap();
    let build = |alpha: f32| {
        graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
        for i in 0..20 {
            let a = if i % 2 == 0 { alpha } else { 1.0 / alpha };
            // SAFETY: the buffers are live device allocations of this test holding the
            // elements the operation reads and writes.
            unsafe { launch_op(&s, ops::scale(y, y, n as u64, a, c.sm_count())) }.unwrap();
        }
        graphcore_core::end_capture(&s).unwrap()
    };
    let fused = Exec::new(&build(2.0), FUSE_ELEMENTWISE).unwrap();
    assert_eq!(fused.stats().unwrap().instantiated_nodes, 1); // 20 ops: one program launch
    let g2 = build(3.0);
    fused.update(&g2).unwrap();
    let plain = Exec::new(&g2, 0).unwrap();
    let input = random(seed(), n);
    let want = run(&plain, &s, y, &input);
    let got = run(&fused, &s, y, &input);
    assert!(want
        .iter()
        .zip(&got)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    // A graph that fuses differently (one node more) is refused.
    graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    for _ in 0..21 {
        // SAFETY: the buffers are live device allocations of this test holding the
        // elements the operation reads and writes.
        unsafe { launch_op(&s, ops::scale(y, y, n as u64, 1.0, c.sm_count())) }.unwrap();
    }
    let g3 = graphcore_core::end_capture(&s).unwrap();
    assert_eq!(
        fused.update(&g3).unwrap_err().kind(),
        ErrorKind::UpdateMismatch
    );
}
