"""graphcore.torch side by side with PyTorch's ways of running the same
PyTorch model, on the same GPU, from the same weights (fp32, TF32 off):

  * eager: ``model(x)``;
  * the notes' torch.cuda.graph recipe: one graph per bucket in one shared
    pool (graph_pool_handle), ``static_in.copy_(x); g.replay();
    static_out.clone()``;
  * ``torch.cuda.make_graphed_callables`` (one callable per bucket, one
    call: one pool), where it applies (else "skipped" with PyTorch's
    reason);
  * ``torch.compile(mode="reduce-overhead")``: compiled and timed in a
    child process (the same models, seeds and shapes, on the same GPU,
    while this process waits) killed at the cap (``--compile-cap``,
    GC_COMPILE_CAP_S, default 60 s a model), then "skipped" with the
    reason, as it is when it fails (no Triton...) or when the run's time
    budget is spent;
  * graphcore.torch: ``g = graph(model, example, buckets)``, ``g(x)`` (the
    returned tensor over the pool, valid until the next call, as
    torch.cuda.graph's static output is until the next replay) and
    ``g(x).clone()`` (a tensor of the caller's, as the recipe gives).

Models: the notes' MLP (1024 -> 512 -> 256 -> 10, buckets 1/4/16/32); the
GPT-style decoder of python/examples/torch_decoder.py (one-token step at
batch 1/4/16/64) and its 64-token greedy decode; the CNN of
python/examples/torch_cnn.py (batch 1/8/32); the notes' training step
(Linear 1024 x 1024, batch 64, MSELoss, SGD).

Per call from Python, end to end from the caller's input tensor to the
output (median over 5 repetitions of back-to-back calls, synchronized at
the end of each). Each bucket family's capture time (building it whole:
warm-ups, captures, instantiation; graphcore's binding check included)
and GPU memory: PyTorch's memory_reserved() grown by its captures against
the graphcore pool's bytes; the family's pool against its largest bucket
captured alone (target <= 1.05x). The decode loop: the calling thread's
time issuing 64 tokens (one launch of graphcore.torch.loop, against a
Python loop of per-token calls), timed around the calls alone (a
synchronize inside the timer would count CUDA's spin-wait as CPU), and the
wall time to the last token.

Prints each figure as it comes, a table last; writes
$OUT/torch_graphs.json (default perf/results). A failing part is reported
in the JSON ("failed") and the rest still measured. ``--quick``: fewer
repetitions, no torch.compile, no make_graphed_callables (a smoke run).
About 5-6 minutes on an H100 with torch.compile (``--budget``, default 390
s, bounds the run: parts left when it is spent are "skipped").

    python3 perf/side_by_side/torch_graphs.py [--quick] [--only mlp,decoder,cnn,train,loop]
"""
import argparse
import copy
import json
import os
import statistics
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
for p in (os.path.join(REPO, "python", "examples"), os.path.join(REPO, "python")):
    if p not in sys.path:
        sys.path.insert(0, p)

import torch  # noqa: E402

import torch_cnn  # noqa: E402  (the examples' models; importing them needs no GPU)
import torch_decoder  # noqa: E402

T0 = time.perf_counter()
REPS = 5


def log(msg):
    print("[%6.1f s] %s" % (time.perf_counter() - T0, msg), flush=True)


def sync():
    torch.cuda.synchronize()


# --- the models ---------------------------------------------------------------

def mlp_spec():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10)).cuda().eval()
    examples = {b: (torch.randn(b, 1024, device="cuda"),) for b in (1, 4, 16, 32)}
    return model, examples


def decoder_spec():
    torch.manual_seed(2)
    model = torch_decoder.make_decoder(torch).cuda().eval()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(2)
    examples = {b: (torch.randint(0, torch_decoder.VOCAB, (b,), device="cuda", generator=gen),
                    torch.randint(0, torch_decoder.POSITIONS, (b,), device="cuda", generator=gen))
                for b in (1, 4, 16, 64)}
    return model, examples


