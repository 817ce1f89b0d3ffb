//! Capture, explicit building, instantiate, replay and update on a GPU.

use super::foundation::{add_one, AddOneLaunch};
use super::*;
use graphcore_core::graph::EdgeKind;
use graphcore_core::graph::NodeKind;
use graphcore_core::kernels::ops;
use graphcore_core::{launch_op, CaptureMode, ErrorKind, Exec, Graph, LaunchConfig};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

pub(super) fn scale(s: &Stream, y: u64, x: u64, n: usize, alpha: f32) {
    let sms = s.context().sm_count();
    // SAFETY: the buffers are live device allocations of this test holding the
    // elements the operation reads and writes.
    unsafe { launch_op(s, ops::scale(y, x, n as u64, alpha, sms)) }.unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn capture_in_each_mode_replays_the_work() {
    let (_c, s, p) = setup();
    let n = 4099;
    for mode in [
        CaptureMode::ThreadLocal,
        CaptureMode::Global,
        CaptureMode::Relaxed,
    ] {
        let buf = p.alloc(n as u64 * 4).unwrap();
        let x = random(seed(), n);
        upload(&s, buf, &x);
        graphcore_core::begin_capture(&s, None, mode).unwrap();
        assert!(s.is_capturing().unwrap());
        scale(&s, buf, buf, n, 2.0);
        scale(&s, buf, buf, n, 0.5);
        scale(&s, buf, buf, n, 3.0);
        let g = graphcore_core::end_capture(&s).unwrap();
        assert!(!s.is_capturing().unwrap());
        assert_eq!(g.node_count().unwrap(), 3);
        // Nothing ran during the capture.
        assert_eq!(download(&s, buf, n), x);
        let e = Exec::new(&g, 0).unwrap();
        e.launch(&s).unwrap();
        e.launch(&s).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v * 3.0 * 3.0).collect();
        assert_eq!(download(&s, buf, n), want, "{mode:?}");
        p.free(buf).unwrap();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn captured_graphs_are_refused_when_empty_whatever_enqueued_their_work() {
    let (_c, s, p) = setup();
    let n = 1000;
    let buf = p.alloc(n as u64 * 4).unwrap();
    let capture = |work: &dyn Fn()| {
        graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
        work();
        graphcore_core::end_capture(&s).unwrap()
    };
    let refused = |g: &Graph| {
        let err = Exec::new(g, 0).err().expect("an empty graph instantiated");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains("no nodes"), "{}", err.message());
    };
    let runs = |g: &Graph, nodes: usize| {
        upload(&s, buf, &vec![1.0; n]);
        Exec::new(g, 0).unwrap().launch(&s).unwrap();
        s.synchronize().unwrap();
        assert_eq!(g.node_count().unwrap(), nodes);
    };
    // A launch went in (graphcore knows the graph has nodes without asking
    // CUDA); the empty capture after it, and one after eager launches, are
    // still refused.
    let launched = capture(&|| scale(&s, buf, buf, n, 2.0));
    refused(&capture(&|| {}));
    scale(&s, buf, buf, n, 2.0);
    refused(&capture(&|| {}));
    runs(&launched, 1);
    assert_eq!(download(&s, buf, n), vec![2.0; n]);
    // Work that is not a kernel launch graphcore made (a set): CUDA is
    // asked, and the graph instantiates.
    // SAFETY: `buf` holds n floats.
    let set = capture(&|| unsafe { graphcore_core::set_async(&s, buf, 0, n * 4) }.unwrap());
    runs(&set, 1);
    assert_eq!(download(&s, buf, n), vec![0.0; n]);
    // A capture with a launch that a synchronize then broke, and an empty
    // one after it.
    graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    scale(&s, buf, buf, n, 2.0);
    s.synchronize().unwrap_err();
    assert!(graphcore_core::end_capture(&s).is_err());
    refused(&capture(&|| {}));
    p.free(buf).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn capture_allocates_from_the_pool_and_shares_it_between_graphs() {
    let (_c, s, p) = setup();
    let n = 1 << 16;
    let input = p.alloc(n as u64 * 4).unwrap();
    let x = random(seed(), n);
    upload(&s, input, &x);
    let before = p.stats();

    // Graph 1: scratch allocated and freed inside the capture, output kept.
    graphcore_core::begin_capture(&s, Some(&p), CaptureMode::ThreadLocal).unwrap();
    let scratch = p.alloc(n as u64 * 4).unwrap();
    let out1 = p.alloc(n as u64 * 4).unwrap();
    scale(&s, scratch, input, n, 2.0);
    scale(&s, out1, scratch, n, 2.0);
    p.free(scratch).unwrap();
    let g1 = graphcore_core::end_capture(&s).unwrap();
    assert_eq!(
        g1.pool_bytes(),
        n as u64 * 4,
        "graph 1 holds its output only"
    );

    // Graph 2 reuses graph 1's freed scratch.
    graphcore_core::begin_capture(&s, Some(&p), CaptureMode::ThreadLocal).unwrap();
    let scratch2 = p.alloc(n as u64 * 4).unwrap();
    assert_eq!(
        scratch2, scratch,
        "a later capture reuses blocks freed in an earlier one"
    );
    let out2 = p.alloc(n as u64 * 4).unwrap();
    scale(&s, scratch2, input, n, 3.0);
    scale(&s, out2, scratch2, n, 1.0);
    p.free(scratch2).unwrap();
    let g2 = graphcore_core::end_capture(&s).unwrap();

    // An eager allocation never gets the graphs' scratch.
    let eager = p.alloc(n as u64 * 4).unwrap();
    assert_ne!(eager, scratch);

    let (e1, e2) = (Exec::new(&g1, 0).unwrap(), Exec::new(&g2, 0).unwrap());
    e1.launch(&s).unwrap();
    e2.launch(&s).unwrap();
    let want1: Vec<f32> = x.iter().map(|v| v * 4.0).collect();
    let want2: Vec<f32> = x.iter().map(|v| v * 3.0).collect();
    assert_eq!(download(&s, out1, n), want1);
    assert_eq!(download(&s, out2, n), want2);

    // The pool dies with its handle gone only when the graphs do.
    let stats_with_graphs = p.stats();
    assert!(stats_with_graphs.reserved_bytes >= before.reserved_bytes);
    p.free(eager).unwrap();
    drop(p);
    e1.launch(&s).unwrap();
    assert_eq!(
        download(&s, out1, n),
        want1,
        "graph memory outlives the pool handle"
    );
    drop((e1, e2, g1, g2));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fork_join_and_unjoined_streams() {
    let c = ctx();
    let s = Stream::new(&c).unwrap();
    let side = Stream::new(&c).unwrap();
    let p = pool(&c);
    let n = 10_000;
    let a = p.alloc(n as u64 * 4).unwrap();
    let b = p.alloc(n as u64 * 4).unwrap();
    let x = random(seed(), n);
    upload(&s, a, &x);
    upload(&s, b, &x);

    graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    side.wait_stream(&s).unwrap(); // fork
    scale(&s, a, a, n, 2.0);
    scale(&side, b, b, n, 4.0);
    s.wait_stream(&side).unwrap(); // join
    let g = graphcore_core::end_capture(&s).unwrap();
    assert_eq!(g.node_count().unwrap(), 2);
    assert_eq!(
        g.desc().unwrap().edges().count(),
        0,
        "the two branches are independent"
    );
    Exec::new(&g, 0).unwrap().launch(&s).unwrap();
    assert_eq!(
        download(&s, a, n),
        x.iter().map(|v| v * 2.0).collect::<Vec<_>>()
    );
    assert_eq!(
        download(&s, b, n),
        x.iter().map(|v| v * 4.0).collect::<Vec<_>>()
    );

    // A side stream that never rejoins: a clear error, and both usable.
    graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    side.wait_stream(&s).unwrap();
    scale(&side, b, b, n, 4.0);
    let e = graphcore_core::end_capture(&s).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Capture);
    assert!(e.message().contains("rejoin"), "{}", e.message());
    scale(&s, a, a, n, 1.0);
    s.synchronize().unwrap();
    assert!(
        !side.is_capturing().unwrap(),
        "the side stream left the capture"
    );
    scale(&side, b, b, n, 1.0);
    side.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn broken_capture_names_the_call_and_rolls_the_pool_back() {
    let (_c, s, p) = setup();
    let keep = p.alloc(4096).unwrap();
    let before = p.stats();
    graphcore_core::begin_capture(&s, Some(&p), CaptureMode::ThreadLocal).unwrap();
    let big = p.alloc(64 << 20).unwrap();
    scale(&s, big, big, 1 << 10, 2.0);
    let e = s.synchronize().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Capture);
    let e = graphcore_core::end_capture(&s).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Capture);
    assert!(
        e.message().contains("stream synchronize"),
        "{}",
        e.message()
    );
    let after = p.stats();
    assert_eq!(after.allocated_bytes, before.allocated_bytes);
    assert_eq!(after.reserved_bytes, before.reserved_bytes);
    assert_eq!(after.block_count, before.block_count);
    // The stream works eagerly and captures again.
    scale(&s, keep, keep, 1024, 1.0);
    s.synchronize().unwrap();
    graphcore_core::begin_capture(&s, Some(&p), CaptureMode::ThreadLocal).unwrap();
    scale(&s, keep, keep, 1024, 1.0);
    graphcore_core::end_capture(&s).unwrap();
    // Misuse: end without begin, and a second begin.
    assert_eq!(
        graphcore_core::end_capture(&s).err().unwrap().kind(),
        ErrorKind::InvalidState
    );
    graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    assert_eq!(
        graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidState
    );
    assert_eq!(
        graphcore_core::end_capture(&s)
            .unwrap()
            .node_count()
            .unwrap(),
        0
    );
    assert_eq!(
        graphcore_core::end_capture(&s).err().unwrap().kind(),
        ErrorKind::InvalidState
    );
}

static HOST_CALLS: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn count_call(data: *mut c_void) {
    // SAFETY: the test passes a pointer to a live u32 as the user data.
    HOST_CALLS.fetch_add(unsafe { *(data as *const u32) }, Ordering::SeqCst);
}

/// A thread that never made a context current builds a chain of kernel
/// nodes, which then runs right: graphcore makes the context current for
/// the driver (which crashed adding a kernel node without one when
/// graphcore tried to spare that call).
#[test]
#[ignore = "needs a CUDA GPU"]
fn kernel_nodes_are_added_from_a_thread_without_a_current_context() {
    let (c, s, p) = setup();
    let n = 1000usize;
    let y = p.alloc(n as u64 * 4).unwrap();
    let g = Graph::new(&c).unwrap();
    let f = add_one(&c);
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut launch = AddOneLaunch::new(y, n);
                let mut args = launch.args();
                let mut prev = Vec::new();
                for _ in 0..3 {
                    // SAFETY: add_one(u64, u32) over `n` floats at `y`.
                    let node =
                        unsafe { g.add_kernel(&f, &launch.cfg, args.as_mut_ptr(), &prev) }.unwrap();
                    prev = vec![node];
                }
            })
            .join()
            .unwrap();
    });
    let e = Exec::new(&g, 0).unwrap();
    upload(&s, y, &vec![1.0; n]);
    e.launch(&s).unwrap();
    assert_eq!(download(&s, y, n), vec![4.0; n]);
}

