//! The calls issue 15 added (item 5, "API gaps") on a GPU: events (timing,
//! ordering across streams, under capture as dependencies and as event
//! nodes), host functions on a stream, graph clones, wrapped raw graphs and
//! memsets of 2- and 4-byte elements. Every test checks the values the
//! device computed, not only the statuses.

use super::graphs::scale;
use super::*;
use graphcore_core::graph::NodeKind;
use graphcore_core::{begin_capture, end_capture, CaptureMode, ErrorKind, Event, Exec, Graph};
use std::ffi::c_void;
use std::sync::Mutex;

/// Floats in the buffers that make work long enough to time and to race.
const LONG: usize = 1 << 22;
/// Doublings in the long chains: exact in f32 for the inputs used.
const CHAIN: u32 = 20;

/// Enqueues `CHAIN` doublings of `buf` (`n` floats) on `s`.
fn double_chain(s: &Stream, buf: u64, n: usize) {
    for _ in 0..CHAIN {
        scale(s, buf, buf, n, 2.0);
    }
}

/// `n` floats of `v` in a fresh pool block.
fn filled(s: &Stream, p: &Pool, n: usize, v: f32) -> u64 {
    let buf = p.alloc(n as u64 * 4).unwrap();
    upload(s, buf, &vec![v; n]);
    buf
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn events_time_work_and_order_a_second_stream() {
    let c = ctx();
    let (s1, s2) = (Stream::new(&c).unwrap(), Stream::new(&c).unwrap());
    let p = pool(&c);
    let x = filled(&s1, &p, LONG, 1.5);
    let y = p.alloc(LONG as u64 * 4).unwrap();
    let (start, end) = (Event::new(&c, true).unwrap(), Event::new(&c, true).unwrap());
    s1.record_event(&start, false).unwrap();
    double_chain(&s1, x, LONG);
    s1.record_event(&end, false).unwrap();
    // s2 copies x only after the chain: without the wait it would race it.
    s2.wait_event(&end, false).unwrap();
    // SAFETY: x and y are live pool blocks of LONG floats.
    unsafe { graphcore_core::copy_async(&s2, y, x, LONG * 4) }.unwrap();
    s2.synchronize().unwrap();
    assert!(end.is_done().unwrap());
    end.synchronize().unwrap();
    let want = 1.5 * (1u64 << CHAIN) as f32;
    assert_eq!(download(&s1, y, 3), vec![want; 3]);
    assert_eq!(download(&s1, y + (LONG as u64 - 1) * 4, 1), vec![want]);
    let ms = Event::elapsed_ms(&start, &end).unwrap();
    assert!(
        ms > 0.0 && ms < 10_000.0,
        "{CHAIN} passes over 16 MiB took {ms} ms"
    );
    assert!(Event::elapsed_ms(&end, &start).unwrap() <= 0.0);
    // Timing needs timing events; a borrowed event is the caller's.
    let untimed = Event::new(&c, false).unwrap();
    s1.record_event(&untimed, false).unwrap();
    s1.synchronize().unwrap();
    let e = Event::elapsed_ms(&start, &untimed).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // SAFETY: `end` outlives the borrowed handle.
    let borrowed = unsafe { Event::wrap(&c, end.raw()) }.unwrap();
    assert!(borrowed.is_borrowed() && !end.is_borrowed());
    s2.wait_event(&borrowed, false).unwrap();
    drop(borrowed);
    end.synchronize().unwrap();
    // An event of another context is refused before anything is enqueued.
    let other = Context::new(0).unwrap();
    let foreign = Event::new(&other, false).unwrap();
    if !other.same(&c) {
        let e = s1.record_event(&foreign, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn events_fork_and_join_a_capture_and_order_its_replay() {
    let c = ctx();
    let (s1, s2) = (Stream::new(&c).unwrap(), Stream::new(&c).unwrap());
    let p = pool(&c);
    let n = 1 << 16;
    let a = filled(&s1, &p, n, 1.0);
    let b = p.alloc(n as u64 * 4).unwrap();
    let (fork, join) = (
        Event::new(&c, false).unwrap(),
        Event::new(&c, false).unwrap(),
    );
    begin_capture(&s1, None, CaptureMode::ThreadLocal).unwrap();
    scale(&s1, a, a, n, 2.0);
    s1.record_event(&fork, false).unwrap();
    s2.wait_event(&fork, false).unwrap(); // s2 joins the capture
    scale(&s2, b, a, n, 3.0); // b = 3a, after a doubled
    s2.record_event(&join, false).unwrap();
    s1.wait_event(&join, false).unwrap(); // and rejoins it
    scale(&s1, a, a, n, 5.0); // after b was read from a
    let g = end_capture(&s1).unwrap();
    // Plain records and waits are dependencies, not nodes.
    let desc = g.desc();
    assert_eq!(g.node_count().unwrap(), 3, "{desc:?}");
    let e = Exec::new(&g, 0).unwrap();
    for round in 1..=3 {
        e.launch(&s1).unwrap();
        let a_before = 10f32.powi(round - 1);
        assert_eq!(
            download(&s1, b, 2),
            vec![a_before * 2.0 * 3.0; 2],
            "round {round}"
        );
        assert_eq!(
            download(&s1, a, 2),
            vec![a_before * 10.0; 2],
            "round {round}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn external_events_become_nodes_that_replays_record_and_wait_on() {
    let c = ctx();
    let (s1, s2) = (Stream::new(&c).unwrap(), Stream::new(&c).unwrap());
    let p = pool(&c);
    let x = filled(&s1, &p, LONG, 1.0);
    let y = p.alloc(LONG as u64 * 4).unwrap();
    let (start, end, gate) = (
        Event::new(&c, true).unwrap(),
        Event::new(&c, true).unwrap(),
        Event::new(&c, false).unwrap(),
    );
    // The graph: wait for `gate` (recorded eagerly by s2), time a copy of x
    // into y with start/end records.
    begin_capture(&s1, None, CaptureMode::ThreadLocal).unwrap();
    s1.wait_event(&gate, true).unwrap();
    s1.record_event(&start, true).unwrap();
    // SAFETY: x and y are live pool blocks of LONG floats while the graph runs.
    unsafe { graphcore_core::copy_async(&s1, y, x, LONG * 4) }.unwrap();
    s1.record_event(&end, true).unwrap();
    let g = end_capture(&s1).unwrap();
    let desc = g.desc().unwrap();
    let kinds: Vec<&str> = (0..desc.len()).map(|i| desc.node(i).kind_name()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "event record").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "event wait").count(),
        1,
        "{kinds:?}"
    );
    let e = Exec::new(&g, 0).unwrap();
    for round in 1..=2u32 {
        // s2 doubles x CHAIN times, then opens the gate; the replay on s1
        // must copy x only after that.
        double_chain(&s2, x, LONG);
        s2.record_event(&gate, false).unwrap();
        e.launch(&s1).unwrap();
        // The replay records `end`: a third stream can wait on it.
        let s3 = Stream::new(&c).unwrap();
        s3.wait_event(&end, false).unwrap();
        scale(&s3, y, y, LONG, 0.5);
        s3.synchronize().unwrap();
        let want = (1u64 << (CHAIN * round)) as f32 * 0.5;
        assert_eq!(download(&s1, y, 2), vec![want; 2], "round {round}");
        let tail = y + (LONG as u64 - 1) * 4;
        assert_eq!(download(&s1, tail, 1), vec![want], "round {round}");
        let ms = Event::elapsed_ms(&start, &end).unwrap();
        assert!((0.0..10_000.0).contains(&ms), "round {round}: {ms} ms");
    }
    // The graph keeps the events of its nodes: dropping them is safe.
    drop((start, end, gate));
    e.launch(&s1).unwrap();
    s1.synchronize().unwrap();
    drop(g);
    e.launch(&s1).unwrap();
    s1.synchronize().unwrap();
}

/// What a host function saw: the float at `host` each time it ran.
struct Seen {
    host: *const f32,
    values: Mutex<Vec<f32>>,
}

unsafe extern "C" fn record_seen(user: *mut c_void) {
    // SAFETY: `user` is the test's `Seen`, alive until the stream is
    // synchronized (the callback's contract in these tests).
    let seen = unsafe { &*(user as *const Seen) };
    // SAFETY: `host` is pinned memory the copy before this call wrote.
    let v = unsafe { seen.host.read_volatile() };
    seen.values.lock().unwrap().push(v);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_functions_run_in_stream_order_eagerly_and_in_captured_graphs() {
    let (c, s, p) = setup();
    let buf = filled(&s, &p, LONG, 3.0);
    let mut h = Host::new(&c, 1);
    h.as_mut_slice()[0] = -1.0;
    let seen = Seen {
        host: h.addr() as *const f32,
        values: Mutex::new(Vec::new()),
    };
    let user = &seen as *const Seen as *mut c_void;
    // Eagerly: after a long chain and the copy back, never before them.
    double_chain(&s, buf, LONG);
    // SAFETY: h holds one float; buf is a live pool block.
    unsafe { graphcore_core::copy_async(&s, h.addr(), buf, 4) }.unwrap();
    // SAFETY: record_seen reads `seen`, alive until after the synchronize.
    unsafe { s.launch_host_func(record_seen, user) }.unwrap();
    s.synchronize().unwrap();
    let first = 3.0 * (1u64 << CHAIN) as f32;
    assert_eq!(*seen.values.lock().unwrap(), vec![first]);
    // Captured: a host node that runs at each replay, after the copy.
    upload(&s, buf, &[1.0]);
    begin_capture(&s, None, CaptureMode::ThreadLocal).unwrap();
    scale(&s, buf, buf, 1, 2.0);
    // SAFETY: as above, for as long as the graph runs in this test.
    unsafe { graphcore_core::copy_async(&s, h.addr(), buf, 4) }.unwrap();
    // SAFETY: as above.
    unsafe { s.launch_host_func(record_seen, user) }.unwrap();
    let g = end_capture(&s).unwrap();
    assert_eq!(g.desc().unwrap().node(2), &NodeKind::Host);
    assert_eq!(
        seen.values.lock().unwrap().len(),
        1,
        "nothing ran during the capture"
    );
    let e = Exec::new(&g, 0).unwrap();
    for _ in 0..3 {
        e.launch(&s).unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(*seen.values.lock().unwrap(), vec![first, 2.0, 4.0, 8.0]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_clone_replays_what_its_source_does() {
    let (_c, s, p) = setup();
    let n = 4099;
    let buf = p.alloc(n as u64 * 4).unwrap();
    let x = random(seed(), n);
    // A captured graph with pool memory of its own: the clone must keep it.
    begin_capture(&s, Some(&p), CaptureMode::ThreadLocal).unwrap();
    let scratch = p.alloc(n as u64 * 4).unwrap();
    scale(&s, scratch, buf, n, 3.0);
    scale(&s, buf, scratch, n, 0.5);
    let g = end_capture(&s).unwrap();
    let clone = g.duplicate().unwrap();
    assert_ne!(clone.id(), g.id());
    assert_eq!(clone.desc(), g.desc());
    assert_eq!(clone.pool_bytes(), g.pool_bytes());
    assert_ne!(clone.raw().unwrap(), g.raw().unwrap());
    let source_exec = Exec::new(&g, 0).unwrap();
    upload(&s, buf, &x);
    source_exec.launch(&s).unwrap();
    let from_source = download(&s, buf, n);
    let want: Vec<f32> = x.iter().map(|v| v * 3.0 * 0.5).collect();
    assert_eq!(from_source, want);
    drop(source_exec);
    drop(g); // the clone keeps the scratch block and the functions alive
    let e = Exec::new(&clone, 0).unwrap();
    upload(&s, buf, &x);
    e.launch(&s).unwrap();
    assert_eq!(download(&s, buf, n), from_source);
    // A clone of the clone changes alone: a node added to it is not in the
    // graph it came from.
    let more = clone.duplicate().unwrap();
    more.add_empty(&[]).unwrap();
    assert_eq!(
        (clone.node_count().unwrap(), more.node_count().unwrap()),
        (2, 3)
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_wrapped_raw_graph_reads_back_and_replays() {
    let (c, s, p) = setup();
    let n = 1000;
    let buf = p.alloc(n as u64 * 4).unwrap();
    // The raw CUgraph of a built graph: a 4-byte memset then a scale.
    let g = Graph::new(&c).unwrap();
    // SAFETY: buf is a live pool block of n floats while the graphs run.
    let set = unsafe { g.add_memset_elements(buf, 2.5f32.to_bits(), 4, n, &[]) }.unwrap();
    let f = graphcore_core::Function::from_builtin(&c, "gc_scale_f32").unwrap();
    let cfg = graphcore_core::LaunchConfig {
        grid: [8, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    let (mut yy, mut xx, mut nn, mut a) = (buf, buf, n as u64, 4.0f32);
    let mut args = [
        &mut yy as *mut u64 as *mut c_void,
        &mut xx as *mut u64 as *mut c_void,
        &mut nn as *mut u64 as *mut c_void,
        &mut a as *mut f32 as *mut c_void,
    ];
    // SAFETY: gc_scale_f32(y, x, n, alpha); the values are copied now.
    unsafe { g.add_kernel(&f, &cfg, args.as_mut_ptr(), &[set]) }.unwrap();
    // Borrowed: read back as a captured graph is.
    // SAFETY: g owns the CUgraph and outlives the borrowing graph and exec.
    let w = unsafe { Graph::wrap_raw(&c, g.raw().unwrap(), false) }.unwrap();
    assert!(w.is_borrowed() && !g.is_borrowed());
    assert_eq!(w.desc(), g.desc());
    let e = Exec::new(&w, 0).unwrap();
    e.launch(&s).unwrap();
    assert_eq!(download(&s, buf, n), vec![10.0; n]);
    drop(e);
    drop(w); // the CUgraph stays g's
    assert_eq!(g.node_count().unwrap(), 2);
    upload(&s, buf, &vec![0.0; n]);
    Exec::new(&g, 0).unwrap().launch(&s).unwrap();
    assert_eq!(download(&s, buf, n), vec![10.0; n]);
    // NULL is refused.
    // SAFETY: refused before the driver sees it.
    let e = unsafe { Graph::wrap_raw(&c, std::ptr::null_mut(), true) }
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn element_memsets_set_whole_elements_and_refuse_misalignment() {
    let (c, s, p) = setup();
    let n = 1024; // floats
    let buf = p.alloc(n as u64 * 4).unwrap();
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<u32>>();
    // Eager: 2-byte elements over the whole block, then 4-byte ones over
    // floats 1..4.
    // SAFETY: buf is a live pool block of n floats.
    unsafe { graphcore_core::set_elements_async(&s, buf, 0xabcd, 2, 2 * n) }.unwrap();
    // SAFETY: as above.
    unsafe { graphcore_core::set_elements_async(&s, buf + 4, 0xdead_beef, 4, 3) }.unwrap();
    let got = bits(&download(&s, buf, n));
    assert_eq!(got[0], 0xabcd_abcd);
    assert_eq!(&got[1..4], &[0xdead_beef; 3]);
    assert!(got[4..].iter().all(|&b| b == 0xabcd_abcd));
    // Misaligned, too wide a value, another size, past the block: refused,
    // nothing written.
    for (dst, value, size, count) in [
        (buf + 1, 0, 2, 4),
        (buf + 2, 0, 4, 4),
        (buf, 0x1_0000, 2, 4),
        (buf, 0x100, 1, 4),
        (buf, 0, 8, 4),
        (buf, 0, 4, n + 1),
    ] {
        // SAFETY: refused before anything is enqueued.
        let e =
            unsafe { graphcore_core::set_elements_async(&s, dst, value, size, count) }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        let g = Graph::new(&c).unwrap();
        // SAFETY: as above.
        let e = unsafe { g.add_memset_elements(dst, value, size, count, &[]) }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert_eq!(g.node_count().unwrap(), 0);
    }
    assert_eq!(bits(&download(&s, buf, n)), got);
    // A graph node of 2-byte elements at an odd-halfword offset, then an
    // update to another value and size-preserving node: the exec follows.
    let node_graph = |value: u32| {
        let g = Graph::new(&c).unwrap();
        // SAFETY: floats 10..20 of buf, live while the graphs run.
        unsafe { g.add_memset_elements(buf + 42, value, 2, 10, &[]) }.unwrap();
        g
    };
    let g = node_graph(0x1111);
    match g.desc().unwrap().node(0) {
        &NodeKind::Memset {
            value,
            elem_size,
            bytes,
            ..
        } => assert_eq!((value, elem_size, bytes), (0x1111, 2, 20)),
        other => panic!("{other:?}"),
    }
    let e = Exec::new(&g, 0).unwrap();
    e.launch(&s).unwrap();
    let after = bits(&download(&s, buf, n));
    assert_eq!(
        after[10], 0x1111_abcd,
        "the low half of float 10 is untouched"
    );
    assert_eq!(&after[11..15], &[0x1111_1111; 4]);
    assert_eq!(after[15], 0xabcd_1111);
    e.update(&node_graph(0x2222)).unwrap();
    e.launch(&s).unwrap();
    let updated = bits(&download(&s, buf, n));
    assert_eq!(&updated[11..15], &[0x2222_2222; 4]);
    assert_eq!(updated[15], 0xabcd_2222);
}

/// Streams of a priority: the device's range is read, priorities outside
/// it are refused naming it, and kernels captured on a high-priority
/// stream forked from a normal one run (with their node priority) in an
/// exec instantiated with USE_NODE_PRIORITY, eagerly too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn high_priority_streams_run_eagerly_and_as_priority_nodes_of_a_capture() {
    let c = ctx();
    let (least, greatest) = Stream::priority_range(&c).unwrap();
    assert!(greatest <= least, "range {least}..{greatest}");
    for bad in [greatest - 1, least + 1] {
        let e = Stream::with_priority(&c, bad).err().expect("accepted");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e.message());
        assert!(
            e.message().contains(&format!("{greatest} (greatest)")),
            "{}",
            e.message()
        );
    }
    let (main, high) = (
        Stream::new(&c).unwrap(),
        Stream::with_priority(&c, greatest).unwrap(),
    );
    let p = pool(&c);
    let n = 1 << 16;
    let a = filled(&main, &p, n, 1.0);
    let b = p.alloc(n as u64 * 4).unwrap();
    high.wait_stream(&main).unwrap();
    scale(&high, b, a, n, 3.0);
    main.wait_stream(&high).unwrap();
    assert_eq!(download(&main, b, 2), vec![3.0; 2]);

    begin_capture(&main, None, CaptureMode::ThreadLocal).unwrap();
    scale(&main, a, a, n, 2.0);
    high.wait_stream(&main).unwrap(); // fork
    scale(&high, b, a, n, 3.0);
    main.wait_stream(&high).unwrap(); // join
    let g = end_capture(&main).unwrap();
    let e = Exec::new(&g, graphcore_core::instantiate_flags::USE_NODE_PRIORITY).unwrap();
    for round in 1..=3 {
        e.launch(&main).unwrap();
        let a_now = 2f32.powi(round);
        assert_eq!(download(&main, b, 2), vec![a_now * 3.0; 2], "round {round}");
    }
}
