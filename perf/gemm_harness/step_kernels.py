"""The kernels of training steps, run eagerly a few times, for a profiler to
time one by one: the 2-layer step (width x width x width) in its fused form
(gc_op_mlp2_mse_step) and built from the per-layer ops, and the notes'
Linear step (gc_op_linear_mse_step), at the shapes given (rows x width).

    ncu --metrics gpu__time_duration.sum --kernel-name regex:gc_ \\
        python3 perf/gemm_harness/step_kernels.py 1x4096 8x4096

(with GRAPHCORE_LIB and PYTHONPATH=python:perf/side_by_side set). Each shape runs each form
STEPS times after one warm-up step; the profiler's kernel list is in launch
order, marked by NVTX-free prints on stdout.
"""
import sys

import torch

import graphcore as gc
from per_layer_step import enqueue_per_layer_step

STEPS = 3
ctx = gc.Context(0)
tstream = torch.cuda.Stream()
stream = gc.Stream.wrap(ctx, tstream.cuda_stream)


def run(label, step):
    """One warm-up step, then STEPS steps, each synchronized."""
    for i in range(STEPS + 1):
        step()
        torch.cuda.synchronize()
    print(f"done: {label}", flush=True)


for shape in sys.argv[1:] or ["1x4096"]:
    rows, width = map(int, shape.split("x"))
    torch.manual_seed(rows * 7 + width)
    p = [torch.randn(width, width, device="cuda") / width ** 0.5, torch.zeros(width, device="cuda"),
         torch.randn(width, width, device="cuda") / width ** 0.5, torch.zeros(width, device="cuda")]
    x = torch.randn(rows, width, device="cuda") * 0.1
    y = torch.randn(rows, width, device="cuda")
    loss = torch.zeros(1, device="cuda")
    lr = 0.1 / (rows * width)
    nbytes = ctx.mlp2_mse_step_workspace_bytes(rows, width, width)
    ws = torch.zeros(nbytes // 4 + 1, device="cuda")
    run(f"mlp2 fused {shape}", lambda: gc.op_mlp2_mse_step(stream, *p, x, y, loss, rows, width, width, width,
                                                            1.0, lr, ws, nbytes))
    mse_bytes = ctx.mse_workspace_bytes(rows * width)
    mws = torch.zeros(mse_bytes // 4 + 1, device="cuda")
    bufs = [torch.empty(rows, width, device="cuda") for _ in range(3)]
    run(f"mlp2 per-layer {shape}",
        lambda: enqueue_per_layer_step(stream, "mlp2", p, x, y, loss, bufs, mws, mse_bytes, lr))
    lbytes = ctx.linear_mse_step_workspace_bytes(rows, width, width)
    lws = torch.zeros(lbytes // 4 + 1, device="cuda")
    run(f"linear fused {shape}", lambda: gc.op_linear_mse_step(stream, p[0], p[1], x, y, loss, rows, width, width,
                                                                1.0, lr, lws, lbytes))
