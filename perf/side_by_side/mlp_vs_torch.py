"""gc_op_mlp (the whole MLP forward in one launch) against PyTorch's graph
path, on the same GPU, in one run, from the same weights (fp32, TF32 off).

  * The notes' MLP (1024 -> 512 -> 256 -> 10, ReLU, ReLU), end to end as a
    request: PyTorch's static_input.copy_(x); g.replay(); static_out.clone()
    against a graphcore graph of (copy in, gc_op_mlp, copy out) launched with
    gc_exec_launch (copies; programs_vs_torch.py times the bound form).
    Batches 1, 4, 16, 32, 64. Also the graph replay alone (no copies) for
    gc_op_mlp, for the same network as three gc_op_linear launches, and for
    PyTorch.
  * A sweep: widths 256, 1024, 4096, 8192, 2 to 4 layers of that width
    (ReLU between), batches 1 to 2048, fp32 and TF32 (issue 53 item 4):
    graph replay alone, PyTorch vs gc_op_mlp with GC_MLP_FUSED (fused where
    that pays) and vs one gc_op_linear launch per layer; up to 8 rows also
    GC_MLP_FUSED_ALWAYS (fused wherever the fused kernel takes the layers),
    which shows where fusing loses. TF32: PyTorch with allow_tf32, graphcore
    as gc_op_mlp with GC_MLP_TF32 (its per-layer form, each layer as
    gc_op_linear with GC_LINEAR_TF32 would run; with a package older than
    the flag, gc_op_linear per layer), and one gc_op_linear launch per layer
    with GC_LINEAR_TF32 beside it. Each cell records its winner (a tie within 3%) and the
    GEMM dispatch's choice for its layers (gc.op_linear_backend; "graphcore"
    where the package has no such query). --quick (or GC_QUICK=1): widths
    256 and 1024, batches 1, 32, 256.
  * Numerics: outputs against float64 (norm-wise relative error), and two
    replays compared bit for bit.

Timing: median over 7 repetitions of the wall time per call of N
back-to-back calls, synchronized at the end (as the notes time them).
Writes $OUT/mlp_vs_torch.json and .png (a chart) and prints a table last. Needs the graphcore
Python package on PYTHONPATH and the library (GRAPHCORE_LIB).

    python3 perf/side_by_side/mlp_vs_torch.py [--quick]
    GC_CELLS=4096:64 python3 perf/side_by_side/mlp_vs_torch.py

Timing of the sweep's cells: as many calls per repetition as fit 40 ms (3
to 200), so the largest cells take seconds; progress is printed per cell.
The sweep's table is generated from the JSON (sweep_table.py) and written
beside it as mlp_vs_torch.md.

GC_CELLS (width:batch pairs, comma-separated) reruns only those cells of the
sweep (every depth; no notes' MLP) into $OUT/mlp_vs_torch_cells.json, which
the table in docs/results.md shows in place of the full sweep's cells.
"""
import copy
import json
import os
import sys

import torch

import graphcore as gc
from sweep_cells import cells_from_env
from sweep_common import (BATCHES, PRECISIONS, QUICK, WIDTHS, Progress, dispatch_of, set_torch_precision,
                          timed_us, winner, GEMM_TABLE)
from sweep_table import table
from walltime import median_us

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
# gc_op_mlp's TF32 form (GC_MLP_TF32), where the package has it.
MLP_TF32 = getattr(gc, "MLP_TF32", 0)
OUT = os.environ.get("OUT", "perf/results")
# The cells of a GC_CELLS rerun (None: the whole sweep) and its record.
CELLS, CELLS_RECORD = cells_from_env()


ctx = gc.Context(0)
tstream = torch.cuda.Stream()
stream = gc.Stream.wrap(ctx, tstream.cuda_stream)


def layers_of(model):
    lins = [m for m in model if isinstance(m, torch.nn.Linear)]
    out = []
    for i, lin in enumerate(lins):
        relu = i + 1 < len(lins)
        out.append((lin.weight.data_ptr(), lin.bias.data_ptr(), lin.in_features, lin.out_features, relu))
    return out