def cnn_spec():
    torch.manual_seed(3)
    model = torch_cnn.make_cnn(torch).cuda()
    examples = {b: (torch.randn((b,) + torch_cnn.IMAGE, device="cuda"),) for b in (1, 8, 32)}
    return model, examples


MODELS = {
    # name: (spec, the issue's goal against the recipe at batch <= 16)
    "mlp": (mlp_spec, 2.0),
    "decoder": (decoder_spec, 2.0),
    "cnn": (cnn_spec, 1.0),
}


def reset_state(model):
    """The decoder's KV cache back to zeros (each way's copy of the model
    writes its own): outputs compared after it depend only on the call."""
    for name in ("k_cache", "v_cache"):
        t = getattr(model, name, None)
        if t is not None:
            t.zero_()


# --- timing -------------------------------------------------------------------

def per_call_us(fn, seconds=0.25, reps=REPS):
    """Median wall time per call (us) over ``reps`` runs of back-to-back
    calls of fn(), synchronized at the end of each; the count per run
    sized to take about ``seconds`` / ``reps``."""
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(3):
        fn()
    sync()
    est = max((time.perf_counter() - t) / 3, 1e-6)
    iters = max(5, min(1000, int(seconds / reps / est)))
    times = []
    for _ in range(reps):
        sync()
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        times.append((time.perf_counter() - t) * 1e6 / iters)
    return statistics.median(times)


def built(build):
    """(build()'s result, seconds, bytes memory_reserved() grew, bytes
    memory_allocated() grew): a family built with PyTorch's allocator."""
    sync()
    torch.cuda.empty_cache()
    r0, a0 = torch.cuda.memory_reserved(), torch.cuda.memory_allocated()
    t = time.perf_counter()
    out = build()
    sync()
    s = time.perf_counter() - t
    return out, s, torch.cuda.memory_reserved() - r0, torch.cuda.memory_allocated() - a0


def first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def rel_err(got, want):
    if not got.is_floating_point():
        return 0.0 if torch.equal(got, want) else 1.0
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))


# --- the ways -----------------------------------------------------------------

def recipe_graph(model, si, pool):
    """The notes' recipe for one bucket: three warm-up calls of
    ``model(*si)`` on a side stream, then its capture into ``pool``:
    (graph, static output)."""
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(*si)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            so = model(*si)
    return g, so


def recipe_calls(model, examples):
    """The notes' recipe for any model: {rows: call(*xs)} from {rows: example
    tuple}, the largest bucket first, one shared pool, copies in, clones
    out."""
    pool = torch.cuda.graph_pool_handle()
    calls = {}
    for b in sorted(examples, reverse=True):
        si = tuple(t.clone() for t in examples[b])
        g, so = recipe_graph(model, si, pool)

        def call(*xs, si=si, g=g, so=so):
            for a, x in zip(si, xs):
                a.copy_(x)
            g.replay()
            return so.clone()
        call.replay = g.replay
        calls[b] = call
    return calls


def graphcore_launch(g, rows):
    """A plain launch of graphcore.torch graph ``g``'s bucket of ``rows``
    rows on the current stream (no binding, no check, no output): the
    floor of a call, with what PyTorch's bare replay is to the recipe."""
    from graphcore.torch import _graphs
    bucket = next(b for b in g._f.buckets if b.rows == rows)
    gs = _graphs._gc_stream(g._f.ctx, torch.cuda.current_stream().cuda_stream)
    return lambda: bucket.exec_.launch(gs)


def graphed_calls(model, examples):
    """torch.cuda.make_graphed_callables: one callable per bucket (each on
    its own copy of the model, as the function requires distinct modules),
    made in one call (one pool)."""
    buckets = sorted(examples, reverse=True)
    models = tuple(copy.deepcopy(model) for _ in buckets)
    # Samples of their own: the graphs read their samples, and a call given
    # the sample itself would skip the copy every other call makes.
    samples = tuple(tuple(t.clone() for t in examples[b]) for b in buckets)
    graphed = torch.cuda.make_graphed_callables(models, samples)
    return dict(zip(buckets, graphed))


