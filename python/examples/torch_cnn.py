"""A small CNN (4 conv-batchnorm-ReLU blocks and a pooled linear head, eval
mode, random weights and running statistics) served through
graphcore.torch at batch 1, 8 and 32:

    g = graphcore.torch.graph(model, example, buckets=[1, 8, 32])
    y = g(x)                      # x: 1 to 32 images of 3 x 32 x 32

cuDNN's convolutions run inside the graph as PyTorch captured them. Each
request is checked against the eager model (within 1e-5 relative) and
bitwise against PyTorch's own torch.cuda.graph replay of the same bucket
(the notes' recipe: one graph per bucket in one shared pool, copy in,
replay); a request of exactly a bucket's rows is bound (no copy) where the
binding check finds every use of the input, else copied (the bucket's
stats say which, and why). Time per call beside eager and the recipe.

    python3 python/examples/torch_cnn.py
(needs PyTorch >= 2.6 with CUDA; without PyTorch or a GPU it says so and
exits with status 2). ``make_cnn`` runs on the CPU too.
"""
import time

import _torch_common as tc

BUCKETS = (1, 8, 32)
IMAGE = (3, 32, 32)


def make_cnn(torch, channels=(32, 64, 64, 128), classes=10):
    """4 conv(3x3)-BatchNorm-ReLU blocks, adaptive average pooling and a
    linear head, in eval mode, with running statistics that are not the
    identity (built here so that importing this file needs no torch)."""
    nn = torch.nn
    layers, c = [], IMAGE[0]
    for out in channels:
        layers += [nn.Conv2d(c, out, 3, padding=1), nn.BatchNorm2d(out), nn.ReLU()]
        c = out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes)]
    model = nn.Sequential(*layers).eval()
    with torch.no_grad():
        for m in model:
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return model


def torch_graphs(torch, model, buckets, pool):
    """The notes' recipe: {rows: (static input, graph, static output)}, the
    largest bucket first, all in ``pool``."""
    return {rows: tc.recipe(torch, model, torch.zeros((rows,) + IMAGE, device="cuda"), pool)
            for rows in sorted(buckets, reverse=True)}


def per_call_us(torch, fn, iters=200):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / iters * 1e6


def main():
    opened = tc.open_torch("torch_cnn.py")
    if opened is None:
        return 2
    torch, gct = opened
    torch.backends.cudnn.allow_tf32 = False
    model = make_cnn(torch).cuda()
    t = time.perf_counter()
    g = gct.graph(model, torch.randn((BUCKETS[-1],) + IMAGE, device="cuda"), buckets=BUCKETS)
    print("captured buckets %s in %.0f ms" % (list(BUCKETS), (time.perf_counter() - t) * 1e3),
          flush=True)
    ref = torch_graphs(torch, model, BUCKETS, torch.cuda.graph_pool_handle())

    failed = 0
    for i, rows in enumerate([1, 8, 32, 5, 2, 17, 32, 1]):
        x = torch.randn((rows,) + IMAGE, device="cuda")
        bucket, rel, same, ok = tc.check_request(torch, g, model, ref, BUCKETS, x)
        failed += not ok
        print("request %d: %2d images -> bucket %2d: rel err vs eager %.1e, %s torch.cuda.graph "
              "replay: %s" % (i, rows, bucket, rel,
                              "bitwise equal to" if same else "DIFFERENT from",
                              "ok" if ok else "WRONG"), flush=True)
    channels_last = torch.randn((4,) + IMAGE, device="cuda").to(
        memory_format=torch.channels_last)
    failed += tc.refusals(g, ((torch.randn((4,) + IMAGE), "a CPU tensor"),
                              (channels_last, "a channels-last tensor"),
                              (torch.randn((33,) + IMAGE, device="cuda"), "33 images")), 120)
    with torch.no_grad():
        for rows in BUCKETS:
            x = torch.randn((rows,) + IMAGE, device="cuda")
            sx, sg, sy = ref[rows]

            def recipe(x=x, sx=sx, sg=sg, sy=sy):
                sx.copy_(x)
                sg.replay()
                return sy.clone()
            print("batch %2d per call: eager %.1f us, torch.cuda.graph recipe %.1f us, "
                  "graphcore.torch %.1f us" % (rows, per_call_us(torch, lambda: model(x)),
                                               per_call_us(torch, recipe),
                                               per_call_us(torch, lambda: g(x))), flush=True)
    st = g.stats()
    for b, s in sorted(st["buckets"].items()):
        print("bucket %2d: %-4s pool +%7.1f KB, capture %.1f ms, input uses %s%s" % (
            b, s["mode"], s["pool_bytes"] / 1e3, s["capture_s"] * 1e3, s["arg_uses"],
            " (%s)" % s["reason"] if s["reason"] else ""))
    print("family: pool %.1f KB, captured in %.1f ms; %s" % (
        st["pool_bytes"] / 1e3, st["capture_s"] * 1e3,
        "all ok" if not failed else "%d FAILED" % failed))
    g.close()
    return 1 if failed else 0


if __name__ == "__main__":
    tc.run(main)
