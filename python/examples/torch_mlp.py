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
import _torch_common as tc

BUCKETS = (1, 4, 16, 32)


def torch_graph(torch, model, rows, pool):
    """PyTorch's recipe for one bucket: (static input, graph, static output)."""
    return tc.recipe(torch, model, torch.zeros(rows, 1024, device="cuda"), pool)


def main():
    opened = tc.open_torch("torch_mlp.py")
    if opened is None:
        return 2
    torch, gct = opened
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
        bucket, rel, same, ok = tc.check_request(torch, g, model, ref, BUCKETS, x)
        failed += not ok
        print("request %d: %2d rows -> bucket %2d (%s): rel err vs eager %.1e, %s torch.cuda.graph "
              "replay %s" % (i, rows, bucket, "bound" if rows == bucket else "padded", rel,
                             "bitwise equal to" if same else "DIFFERENT from",
                             "ok" if ok else "WRONG"))
    failed += tc.refusals(g, ((torch.randn(4, 1024), "a CPU tensor"),
                              (torch.randn(40, 1024, device="cuda"), "40 rows")), 110)
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
    tc.run(main)
