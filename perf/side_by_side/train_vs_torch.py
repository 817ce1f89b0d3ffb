"""Training steps over widths and batches: graphcore's fused steps against
PyTorch's graph path, on the same GPU, in one run, from the same weights
and data (fp32, TF32 off). Issue 14's sweep "for training steps".

  * linear: torch.nn.Linear(width, width), summed squared error, SGD:
    gc_op_linear_mse_step (2 launches up to 256 rows) against PyTorch's
    whole-step capture (forward, loss, backward, optimizer.step() in one
    torch.cuda.CUDAGraph, warmed up on a side stream, as the notes do it).
  * mlp2: Linear(width, width), ReLU, Linear(width, width), the same loss
    and optimizer: gc_op_mlp2_mse_step (2 launches, the first cooperative)
    against the same PyTorch capture of that model.
  * and each step again from graphcore's per-layer ops (one kernel each,
    no fused step op), timed beside them.

Widths 256, 1024, 4096, 8192; batches 1, 8, 32, 64, 128, 256, 512, 1024,
2048; fp32 and TF32 (issue 53 item 4; --quick or GC_QUICK=1: widths 256 and
1024, batches 1, 32, 256). TF32: PyTorch with allow_tf32; graphcore's fused
steps as gc_op_linear_mse_step_flags / gc_op_mlp2_mse_step_flags with
GC_LINEAR_TF32 (their GEMM form's GEMMs on cuBLASLt's FAST_TF32; the
small-batch fused form stays fp32), graphcore_tf32: true in the row; where
the package has no such form or cuBLASLt does not load (GC_ERROR_NOT_SUPPORTED),
the fp32 step, graphcore_tf32: false. Its per-layer step runs its forward
layers with GC_LINEAR_TF32. x in
[-0.1, 0.1], targets in [-1, 1]; the learning rate is 0.1 / (batch *
width) on the summed loss (0.1 on the mean), the same on both sides. Each
cell records its winner (a tie within 3%) and the GEMM dispatch's choice
for its forward layers (gc.op_linear_backend; "graphcore" where the
package has no such query).

Timing: median over 5 repetitions of the wall time per step of as many
back-to-back graph launches as fit 40 ms (3 to 200), synchronized at the
end (as mlp_vs_torch.py times the MLP sweep); progress is printed per
cell. Numerics: both sides run 100 steps from the same start (10 where a
step has more than 2^30 multiply-adds a layer); the largest relative
difference of their losses is reported. Writes $OUT/train_vs_torch.json,
its table (generated from it by sweep_table.py) as train_vs_torch.md, and
prints a table last. Needs the graphcore Python package on PYTHONPATH and
the library (GRAPHCORE_LIB).

    python3 perf/side_by_side/train_vs_torch.py [--quick]
    GC_CELLS=4096:64 python3 perf/side_by_side/train_vs_torch.py

GC_CELLS (width:batch pairs, comma-separated) reruns only those cells into
$OUT/train_vs_torch_cells.json, which the table in docs/results.md shows in place of
the full sweep's cells.
"""
import json
import os

import torch

import graphcore as gc
from per_layer_step import enqueue_per_layer_step
from sweep_cells import cells_from_env
from sweep_common import GEMM_TABLE, BATCHES, PRECISIONS, WIDTHS, Progress, dispatch_of, set_torch_precision, timed_us, winner
from sweep_table import table

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
# The fused steps' TF32 form (their _flags exports), where the package has it.
STEP_TF32 = hasattr(gc, "op_linear_mse_step_flags")
OUT = os.environ.get("OUT", "perf/results")
# The cells of a GC_CELLS rerun (None: the whole sweep) and its record.
CELLS, CELLS_RECORD = cells_from_env()
STEPS = 100
MEAN_LR = 0.1


ctx = gc.Context(0)
tstream = torch.cuda.Stream()
stream = gc.Stream.wrap(ctx, tstream.cuda_stream)


def model_of(kind, width):
    if kind == "linear":
        return torch.nn.Sequential(torch.nn.Linear(width, width)).cuda()
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, width)).cuda()


