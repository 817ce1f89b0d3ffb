"""The notes' MLP (1024 -> 512 -> 256 -> 10) from Python, in one process
beside PyTorch, end to end per request at batch 1, 4, 16 and 32:

  * graphcore with bindings: runner.replay(rows, stream, x=req_in,
    y=req_out), each request in its own tensors (two requests alternate, so
    every replay rebinds), no copies (python/examples/mlp_inference.py's
    Server);
  * graphcore with copies: the request copied into the static input
    (gc.memcpy_async), runner.replay(rows, stream), the output copied out;
  * PyTorch's graph path as the notes do it: static_in.copy_(x);
    g.replay(); static_out.clone();
  * PyTorch eager;
  * graphcore exact-size (issue 53 item 2): a Server captured with
    exact=True (gc.op_mlp_rows; the row count read from device memory),
    runner.replay(n, stream, exact=True, x=req_in, y=req_out) with tensors
    of exactly n rows, nothing copied: n the bucket's rows (the same work
    as the padded bound request), n = bucket // 2 + 1 (a request padded
    today), and n alternating between those two (each request rebinds the
    row count too). Target: no more than 1.05x the padded bound request
    (bound_us).

All on PyTorch's current stream; median wall time per request of 1000
back-to-back requests (7 runs), synchronized at the end. fp32, TF32 off.
Outputs of the bound path are checked against PyTorch. Prints a table and
writes $OUT/args_mlp_python.json."""

import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "examples"))
from mlp_inference import BUCKETS, H1, H2, IN, OUT, Server, gc  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False


def median_us(fn, iters=1000, reps=7):
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for i in range(iters):
            fn(i)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e6 / iters)
    return statistics.median(times)


def main():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(IN, H1), torch.nn.ReLU(), torch.nn.Linear(H1, H2), torch.nn.ReLU(),
        torch.nn.Linear(H2, OUT)).cuda().eval()
    ctx = gc.Context(0)
    server = Server(ctx, [mlp[0], mlp[2], mlp[4]], torch)
    exact = Server(ctx, [mlp[0], mlp[2], mlp[4]], torch, exact=True)
    stream = gc.Stream.wrap(ctx, torch.cuda.current_stream())
    rows = []
    with torch.no_grad():
        # PyTorch's graph path: one graph per batch in a shared pool.
        pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for b in BUCKETS:
                for _ in range(3):
                    mlp(torch.zeros(b, IN, device="cuda"))
        torch.cuda.current_stream().wait_stream(side)
        graphs = {}
        for b in sorted(BUCKETS, reverse=True):
            si = torch.zeros(b, IN, device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                so = mlp(si)
            graphs[b] = (g, si, so)
        torch.cuda.synchronize()
        for b in BUCKETS:
            reqs = [server.request_tensors(b) for _ in range(2)]
            for x, _ in reqs:
                x.normal_()
            outs = [torch.empty(b, OUT, device="cuda") for _ in range(2)]
            g, si, so = graphs[b]

            def torch_graph(i):
                si.copy_(reqs[i & 1][0])
                g.replay()
                return so.clone()

            def bound(i):
                x, y = reqs[i & 1]
                server.serve(b, x, y, stream)

            nx, ny = b * IN * 4, b * OUT * 4

            def copies(i):
                gc.memcpy_async(stream, server.x, reqs[i & 1][0], nx)
                server.runner.replay(b, stream)
                gc.memcpy_async(stream, outs[i & 1], server.y, ny)

            def eager(i):
                return mlp(reqs[i & 1][0])

            r = {"batch": b, "torch_graph_us": median_us(torch_graph), "bound_us": median_us(bound)}
            # Bindings persist: the copies path runs the graphs on the
            # static buffers again.
            server.serve(b, server.x, server.y, stream)
            r["copies_us"] = median_us(copies)
            r["torch_eager_us"] = median_us(eager)
            for i in range(2):
                bound(i)
                want = mlp(reqs[i][0])
                err = float((reqs[i][1] - want).abs().max() / want.abs().max())
                assert err <= 1e-4, "batch %d: bound outputs differ from PyTorch (%.1e)" % (b, err)
            r["bound_vs_torch_graph"] = r["torch_graph_us"] / r["bound_us"]
            r["bound_vs_copies"] = r["copies_us"] / r["bound_us"]
            # Exact-size requests: tensors of exactly n rows, two alternating.
            part = b // 2 + 1
            sized = {n: [(torch.randn(n, IN, device="cuda"), torch.empty(n, OUT, device="cuda"))
                         for _ in range(2)] for n in sorted({b, part})}

            def exact_of(ns):
                def run(i):
                    n = ns[i & 1]
                    x, y = sized[n][(i >> 1) & 1] if len(ns) > 1 else sized[n][i & 1]
                    exact.serve_exact(n, x, y, stream)
                return run

            r["exact_rows"] = part
            r["exact_full_us"] = median_us(exact_of([b]))
            r["exact_us"] = median_us(exact_of([part]))
            r["exact_mixed_us"] = median_us(exact_of([part, b]))
            for n, pairs in sized.items():
                for x, y in pairs:
                    exact.serve_exact(n, x, y, stream)
                    want = mlp(x)
                    err = float((y - want).abs().max() / want.abs().max())
                    assert err <= 1e-4, "batch %d, %d rows: exact outputs differ from PyTorch (%.1e)" % (b, n, err)
            r["exact_vs_bound"] = r["exact_us"] / r["bound_us"]
            r["exact_full_vs_bound"] = r["exact_full_us"] / r["bound_us"]
            r["exact_mixed_vs_bound"] = r["exact_mixed_us"] / r["bound_us"]
            r["exact_within_target"] = max(r["exact_vs_bound"], r["exact_full_vs_bound"]) <= 1.05
            rows.append(r)
    res = {"benchmark": "args_mlp_python", "gpu": torch.cuda.get_device_name(0),
           "torch": torch.__version__, "timings": rows}
    out = os.environ.get("OUT", os.path.join(HERE, "..", "results"))
    with open(os.path.join(out, "args_mlp_python.json"), "w") as f:
        json.dump(res, f, indent=2)
    print("MLP from Python, per request end to end (us, median of 7 x 1000):")
    print("  %5s %12s %12s %14s %12s %14s %12s" % ("batch", "gc bound", "gc copies", "torch graph",
                                                  "torch eager", "vs torch graph", "vs copies"))
    for r in rows:
        print("  %5d %12.2f %12.2f %14.2f %12.2f %13.2fx %11.2fx" % (
            r["batch"], r["bound_us"], r["copies_us"], r["torch_graph_us"], r["torch_eager_us"],
            r["bound_vs_torch_graph"], r["bound_vs_copies"]))
    print("Exact-size requests (tensors of exactly n rows, nothing copied) vs the padded bound request:")
    print("  %5s %6s %12s %12s %12s %10s %10s %10s" % ("batch", "n", "exact n", "exact full", "mixed n",
                                                       "n/bound", "full/bound", "mix/bound"))
    for r in rows:
        print("  %5d %6d %12.2f %12.2f %12.2f %9.3fx %9.3fx %9.3fx%s" % (
            r["batch"], r["exact_rows"], r["exact_us"], r["exact_full_us"], r["exact_mixed_us"],
            r["exact_vs_bound"], r["exact_full_vs_bound"], r["exact_mixed_vs_bound"],
            "" if r["exact_within_target"] else "  (over 1.05x)"))


if __name__ == "__main__":
    main()
