"""Where a 2-layer training step's time goes once it is past the fused form
(gc_op_mlp2_mse_step's per-layer launches): each launch of the step timed
alone in a graph of its own, at the shapes given (rows x width, the MLP
width -> width -> width), on the same GPU, beside PyTorch's whole step.
The input gradient is timed twice: gc_op_linear_backward_input as shipped
and the tiled GEMM (gc_gemm_f32) launched directly on the same operands,
with the largest difference of their results (relative to the largest).

    LD_LIBRARY_PATH=stage/lib GRAPHCORE_LIB=stage/lib/libgraphcore.so \\
    PYTHONPATH=python:perf/side_by_side python3 perf/gemm_harness/mlp2_parts.py 64x4096 32x4096

Writes $OUT/mlp2_parts.json (OUT: perf/results) and prints a table.
"""
import ctypes as C
import json
import os
import sys

import torch

import graphcore as gc
from walltime import median_us

torch.backends.cuda.matmul.allow_tf32 = False
ctx = gc.Context(0)
tstream = torch.cuda.Stream()
stream = gc.Stream.wrap(ctx, tstream.cuda_stream)
gemm = gc.Function.builtin(ctx, "gc_gemm_f32")
SMS = ctx.info().sm_count


def graph_us(record):
    """Median wall time per replay of a graph holding what `record` enqueues."""
    torch.cuda.synchronize()
    with gc.capture(stream) as cap:
        record()
    ex = cap.graph.instantiate()
    return median_us(lambda: ex.launch(stream), iters=200, reps=5)


def gemm_tile(m, n):
    """gc_gemm_f32's tile as the library picks it (kernels/src/ops/linear.rs gemm_tile)."""
    blocks = lambda t: -(-m // t) * -(-n // t)
    return 0 if blocks(128) >= SMS else 1 if blocks(64) * 2 >= SMS else 2


def gemm_backward_input(dx, dy, w, m, n, k):
    """dx (m x k) = dy (m x n) . W (n x k) with the tiled GEMM."""
    tile = gemm_tile(m, k)
    t = (128, 64, 32)[tile]
    grid = (-(-m // t) * -(-k // t), 1, 1)
    args = (gc.ptr(dx), gc.ptr(dy), gc.ptr(w), gc.ptr(0), C.c_uint32(m), C.c_uint32(k), C.c_uint32(n),
            C.c_uint32(n), C.c_uint32(k), C.c_uint32(k), C.c_uint32(0), C.c_float(1.0), C.c_float(0.0),
            C.c_uint32(tile))
    gc.launch(gemm, stream, grid, (256, 1, 1), args)


rows_out = []
for shape in sys.argv[1:] or ["64x4096"]:
    m, width = map(int, shape.split("x"))
    n = m * width
    t = lambda *shape: torch.rand(*shape, device="cuda") * 0.1
    x, y, w1, b1, w2, b2 = t(m, width), t(m, width), t(width, width), t(width), t(width, width), t(width)
    h, p, dh, dh2 = (torch.empty(m, width, device="cuda") for _ in range(4))
    loss = torch.zeros(1, device="cuda")
    mse_bytes = ctx.mse_workspace_bytes(n)
    ws = torch.zeros(mse_bytes // 4 + 1, device="cuda")
    parts = {
        "linear relu (layer 1)": lambda: gc.op_linear(stream, h, x, w1, b1, m, width, width, 1),
        "linear (layer 2)": lambda: gc.op_linear(stream, p, h, w2, b2, m, width, width, 0),
        "mse": lambda: gc.op_mse(stream, loss, p, p, y, n, 1.0, ws, mse_bytes),
        "backward_input (shipped)": lambda: gc.op_linear_backward_input(stream, dh, p, w2, m, width, width),
        "backward_input (tiled GEMM)": lambda: gemm_backward_input(dh2, p, w2, m, width, width),
        "relu_backward": lambda: gc.op_relu_backward(stream, dh, dh, h, n),
        "weight+bias SGD (one layer)": lambda: (gc.op_linear_weight_sgd(stream, w2, p, h, m, width, width, 1e-9),
                                                 gc.op_bias_sgd(stream, b2, p, m, width, 1e-9)),
    }
    # The two input-gradient paths on the same operands, before the timed
    # replays change them (the MSE's in-place gradient grows at each one).
    gc.op_linear(stream, p, x, w1, b1, m, width, width, 0)
    gc.op_linear_backward_input(stream, dh, p, w2, m, width, width)
    gemm_backward_input(dh2, p, w2, m, width, width)
    torch.cuda.synchronize()
    diff = ((dh - dh2).abs().max() / dh.abs().max()).item()
    row = {"rows": m, "width": width, "backward_input_paths_max_rel_diff": diff,
           "us": {k: graph_us(f) for k, f in parts.items()}}
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-9)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            (model(x) - y).pow(2).sum().backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        (model(x) - y).pow(2).sum().backward()
        opt.step()
    row["torch_step_us"] = median_us(g.replay, iters=200, reps=5)
    rows_out.append(row)

out = os.environ.get("OUT", "perf/results")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "mlp2_parts.json"), "w") as f:
    json.dump({"device": torch.cuda.get_device_name(0), "shapes": rows_out}, f, indent=1)
for r in rows_out:
    print(f"{r['rows']} x {r['width']} (PyTorch's whole step: {r['torch_step_us']:.1f} us; "
          f"backward_input paths differ by {r['backward_input_paths_max_rel_diff']:.2e} of the largest)")
    for k, v in r["us"].items():
        print(f"  {k:30s} {v:9.2f} us")
