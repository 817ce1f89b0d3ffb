"""graphcore.torch side by side with PyTorch's ways of running the same
PyTorch model, on the same GPU, in one process, from the same weights
(fp32, TF32 off):

  * eager: ``model(x)``;
  * the notes' torch.cuda.graph recipe: one graph per bucket in one shared
    pool (graph_pool_handle), ``static_in.copy_(x); g.replay();
    static_out.clone()``;
  * ``torch.cuda.make_graphed_callables`` (one per bucket, one pool);
  * ``torch.compile(mode="reduce-overhead")``, its compile time capped
    (GC_COMPILE_CAP_S, default 300 s for the family): over the cap, or
    failing (no Triton...), it is reported "skipped" with the reason;
  * graphcore.torch: ``g = graph(model, example, buckets)``, ``g(x)`` (the
    returned tensor over the pool) and ``g(x).clone()`` (a tensor of the
    caller's, as the recipe's clone gives).

Models: the notes' MLP (1024 -> 512 -> 256 -> 10, buckets 1/4/16/32); the
notes' training step (Linear 1024 x 1024, batch 64, MSELoss, SGD: eager,
the recipe with copies, graphcore.torch.step bound); the GPT-style decoder
of python/examples/torch_decoder.py (one-token step at batch 1/4/16/64:
eager, recipe, graphcore.torch) and its 64-token greedy decode (CPU and
wall time per token: one launch of graphcore.torch.loop against a Python
loop of per-token graphcore calls and of recipe replays); a small CNN (4
conv-batchnorm-ReLU blocks, pooled linear head) at batch 1/8/32.

Per call from Python, end to end from the caller's input tensor to the
output (median over 7 repetitions of N back-to-back calls, synchronized at
the end); capture time of each bucket family; GPU memory of each family
(PyTorch: memory_reserved() grown by the family's captures; graphcore: the
pool's allocated bytes the captures added, and the largest bucket alone).
Writes $OUT/torch_graphs.json and prints a table last.

    python3 perf/side_by_side/torch_graphs.py
"""
import copy
import json
import os
import time

import torch

import graphcore.torch as gct
from walltime import median_us

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
OUT = os.environ.get("OUT", "perf/results")
CAP_S = float(os.environ.get("GC_COMPILE_CAP_S", "300"))
BUCKETS = [1, 4, 16, 32]


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(1024, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10)).cuda().eval()


def reserved_after(build):
    """(result of build(), bytes memory_reserved() grew, seconds)."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    t = time.perf_counter()
    out = build()
    torch.cuda.synchronize()
    return out, torch.cuda.memory_reserved() - before, time.perf_counter() - t


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


def recipe_family(model):
    """The notes' optimized_inference_pipeline: {rows: call(x)}."""
    pool = torch.cuda.graph_pool_handle()
    calls = {}
    for b in sorted(BUCKETS, reverse=True):
        si = torch.zeros(b, 1024, device="cuda")
        g, so = recipe_graph(model, (si,), pool)

        def call(x, si=si, g=g, so=so):
            si.copy_(x)
            g.replay()
            return so.clone()
        calls[b] = call
    return calls


def recipe_calls(model, examples):
    """The notes' recipe for any model: {rows: call(*xs)} from {rows: example
    tuple}, one shared pool, copies in, clones out."""
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
        calls[b] = call
    return calls


def side_by_side(name, model, examples, rows_of):
    """Eager, the recipe and graphcore.torch for one model: a list of rows
    (one per bucket) and the two families' figures."""
    buckets = sorted(examples)
    rec_model, gc_model = copy.deepcopy(model), copy.deepcopy(model)
    recipe, rec_bytes, rec_s = reserved_after(lambda: recipe_calls(rec_model, examples))
    t = time.perf_counter()
    g = gct.graph(gc_model, examples[buckets[-1]], buckets=buckets)
    gc_s = time.perf_counter() - t
    st = g.stats()
    fam = {"torch_cuda_graph": {"capture_s": rec_s, "reserved_bytes": rec_bytes},
           "graphcore_torch": {"capture_s": gc_s, "pool_bytes": st["pool_bytes"],
                               "modes": {b: v["mode"] for b, v in st["buckets"].items()}}}
    rows = []
    with torch.no_grad():
        for b in buckets:
            xs = examples[b]
            row = {"model": name, "batch": rows_of(b),
                   "eager_us": median_us(lambda: model(*xs), iters=200),
                   "torch_graph_recipe_us": median_us(lambda: recipe[b](*xs), iters=200),
                   "graphcore_us": median_us(lambda: g(*xs), iters=200),
                   "graphcore_clone_us": median_us(lambda: g(*xs).clone(), iters=200),
                   "bitwise_equal_to_recipe": bool(torch.equal(g(*xs), recipe[b](*xs)))}
            row["speedup_vs_recipe"] = row["torch_graph_recipe_us"] / row["graphcore_us"]
            rows.append(row)
            print(row, flush=True)
    g.close()
    return rows, fam