def way(fams, name, fn):
    """Runs fn() -> dict into fams[name]; an exception is "skipped" with
    PyTorch's or graphcore's reason (the rest goes on)."""
    try:
        fams[name] = fn()
    except Exception as e:  # noqa: BLE001 - reported
        msg = str(e).strip().splitlines()
        fams[name] = {"skipped": "%s: %s" % (type(e).__name__, msg[0][:300] if msg else "")}
        log("%s: skipped (%s)" % (name, fams[name]["skipped"]))
        sync()
    return fams[name]


def inference(name, args, res):
    """One model: every way's family (capture time, memory), then per
    bucket every way's time per call."""
    import graphcore.torch as gct
    spec, goal = MODELS[name]
    model, examples = spec()
    buckets = sorted(examples)
    largest = examples[buckets[-1]]
    fams, keep = {}, {}
    log("%s: buckets %s" % (name, buckets))

    def recipe():
        m = copy.deepcopy(model)
        calls, s, reserved, allocated = built(lambda: recipe_calls(m, examples))
        keep["recipe"] = (m, calls)
        return {"capture_s": s, "reserved_bytes": reserved, "allocated_bytes": allocated}
    way(fams, "torch_cuda_graph", recipe)
    log("%s: torch.cuda.graph recipe family %s" % (name, fams["torch_cuda_graph"]))

    def graphcore():
        m = copy.deepcopy(model)
        t = time.perf_counter()
        g = gct.graph(m, largest, buckets=buckets)
        s = time.perf_counter() - t
        keep["graphcore"] = (m, g)
        st = g.stats()
        alone_m = copy.deepcopy(model)
        alone = gct.graph(alone_m, largest, buckets=[buckets[-1]])
        a = alone.stats()
        alone.close()
        del alone_m
        out = {"capture_s": s, "pool_bytes": st["pool_bytes"],
               "pool_reserved_bytes": st["pool_reserved_bytes"],
               "largest_bucket_alone_pool_bytes": a["pool_bytes"],
               "largest_bucket_alone_capture_s": a["capture_s"],
               "buckets": {b: {k: v[k] for k in ("pool_bytes", "capture_s", "mode", "reason",
                                                  "arg_uses")}
                           for b, v in st["buckets"].items()}}
        out["family_vs_largest_alone"] = out["pool_bytes"] / max(1, a["pool_bytes"])
        return out
    way(fams, "graphcore_torch", graphcore)
    log("%s: graphcore.torch family %s" % (name, fams["graphcore_torch"]))

    if args.quick:
        fams["make_graphed_callables"] = {"skipped": "--quick"}
    elif over_budget(args, 0.55):
        fams["make_graphed_callables"] = {"skipped": "the run's time budget (--budget %g s)"
                                                     % args.budget}
    else:
        def graphed():
            calls, s, reserved, allocated = built(lambda: graphed_calls(model, examples))
            keep["graphed"] = calls
            return {"capture_s": s, "reserved_bytes": reserved, "allocated_bytes": allocated}
        way(fams, "make_graphed_callables", graphed)
        log("%s: make_graphed_callables family %s" % (name, fams["make_graphed_callables"]))

    rows = []
    rec = keep.get("recipe")
    gco = keep.get("graphcore")
    graphed = keep.get("graphed")
    with torch.no_grad():
        for b in buckets:
            xs = examples[b]
            row = {"model": name, "batch": b, "eager_us": per_call_us(lambda: model(*xs))}
            if rec:
                row["torch_graph_recipe_us"] = per_call_us(lambda: rec[1][b](*xs))
                # The floors: each side's bare replay of the bucket (no
                # copy, no clone, no binding, no Python checks).
                row["torch_graph_replay_only_us"] = per_call_us(rec[1][b].replay)
            if graphed:
                row["make_graphed_callables_us"] = per_call_us(lambda: graphed[b](*xs))
            if gco:
                g = gco[1]
                row["graphcore_us"] = per_call_us(lambda: g(*xs))
                row["graphcore_clone_us"] = per_call_us(lambda: first(g(*xs)).clone())
                row["graphcore_launch_only_us"] = per_call_us(graphcore_launch(g, b))
            if rec and gco:
                # The same call from the same state: bitwise equal (the same
                # kernels ran), and against eager from that state too.
                for m in (rec[0], gco[0], model):
                    reset_state(m)
                got = first(gco[1](*xs)).clone()
                want_graph = first(rec[1][b](*xs))
                want = first(model(*xs))
                row["bitwise_equal_to_recipe"] = bool(torch.equal(got, want_graph))
                row["rel_err_vs_eager"] = rel_err(got, want)
                row["speedup_vs_recipe"] = row["torch_graph_recipe_us"] / row["graphcore_us"]
                row["speedup_clone_vs_recipe"] = (row["torch_graph_recipe_us"]
                                                  / row["graphcore_clone_us"])
                row["goal_vs_recipe"] = goal if b <= 16 else 1.0
            rows.append(row)
            log("%s batch %d: %s" % (name, b, {k: round(v, 2) if isinstance(v, float) else v
                                               for k, v in row.items()}))
    if gco:
        gco[1].close()
    res["models"][name] = {"rows": rows, "families": fams}