class TorchStep:
    """The model's step captured whole by PyTorch: replay() runs one step;
    ``loss`` holds its summed squared error."""

    def __init__(self, model, x, y, lr):
        self.model, self.x, self.y = model, x, y
        self.opt = torch.optim.SGD(model.parameters(), lr=lr)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.opt.zero_grad(set_to_none=True)
                self.step()
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(self.graph):
            self.loss = self.step()

    def step(self):
        loss = (self.model(self.x) - self.y).pow(2).sum()
        loss.backward()
        self.opt.step()
        return loss

    def replay(self):
        self.graph.replay()


class GcStep:
    """The same step as graphcore's fused op, captured into a graph from a
    copy of the model's starting parameters: launch() runs one step;
    ``loss`` holds its summed squared error."""

    def __init__(self, kind, params, x, y, lr, tf32=False):
        self.params = [p.clone() for p in params]
        self.tf32 = tf32
        self.x, self.y = x, y
        rows, width = x.shape
        self.loss = torch.zeros(1, device="cuda")
        if kind == "linear":
            nbytes = ctx.linear_mse_step_workspace_bytes(rows, width, width)
        else:
            nbytes = ctx.mlp2_mse_step_workspace_bytes(rows, width, width)
        # Zeros: the step's barrier words start at zero, as the header asks.
        self.ws = torch.zeros(nbytes // 4 + 1, device="cuda")
        torch.cuda.synchronize()
        with gc.capture(stream) as cap:
            if kind == "linear" and tf32:
                w, b = self.params
                gc.op_linear_mse_step_flags(stream, w, b, x, y, self.loss, rows, width, width, 1.0, lr,
                                            self.ws, nbytes, gc.LINEAR_TF32)
            elif kind == "linear":
                w, b = self.params
                gc.op_linear_mse_step(stream, w, b, x, y, self.loss, rows, width, width, 1.0, lr,
                                      self.ws, nbytes)
            elif tf32:
                w1, b1, w2, b2 = self.params
                gc.op_mlp2_mse_step_flags(stream, w1, b1, w2, b2, x, y, self.loss, rows, width, width, width,
                                          1.0, lr, self.ws, nbytes, gc.LINEAR_TF32)
            else:
                w1, b1, w2, b2 = self.params
                gc.op_mlp2_mse_step(stream, w1, b1, w2, b2, x, y, self.loss, rows, width, width, width,
                                    1.0, lr, self.ws, nbytes)
        self.graph = cap.graph
        self.nodes = self.graph.node_count
        self.exec = self.graph.instantiate()

    def launch(self):
        self.exec.launch(stream)


class UnfusedGcStep:
    """The same step from graphcore's per-layer ops, one kernel each (no
    fused step op): linear, MSE, the input gradient and ReLU mask (mlp2),
    then each layer's fused weight-gradient SGD and bias SGD. What the fused
    ops are measured against, and what they could fall back to."""

    def __init__(self, kind, params, x, y, lr, tf32=False):
        self.params = [p.clone() for p in params]
        rows, width = x.shape
        n = rows * width
        self.loss = torch.zeros(1, device="cuda")
        mse_bytes = ctx.mse_workspace_bytes(n)
        self.ws = torch.zeros(mse_bytes // 4 + 1, device="cuda")
        self.bufs = [torch.empty(rows, width, device="cuda") for _ in range(3)]
        torch.cuda.synchronize()
        with gc.capture(stream) as cap:
            enqueue_per_layer_step(stream, kind, self.params, x, y, self.loss, self.bufs, self.ws, mse_bytes, lr,
                                   tf32=tf32)
        self.graph = cap.graph
        self.nodes = self.graph.node_count
        self.exec = self.graph.instantiate()

    def launch(self):
        self.exec.launch(stream)


def losses(step, run, steps=STEPS):
    """The losses of `steps` steps of `step` (run() makes one)."""
    out = []
    for _ in range(steps):
        run()
        torch.cuda.synchronize()
        out.append(step.loss.item())
    return out


results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "steps_compared": STEPS,
           "mean_lr": MEAN_LR, "sweep": []}
results.update(CELLS_RECORD)
results["gemm_table"] = GEMM_TABLE
widths = WIDTHS
if CELLS:
    widths = sorted({w for w, _ in CELLS})
todo = [(p, k, w, b) for p in PRECISIONS for k in ("linear", "mlp2") for w in widths for b in BATCHES
        if not CELLS or (w, b) in CELLS]
progress = Progress(len(todo), "training sweep")
for precision in PRECISIONS:
    set_torch_precision(precision)
    tf32 = precision == "tf32"
    for kind in ("linear", "mlp2"):
        for width in widths:
            for batch in BATCHES:
                if CELLS and (width, batch) not in CELLS:
                    continue
                torch.manual_seed(width * 1000 + batch)
                model = model_of(kind, width)
                x = (torch.rand(batch, width, device="cuda") * 2 - 1) * 0.1
                y = torch.rand(batch, width, device="cuda") * 2 - 1
                lr = MEAN_LR / (batch * width)
                steps = STEPS if batch * width * width <= 1 << 30 else 10
                row = {"precision": precision, "kind": kind, "width": width, "batch": batch,
                       "graphcore_tf32": False, "steps_compared": steps}
                try:
                    start = [p.detach().clone() for p in model.parameters()]
                    ours = None
                    if tf32 and STEP_TF32:
                        try:
                            ours = GcStep(kind, start, x, y, lr, tf32=True)
                        except gc.NotSupportedError:  # no cuBLASLt: the fp32 step
                            ours = None
                    if ours is None:
                        ours = GcStep(kind, start, x, y, lr)
                    row["graphcore_tf32"] = ours.tf32
                    theirs = TorchStep(model, x, y, lr)
                    # The warm-up trained the model: both sides start from `start`.
                    with torch.no_grad():
                        for p, p0 in zip(model.parameters(), start):
                            p.copy_(p0)
                    ours_losses = losses(ours, ours.launch, steps)
                    theirs_losses = losses(theirs, theirs.replay, steps)
                    diff = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(ours_losses, theirs_losses))
                    unfused = UnfusedGcStep(kind, start, x, y, lr, tf32=tf32)
                    unfused_losses = losses(unfused, unfused.launch, steps)
                    diff_unfused = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(unfused_losses, theirs_losses))
                    t_torch = timed_us(theirs.replay)
                    t_gc = timed_us(ours.launch)
                    t_unfused = timed_us(unfused.launch)
                    layers = 1 if kind == "linear" else 2
                    flags = gc.LINEAR_TF32 if tf32 else 0
                    dispatch = dispatch_of(stream, [(batch, width, width, flags)] * layers)
                    row.update({"graphcore_nodes": ours.nodes, "torch_graph_us": t_torch, "graphcore_us": t_gc,
                                "speedup": t_torch / t_gc, "winner": winner(t_torch, t_gc), "dispatch": dispatch,
                                "loss_first": theirs_losses[0],
                                "loss_last": theirs_losses[-1], "loss_max_rel_diff": diff,
                                "unfused_nodes": unfused.nodes, "graphcore_unfused_us": t_unfused,
                                "unfused_loss_max_rel_diff": diff_unfused})
                    del ours, theirs, unfused
                except Exception as e:  # one shape's failure is recorded, the sweep goes on
                    row["error"] = f"{type(e).__name__}: {e}"
                results["sweep"].append(row)
                progress.cell(row)
                del model, x, y
                torch.cuda.empty_cache()