class GcMlp:
    """The model's layers run by gc_op_mlp (or gc_op_linear per layer) in a
    captured graph; ``copies``: copy in / out around it (a request)."""

    def __init__(self, model, rows, copies, per_layer=False, fused=True, tf32=False):
        self.layers = layers_of(model)
        self.rows = rows
        k = self.layers[0][2]
        n = self.layers[-1][3]
        self.x = torch.zeros(rows, k, device="cuda")
        self.y = torch.zeros(rows, n, device="cuda")
        self.src = torch.randn(rows, k, device="cuda")
        self.dst = torch.zeros(rows, n, device="cuda")
        self.ws_bytes = gc.mlp_workspace_bytes(rows, self.layers)
        self.ws = torch.zeros(self.ws_bytes // 4 + 1, device="cuda")
        self.inter = [torch.zeros(rows, l[3], device="cuda") for l in self.layers]
        torch.cuda.synchronize()
        with gc.capture(stream) as cap:
            if copies:
                gc.memcpy_async(stream, self.x, self.src, self.x.numel() * 4)
            if per_layer:
                h = self.x
                for i, (w, b, kk, nn, relu) in enumerate(self.layers):
                    out = self.y if i + 1 == len(self.layers) else self.inter[i]
                    gc.op_linear(stream, out, h, w, b, rows, nn, kk, (1 if relu else 0) | (gc.LINEAR_TF32 if tf32 else 0))
                    h = out
            else:
                if tf32:
                    gc.op_mlp(stream, self.y, self.x, rows, self.layers, self.ws, self.ws_bytes, tf32=True)
                else:
                    gc.op_mlp(stream, self.y, self.x, rows, self.layers, self.ws, self.ws_bytes, fused=fused)
            if copies:
                gc.memcpy_async(stream, self.dst, self.y, self.y.numel() * 4)
        self.graph = cap.graph
        self.nodes = self.graph.node_count
        self.exec = self.graph.instantiate()

    def __call__(self):
        self.exec.launch(stream)


def torch_graph(model, rows, copies):
    k = model[0].in_features
    si = torch.zeros(rows, k, device="cuda")
    src = torch.randn(rows, k, device="cuda")
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(si)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            so = model(si)
    torch.cuda.synchronize()
    if not copies:
        return g.replay

    def call():
        si.copy_(src)
        g.replay()
        return so.clone()
    return call


def rel_err_vs_f64(model, m):
    x = torch.randn(m.rows, m.layers[0][2], device="cuda")
    m.x.copy_(x)
    torch.cuda.synchronize()
    m()
    torch.cuda.synchronize()
    with torch.no_grad():
        ref = copy.deepcopy(model).double()(x.double())
    got = m.y.double()
    err = float((got - ref).norm() / ref.norm().clamp_min(1e-300))
    first = m.y.clone()
    m()
    torch.cuda.synchronize()
    same = bool(torch.equal(first.view(torch.int32), m.y.view(torch.int32)))
    return err, same


def net(widths):
    mods = []
    for i in range(len(widths) - 1):
        mods.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods).cuda().eval()


results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "copies": "device-to-device copies in the graph; programs_vs_torch.py times requests with bindings", "notes": [], "sweep": []}
results.update(CELLS_RECORD)
results["gemm_table"] = GEMM_TABLE

# ---------------------------------------------------------------- the notes' MLP
torch.manual_seed(0)
notes = net([1024, 512, 256, 10])
for b in () if CELLS else ((1, 32) if QUICK else (1, 4, 16, 32, 64)):
    fused = GcMlp(notes, b, copies=True)
    fused_only = GcMlp(notes, b, copies=False)
    linear3 = GcMlp(notes, b, copies=False, per_layer=True)
    err, same = rel_err_vs_f64(notes, fused_only)
    row = {
        "batch": b,
        "torch_graph_request_us": median_us(torch_graph(notes, b, True)),
        "graphcore_request_us": median_us(fused),
        "torch_graph_replay_us": median_us(torch_graph(notes, b, False)),
        "graphcore_mlp_replay_us": median_us(fused_only),
        "graphcore_3_linear_replay_us": median_us(linear3),
        "kernel_nodes_fused": fused_only.nodes,
        "rel_err_vs_float64": err,
        "replays_bitwise_equal": same,
    }
    row["speedup_request"] = row["torch_graph_request_us"] / row["graphcore_request_us"]
    row["speedup_replay"] = row["torch_graph_replay_us"] / row["graphcore_mlp_replay_us"]
    results["notes"].append(row)
    print(row, flush=True)

# ---------------------------------------------------------------- sweep
widths_list = WIDTHS
if CELLS:
    widths_list = sorted({w for w, _ in CELLS})
todo = [(p, w, n, b) for p in PRECISIONS for w in widths_list for n in (2, 3, 4) for b in BATCHES
        if not CELLS or (w, b) in CELLS]