def train(args, res):
    """The notes' training step: eager, the recipe (copies in), the model
    graphed by make_graphed_callables with an eager optimizer step, and
    graphcore.torch.step (bound)."""
    import graphcore.torch as gct
    torch.manual_seed(1)
    lin = torch.nn.Linear(1024, 1024).cuda()
    loss_fn = torch.nn.MSELoss()
    x, y = torch.randn(64, 1024, device="cuda"), torch.randn(64, 1024, device="cuda")
    out, fams = {}, {}

    em = copy.deepcopy(lin)
    eopt = torch.optim.SGD(em.parameters(), lr=1e-3)

    def eager_step():
        eopt.zero_grad(set_to_none=True)
        loss_fn(em(x), y).backward()
        eopt.step()
    out["eager_us"] = per_call_us(eager_step)

    rm = copy.deepcopy(lin)
    ropt = torch.optim.SGD(rm.parameters(), lr=1e-3)
    sx, sy = x.clone(), y.clone()

    def rec_build():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                ropt.zero_grad(set_to_none=True)
                loss_fn(rm(sx), sy).backward()
                ropt.step()
        torch.cuda.current_stream().wait_stream(s)
        gr = torch.cuda.CUDAGraph()
        ropt.zero_grad(set_to_none=True)
        with torch.cuda.graph(gr):
            static_loss = loss_fn(rm(sx), sy)
            static_loss.backward()
            ropt.step()
        return gr, static_loss

    def recipe():
        (gr, static_loss), s, reserved, allocated = built(rec_build)

        def rec_step():
            sx.copy_(x)
            sy.copy_(y)
            gr.replay()
            return static_loss
        out["torch_graph_recipe_us"] = per_call_us(rec_step)
        return {"capture_s": s, "reserved_bytes": reserved, "allocated_bytes": allocated}
    way(fams, "torch_cuda_graph", recipe)

    if args.quick:
        fams["make_graphed_callables"] = {"skipped": "--quick"}
    else:
        def graphed():
            gm = copy.deepcopy(lin)
            gopt = torch.optim.SGD(gm.parameters(), lr=1e-3)
            fwd, s, reserved, allocated = built(
                lambda: torch.cuda.make_graphed_callables(gm, (x.clone(),)))

            def graphed_step():
                gopt.zero_grad(set_to_none=True)
                loss_fn(fwd(x), y).backward()
                gopt.step()
            out["make_graphed_callables_us"] = per_call_us(graphed_step)
            return {"capture_s": s, "reserved_bytes": reserved, "allocated_bytes": allocated,
                    "note": "the Linear's forward and backward graphed; loss and SGD eager"}
        way(fams, "make_graphed_callables", graphed)

    def graphcore():
        gm = copy.deepcopy(lin)
        gopt = torch.optim.SGD(gm.parameters(), lr=1e-3)

        def step_fn(a, b):
            loss = loss_fn(gm(a), b)
            loss.backward()
            gopt.step()
            return loss
        t = time.perf_counter()
        s = gct.step(step_fn, (x, y), optimizer=gopt)
        cap = time.perf_counter() - t
        out["graphcore_us"] = per_call_us(lambda: s(x, y))
        st = s.stats()
        s.close()
        return {"capture_s": cap, "pool_bytes": st["pool_bytes"],
                "pool_reserved_bytes": st["pool_reserved_bytes"],
                "mode": st["buckets"][64]["mode"], "reason": st["buckets"][64]["reason"]}
    way(fams, "graphcore_torch", graphcore)
    if "torch_graph_recipe_us" in out and "graphcore_us" in out:
        out["speedup_vs_recipe"] = out["torch_graph_recipe_us"] / out["graphcore_us"]
    out["families"] = fams
    res["train_step"] = out
    log("train step: %s" % out)


