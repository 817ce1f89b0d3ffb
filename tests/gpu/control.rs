//! Device-side control flow: IF, IF/ELSE, WHILE and SWITCH nodes, nesting,
//! capture into a body, the setter kernels, update rules, bad inputs; and
//! the measurements of docs/results.md's "Control flow on the device" (written
//! as JSON to $GC_CONTROL_JSON when it is set).

use super::*;
use graphcore_core::kernels::ops;
use graphcore_core::{
    begin_capture, begin_capture_into, end_capture, launch_op, CaptureMode, CondType, ErrorKind,
    Exec, Graph, Node, Runner,
};
use std::time::Instant;

const TL: CaptureMode = CaptureMode::ThreadLocal;

/// The error of a call that must fail.
fn err<T>(r: graphcore_core::Result<T>) -> graphcore_core::Error {
    match r {
        Ok(_) => panic!("the call succeeded; it must fail"),
        Err(e) => e,
    }
}

/// Runs one built-in operation on `s` (eagerly or captured).
fn run(
    s: &Stream,
    call: Result<graphcore_core::kernels::Call, graphcore_core::kernels::SizeError>,
) {
    // SAFETY: every buffer the tests pass is a live pool allocation holding
    // what the operation reads and writes, alive while the graphs run.
    unsafe { launch_op(s, call) }.unwrap();
}

/// Adds one built-in operation as a node of `g`.
fn op(
    g: &Graph,
    call: Result<graphcore_core::kernels::Call, graphcore_core::kernels::SizeError>,
    deps: &[Node],
) -> Node {
    // SAFETY: as in `run`.
    unsafe { g.add_op(call, deps) }.unwrap()
}

fn put_u32(s: &Stream, dst: u64, v: &[u32]) {
    let f: Vec<f32> = v.iter().map(|&x| f32::from_bits(x)).collect();
    upload(s, dst, &f);
}

fn get_u32(s: &Stream, src: u64, n: usize) -> Vec<u32> {
    download(s, src, n).iter().map(|x| x.to_bits()).collect()
}

/// Captures `body` (an empty conditional body) from what `f` enqueues.
fn fill_body(s: &Stream, body: &Graph, f: impl FnOnce(&Stream)) {
    begin_capture_into(s, body, None, TL).unwrap();
    f(s);
    let b = end_capture(s).unwrap();
    assert_eq!(b.id(), body.id());
}