set_torch_precision("fp32")

os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "train_vs_torch_cells.json" if CELLS else "train_vs_torch.json"), "w") as f:
    json.dump(results, f, indent=1)

print(f"device: {results['device']}, torch {results['torch']}")
print("training step, graph replay: precision kind width batch nodes torch_us gc_us speedup winner dispatch "
      "loss_first loss_last rel_diff | unfused: nodes us")
for r in results["sweep"]:
    if "error" in r:
        print(f"{r['precision']} {r['kind']:6s} {r['width']:5d} {r['batch']:4d} failed: {r['error']}")
        continue
    print(f"{r['precision']} {r['kind']:6s} {r['width']:5d} {r['batch']:4d} {r['graphcore_nodes']:2d} "
          f"{r['torch_graph_us']:9.2f} {r['graphcore_us']:9.2f} {r['speedup']:6.2f}x {r['winner']:9s} "
          f"{r['dispatch']:12s} {r['loss_first']:10.4g} {r['loss_last']:10.4g} "
          f"{r['loss_max_rel_diff']:.1e} | {r['unfused_nodes']:2d} {r['graphcore_unfused_us']:9.2f}")
md = "\n".join(table(results)) + "\n"
if not CELLS:
    with open(os.path.join(OUT, "train_vs_torch.md"), "w") as f:
        f.write(md)
print(md)