def issue_cpu_wall(fn, reps=REPS):
    """Medians over ``reps`` runs of fn(), in microseconds: the calling
    thread's wall time issuing fn(), its CPU time then (thread_time), and
    the wall time until the GPU is done. Only the last synchronizes."""
    issue, cpu, wall = [], [], []
    for _ in range(reps):
        sync()
        w0, c0 = time.perf_counter(), time.thread_time()
        fn()
        c1, w1 = time.thread_time(), time.perf_counter()
        sync()
        w2 = time.perf_counter()
        issue.append((w1 - w0) * 1e6)
        cpu.append((c1 - c0) * 1e6)
        wall.append((w2 - w0) * 1e6)
    return tuple(statistics.median(v) for v in (issue, cpu, wall))


def decode_loop(args, res):
    """The 64-token greedy decode at batch 1: one launch of
    graphcore.torch.loop (a WHILE node, no end token: 64 iterations)
    against Python loops of per-token launches: graphcore calls of the
    decode step (the target's comparison), the recipe's replays (copy in,
    replay, clone out), and the loop's own body launched alone (the same
    kernels as an iteration: Loop.run_body), without and with the host
    reading the flag after each token (what stopping at an end token takes
    from Python)."""
    import graphcore.torch as gct
    from graphcore.torch import _graphs
    td = torch_decoder
    n = 64
    torch.manual_seed(2)
    model = td.make_decoder(torch, max_batch=1).cuda().eval()
    start = torch.randint(0, td.VOCAB, (1,), device="cuda")
    example = (start.clone(), torch.zeros(1, dtype=torch.long, device="cuda"))
    state = (start.clone(), torch.zeros(1, dtype=torch.long, device="cuda"),
             torch.full((1, n), -1, dtype=torch.long, device="cuda"))
    lp = gct.loop(td.loop_body(copy.deepcopy(model), -1), state, max_iters=n)
    g = gct.graph(copy.deepcopy(model), example, buckets=[1])
    recipe = recipe_calls(copy.deepcopy(model), {1: example})[1]
    pos = [torch.full((1,), t, dtype=torch.long, device="cuda") for t in range(n)]

    def python_loop(step):
        def run():
            tok = start
            for t in range(n):
                tok = step(tok, pos[t])
        return run

    def python_body(check):
        def run():
            for s, x in zip(lp.state, state):
                s.copy_(x)
            for _ in range(n):
                flag = lp.run_body()[0]
                if check and float(flag) < 0.5:
                    break
        return run

    out = {"tokens": n, "batch": 1}
    with torch.no_grad():
        lp(*state)
        sync()
        out["loop_iterations"] = lp.iterations()
        gs = _graphs._gc_stream(lp._f.ctx, torch.cuda.current_stream().cuda_stream)
        for key, fn in (("loop", lambda: lp(*state)),
                        # the floor: the WHILE graph's launch alone (no state copy)
                        ("loop_launch_only", lambda: lp._exec.launch(gs)),
                        ("python_graphcore", python_loop(g)),
                        ("python_recipe", python_loop(recipe)),
                        ("python_body", python_body(False)),
                        ("python_body_checked", python_body(True))):
            fn()  # warm
            issue, cpu, wall = issue_cpu_wall(fn)
            out[key + "_issue_us_per_token"] = issue / n
            out[key + "_cpu_us_per_token"] = cpu / n
            out[key + "_wall_us_per_token"] = wall / n
            log("decode loop: %s: issue %.2f us, CPU %.2f us, wall %.1f us per token"
                % (key, issue / n, cpu / n, wall / n))
    out["issue_ratio_vs_python_graphcore"] = (out["loop_issue_us_per_token"]
                                              / out["python_graphcore_issue_us_per_token"])
    out["wall_ratio_vs_python_graphcore"] = (out["loop_wall_us_per_token"]
                                             / out["python_graphcore_wall_us_per_token"])
    lp.close()
    g.close()
    res["decode_loop"] = out


