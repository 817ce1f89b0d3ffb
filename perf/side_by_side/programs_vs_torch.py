"""The PyTorch notes' programs vs graphcore's C programs, on the same GPU,
in one run, from the same weights and data.

  * MLP inference (1024 -> 512 -> 256 -> 10, ReLU), batch 1, 4, 16, 32, end
    to end as the notes do it: PyTorch's graph path is
    static_input.copy_(x); g.replay(); static_output.clone() with one graph
    per batch size in a shared pool (graph_pool_handle), against
    c_examples/mlp_inference (copy in, gc_runner_replay, copy out; and with
    bindings, gc_runner_replay_with, no copies); eager
    PyTorch too. Outputs compared (batch 32).
  * The training step (Linear 1024 -> 1024, batch 64, summed squared error,
    SGD lr 1e-3): PyTorch's CUDA-graph replay (warm-up on a side stream,
    capture, replay) and eager step against c_examples/train_step (replays
    of the fused step, gc_op_linear_mse_step: 2 kernel nodes; the unfused
    4-node step beside it); the losses of the first 100 replays compared.
  * Capture time of the four MLP buckets, both sides.

fp32, TF32 off. Writes $OUT/programs_vs_torch.json and .png (a chart), and
prints a table last. Run on the GPU machine from the repo root (the C
programs are stage/examples/*, see scripts/gpu-check).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from walltime import median_us

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
OUT = os.environ.get("OUT", "perf/results")
EXAMPLES = os.environ.get("GC_EXAMPLES", "stage/examples")
tmp = tempfile.mkdtemp()
BUCKETS = (1, 4, 16, 32)


# ---------------------------------------------------------------- MLP
torch.manual_seed(0)
mlp = torch.nn.Sequential(
    torch.nn.Linear(1024, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 256), torch.nn.ReLU(),
    torch.nn.Linear(256, 10)).cuda().eval()
inputs = torch.randn(64, 1024, device="cuda")
mlp_file = os.path.join(tmp, "mlp.bin")
with open(mlp_file, "wb") as f:
    for layer in (mlp[0], mlp[2], mlp[4]):
        f.write(layer.weight.detach().cpu().numpy().astype(np.float32).tobytes())
        f.write(layer.bias.detach().cpu().numpy().astype(np.float32).tobytes())
    f.write(inputs.cpu().numpy().astype(np.float32).tobytes())

pool = torch.cuda.graph_pool_handle()
graphs = {}
with torch.no_grad():
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for b in BUCKETS:
            for _ in range(3):
                mlp(inputs[:b])
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for b in sorted(BUCKETS, reverse=True):
        static_in = torch.zeros(b, 1024, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            static_out = mlp(static_in)
        graphs[b] = (g, static_in, static_out)
    torch.cuda.synchronize()
    torch_capture_us = (time.perf_counter() - t) * 1e6

    def torch_graph(b):
        g, si, so = graphs[b]
        x = inputs[:b]

        def call():
            si.copy_(x)
            g.replay()
            return so.clone()
        return call

    torch_mlp = {}
    for b in BUCKETS:
        torch_mlp[b] = {"graph_us": median_us(torch_graph(b)),
                        "eager_us": median_us(lambda: mlp(inputs[:b]))}
    torch_out32 = torch_graph(32)().cpu().numpy()

gc_mlp_json = os.path.join(tmp, "mlp.json")
dump = os.path.join(tmp, "mlp_out.bin")
subprocess.run([f"{EXAMPLES}/mlp_inference", "--data", mlp_file, "--json", gc_mlp_json, "--dump", dump],
               check=True)
gc_mlp = json.load(open(gc_mlp_json))
gc_out32 = np.fromfile(dump, dtype=np.float32).reshape(32, 10)
mlp_rel = float(np.abs(gc_out32 - torch_out32).max() / max(np.abs(torch_out32).max(), 1e-30))

# ---------------------------------------------------------------- training
torch.manual_seed(1)
model = torch.nn.Linear(1024, 1024).cuda()
x = (torch.rand(64, 1024, device="cuda") * 2 - 1) * 0.1  # see c_examples/train_step.c
y = torch.rand(64, 1024, device="cuda") * 2 - 1
train_file = os.path.join(tmp, "train.bin")
with open(train_file, "wb") as f:
    for t in (model.weight, model.bias, x, y):
        f.write(t.detach().cpu().numpy().astype(np.float32).tobytes())
opt = torch.optim.SGD(model.parameters(), lr=1e-3)


def train_step():
    y_pred = model(x)
    loss = (y_pred - y).pow(2).sum()
    loss.backward()
    opt.step()
    return loss


s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        train_step()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
with torch.cuda.graph(g):
    static_loss = train_step()
torch_losses = []
for _ in range(100):
    g.replay()
    torch_losses.append(static_loss.item())
torch_replay_us = median_us(g.replay, iters=200)


def eager_step():
    opt.zero_grad(set_to_none=True)
    train_step()


torch_eager_us = median_us(eager_step, iters=200)

gc_train_json = os.path.join(tmp, "train.json")
subprocess.run([f"{EXAMPLES}/train_step", "--data", train_file, "--json", gc_train_json], check=True)
gc_train = json.load(open(gc_train_json))
gc_losses = gc_train["first_100"]
loss_rel = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(gc_losses, torch_losses))

# ---------------------------------------------------------------- report
gc_timings = {t["batch"]: t for t in gc_mlp["timings"]}
rows = []
for b in BUCKETS:
    rows.append({"case": f"MLP batch {b}", "torch_eager_us": torch_mlp[b]["eager_us"],
                 "torch_graph_us": torch_mlp[b]["graph_us"], "graphcore_us": gc_timings[b]["graph_us"],
                 "speedup_vs_torch_graph": torch_mlp[b]["graph_us"] / gc_timings[b]["graph_us"],
                 # graph arguments: each request bound to its own buffers, no copies
                 "graphcore_bound_us": gc_timings[b]["bound_us"],
                 "bound_speedup_vs_torch_graph": torch_mlp[b]["graph_us"] / gc_timings[b]["bound_us"],
                 # the CPU's share of a bound request (the enqueue loop alone),
                 # and a request bound to the same buffers as the last (no
                 # node patched)
                 "graphcore_bound_enqueue_us": gc_timings[b]["bound_enqueue_us"],
                 "graphcore_same_buffers_us": gc_timings[b]["same_buffers_us"]})
# graphcore_us: the fused step (gc_op_linear_mse_step, 2 kernel nodes); the
# unfused step (4 nodes) beside it.
rows.append({"case": "training step", "torch_eager_us": torch_eager_us, "torch_graph_us": torch_replay_us,
             "graphcore_us": gc_train["replay_us"], "speedup_vs_torch_graph": torch_replay_us / gc_train["replay_us"],
             "graphcore_nodes": gc_train["nodes"], "graphcore_unfused_us": gc_train["replay_unfused_us"],
             "graphcore_unfused_nodes": gc_train["unfused_nodes"],
             "unfused_speedup_vs_torch_graph": torch_replay_us / gc_train["replay_unfused_us"]})
results = {
    "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows,
    "mlp_outputs_max_rel_diff_batch32": mlp_rel, "train_losses_max_rel_diff_100_steps": loss_rel,
    "capture_4_buckets_us": {"torch": torch_capture_us,
                             "graphcore": sum(b["capture_us"] for b in gc_mlp["buckets"])},
    "memory_bytes": {"shared_4_buckets": gc_mlp["shared_reserved"], "batch32_alone": gc_mlp["alone32_reserved"],
                     "four_separate_pools": gc_mlp["separate_reserved"]},
}
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "programs_vs_torch.json"), "w") as f:
    json.dump(results, f, indent=1)

try:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from chart import draw
    draw(results, os.path.join(OUT, "programs_vs_torch.png"))
except Exception as e:  # the chart is a convenience; the JSON is the record
    print("no chart:", e)

print(f"device: {results['device']}, torch {results['torch']}")
print(f"{'case':15s} {'torch eager':>12s} {'torch graph':>12s} {'graphcore':>12s} {'vs torch graph':>15s}")
for r in rows:
    print(f"{r['case']:15s} {r['torch_eager_us']:9.2f} us {r['torch_graph_us']:9.2f} us {r['graphcore_us']:9.2f} us "
          f"{r['speedup_vs_torch_graph']:14.2f}x")
print(f"MLP outputs (batch 32) max rel diff vs PyTorch: {mlp_rel:.1e}; "
      f"training losses over 100 steps max rel diff: {loss_rel:.1e}")
c = results["capture_4_buckets_us"]
print(f"capture of the 4 buckets: PyTorch {c['torch']:.0f} us, graphcore {c['graphcore']:.0f} us")
for r in rows:
    if "graphcore_bound_us" in r:
        print(f"{r['case']:15s} graphcore with bindings (no copies) {r['graphcore_bound_us']:9.2f} us: "
              f"{r['bound_speedup_vs_torch_graph']:.2f}x PyTorch's graph path")
m = results["memory_bytes"]
print(f"graph memory: shared {m['shared_4_buckets'] / 2**20:.1f} MiB, batch-32 alone {m['batch32_alone'] / 2**20:.1f} MiB, "
      f"4 separate pools {m['four_separate_pools'] / 2**20:.1f} MiB")