progress = Progress(len(todo), "mlp sweep")
for precision in PRECISIONS:
    set_torch_precision(precision)
    tf32 = precision == "tf32"
    for width in widths_list:
        for layers in (2, 3, 4):
            torch.manual_seed(width + layers)
            model = net([width] * (layers + 1))
            for b in BATCHES:
                if CELLS and (width, b) not in CELLS:
                    continue
                row = {"precision": precision, "width": width, "layers": layers, "batch": b}
                try:
                    per_layer = GcMlp(model, b, copies=False, per_layer=True, tf32=tf32)
                    # fp32: gc_op_mlp with GC_MLP_FUSED; TF32: gc_op_mlp with GC_MLP_TF32
                    # (per-layer gc_op_linear launches with a package older than the flag).
                    if tf32:
                        m = GcMlp(model, b, copies=False, fused=False, tf32=True) if MLP_TF32 else per_layer
                    else:
                        m = GcMlp(model, b, copies=False)
                    err, same = rel_err_vs_f64(model, m)
                    t_torch = timed_us(torch_graph(model, b, False))
                    t_gc = timed_us(m)
                    t_per_layer = t_gc if m is per_layer else timed_us(per_layer)
                    flags = gc.LINEAR_TF32 if tf32 else 0
                    dispatch = dispatch_of(stream, [(b, l[3], l[2], (1 if l[4] else 0) | flags) for l in m.layers])
                    row.update({"fused": m.nodes == 1 and not tf32, "torch_graph_us": t_torch, "graphcore_us": t_gc,
                                "graphcore_per_layer_us": t_per_layer, "speedup": t_torch / t_gc,
                                "winner": winner(t_torch, t_gc), "dispatch": dispatch,
                                "graphcore_form": ("gc_op_mlp, GC_MLP_TF32" if MLP_TF32
                                                   else "gc_op_linear per layer, GC_LINEAR_TF32") if tf32
                                else "gc_op_mlp, GC_MLP_FUSED",
                                "rel_err_vs_float64": err, "replays_bitwise_equal": same})
                    if b <= 8 and not tf32:
                        # GC_MLP_FUSED_ALWAYS beside: what fusing costs or saves
                        # where GC_MLP_FUSED's rule does not fuse.
                        always = GcMlp(model, b, copies=False, fused="always")
                        if always.nodes == 1:
                            row["graphcore_fused_always_us"] = timed_us(always)
                        del always
                    del m, per_layer
                except Exception as e:  # one cell's failure is recorded, the sweep goes on
                    row["error"] = f"{type(e).__name__}: {e}"
                results["sweep"].append(row)
                progress.cell(row)
                torch.cuda.empty_cache()
            del model
            torch.cuda.empty_cache()
set_torch_precision("fp32")

os.makedirs(OUT, exist_ok=True)
if CELLS:
    del results["notes"]
    with open(os.path.join(OUT, "mlp_vs_torch_cells.json"), "w") as f:
        json.dump(results, f, indent=1)
    for r in results["sweep"]:
        print(r)
    print("\n".join(table(results)))
    sys.exit(0)
with open(os.path.join(OUT, "mlp_vs_torch.json"), "w") as f:
    json.dump(results, f, indent=1)

try:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from chart import draw_mlp
    draw_mlp(results, os.path.join(OUT, "mlp_vs_torch.png"))
except Exception as e:  # the chart is a convenience; the JSON is the record
    print("no chart:", e)

print(f"device: {results['device']}, torch {results['torch']}")
print("notes' MLP     torch req  gc req  x    | torch rep  gc mlp  3 linear  x    | rel err  bitwise")
for r in results["notes"]:
    print(f"batch {r['batch']:3d}  {r['torch_graph_request_us']:8.2f} {r['graphcore_request_us']:7.2f} "
          f"{r['speedup_request']:5.2f} | {r['torch_graph_replay_us']:8.2f} {r['graphcore_mlp_replay_us']:7.2f} "
          f"{r['graphcore_3_linear_replay_us']:8.2f} {r['speedup_replay']:5.2f} | {r['rel_err_vs_float64']:.1e} "
          f"{r['replays_bitwise_equal']}")
print("sweep (replay only): precision width layers batch fused torch gc gc-per-layer gc-fused-always speedup "
      "winner dispatch relerr bitwise")
for r in results["sweep"]:
    if "error" in r:
        print(f"{r['precision']} {r['width']:5d} {r['layers']} {r['batch']:4d} failed: {r['error']}")
        continue
    always = r.get("graphcore_fused_always_us")
    print(f"{r['precision']} {r['width']:5d} {r['layers']} {r['batch']:4d} {int(r['fused'])} {r['torch_graph_us']:9.2f} "
          f"{r['graphcore_us']:9.2f} {r['graphcore_per_layer_us']:9.2f} "
          f"{'%8.2f' % always if always else '       -'} {r['speedup']:5.2f}x {r['winner']:9s} {r['dispatch']:12s} "
          f"{r['rel_err_vs_float64']:.1e} {r['replays_bitwise_equal']}")
md = "\n".join(table(results)) + "\n"
with open(os.path.join(OUT, "mlp_vs_torch.md"), "w") as f:
    f.write(md)
print(md)