# --- torch.compile, in a child process -----------------------------------------

def compile_child(name):
    """Runs in the child: compiles ``name`` with mode="reduce-overhead"
    (dynamic=False: one graph per bucket, as the other ways), times each
    bucket's call end to end (a clone of the output: cudagraph trees'
    outputs are overwritten by the next call), and prints one JSON line."""
    t = time.perf_counter()
    out = {"buckets": {}}
    if name == "train":
        torch.manual_seed(1)
        lin = torch.nn.Linear(1024, 1024).cuda()
        loss_fn = torch.nn.MSELoss()
        opt = torch.optim.SGD(lin.parameters(), lr=1e-3)
        x, y = torch.randn(64, 1024, device="cuda"), torch.randn(64, 1024, device="cuda")

        @torch.compile(mode="reduce-overhead", dynamic=False)
        def fwd_bwd(a, b):
            loss = loss_fn(lin(a), b)
            loss.backward()
            return loss

        def step():
            opt.zero_grad(set_to_none=True)
            loss = fwd_bwd(x, y)
            opt.step()
            return loss
        for _ in range(3):
            step()
        sync()
        out["compile_s"] = time.perf_counter() - t
        out["buckets"][64] = per_call_us(step)
    else:
        model, examples = MODELS[name][0]()
        fn = torch.compile(model, mode="reduce-overhead", dynamic=False)
        with torch.no_grad():
            for b in sorted(examples):
                for _ in range(3):
                    fn(*examples[b])
            sync()
            out["compile_s"] = time.perf_counter() - t
            for b in sorted(examples):
                xs = examples[b]
                out["buckets"][b] = per_call_us(lambda: first(fn(*xs)).clone())
    try:  # PyTorch's silent fallback: compiled, but not run as a CUDA graph
        from torch._dynamo.utils import counters
        out["cudagraph_skips"] = int(counters["inductor"]["cudagraph_skips"])
    except Exception:  # noqa: BLE001 - the counter is PyTorch's internals
        pass
    print("RESULT " + json.dumps(out), flush=True)


