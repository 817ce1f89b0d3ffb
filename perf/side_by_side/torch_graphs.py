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

Models: the notes' MLP (1024 -> 512 -> 256 -> 10, buckets 1/4/16/32) and
the notes' training step (Linear 1024 x 1024, batch 64, MSELoss, SGD:
eager, the recipe with copies, graphcore.torch.step bound).

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


def recipe_family(model):
    """The notes' optimized_inference_pipeline: {rows: call(x)}."""
    pool = torch.cuda.graph_pool_handle()
    calls = {}
    for b in sorted(BUCKETS, reverse=True):
        si = torch.zeros(b, 1024, device="cuda")
        with torch.no_grad():
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    model(si)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                so = model(si)

        def call(x, si=si, g=g, so=so):
            si.copy_(x)
            g.replay()
            return so.clone()
        calls[b] = call
    return calls


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


if __name__ == "__main__":
    main()
