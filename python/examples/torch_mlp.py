"""The PyTorch notes' MLP, as the notes write it (an nn.Sequential 1024 ->
512 -> 256 -> 10 with ReLU, random weights), served through graphcore.torch:

    g = graphcore.torch.graph(model, example, buckets=[1, 4, 16, 32])
    y = g(x)

One graph per bucket, all in one graphcore pool. A request of exactly a
bucket's rows is bound as it is (no copy: the graph reads the caller's
tensor); a smaller one is copied into its bucket's static input and its
output trimmed to its rows. Outputs are tensors over the pool, valid until
the next call (clone them to keep them). Each request is checked against
the eager model (within 1e-5 relative) and against PyTorch's own
torch.cuda.graph replay of the same bucket (bitwise); a CPU tensor and a
request larger than the largest bucket are refused.

    python3 python/examples/torch_mlp.py
(needs PyTorch >= 2.6 with CUDA; without PyTorch or a GPU it says so and
exits with status 2).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphcore as gc  # noqa: E402

BUCKETS = (1, 4, 16, 32)


def torch_graph(torch, model, rows, pool):
    """PyTorch's recipe for one bucket: (static input, graph, static output)."""
    x = torch.zeros(rows, 1024, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g, pool=pool):
        y = model(x)
    return x, g, y


def main():
    try:
        import torch
        import graphcore.torch as gct
    except ImportError as e:
        print("torch_mlp.py: %s" % e)
        return 2
    if not torch.cuda.is_available():
        print("torch_mlp.py: no CUDA GPU for PyTorch: skipping")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10),
    ).cuda().eval()
    example = torch.randn(BUCKETS[-1], 1024, device="cuda")
    g = gct.graph(model, example, buckets=BUCKETS)
    pool = torch.cuda.graph_pool_handle()
    ref = {b: torch_graph(torch, model, b, pool) for b in sorted(BUCKETS, reverse=True)}

    failed = 0
    for i, rows in enumerate([1, 3, 4, 7, 16, 20, 32, 2, 31]):
        x = torch.randn(rows, 1024, device="cuda")
        y = g(x).clone()
        with torch.no_grad():
            want = model(x)
        rel = float((y - want).abs().max() / want.abs().max().clamp_min(1e-30))
        bucket = next(b for b in BUCKETS if b >= rows)
        sx, sg, sy = ref[bucket]
        sx.zero_()
        sx[:rows].copy_(x)
        sg.replay()
        same = torch.equal(y, sy[:rows])
        ok = rel <= 1e-5 and same
        failed += not ok
        print("request %d: %2d rows -> bucket %2d (%s): rel err vs eager %.1e, %s torch.cuda.graph "
              "replay %s" % (i, rows, bucket, "bound" if rows == bucket else "padded", rel,
                             "bitwise equal to" if same else "DIFFERENT from",
                             "ok" if ok else "WRONG"))
    for bad, what in ((torch.randn(4, 1024), "a CPU tensor"),
                      (torch.randn(40, 1024, device="cuda"), "40 rows")):
        try:
            g(bad)
            print("%s was NOT refused" % what)
            failed += 1
        except (gc.InvalidArgumentError, gc.NoBucketError) as e:
            print("%s is refused: %s" % (what, str(e)[:110]))
    torch.cuda.synchronize()
    st = g.stats()
    for b, s in sorted(st["buckets"].items()):
        print("bucket %2d: %-4s pool +%7.1f KB, capture %.1f ms, input uses %s, calls %d "
              "(%d padded)" % (b, s["mode"], s["pool_bytes"] / 1e3, s["capture_s"] * 1e3,
                               s["arg_uses"], s["calls"], s["padded_calls"]))
    print("family: pool %.1f KB allocated (%.1f MB reserved), captured in %.1f ms; %s" % (
        st["pool_bytes"] / 1e3, st["pool_reserved_bytes"] / 1e6, st["capture_s"] * 1e3,
        "all ok" if not failed else "%d FAILED" % failed))
    g.close()
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except gc.Error as e:
        print("graphcore: %s" % e)
        sys.exit(2)