fn launch_once(g: &Graph, s: &Stream) {
    let e = Exec::new(g, 0).unwrap();
    e.launch(s).unwrap();
    s.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn if_and_if_else_follow_a_flag_in_device_memory() {
    let (c, s, p) = setup();
    let (flag, out) = (p.alloc(4).unwrap(), p.alloc(4).unwrap());
    for (kind, bodies) in [(CondType::If, 1), (CondType::IfElse, 2)] {
        let g = Graph::new(&c).unwrap();
        let h = g.conditional_handle(0, true).unwrap();
        let set = op(&g, ops::cond_set_u32(h.raw, flag), &[]);
        let (_, b) = g.add_conditional(kind, h, 0, &[set]).unwrap();
        assert_eq!(b.len(), bodies);
        fill_body(&s, &b[0], |s| run(s, ops::fill(out, 1, 1.0, c.sm_count())));
        if bodies == 2 {
            fill_body(&s, &b[1], |s| run(s, ops::fill(out, 1, 2.0, c.sm_count())));
        }
        let e = Exec::new(&g, 0).unwrap();
        for (value, want) in [
            (1u32, 1.0f32),
            (0, if bodies == 2 { 2.0 } else { -1.0 }),
            (7, 1.0),
        ] {
            upload(&s, out, &[-1.0]);
            put_u32(&s, flag, &[value]);
            e.launch(&s).unwrap();
            s.synchronize().unwrap();
            assert_eq!(download(&s, out, 1)[0], want, "{kind:?} with value {value}");
        }
        let dot = g.to_dot("cond").unwrap();
        assert!(dot.contains("cluster_n1_b0_"), "{dot}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn while_runs_until_the_counter_reaches_its_limit_and_switch_picks_a_case() {
    let (c, s, p) = setup();
    let (counter, acc) = (p.alloc(4).unwrap(), p.alloc(4).unwrap());
    // WHILE: the default value 1 enters the loop; the body's last node caps it.
    let g = Graph::new(&c).unwrap();
    let h = g.conditional_handle(1, true).unwrap();
    // SAFETY: a live pool allocation of 4 bytes, alive while the graph runs.
    let zero = unsafe { g.add_memset(counter, 0, 4, &[]) }.unwrap();
    let (_, b) = g.add_conditional(CondType::While, h, 0, &[zero]).unwrap();
    let inc = op(&b[0], ops::add_scalar(acc, acc, 1, 1.0, c.sm_count()), &[]);
    op(&b[0], ops::cond_count(h.raw, counter, 5), &[inc]);
    upload(&s, acc, &[0.0]);
    let e = Exec::new(&g, 0).unwrap();
    for launch in 1..=3 {
        e.launch(&s).unwrap();
        s.synchronize().unwrap();
        assert_eq!(download(&s, acc, 1)[0], 5.0 * launch as f32);
        assert_eq!(get_u32(&s, counter, 1)[0], 5);
    }
    // SWITCH of 4 cases: case i writes i; a value >= 4 runs none.
    let (sel, out) = (p.alloc(4).unwrap(), p.alloc(4).unwrap());
    let g = Graph::new(&c).unwrap();
    let h = g.conditional_handle(0, true).unwrap();
    let set = op(&g, ops::cond_set_u32(h.raw, sel), &[]);
    let (_, b) = g.add_conditional(CondType::Switch, h, 4, &[set]).unwrap();
    for (i, body) in b.iter().enumerate() {
        op(body, ops::fill(out, 1, i as f32, c.sm_count()), &[]);
    }
    let e = Exec::new(&g, 0).unwrap();
    for v in 0..6u32 {
        upload(&s, out, &[-1.0]);
        put_u32(&s, sel, &[v]);
        e.launch(&s).unwrap();
        s.synchronize().unwrap();
        let want = if v < 4 { v as f32 } else { -1.0 };
        assert_eq!(download(&s, out, 1)[0], want, "case {v}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nested_if_inside_while_and_the_float_setter() {
    let (c, s, p) = setup();
    let (counter, acc, other) = (
        p.alloc(4).unwrap(),
        p.alloc(4).unwrap(),
        p.alloc(4).unwrap(),
    );
    let g = Graph::new(&c).unwrap();
    let outer = g.conditional_handle(1, true).unwrap();
    // SAFETY: a live pool allocation of 4 bytes, alive while the graph runs.
    let zero = unsafe { g.add_memset(counter, 0, 4, &[]) }.unwrap();
    let (_, b) = g
        .add_conditional(CondType::While, outer, 0, &[zero])
        .unwrap();
    let body = &b[0];
    let inner = body.conditional_handle(0, true).unwrap();
    let inc = op(body, ops::add_scalar(acc, acc, 1, 1.0, c.sm_count()), &[]);
    let test = op(
        body,
        ops::cond_set_f32(inner.raw, acc, 2.5, ops::CMP_GE, 0, 0),
        &[inc],
    );
    let (cond, ib) = body
        .add_conditional(CondType::If, inner, 0, &[test])
        .unwrap();
    op(
        &ib[0],
        ops::add_scalar(other, other, 1, 10.0, c.sm_count()),
        &[],
    );
    op(body, ops::cond_count(outer.raw, counter, 4), &[cond]);
    upload(&s, acc, &[0.0]);
    upload(&s, other, &[0.0]);
    launch_once(&g, &s);
    // acc runs 1, 2, 3, 4; the inner IF runs for 3 and 4.
    assert_eq!(download(&s, acc, 1)[0], 4.0);
    assert_eq!(download(&s, other, 1)[0], 20.0);
    let dot = g.to_dot("nested").unwrap();
    assert!(dot.contains("cluster_n1_b0_n2_b0_"), "{dot}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn capture_into_a_body_with_pool_memory_of_the_outer_graph() {
    let (c, s, p) = setup();
    let (flag, out) = (p.alloc(4).unwrap(), p.alloc(64 * 4).unwrap());
    let g = Graph::new(&c).unwrap();
    let h = g.conditional_handle(0, true).unwrap();
    let set = op(&g, ops::cond_set_u32(h.raw, flag), &[]);
    let (_, b) = g.add_conditional(CondType::If, h, 0, &[set]).unwrap();
    begin_capture_into(&s, &b[0], Some(&p), TL).unwrap();
    let tmp = p.alloc(64 * 4).unwrap();
    run(&s, ops::fill(tmp, 64, 3.0, c.sm_count()));
    run(&s, ops::scale(out, tmp, 64, 2.0, c.sm_count()));
    let body = end_capture(&s).unwrap();
    assert_eq!(body.node_count().unwrap(), 2);
    assert!(
        g.pool_bytes() >= 256,
        "the capture's block belongs to the outer graph"
    );
    put_u32(&s, flag, &[1]);
    launch_once(&g, &s);
    assert!(download(&s, out, 64).iter().all(|&v| v == 6.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn updates_and_bad_inputs_are_refused_with_the_graph_unchanged() {
    let c = ctx();
    let s = Stream::new(&c).unwrap();
    let s2 = Stream::new(&c).unwrap();
    let p = pool(&c);
    let out = p.alloc(4).unwrap();
    let g = Graph::new(&c).unwrap();
    let other = Graph::new(&c).unwrap();
    let h = g.conditional_handle(0, true).unwrap();
    let foreign = other.conditional_handle(0, true).unwrap();
    let e = err(g.add_conditional(CondType::If, foreign, 0, &[]));
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("another graph"), "{}", e.message());
    let e = err(g.add_conditional(CondType::Switch, h, 0, &[]));
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(g.node_count().unwrap(), 0);
    let (_, b) = g.add_conditional(CondType::While, h, 0, &[]).unwrap();
    let e = err(g.add_conditional(CondType::If, h, 0, &[]));
    assert!(e.message().contains("already steers"), "{}", e.message());
    assert_eq!(g.node_count().unwrap(), 1);
    /// A host callback that is never called (the node is refused).
    unsafe extern "C" fn nothing(_: *mut std::ffi::c_void) {}
    // SAFETY: refused before the callback could ever run.
    let e = unsafe { b[0].add_host(nothing, std::ptr::null_mut(), &[]) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    // Capture into the body from one stream, end on another: refused.
    begin_capture_into(&s, &b[0], None, TL).unwrap();
    assert_eq!(err(end_capture(&s2)).kind(), ErrorKind::InvalidState);
    run(&s, ops::fill(out, 1, 1.0, c.sm_count()));
    let body = end_capture(&s).unwrap();
    let node = Node {
        graph: body.id(),
        index: 0,
    };
    let exec = Exec::new(&g, 0).unwrap();
    // A body cannot change after instantiate, nor be instantiated alone.
    assert_eq!(
        b[0].add_empty(&[]).unwrap_err().kind(),
        ErrorKind::InvalidState
    );
    assert_eq!(err(Exec::new(&b[0], 0)).kind(), ErrorKind::InvalidArgument);
    // Updates of graphs with conditional bodies, and arguments of body
    // nodes, are refused clearly.
    let e = exec.update(&g).unwrap_err();
    assert!(e.message().contains("conditional"), "{}", e.message());
    let mut v = 2.0f32;
    let mut n = 1u64;
    let mut o = out;
    let mut args = [
        &mut o as *mut u64 as *mut std::ffi::c_void,
        &mut n as *mut u64 as *mut std::ffi::c_void,
        &mut v as *mut f32 as *mut std::ffi::c_void,
    ];
    // SAFETY: gc_fill_f32's three arguments, typed (refused anyway).
    let e = unsafe { exec.set_kernel_args(node, args.as_mut_ptr()) }.unwrap_err();
    assert!(
        e.message().contains("conditional bodies"),
        "{}",
        e.message()
    );
    // The default 0 leaves the WHILE's body unrun; the exec still works.
    exec.launch(&s).unwrap();
    s.synchronize().unwrap();
}

/// Nanoseconds this thread has run on a CPU (CLOCK_THREAD_CPUTIME_ID).
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `t` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A linear model's training step (forward, MSE loss and gradient, SGD on
/// weights and bias), captured on `s`.
struct Model {
    x: u64,
    y: u64,
    w: u64,
    b: u64,
    pred: u64,
    loss: u64,
    ws: u64,
    ws_bytes: u64,
    m: u32,
    n: u32,
    k: u32,
}

impl Model {
    fn new(s: &Stream, p: &graphcore_core::Pool, seed: u64) -> Model {
        let (m, n, k) = (256u32, 16u32, 64u32);
        let f = |count: u32| p.alloc(count as u64 * 4).unwrap();
        let sms = s.context().sm_count();
        let ws_bytes = ops::mse_workspace_bytes((m * n) as u64, sms);
        let md = Model {
            x: f(m * k),
            y: f(m * n),
            w: f(n * k),
            b: f(n),
            pred: f(m * n),
            loss: f(1),
            ws: p.alloc(ws_bytes).unwrap(),
            ws_bytes,
            m,
            n,
            k,
        };
        md.reset(s, seed);
        md
    }

    fn reset(&self, s: &Stream, seed: u64) {
        upload(s, self.x, &random(seed, (self.m * self.k) as usize));
        upload(s, self.y, &random(seed + 1, (self.m * self.n) as usize));
        upload(s, self.w, &random(seed + 2, (self.n * self.k) as usize));
        upload(s, self.b, &vec![0.0; self.n as usize]);
        upload(s, self.ws, &vec![0.0; (self.ws_bytes / 4) as usize]);
    }

    fn step(&self, s: &Stream, lr: f32) {
        let sms = s.context().sm_count();
        let (m, n, k) = (self.m, self.n, self.k);
        run(
            s,
            ops::linear(
                self.pred, self.x, self.w, self.b, m, n, k, false, sms, false,
            ),
        );
        let scale = 1.0 / (m * n) as f32;
        run(
            s,
            ops::mse(
                self.loss,
                self.pred,
                self.pred,
                self.y,
                (m * n) as u64,
                scale,
                self.ws,
                self.ws_bytes,
                sms,
            ),
        );
        run(
            s,
            ops::linear_weight_sgd(self.w, self.pred, self.x, m, n, k, lr, sms),
        );
        run(s, ops::bias_sgd(self.b, self.pred, m, n, lr, sms));
    }

    fn weights(&self, s: &Stream) -> Vec<f32> {
        let mut v = download(s, self.w, (self.n * self.k) as usize);
        v.extend(download(s, self.b, self.n as usize));
        v.extend(download(s, self.loss, 1));
        v
    }
}

/// A WHILE graph running the training step until the loss is below `eps`
/// or `limit` steps have run (the counter says how many).
fn training_loop(s: &Stream, md: &Model, counter: u64, eps: f32, limit: u32, lr: f32) -> Graph {
    let g = Graph::new(s.context()).unwrap();
    let h = g.conditional_handle(1, true).unwrap();
    // SAFETY: a live pool allocation of 4 bytes, alive while the graph runs.
    let zero = unsafe { g.add_memset(counter, 0, 4, &[]) }.unwrap();
    let (_, b) = g.add_conditional(CondType::While, h, 0, &[zero]).unwrap();
    fill_body(s, &b[0], |s| {
        md.step(s, lr);
        run(
            s,
            ops::cond_set_f32(h.raw, md.loss, eps, ops::CMP_GE, counter, limit),
        );
    });
    g
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn control_flow_measurements() {
    let (c, s, p) = setup();
    let md = Model::new(&s, &p, 7);
    let counter = p.alloc(4).unwrap();
    let (steps, lr) = (100u32, 0.05f32);

    // The step as a graph, replayed by the host with a decision per step.
    begin_capture(&s, None, TL).unwrap();
    md.step(&s, lr);
    let step = Exec::new(&end_capture(&s).unwrap(), 0).unwrap();
    let loss_host = Host::new(&c, 1);
    let mut losses = Vec::new();
    md.reset(&s, 7);
    let (t0, cpu0) = (Instant::now(), thread_cpu_ns());
    for _ in 0..steps {
        step.launch(&s).unwrap();
        // SAFETY: pinned host memory of this test, one float.
        unsafe { graphcore_core::copy_async(&s, loss_host.addr(), md.loss, 4) }.unwrap();
        s.synchronize().unwrap();
        losses.push(loss_host.as_slice()[0]);
    }
    let host_wall = t0.elapsed().as_secs_f64();
    let host_cpu = (thread_cpu_ns() - cpu0) as f64 * 1e-9;
    let host_result = md.weights(&s);

    // The same 100 steps as one WHILE launch.
    let lp = Exec::new(&training_loop(&s, &md, counter, -1.0, steps, lr), 0).unwrap();
    md.reset(&s, 7);
    let (t0, cpu0) = (Instant::now(), thread_cpu_ns());
    lp.launch(&s).unwrap();
    let issue_cpu = (thread_cpu_ns() - cpu0) as f64 * 1e-9;
    s.synchronize().unwrap();
    let while_wall = t0.elapsed().as_secs_f64();
    let while_cpu = (thread_cpu_ns() - cpu0) as f64 * 1e-9;
    assert_eq!(get_u32(&s, counter, 1)[0], steps);
    let while_result = md.weights(&s);
    let bitwise = host_result
        .iter()
        .zip(&while_result)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    assert!(
        bitwise,
        "the WHILE loop's weights and loss differ from the host loop's"
    );

    // Device time per iteration: the WHILE launch against replayed steps
    // back to back (the stream's wall time, best of 5).
    let best = |f: &dyn Fn()| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                s.synchronize().unwrap();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    };
    let replay = best(&|| {
        for _ in 0..steps {
            step.launch(&s).unwrap();
        }
    }) / steps as f64;
    let in_loop = best(&|| lp.launch(&s).unwrap()) / steps as f64;

    // Early stop: eps between the losses of steps K-1 and K of the host run.
    let k = 40usize;
    let eps = (losses[k - 1] + losses[k]) / 2.0;
    let expect = losses.iter().position(|&l| l < eps).unwrap() + 1;
    let stop = Exec::new(&training_loop(&s, &md, counter, eps, steps, lr), 0).unwrap();
    md.reset(&s, 7);
    stop.launch(&s).unwrap();
    s.synchronize().unwrap();
    let stopped = get_u32(&s, counter, 1)[0] as usize;
    assert_eq!(
        stopped, expect,
        "early stop after {stopped} steps, host reference {expect}"
    );

    // An IF whose condition is false: 50 of them in a chain against 50
    // empty nodes, per node. (One handle per node, as CUDA requires; each
    // is 0 at every launch, its default, so no setter runs.)
    let flag = p.alloc(4).unwrap();
    put_u32(&s, flag, &[0]);
    let chain = |with_if: bool| {
        let g = Graph::new(&c).unwrap();
        let mut last = g.add_empty(&[]).unwrap();
        for _ in 0..50 {
            last = if with_if {
                let h = g.conditional_handle(0, true).unwrap();
                let (n, b) = g.add_conditional(CondType::If, h, 0, &[last]).unwrap();
                op(&b[0], ops::fill(flag, 1, 1.0, c.sm_count()), &[]);
                n
            } else {
                g.add_empty(&[last]).unwrap()
            };
        }
        Exec::new(&g, 0).unwrap()
    };
    let (with_if, without) = (chain(true), chain(false));
    let reps = 200;
    let t_if = best(&|| (0..reps).for_each(|_| with_if.launch(&s).unwrap()));
    let t_empty = best(&|| (0..reps).for_each(|_| without.launch(&s).unwrap()));
    let if_false_us = ((t_if - t_empty) / (reps * 50) as f64 * 1e6).max(0.0);
    assert_eq!(
        get_u32(&s, flag, 1)[0],
        0,
        "an IF body ran with a false condition"
    );

    // SWITCH bucket choice against the runner's, for every row count.
    let sizes = [8u32, 16, 32, 64, 128];
    let mut runner = Runner::new(&c, Some(&p)).unwrap();
    let sink = p.alloc(4).unwrap();
    let mut record = |st: &Stream, rows: u32| {
        // SAFETY: a live pool allocation of one float.
        unsafe { launch_op(st, ops::fill(sink, 1, rows as f32, st.context().sm_count())) }
    };
    runner.capture(&sizes, &mut record, 1).unwrap();
    let (rows, table, chosen) = (
        p.alloc(4).unwrap(),
        p.alloc(4 * 5).unwrap(),
        p.alloc(4).unwrap(),
    );
    put_u32(&s, table, &sizes);
    let g = Graph::new(&c).unwrap();
    let h = g.conditional_handle(0, true).unwrap();
    let set = op(&g, ops::cond_set_bucket(h.raw, rows, table, 5), &[]);
    let (_, b) = g.add_conditional(CondType::Switch, h, 5, &[set]).unwrap();
    for (i, body) in b.iter().enumerate() {
        op(
            body,
            ops::fill(chosen, 1, sizes[i] as f32, c.sm_count()),
            &[],
        );
    }
    let sw = Exec::new(&g, 0).unwrap();
    let mut matched = 0;
    for r in 1..=*sizes.last().unwrap() {
        put_u32(&s, rows, &[r]);
        sw.launch(&s).unwrap();
        let host = runner.replay(r, &s).unwrap();
        s.synchronize().unwrap();
        assert_eq!(download(&s, chosen, 1)[0], host as f32, "{r} rows");
        matched += 1;
    }

    let json = format!(
        "{{\n  \"what\": \"conditional nodes: 100 training steps (linear 256x64 -> 16, MSE, SGD) in one WHILE launch vs 100 host launches with a host decision each; early stop; IF-false cost; SWITCH bucket choice\",\n  \"steps\": {steps},\n  \"bitwise_equal\": {bitwise},\n  \"host_loop_wall_ms\": {:.3},\n  \"host_loop_cpu_ms\": {:.3},\n  \"while_wall_ms\": {:.3},\n  \"while_cpu_ms\": {:.3},\n  \"while_issue_cpu_ms\": {:.4},\n  \"cpu_ratio\": {:.4},\n  \"issue_cpu_ratio\": {:.5},\n  \"replayed_step_us\": {:.3},\n  \"while_iteration_us\": {:.3},\n  \"iteration_vs_replay\": {:.3},\n  \"early_stop_iterations\": {stopped},\n  \"early_stop_host_reference\": {expect},\n  \"if_false_us\": {:.3},\n  \"switch_rows_checked\": {matched},\n  \"switch_buckets\": {:?}\n}}\n",
        host_wall * 1e3,
        host_cpu * 1e3,
        while_wall * 1e3,
        while_cpu * 1e3,
        issue_cpu * 1e3,
        while_cpu / host_cpu.max(1e-9),
        issue_cpu / host_cpu.max(1e-9),
        replay * 1e6,
        in_loop * 1e6,
        in_loop / replay,
        if_false_us,
        sizes,
    );
    println!("{json}");
    if let Some(path) = std::env::var_os("GC_CONTROL_JSON") {
        std::fs::write(path, &json).unwrap();
    }
}