def compiled(name, cap_s):
    """torch.compile of ``name`` in a child process killed after cap_s:
    the child's figures, or {"skipped": why}."""
    cmd = [sys.executable, os.path.abspath(__file__), "--compile-child", name]
    t = time.perf_counter()
    # Output to files, the child in a process group of its own: at the cap
    # the whole group goes (inductor's compile workers too), and no pipe a
    # worker still holds can keep this process waiting.
    with tempfile.TemporaryFile("w+") as out_f, tempfile.TemporaryFile("w+") as err_f:
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_f, stderr=err_f,
                                 start_new_session=True)
        try:
            rc = child.wait(timeout=cap_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child.wait()
            return {"skipped": "compile and timing over the cap (%g s; --compile-cap)" % cap_s}
        finally:
            try:  # workers the child left behind
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        out_f.seek(0)
        err_f.seek(0)
        stdout, stderr = out_f.read(), err_f.read()
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            out = json.loads(line[len("RESULT "):])
            out["child_s"] = time.perf_counter() - t
            out["buckets"] = {int(k): v for k, v in out["buckets"].items()}
            return out
    # Why: the exception a traceback ends with, else what the child said.
    err = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith(" ")
           and ("Error" in ln or "Exception" in ln)]
    said = [ln for ln in stdout.splitlines() if ln.strip()]
    rest = [ln for ln in stderr.splitlines() if ln.strip()]
    why = (err or said or rest or [""])[-1]
    return {"skipped": "failed (exit %d): %s" % (rc, why[:300])}


def over_budget(args, share):
    """True once the run has spent ``share`` of its budget."""
    return time.perf_counter() - T0 > share * args.budget


# --- the run -------------------------------------------------------------------