/// Launches on a stream need no current context and leave the thread's as
/// it was (the header's contract, "Device and context"): from a thread
/// that never made one current, a kernel launch and a built-in operation
/// (the built-ins loaded before) run, and are captured with the thread's
/// context unset, and the graph replays them; the eager launches leave the
/// thread without one.
#[test]
#[ignore = "needs a CUDA GPU"]
fn launches_need_no_current_context_and_leave_the_threads_as_it_was() {
    use cudarc::driver::sys;
    let (c, s, p) = setup();
    let n = 1000usize;
    let y = p.alloc(n as u64 * 4).unwrap();
    upload(&s, y, &vec![1.0; n]);
    // The first built-in operation on a context loads the built-in kernels,
    // which binds the context: done here, before the thread.
    scale(&s, y, y, n, 1.0);
    s.synchronize().unwrap();
    let f = add_one(&c);
    let current = || {
        let mut cur = std::ptr::null_mut();
        // SAFETY: writes the calling thread's current context to `cur`.
        let r = unsafe { sys::cuCtxGetCurrent(&mut cur) };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        cur
    };
    let add = || {
        let mut launch = AddOneLaunch::new(y, n);
        let mut args = launch.args();
        // SAFETY: add_one(u64, u32) over `n` floats at `y`.
        unsafe { f.launch(&s, &launch.cfg, args.as_mut_ptr()) }.unwrap();
    };
    let graph = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                assert!(current().is_null(), "a new thread has no current context");
                add(); // 2
                scale(&s, y, y, n, 3.0); // 6
                assert!(
                    current().is_null(),
                    "launches on a stream left a context current"
                );
                // Captures too: begin, launches, end and the node count
                // read afterwards.
                graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
                add();
                scale(&s, y, y, n, 0.5);
                let g = graphcore_core::end_capture(&s).unwrap();
                assert_eq!(g.node_count().unwrap(), 2);
                assert!(current().is_null(), "a capture left a context current");
                g
            })
            .join()
            .unwrap()
    });
    assert_eq!(download(&s, y, n), vec![6.0; n]);
    let e = Exec::new(&graph, 0).unwrap();
    e.launch(&s).unwrap(); // (6 + 1) / 2
    assert_eq!(download(&s, y, n), vec![3.5; n]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_node_kind_in_an_explicit_graph() {
    let (c, s, p) = setup();
    let n = 2048usize;
    let dev = p.alloc(n as u64 * 4).unwrap();
    let zeroed = p.alloc(n as u64 * 4).unwrap();
    let mut hin = Host::new(&c, n);
    let hout = Host::new(&c, n);
    let x = random(seed(), n);
    hin.as_mut_slice().copy_from_slice(&x);

    let child = Graph::new(&c).unwrap();
    let f = add_one(&c);
    let cfg = LaunchConfig {
        grid: [(n as u32).div_ceil(256), 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    let (mut a0, mut a1) = (dev, n as u32);
    let mut args = [
        &mut a0 as *mut u64 as *mut c_void,
        &mut a1 as *mut u32 as *mut c_void,
    ];
    // SAFETY: args match add_one(u64, u32) and are copied at add time.
    unsafe { child.add_kernel(&f, &cfg, args.as_mut_ptr(), &[]).unwrap() };

    let g = Graph::new(&c).unwrap();
    // SAFETY: `dev`, `zeroed` and the pinned `hin` hold n floats and outlive
    // the graph's runs (as below for `hout`).
    let copy_in = unsafe { g.add_memcpy(dev, hin.addr(), n * 4, &[]) }.unwrap();
    // SAFETY: as above.
    let set = unsafe { g.add_memset(zeroed, 0, n * 4, &[]) }.unwrap();
    let kid = g.add_child(&child, &[copy_in]).unwrap();
    let join = g.add_empty(&[kid, set]).unwrap();
    let mut weight = 5u32;
    // SAFETY: count_call reads one u32 that outlives the graph's runs.
    let host =
        unsafe { g.add_host(count_call, &mut weight as *mut u32 as *mut c_void, &[join]) }.unwrap();
    // SAFETY: as above.
    let copy_out = unsafe { g.add_memcpy(hout.addr(), dev, n * 4, &[host]) }.unwrap();
    assert_eq!(g.node_count().unwrap(), 6);
    assert!(matches!(
        g.desc().unwrap().node(copy_out.index as usize),
        NodeKind::Memcpy {
            direction: graphcore_core::graph::Direction::DeviceToHost,
            ..
        }
    ));

    // Pageable host memory is refused when the node is added.
    let pageable = vec![0f32; n];
    // SAFETY: refused when the node is added (asserted), so never run.
    let e = unsafe { g.add_memcpy(dev, pageable.as_ptr() as u64, n * 4, &[]) }.unwrap_err();
    assert!(e.message().contains("pageable"), "{}", e.message());
    // Foreign nodes and cycles are refused.
    let other = Graph::new(&c).unwrap();
    assert!(other
        .add_empty(&[join])
        .unwrap_err()
        .message()
        .contains("another graph"));
    assert!(g
        .add_dependency(copy_out, copy_in)
        .unwrap_err()
        .message()
        .contains("cycle"));
    assert_eq!(g.node_count().unwrap(), 6);

    let e = Exec::new(&g, graphcore_core::instantiate_flags::UPLOAD).unwrap();
    HOST_CALLS.store(0, Ordering::SeqCst);
    e.launch(&s).unwrap();
    s.synchronize().unwrap();
    let want: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
    assert_eq!(hout.as_slice(), &want[..]);
    assert_eq!(HOST_CALLS.load(Ordering::SeqCst), 5);
    assert!(download(&s, zeroed, n).iter().all(|&v| v == 0.0));
    // An empty graph cannot be instantiated.
    assert_eq!(
        Exec::new(&other, 0).err().unwrap().kind(),
        ErrorKind::InvalidArgument
    );

    // DOT output parses back to the same nodes and edges.
    let dot = g.to_dot("every_kind").unwrap();
    let nodes = dot.lines().filter(|l| l.contains("[shape=")).count();
    let edges = dot.lines().filter(|l| l.contains("->")).count();
    assert_eq!((nodes, edges), (6, g.desc().unwrap().edges().count()));
    assert!(dot.contains("add_one") || dot.contains("child graph"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn update_and_set_args_change_results() {
    let (_c, s, p) = setup();
    let n = 5000;
    let buf = p.alloc(n as u64 * 4).unwrap();
    let x = random(seed(), n);
    let build = |alpha: f32| {
        graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
        scale(&s, buf, buf, n, alpha);
        scale(&s, buf, buf, n, 1.0);
        graphcore_core::end_capture(&s).unwrap()
    };
    let e = Exec::new(&build(2.0), 0).unwrap();
    upload(&s, buf, &x);
    e.launch(&s).unwrap();
    assert_eq!(
        download(&s, buf, n),
        x.iter().map(|v| v * 2.0).collect::<Vec<_>>()
    );

    e.update(&build(-1.0)).unwrap();
    upload(&s, buf, &x);
    e.launch(&s).unwrap();
    assert_eq!(
        download(&s, buf, n),
        x.iter().map(|v| -v).collect::<Vec<_>>()
    );

    // Another topology: refused, naming the node; the exec still works.
    graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    scale(&s, buf, buf, n, 5.0);
    let one = graphcore_core::end_capture(&s).unwrap();
    let err = e.update(&one).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UpdateMismatch);
    assert!(err.message().contains("nodes"), "{}", err.message());
    upload(&s, buf, &x);
    e.launch(&s).unwrap();
    assert_eq!(
        download(&s, buf, n),
        x.iter().map(|v| -v).collect::<Vec<_>>()
    );

    // set_kernel_args on node 0 of the source graph: alpha = 10.
    let node = graphcore_core::Node {
        graph: e.graph().id(),
        index: 0,
    };
    set_scale_args(&e, node, buf, n, 10f32);
    upload(&s, buf, &x);
    e.launch(&s).unwrap();
    assert_eq!(
        download(&s, buf, n),
        x.iter().map(|v| v * 10.0).collect::<Vec<_>>()
    );
}

/// A captured graph is read back only when a call needs its nodes: an exec
/// made or updated before that stands on the graph as captured, even after
/// nodes are added to it; updates with read and unread graphs work either
/// way (whole, or node by node), and refusals still name the difference.
#[test]
#[ignore = "needs a CUDA GPU"]
fn captured_graphs_are_read_back_on_demand() {
    let (_c, s, p) = setup();
    let n = 1000;
    let buf = p.alloc(n as u64 * 4).unwrap();
    let x = random(seed(), n);
    let build = |alphas: &[f32]| {
        graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
        for &a in alphas {
            scale(&s, buf, buf, n, a);
        }
        graphcore_core::end_capture(&s).unwrap()
    };
    let check = |e: &Exec, factor: f32| {
        upload(&s, buf, &x);
        e.launch(&s).unwrap();
        let want: Vec<f32> = x.iter().map(|v| v * factor).collect();
        assert_eq!(download(&s, buf, n), want, "factor {factor}");
    };
    let shapes = |dot: String| dot.lines().filter(|l| l.contains("[shape=")).count();
    let g = build(&[2.0, 1.0, 1.0, 1.0]);
    assert_eq!(g.node_count().unwrap(), 4);
    let e = Exec::new(&g, 0).unwrap();
    check(&e, 2.0);

    // A node added to the source later: the exec keeps the graph as captured.
    let last = graphcore_core::Node {
        graph: g.id(),
        index: 3,
    };
    g.add_empty(&[last]).unwrap();
    assert_eq!(g.node_count().unwrap(), 5);
    assert_eq!(e.stats().unwrap().graph_nodes, 4);
    assert_eq!(shapes(e.to_dot("e").unwrap()), 4);

    // Unread: a whole update. Read, after an unread one: whole again.
    e.update(&build(&[-1.0, 1.0, 1.0, 1.0])).unwrap();
    check(&e, -1.0);
    let read = build(&[4.0, 1.0, 1.0, 1.0]);
    assert_eq!(shapes(read.to_dot("read").unwrap()), 4);
    e.update(&read).unwrap();
    check(&e, 4.0);
    // Both read, one node changed: node by node.
    let again = build(&[4.0, 1.0, 1.0, 2.0]);
    assert_eq!(again.desc().unwrap().len(), 4);
    e.update(&again).unwrap();
    check(&e, 8.0);

    // Another topology, unread: refused, naming the node counts.
    let err = e.update(&build(&[1.0, 1.0, 1.0])).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UpdateMismatch);
    assert!(err.message().contains("3 nodes"), "{}", err.message());
    check(&e, 8.0);

    // set_kernel_args on node 0 of the source (read back by now): alpha 16
    // (times 2 at the last node).
    let node = graphcore_core::Node {
        graph: g.id(),
        index: 0,
    };
    set_scale_args(&e, node, buf, n, 16f32);
    check(&e, 32.0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn eight_threads_replay_eight_execs_concurrently() {
    let c = ctx();
    let p = pool(&c);
    let n = 1 << 14;
    let setups: Vec<_> = (0..8)
        .map(|i| {
            let s = Stream::new(&c).unwrap();
            let buf = p.alloc(n as u64 * 4).unwrap();
            upload(&s, buf, &vec![1.0; n]);
            graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
            scale(&s, buf, buf, n, 1.0 + i as f32);
            let e = Exec::new(&graphcore_core::end_capture(&s).unwrap(), 0).unwrap();
            (s, buf, e, i)
        })
        .collect();
    std::thread::scope(|scope| {
        for (s, _, e, _) in &setups {
            scope.spawn(move || {
                for _ in 0..3 {
                    e.launch(s).unwrap();
                }
                s.synchronize().unwrap();
            });
        }
    });
    for (s, buf, _, i) in &setups {
        let want = (1.0 + *i as f32).powi(3);
        assert!(download(s, *buf, n).iter().all(|&v| v == want), "exec {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn destroying_graphs_and_pools_does_not_break_another_threads_capture() {
    // A device-wide synchronize invalidates every capture on the device;
    // graphcore must not issue one while a capture of its own is open.
    // Run under the watchdog: a failure or a hang in either thread fails
    // the test with its message instead of hanging the suite.
    let (c, s, p) = setup();
    let n = 4096;
    let buf = p.alloc(n as u64 * 4).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    /// Stops the churning thread when the capturing one ends, even by a
    /// panic.
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let churn = {
        let (c, stop) = (c.clone(), stop.clone());
        Box::new(move || {
            while !stop.load(Ordering::SeqCst) {
                let q = pool(&c);
                let t = Stream::new(&c).unwrap();
                graphcore_core::begin_capture(&t, Some(&q), CaptureMode::Relaxed).unwrap();
                let b = q.alloc(1 << 16).unwrap();
                scale(&t, b, b, 1 << 14, 2.0);
                let g = graphcore_core::end_capture(&t).unwrap();
                drop((g, q)); // releases graph memory and the pool
            }
        }) as Box<dyn FnOnce() + Send>
    };
    let capture = {
        let stop = StopOnDrop(stop);
        Box::new(move || {
            let _stop = stop;
            for i in 0..50 {
                graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal)
                    .unwrap_or_else(|e| panic!("begin {i}: {}", e.message()));
                for _ in 0..20 {
                    scale(&s, buf, buf, n, 1.0);
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
                graphcore_core::end_capture(&s)
                    .unwrap_or_else(|e| panic!("end {i}: {}", e.message()));
            }
            drop(p);
        }) as Box<dyn FnOnce() + Send>
    };
    super::race(
        "captures next to graph and pool destruction",
        vec![churn, capture],
    );
}

/// Two threads using the built-ins for the first time at once, one inside a
/// thread-local capture, load them once and the capture stays valid. (They
/// used to load twice; the thread that lost the race unloaded its set, and
/// when that was the capturing thread, its capture was invalidated: about
/// one run in eight of the test above, run alone, failed so.) Each round
/// has a fresh context, as nothing else holds one while it runs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn first_use_of_the_built_ins_on_two_threads_keeps_a_capture_valid() {
    for round in 0..16 {
        let c = ctx();
        let p = pool(&c);
        let n = 1024;
        let (a, b) = (
            p.alloc(n as u64 * 4).unwrap(),
            p.alloc(n as u64 * 4).unwrap(),
        );
        let start = Arc::new(std::sync::Barrier::new(2));
        let capture = {
            let (s, start) = (Stream::new(&c).unwrap(), start.clone());
            Box::new(move || {
                graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
                start.wait();
                scale(&s, a, a, n, 2.0);
                graphcore_core::end_capture(&s)
                    .unwrap_or_else(|e| panic!("round {round}: {}", e.message()));
            }) as Box<dyn FnOnce() + Send>
        };
        let eager = {
            let s = Stream::new(&c).unwrap();
            Box::new(move || {
                start.wait();
                scale(&s, b, b, n, 2.0);
                s.synchronize().unwrap();
            }) as Box<dyn FnOnce() + Send>
        };
        super::race(
            "first built-in launches on two threads",
            vec![capture, eager],
        );
    }
}

/// An exec is the graph as it was instantiated: nodes added to the graph
/// afterwards are not part of it (its DOT, its statistics, argument changes
/// and updates all go by the graph it was made from), plain and fused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_exec_ignores_nodes_added_to_its_graph_afterwards() {
    let c = ctx();
    let p = pool(&c);
    let n = 4099usize;
    let y = p.alloc(n as u64 * 4).unwrap();
    for flags in [0, graphcore_core::instantiate_flags::FUSE_ELEMENTWISE] {
        let in_graph = add_one(&c);
        let g = super::fusion::scales_around_a_user_kernel(&c, &in_graph, y, n);
        let reference = Exec::new(&g, flags).unwrap();
        let dot = reference.to_dot("g").unwrap();
        let stats = reference.stats().unwrap();
        let e = Exec::new(&g, flags).unwrap();
        let last = graphcore_core::Node {
            graph: g.id(),
            index: 10,
        };
        let user = add_one(&c);
        let (mut a0, mut a1) = (y, n as u32);
        let mut args = [
            &mut a0 as *mut u64 as *mut c_void,
            &mut a1 as *mut u32 as *mut c_void,
        ];
        let cfg = LaunchConfig {
            grid: [(n as u32).div_ceil(256), 1, 1],
            block: [256, 1, 1],
            shared_bytes: 0,
        };
        // SAFETY: add_one(u64, u32).
        let added = unsafe { g.add_kernel(&user, &cfg, args.as_mut_ptr(), &[last]) }.unwrap();
        assert_eq!(e.to_dot("g").unwrap(), dot, "flags {flags}");
        assert_eq!(e.stats().unwrap(), stats, "flags {flags}");
        // SAFETY: as above.
        let err = unsafe { e.set_kernel_args(added, args.as_mut_ptr()) }.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{}", err.message());
        // An update from a graph built as the exec's was still applies.
        e.update(&super::fusion::scales_around_a_user_kernel(
            &c, &in_graph, y, n,
        ))
        .unwrap();
    }
}

/// Kernel nodes added to a graph built node by node are described when a
/// call first needs them, from CUDA's copies of their parameters, as they
/// would have been when added: the chain of `scales_around_a_user_kernel`
/// describes the same as one whose nodes after the first were described as
/// they were added (an exec made from it after its first node makes it so,
/// and stands on that one node). A node of another kind describes the
/// pending ones before it, kernel nodes after it are pending again, the
/// numbering stays, an exec made while nodes were pending shows them, and
/// the graph runs as built. Updates may change a kernel node's function,
/// node by node (described graphs) and whole (pending ones).
#[test]
#[ignore = "needs a CUDA GPU"]
fn built_graphs_describe_kernel_nodes_when_first_needed() {
    let (c, s, p) = setup();
    let n = 4099usize;
    let y = p.alloc(n as u64 * 4).unwrap();
    let user = add_one(&c);
    // The chain of `scales_around_a_user_kernel`, node 5 a scale by 2
    // instead of `add_one` where `scaled`; an exec made after its first
    // node where `stand`.
    let chain = |scaled: bool, stand: bool| {
        let mut stands = None;
        let g = super::fusion::scales_around(&c, (!scaled).then_some(&user), y, n, |g| {
            if stand {
                stands = Some(Exec::new(g, 0).unwrap());
            }
        });
        (g, stands)
    };
    let run = |e: &Exec| {
        upload(&s, y, &vec![1.0; n]);
        e.launch(&s).unwrap();
        download(&s, y, n)[0]
    };
    let want = |scaled: bool| {
        (0..11).fold(1.0f32, |v, i| match i {
            5 if scaled => v * 2.0,
            5 => v + 1.0,
            _ => v * (1.0 + i as f32 / 8.0),
        })
    };

    let lazy = super::fusion::scales_around_a_user_kernel(&c, &user, y, n);
    assert_eq!(lazy.node_count().unwrap(), 11);
    let d = lazy.desc().unwrap();
    for (i, name) in [(0, "gc_scale_f32"), (5, "add_one"), (10, "gc_scale_f32")] {
        match d.node(i) {
            NodeKind::Kernel {
                name: got,
                grid,
                args,
                ..
            } => {
                assert_eq!(&**got, name, "node {i}");
                let blocks = if i == 5 { (n as u32).div_ceil(256) } else { 8 };
                assert_eq!(grid[0], blocks, "node {i}");
                // A built-in's argument values, read back: (y, x, n, alpha).
                assert_eq!(args.len(), if i == 5 { 0 } else { 4 }, "node {i}");
            }
            other => panic!("node {i} is {other:?}"),
        }
        assert_eq!(d.deps(i), (0..i).last().as_slice(), "node {i}");
    }
    let (reference, stands) = chain(false, true);
    assert_eq!(reference.desc().unwrap(), d);
    assert_eq!(stands.unwrap().stats().unwrap().graph_nodes, 1);

    // Node by node (both described, one node changes): another function.
    let (a, _) = chain(false, false);
    let e = Exec::new(&a, 0).unwrap();
    assert_eq!(run(&e), want(false));
    let (b, _) = chain(true, false);
    assert_eq!(b.desc().unwrap().len(), 11);
    assert_eq!(a.desc().unwrap().len(), 11);
    let e = Exec::new(&a, 0).unwrap();
    e.update(&b).unwrap();
    assert_eq!(run(&e), want(true));
    assert_eq!(e.to_dot("e").unwrap().matches("gc_scale_f32").count(), 11);
    // Whole (pending nodes): back to `add_one`.
    e.update(&chain(false, false).0).unwrap();
    assert_eq!(run(&e), want(false));

    // Kernel, kernel, memset, kernel: the memset describes the two before it.
    let z = p.alloc(n as u64 * 4).unwrap();
    let g = Graph::new(&c).unwrap();
    let mut launch = AddOneLaunch::new(y, n);
    let mut args = launch.args();
    // SAFETY: add_one(u64, u32) over `n` floats at `y`.
    let k0 = unsafe { g.add_kernel(&user, &launch.cfg, args.as_mut_ptr(), &[]) }.unwrap();
    // SAFETY: as above.
    let k1 = unsafe { g.add_kernel(&user, &launch.cfg, args.as_mut_ptr(), &[k0]) }.unwrap();
    // SAFETY: `z` is pool memory of `n` floats.
    let m = unsafe { g.add_memset(z, 0, n * 4, &[k1]) }.unwrap();
    // SAFETY: as above.
    let k3 = unsafe { g.add_kernel(&user, &launch.cfg, args.as_mut_ptr(), &[m]) }.unwrap();
    assert_eq!([k0.index, k1.index, m.index, k3.index], [0, 1, 2, 3]);
    assert_eq!(g.node_count().unwrap(), 4);
    let e = Exec::new(&g, 0).unwrap();
    let d = g.desc().unwrap();
    let kinds: Vec<&str> = (0..4).map(|i| d.node(i).kind_name()).collect();
    assert_eq!(kinds, ["kernel", "kernel", "memset", "kernel"]);
    for i in 1..4 {
        assert_eq!(d.deps(i), &[i - 1]);
    }
    let dot = e.to_dot("g").unwrap();
    assert_eq!(dot.matches("add_one").count(), 3, "{dot}");
    assert_eq!(run(&e), 4.0);
    upload(&s, z, &vec![7.0; n]);
    e.launch(&s).unwrap();
    assert_eq!(download(&s, z, n), vec![0.0; n]);
}

/// Sets gc_scale_f32 node `node` of `e` to scale `buf`'s `n` floats in
/// place by `alpha`.
fn set_scale_args(e: &Exec, node: graphcore_core::Node, buf: u64, n: usize, alpha: f32) {
    let (mut y, mut x, mut n, mut alpha) = (buf, buf, n as u64, alpha);
    let mut args = [
        &mut y as *mut u64 as *mut c_void,
        &mut x as *mut u64 as *mut c_void,
        &mut n as *mut u64 as *mut c_void,
        &mut alpha as *mut f32 as *mut c_void,
    ];
    // SAFETY: the args match gc_scale_f32(y, x, n, alpha).
    unsafe { e.set_kernel_args(node, args.as_mut_ptr()) }.unwrap();
}

/// Two user kernels for programmatic dependent launch (sm_90): `pdl_write`
/// stores y[i] = i and lets its dependents launch; `pdl_read` waits on the
/// grid dependency, then stores z[i] = y[i] + 1.
const PDL_PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry pdl_write(.param .u64 y, .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [y];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd2, %rd2, %rd3;
  cvt.rn.f32.u32 %f1, %r5;
  st.global.f32 [%rd2], %f1;
DONE:
  griddepcontrol.launch_dependents;
  ret;
}
.visible .entry pdl_read(.param .u64 z, .param .u64 y, .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<7>;
  griddepcontrol.wait;
  ld.param.u64 %rd1, [z];
  ld.param.u64 %rd4, [y];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  mul.wide.u32 %rd3, %r5, 4;
  cvta.to.global.u64 %rd2, %rd4;
  add.s64 %rd2, %rd2, %rd3;
  ld.global.f32 %f1, [%rd2];
  add.f32 %f2, %f1, 0f3F800000;
  cvta.to.global.u64 %rd5, %rd1;
  add.s64 %rd5, %rd5, %rd3;
  st.global.f32 [%rd5], %f2;
DONE:
  ret;
}
"#;

/// The two PDL_PTX kernels on a device with programmatic dependent launch,
/// with `n` floats at `y` and `z` from a pool (`None`, said on stderr,
/// below compute capability 9.0).
struct Pdl {
    c: graphcore_core::Context,
    _p: graphcore_core::Pool,
    write: graphcore_core::Function,
    read: graphcore_core::Function,
    n: u32,
    y: u64,
    z: u64,
}

impl Pdl {
    fn new() -> Option<Pdl> {
        let c = ctx();
        if c.compute_capability().0 < 9 {
            eprintln!("skipped: programmatic dependent launch needs compute capability 9.0");
            return None;
        }
        let m = graphcore_core::Module::load(&c, PDL_PTX.as_bytes()).unwrap();
        let p = pool(&c);
        let n = 1u32 << 20;
        Some(Pdl {
            write: m.function("pdl_write").unwrap(),
            read: m.function("pdl_read").unwrap(),
            y: p.alloc(n as u64 * 4).unwrap(),
            z: p.alloc(n as u64 * 4).unwrap(),
            n,
            c,
            _p: p,
        })
    }
}

/// A programmatic edge between two user kernels: the pair computes what a
/// full edge would, the edge is in the description and the DOT, a graph
/// read back from CUDA has it, an update from a graph with a full edge
/// there is refused naming the edge, and a built-in kernel may be the node
/// that waits.
#[test]
#[ignore = "needs a CUDA GPU"]
fn programmatic_edges_run_read_back_and_are_compared_on_update() {
    let Some(d) = Pdl::new() else { return };
    let (c, write, read, n, y, z) = (&d.c, &d.write, &d.read, d.n, d.y, d.z);
    let cfg = LaunchConfig {
        grid: [n.div_ceil(256), 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    let build = |programmatic: bool| {
        let g = Graph::new(c).unwrap();
        let (mut wy, mut wn) = (y, n);
        let mut wargs = [
            &mut wy as *mut u64 as *mut c_void,
            &mut wn as *mut u32 as *mut c_void,
        ];
        // SAFETY: pdl_write(u64, u32).
        let w = unsafe { g.add_kernel(write, &cfg, wargs.as_mut_ptr(), &[]) }.unwrap();
        let (mut rz, mut ry, mut rn) = (z, y, n);
        let mut rargs = [
            &mut rz as *mut u64 as *mut c_void,
            &mut ry as *mut u64 as *mut c_void,
            &mut rn as *mut u32 as *mut c_void,
        ];
        // SAFETY: pdl_read(u64, u64, u32).
        let r = unsafe { g.add_kernel(read, &cfg, rargs.as_mut_ptr(), &[]) }.unwrap();
        if programmatic {
            g.add_programmatic_dependency(w, r).unwrap();
        } else {
            g.add_dependency(w, r).unwrap();
        }
        (g, w, r)
    };
    let (g, _, _) = build(true);
    assert_eq!(g.desc().unwrap().edge_kind(0, 1), EdgeKind::Programmatic);
    assert!(g
        .to_dot("g")
        .unwrap()
        .contains("n0 -> n1 [style=dashed, label=\"programmatic\"]"));
    let s = Stream::new(c).unwrap();
    let e = Exec::new(&g, 0).unwrap();
    let want: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
    for round in 0..3 {
        upload(&s, y, &vec![-1.0; n as usize]);
        upload(&s, z, &vec![0.0; n as usize]);
        e.launch(&s).unwrap();
        assert!(download(&s, z, n as usize) == want, "round {round}");
    }
    // CUDA's copy of the graph, read back, has the edge as programmatic.
    let copy = g.duplicate().unwrap();
    // SAFETY: `copy` outlives the borrowed wrap and nothing changes it.
    let wrapped = unsafe { Graph::wrap_raw(c, copy.raw().unwrap(), false) }.unwrap();
    assert_eq!(
        wrapped.desc().unwrap().edge_kind(0, 1),
        EdgeKind::Programmatic
    );
    let err = e.update(&build(false).0).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UpdateMismatch, "{}", err.message());
    assert!(err.message().contains("edge 0 -> 1"), "{}", err.message());
    // A built-in kernel waits on the grid dependency (its compute_90
    // module), so it may be the node that waits: scale reads all of y.
    let g = Graph::new(c).unwrap();
    let (mut wy, mut wn) = (y, n);
    let mut wargs = [
        &mut wy as *mut u64 as *mut c_void,
        &mut wn as *mut u32 as *mut c_void,
    ];
    // SAFETY: pdl_write(u64, u32).
    let w = unsafe { g.add_kernel(write, &cfg, wargs.as_mut_ptr(), &[]) }.unwrap();
    let scale = graphcore_core::Function::from_builtin(c, "gc_scale_f32").unwrap();
    let (mut sz, mut sy, mut sn, mut sa) = (z, y, n as u64, 2.0f32);
    let mut sargs = [
        &mut sz as *mut u64 as *mut c_void,
        &mut sy as *mut u64 as *mut c_void,
        &mut sn as *mut u64 as *mut c_void,
        &mut sa as *mut f32 as *mut c_void,
    ];
    // SAFETY: gc_scale_f32(y, x, n, alpha) over n floats of z and y.
    let sc = unsafe { g.add_kernel(&scale, &cfg, sargs.as_mut_ptr(), &[]) }.unwrap();
    g.add_programmatic_dependency(w, sc).unwrap();
    let e = Exec::new(&g, 0).unwrap();
    let want: Vec<f32> = (0..n).map(|i| i as f32 * 2.0).collect();
    for round in 0..3 {
        upload(&s, y, &vec![-1.0; n as usize]);
        e.launch(&s).unwrap();
        assert!(download(&s, z, n as usize) == want, "round {round}");
    }
}

/// A capture of two launches, the second with programmatic stream
/// serialization (cuLaunchKernelEx, made raw: graphcore has no launch with
/// attributes), reads back with the edge between them programmatic, and the
/// graph replays what the two kernels compute.
#[test]
#[ignore = "needs a CUDA GPU"]
fn captured_programmatic_launches_read_back_as_programmatic_edges() {
    use cudarc::driver::sys;
    let Some(d) = Pdl::new() else { return };
    let (c, write, read, n, y, z) = (&d.c, &d.write, &d.read, d.n, d.y, d.z);
    let s = Stream::new(c).unwrap();
    graphcore_core::begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    let launch = |f: &graphcore_core::Function, args: &mut [*mut c_void], programmatic: bool| {
        // SAFETY: a plain C union; the member set is the one the attribute
        // id names.
        let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        let cfg = sys::CUlaunchConfig {
            gridDimX: n.div_ceil(256),
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: 256,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            hStream: s.raw(),
            attrs: &mut attr,
            numAttrs: programmatic as u32,
        };
        // SAFETY: `args` match the kernel's parameters; the stream is
        // capturing on this thread.
        let r = unsafe {
            sys::cuLaunchKernelEx(&cfg, f.raw(), args.as_mut_ptr(), std::ptr::null_mut())
        };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    };
    let (mut wy, mut wn) = (y, n);
    launch(
        write,
        &mut [
            &mut wy as *mut u64 as *mut c_void,
            &mut wn as *mut u32 as *mut c_void,
        ],
        false,
    );
    let (mut rz, mut ry, mut rn) = (z, y, n);
    launch(
        read,
        &mut [
            &mut rz as *mut u64 as *mut c_void,
            &mut ry as *mut u64 as *mut c_void,
            &mut rn as *mut u32 as *mut c_void,
        ],
        true,
    );
    let g = graphcore_core::end_capture(&s).unwrap();
    let d = g.desc().unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(d.edge_kind(0, 1), EdgeKind::Programmatic, "{d:?}");
    let e = Exec::new(&g, 0).unwrap();
    upload(&s, z, &vec![0.0; n as usize]);
    e.launch(&s).unwrap();
    let want: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
    assert!(download(&s, z, n as usize) == want);
}
