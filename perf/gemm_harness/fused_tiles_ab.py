"""The fused training steps and the cooperative kernels, one library at a
time: the 2-layer training step's fused form (gc_op_mlp2_mse_step, two
launches) at every sweep cell where it is taken (widths 256 and 1024 at
batches 1-128, 4096 at 1, 8 and 32), the Linear step (gc_op_linear_mse_step)
at the same cells, and the notes' MLP forced into its fused kernel
(gc_op_mlp with GC_MLP_FUSED_ALWAYS, batches 1, 4, 16), each timed as a
graph replay (median of 5 x 200 back-to-back launches), with the loss after
20 steps and the MLP's output checksum, so that runs of two libraries
(GRAPHCORE_LIB) can be compared cell by cell and their numerics checked.

    GRAPHCORE_LIB=stage/lib/libgraphcore.so PYTHONPATH=python:perf/side_by_side \\
        python3 perf/gemm_harness/fused_tiles_ab.py LABEL

GC_CELLS="width:batch,..." times those cells only. Writes
$OUT/fused_tiles_LABEL.json (OUT: perf/results).
"""
import json
import os
import sys

import torch

import graphcore as gc
from sweep_cells import cells_from_env
from walltime import median_us

torch.backends.cuda.matmul.allow_tf32 = False
OUT = os.environ.get("OUT", "perf/results")
LABEL = sys.argv[1] if len(sys.argv) > 1 else "run"
ctx = gc.Context(0)
tstream = torch.cuda.Stream()
stream = gc.Stream.wrap(ctx, tstream.cuda_stream)


def replay_us(record):
    """A graph of what `record` enqueues: its exec and the median replay time."""
    torch.cuda.synchronize()
    with gc.capture(stream) as cap:
        record()
    ex = cap.graph.instantiate()
    ex.launch(stream)
    return ex, median_us(lambda: ex.launch(stream), iters=200, reps=5)


rows = []
cells = [(w, b) for w in (256, 1024) for b in (1, 8, 32, 64, 128)] + [(4096, 1), (4096, 8), (4096, 32)]
only, _ = cells_from_env()
cells = sorted(only) if only else cells
for width, batch in cells:
    torch.manual_seed(width * 1000 + batch)
    params = [(torch.rand(width, width, device="cuda") * 2 - 1) / width ** 0.5,
              (torch.rand(width, device="cuda") * 2 - 1) / width ** 0.5,
              (torch.rand(width, width, device="cuda") * 2 - 1) / width ** 0.5,
              (torch.rand(width, device="cuda") * 2 - 1) / width ** 0.5]
    x = (torch.rand(batch, width, device="cuda") * 2 - 1) * 0.1
    y = torch.rand(batch, width, device="cuda") * 2 - 1
    loss = torch.zeros(1, device="cuda")
    nbytes = ctx.mlp2_mse_step_workspace_bytes(batch, width, width)
    ws = torch.zeros(nbytes // 4 + 1, device="cuda")
    lr = 0.1 / (batch * width)
    start = [p.clone() for p in params]

    def step():
        gc.op_mlp2_mse_step(stream, *params, x, y, loss, batch, width, width, width, 1.0, lr, ws, nbytes)

    ex, us = replay_us(step)
    for p, p0 in zip(params, start):
        p.copy_(p0)
    torch.cuda.synchronize()
    for _ in range(20):
        ex.launch(stream)
    torch.cuda.synchronize()
    row = {"what": "mlp2 step", "width": width, "batch": batch, "us": us, "loss_after_20": loss.item()}
    rows.append(row)
    print(row, flush=True)
    lbytes = ctx.linear_mse_step_workspace_bytes(batch, width, width)
    lws = torch.zeros(lbytes // 4 + 1, device="cuda")
    ex, us = replay_us(lambda: gc.op_linear_mse_step(stream, params[0], params[1], x, y, loss, batch, width, width,
                                                     1.0, lr, lws, lbytes))
    torch.cuda.synchronize()
    row = {"what": "linear step", "width": width, "batch": batch, "us": us,
           "w_checksum": params[0].double().sum().item()}
    rows.append(row)
    print(row, flush=True)

sizes = [1024, 512, 256, 10]
torch.manual_seed(7)
ws_ = [((torch.rand(o, i, device="cuda") * 2 - 1) / i ** 0.5, torch.rand(o, device="cuda") * 0.1)
       for i, o in zip(sizes, sizes[1:])]
layers = [(w, b, i, o, n < 2) for n, ((w, b), i, o) in enumerate(zip(ws_, sizes, sizes[1:]))]
for batch in (1, 4, 16):
    x = torch.rand(batch, sizes[0], device="cuda") * 2 - 1
    out = torch.empty(batch, sizes[-1], device="cuda")
    nbytes = gc.mlp_workspace_bytes(batch, layers)
    work = torch.zeros(nbytes // 4 + 1, device="cuda")
    _, us = replay_us(lambda: gc.op_mlp(stream, out, x, batch, layers, work, nbytes, fused="always"))
    ref = x
    for w, b, _, _, relu in layers:
        ref = ref.double() @ w.double().T + b.double()
        ref = ref.clamp_min(0) if relu else ref
    err = ((out.double() - ref).abs().max() / ref.abs().max()).item()
    row = {"what": "mlp fused", "batch": batch, "us": us, "checksum": out.double().sum().item(), "rel_err": err}
    rows.append(row)
    print(row, flush=True)

os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, f"fused_tiles_{LABEL}.json"), "w") as f:
    json.dump({"label": LABEL, "device": torch.cuda.get_device_name(0), "rows": rows}, f, indent=1)