def table(res, path):
    print("\n%s, torch %s, graphcore %s -> %s" % (res["device"], res["torch"], res["graphcore"],
                                                  path))
    print("per call, us     | eager  | recipe | graphed | compile | graphcore (+clone) | x recipe")
    for name, m in res["models"].items():
        for r in m["rows"]:
            f = (lambda k: "%.1f" % r[k] if k in r else "-")
            print("%-7s batch %2d | %6s | %6s | %7s | %7s | %7s (%7s)  | %s%s" % (
                name, r["batch"], f("eager_us"), f("torch_graph_recipe_us"),
                f("make_graphed_callables_us"), f("torch_compile_us"), f("graphcore_us"),
                f("graphcore_clone_us"),
                "%.2fx (>= %gx)" % (r["speedup_vs_recipe"], r["goal_vs_recipe"])
                if "speedup_vs_recipe" in r else "-",
                "" if r.get("bitwise_equal_to_recipe", True) else "  NOT bitwise equal"))
        for way_name, fam in m["families"].items():
            print("  %s family %-24s %s" % (name, way_name, {
                k: v for k, v in fam.items() if k != "buckets"}))
    t = res.get("train_step")
    if t:
        print("train step, us: %s" % {k: round(v, 1) for k, v in t.items()
                                      if isinstance(v, float)})
        for way_name, fam in t["families"].items():
            print("  train family %-24s %s" % (way_name, fam))
    d = res.get("decode_loop")
    if d:
        print("decode loop, %d tokens, per token (issue/CPU/wall us): one launch %.2f/%.2f/%.1f, "
              "Python loop of graphcore calls %.1f/%.1f/%.1f, of recipe replays %.1f/%.1f/%.1f; "
              "issue %.3fx (<= 0.05), wall %.3fx (<= 1)" % (
                  d["tokens"], d["loop_issue_us_per_token"], d["loop_cpu_us_per_token"],
                  d["loop_wall_us_per_token"], d["python_graphcore_issue_us_per_token"],
                  d["python_graphcore_cpu_us_per_token"], d["python_graphcore_wall_us_per_token"],
                  d["python_recipe_issue_us_per_token"], d["python_recipe_cpu_us_per_token"],
                  d["python_recipe_wall_us_per_token"], d["issue_ratio_vs_python_graphcore"],
                  d["wall_ratio_vs_python_graphcore"]))
        print("  the loop's body launched alone per token: %.1f/%.1f/%.1f; with the flag read "
              "after each: %.1f/%.1f/%.1f" % (
                  d["python_body_issue_us_per_token"], d["python_body_cpu_us_per_token"],
                  d["python_body_wall_us_per_token"], d["python_body_checked_issue_us_per_token"],
                  d["python_body_checked_cpu_us_per_token"],
                  d["python_body_checked_wall_us_per_token"]))
    for k, v in res.get("failed", {}).items():
        print("FAILED %s: %s" % (k, v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer repetitions; no torch.compile, no make_graphed_callables")
    ap.add_argument("--only", default="mlp,decoder,cnn,train,loop",
                    help="comma-separated parts (mlp, decoder, cnn, train, loop)")
    ap.add_argument("--compile-cap", type=float,
                    default=float(os.environ.get("GC_COMPILE_CAP_S", "60")),
                    help="seconds for one model's torch.compile child (compile and timing)")
    ap.add_argument("--budget", type=float, default=390.0,
                    help="seconds for the whole run; parts left when it is spent are skipped")
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(REPO, "perf", "results")))
    ap.add_argument("--compile-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_graphs.py: PyTorch sees no CUDA GPU: nothing measured")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if args.compile_child:
        compile_child(args.compile_child)
        return 0
    global REPS
    if args.quick:
        REPS = 3
    import graphcore as gc
    import graphcore.torch  # noqa: F401 - says clearly when it cannot load
    parts = [p for p in args.only.split(",") if p]
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "graphcore": ".".join(map(str, gc.version())), "library": gc.LIBRARY,
           "date": time.strftime("%Y-%m-%d"), "quick": args.quick, "models": {},
           "compile_cap_s": args.compile_cap, "budget_s": args.budget}
    log("%s, torch %s; parts %s" % (res["device"], res["torch"], parts))

    def part(name, fn):
        if name not in parts:
            return
        if over_budget(args, 0.8):
            res.setdefault("skipped", {})[name] = "the run's time budget (--budget %g s)" % (
                args.budget)
            log("%s: skipped (budget)" % name)
            return
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - reported, the rest still measured
            res.setdefault("failed", {})[name] = "%s: %s" % (type(e).__name__, e)
            log("%s FAILED: %s" % (name, res["failed"][name]))
            traceback.print_exc()
            sync()
    for name in ("mlp", "cnn", "decoder"):
        part(name, lambda name=name: inference(name, args, res))
    part("train", lambda: train(args, res))
    part("loop", lambda: decode_loop(args, res))

    # torch.compile last, each in a child capped by what is left.
    todo = [p for p in ("mlp", "cnn", "decoder", "train")
            if p in parts and (p in res["models"] or (p == "train" and "train_step" in res))]
    for i, name in enumerate(todo):
        fams = (res["train_step"] if name == "train" else res["models"][name])["families"]
        left = args.budget - (time.perf_counter() - T0) - 10
        cap = min(args.compile_cap, left / (len(todo) - i))
        if args.quick:
            fams["torch_compile_reduce_overhead"] = {"skipped": "--quick"}
            continue
        if cap < 15:
            fams["torch_compile_reduce_overhead"] = {
                "skipped": "the run's time budget (--budget %g s): %.0f s left" % (
                    args.budget, max(left, 0))}
            continue
        log("%s: torch.compile(mode='reduce-overhead') in a child, capped at %.0f s" % (name, cap))
        c = compiled(name, cap)
        log("%s: torch.compile: %s" % (name, c))
        if "skipped" in c:
            fams["torch_compile_reduce_overhead"] = c
            continue
        fams["torch_compile_reduce_overhead"] = {
            k: c[k] for k in ("compile_s", "child_s", "cudagraph_skips") if k in c}
        if name == "train":
            res["train_step"]["torch_compile_us"] = c["buckets"][64]
        else:
            for r in res["models"][name]["rows"]:
                if r["batch"] in c["buckets"]:
                    r["torch_compile_us"] = c["buckets"][r["batch"]]

    res["elapsed_s"] = time.perf_counter() - T0
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "torch_graphs.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    table(res, path)
    log("done in %.0f s" % res["elapsed_s"])
    return 1 if res.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