def decoder_and_loop(res):
    """The GPT-style decoder's step at batch 1/4/16/64, and the 64-token
    greedy decode: one launch (graphcore.torch.loop) against a Python loop
    of per-token calls (graphcore's, and the recipe's replays)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python", "examples"))
    import torch_decoder as td
    torch.manual_seed(2)
    model = td.make_decoder(torch).cuda().eval()
    examples = {b: (torch.randint(0, td.VOCAB, (b,), device="cuda"),
                    torch.randint(0, td.POSITIONS, (b,), device="cuda")) for b in (1, 4, 16, 64)}
    rows, fam = side_by_side("decoder step", model, examples, lambda b: b)
    res["decoder"] = rows
    res["families"]["decoder"] = fam

    n = 64
    start = torch.randint(0, td.VOCAB, (1,), device="cuda")
    state = (start.clone(), torch.zeros(1, dtype=torch.long, device="cuda"),
             torch.full((1, n), -1, dtype=torch.long, device="cuda"))
    lp_model = copy.deepcopy(model)
    lp = gct.loop(td.loop_body(lp_model, -1), state, max_iters=n)  # no end token: n tokens
    g = gct.graph(copy.deepcopy(model), examples[1], buckets=[1])
    recipe = recipe_calls(copy.deepcopy(model), {1: examples[1]})[1]
    pos = [torch.full((1,), t, dtype=torch.long, device="cuda") for t in range(n)]

    def python_loop(step):
        tok = start
        for t in range(n):
            tok = step(tok, pos[t])

    def timed(fn, reps=7):
        cpu, wall = [], []
        for _ in range(reps):
            torch.cuda.synchronize()
            c, w = time.process_time(), time.perf_counter()
            fn()
            torch.cuda.synchronize()
            cpu.append((time.process_time() - c) / n * 1e6)
            wall.append((time.perf_counter() - w) / n * 1e6)
        return sorted(cpu)[reps // 2], sorted(wall)[reps // 2]

    with torch.no_grad():
        lp_cpu, lp_wall = timed(lambda: lp(*state))
        assert lp.iterations() == n
        g_cpu, g_wall = timed(lambda: python_loop(g))
        r_cpu, r_wall = timed(lambda: python_loop(recipe))
    res["decode_loop"] = {
        "tokens": n, "loop_cpu_us_per_token": lp_cpu, "loop_wall_us_per_token": lp_wall,
        "python_graphcore_cpu_us_per_token": g_cpu, "python_graphcore_wall_us_per_token": g_wall,
        "python_recipe_cpu_us_per_token": r_cpu, "python_recipe_wall_us_per_token": r_wall,
        "cpu_ratio_vs_python_graphcore": lp_cpu / g_cpu}
    print(res["decode_loop"], flush=True)
    lp.close()
    g.close()


def cnn(res):
    torch.manual_seed(3)
    layers, c = [], 3
    for out in (32, 64, 64, 128):
        layers += [torch.nn.Conv2d(c, out, 3, padding=1), torch.nn.BatchNorm2d(out),
                   torch.nn.ReLU()]
        c = out
    layers += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(c, 10)]
    model = torch.nn.Sequential(*layers).cuda().eval()
    examples = {b: (torch.randn(b, 3, 32, 32, device="cuda"),) for b in (1, 8, 32)}
    rows, fam = side_by_side("cnn", model, examples, lambda b: b)
    res["cnn"] = rows
    res["families"]["cnn"] = fam


def graphed_family(model):
    samples = tuple((torch.randn(b, 1024, device="cuda"),) for b in BUCKETS)
    models = tuple(copy.deepcopy(model) for _ in BUCKETS)
    graphed = torch.cuda.make_graphed_callables(models, samples)
    return dict(zip(BUCKETS, graphed))


def main():
    torch.manual_seed(0)
    model = mlp()
    xs = {b: torch.randn(b, 1024, device="cuda") for b in BUCKETS}
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "mlp": [],
           "families": {}, "train_step": {}}

    recipe, recipe_bytes, recipe_s = reserved_after(lambda: recipe_family(model))
    res["families"]["torch_cuda_graph"] = {"capture_s": recipe_s, "reserved_bytes": recipe_bytes}
    try:
        graphed, g_bytes, g_s = reserved_after(lambda: graphed_family(model))
        res["families"]["make_graphed_callables"] = {"capture_s": g_s, "reserved_bytes": g_bytes}
    except Exception as e:  # noqa: BLE001 - reported
        graphed = None
        res["families"]["make_graphed_callables"] = {"skipped": "%s: %s" % (type(e).__name__, e)}
    compiled, why = None, None
    try:
        fn = torch.compile(model, mode="reduce-overhead", dynamic=False)
        t = time.perf_counter()
        with torch.no_grad():
            for b in BUCKETS:
                for _ in range(3):
                    fn(xs[b])
                if time.perf_counter() - t > CAP_S:
                    why = "compile time over the cap (%.0f s > %.0f s)" % (time.perf_counter() - t,
                                                                          CAP_S)
                    break
        compile_s = time.perf_counter() - t
        if why is None:
            compiled = fn
            res["families"]["torch_compile_reduce_overhead"] = {"compile_s": compile_s}
    except Exception as e:  # noqa: BLE001 - reported
        why = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    if why:
        res["families"]["torch_compile_reduce_overhead"] = {"skipped": why}

    t = time.perf_counter()
    g = gct.graph(model, xs[32], buckets=BUCKETS)
    gc_s = time.perf_counter() - t
    alone = gct.graph(model, xs[32], buckets=[32])
    st = g.stats()
    res["families"]["graphcore_torch"] = {
        "capture_s": gc_s, "pool_bytes": st["pool_bytes"],
        "largest_bucket_alone_pool_bytes": alone.stats()["pool_bytes"],
        "buckets": {b: {k: s[k] for k in ("pool_bytes", "capture_s", "mode", "arg_uses")}
                    for b, s in st["buckets"].items()}}
    alone.close()

    with torch.no_grad():
        for b in BUCKETS:
            x = xs[b]
            want = model(x)
            row = {"batch": b,
                   "eager_us": median_us(lambda: model(x)),
                   "torch_graph_recipe_us": median_us(lambda: recipe[b](x)),
                   "graphcore_us": median_us(lambda: g(x)),
                   "graphcore_clone_us": median_us(lambda: g(x).clone()),
                   "bitwise_equal_to_recipe": bool(torch.equal(g(x), recipe[b](x))),
                   "rel_err_vs_eager": float((g(x) - want).abs().max()
                                             / want.abs().max().clamp_min(1e-30))}
            if graphed is not None:
                row["make_graphed_callables_us"] = median_us(lambda: graphed[b](x))
            if compiled is not None:
                row["torch_compile_us"] = median_us(lambda: compiled(x).clone())
            row["speedup_vs_recipe"] = row["torch_graph_recipe_us"] / row["graphcore_us"]
            row["speedup_clone_vs_recipe"] = (row["torch_graph_recipe_us"]
                                              / row["graphcore_clone_us"])
            res["mlp"].append(row)
            print(row, flush=True)
    g.close()

    # The notes' training step.
    torch.manual_seed(1)
    lin = torch.nn.Linear(1024, 1024).cuda()
    loss_fn = torch.nn.MSELoss()
    x, y = torch.randn(64, 1024, device="cuda"), torch.randn(64, 1024, device="cuda")
    eager_m = copy.deepcopy(lin)
    eager_opt = torch.optim.SGD(eager_m.parameters(), lr=1e-3)

    def eager_step():
        eager_opt.zero_grad(set_to_none=True)
        loss_fn(eager_m(x), y).backward()
        eager_opt.step()

    rec_m = copy.deepcopy(lin)
    rec_opt = torch.optim.SGD(rec_m.parameters(), lr=1e-3)
    sx, sy = x.clone(), y.clone()

    def rec_build():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                rec_opt.zero_grad(set_to_none=True)
                loss_fn(rec_m(sx), sy).backward()
                rec_opt.step()
        torch.cuda.current_stream().wait_stream(s)
        gr = torch.cuda.CUDAGraph()
        rec_opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(gr):
            loss_fn(rec_m(sx), sy).backward()
            rec_opt.step()
        return gr

    gr, rec_bytes, rec_s = reserved_after(rec_build)

    def rec_step():
        sx.copy_(x)
        sy.copy_(y)
        gr.replay()

    gc_m = copy.deepcopy(lin)
    gc_opt = torch.optim.SGD(gc_m.parameters(), lr=1e-3)

    def train(a, b):
        loss = loss_fn(gc_m(a), b)
        loss.backward()
        gc_opt.step()
        return loss

    t = time.perf_counter()
    s = gct.step(train, (x, y), optimizer=gc_opt)
    step_s = time.perf_counter() - t
    res["train_step"] = {
        "eager_us": median_us(eager_step, iters=200),
        "torch_graph_recipe_us": median_us(rec_step, iters=200),
        "graphcore_us": median_us(lambda: s(x, y), iters=200),
        "recipe_capture_s": rec_s, "recipe_reserved_bytes": rec_bytes,
        "graphcore_capture_s": step_s, "graphcore_pool_bytes": s.stats()["pool_bytes"],
        "mode": s.stats()["buckets"][64]["mode"],
    }
    res["train_step"]["speedup_vs_recipe"] = (res["train_step"]["torch_graph_recipe_us"]
                                              / res["train_step"]["graphcore_us"])
    s.close()

    for part in (decoder_and_loop, cnn):
        try:
            part(res)
        except Exception as e:  # noqa: BLE001 - reported, the rest still written
            res.setdefault("failed", {})[part.__name__] = "%s: %s" % (type(e).__name__, e)
            print("%s failed: %s" % (part.__name__, res["failed"][part.__name__]), flush=True)

    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "torch_graphs.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    print("\n%s, torch %s -> %s" % (res["device"], res["torch"], path))
    print("MLP per call, us  | eager | recipe | graphed | compile | graphcore (+clone) | x recipe")
    for r in res["mlp"]:
        print("  batch %2d        | %5.1f | %6.1f | %7s | %7s | %5.1f (%5.1f)      | %.2fx%s" % (
            r["batch"], r["eager_us"], r["torch_graph_recipe_us"],
            "%.1f" % r["make_graphed_callables_us"] if "make_graphed_callables_us" in r else "-",
            "%.1f" % r["torch_compile_us"] if "torch_compile_us" in r else "-",
            r["graphcore_us"], r["graphcore_clone_us"], r["speedup_vs_recipe"],
            "" if r["bitwise_equal_to_recipe"] else "  NOT bitwise equal"))
    for name, fam in res["families"].items():
        print("family %-30s %s" % (name, fam))
    t = res["train_step"]
    print("train step, us: eager %.1f, recipe %.1f, graphcore %.1f (%.2fx recipe, %s)" % (
        t["eager_us"], t["torch_graph_recipe_us"], t["graphcore_us"], t["speedup_vs_recipe"],
        t["mode"]))
    for r in res.get("decoder", []) + res.get("cnn", []):
        print("%-13s batch %2d: eager %7.1f, recipe %7.1f, graphcore %7.1f (+clone %7.1f) us: "
              "%.2fx%s" % (r["model"], r["batch"], r["eager_us"], r["torch_graph_recipe_us"],
                           r["graphcore_us"], r["graphcore_clone_us"], r["speedup_vs_recipe"],
                           "" if r["bitwise_equal_to_recipe"] else "  NOT bitwise equal"))
    d = res.get("decode_loop")
    if d:
        print("decode loop, %d tokens, CPU/wall us per token: one launch %.2f/%.1f, Python loop "
              "of graphcore calls %.1f/%.1f, of recipe replays %.1f/%.1f (CPU %.3fx)" % (
                  d["tokens"], d["loop_cpu_us_per_token"], d["loop_wall_us_per_token"],
                  d["python_graphcore_cpu_us_per_token"], d["python_graphcore_wall_us_per_token"],
                  d["python_recipe_cpu_us_per_token"], d["python_recipe_wall_us_per_token"],
                  d["cpu_ratio_vs_python_graphcore"]))
    for k, v in res.get("failed", {}).items():
        print("FAILED %s: %s" % (k, v))


if __name__ == "__main__":
    main()
