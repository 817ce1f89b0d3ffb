#!/usr/bin/env bash
# The two-GPU targets of issue 17, measured in one run (repo root, on a
# machine with two GPUs or more):
#   - graph cost: one all-reduce of the step's gradient bucket (dim^2 + dim
#     + 1 floats) captured in a graph against the same all-reduce launched
#     eagerly, each measured alone (target: graph <= 1.05x eager);
#   - scaling: the data-parallel step at Linear dim^2, ROWS rows per GPU,
#     on 1 and on 2 GPUs, one process per GPU (target: >= 1.8x the samples
#     per second of one);
#   - PyTorch side by side: the same step with torch.distributed (NCCL, one
#     process per GPU, captured in a CUDA graph), on 1 and 2 GPUs.
# Writes $OUT/multi_gpu.json (OUT defaults to perf/results) and prints a
# table. With fewer than two GPUs it measures nothing and says so: no
# figure is written that was not measured.
#
# Usage: perf/multi_gpu/run.sh [path/to/train_data_parallel]
#   env: DIM (4096), ROWS (512 per GPU), STEPS (50 per timed run), CHUNKS
#   (4: the weight gradient's row chunks, each all-reduced as it is ready),
#   MORE_ROWS ("1024 2048": rows per GPU of the scaling-by-size runs),
#   NCCL_LIB, LOGS (a folder for each run's whole output; a temporary one).
set -uo pipefail
source "$(dirname "$0")/common.sh"
EX=${1:-}
for c in c_examples/build/train_data_parallel stage/examples/train_data_parallel; do
  [ -z "$EX" ] && [ -x "$c" ] && EX=$c
done
[ -n "$EX" ] && [ -x "$EX" ] || { echo "multi_gpu bench: no train_data_parallel binary (make examples)"; exit 2; }
DIM=${DIM:-4096} ROWS=${ROWS:-512} STEPS=${STEPS:-50} CHUNKS=${CHUNKS:-4}
MORE_ROWS=${MORE_ROWS:-1024 2048}
OUT=${OUT:-perf/results}
needs_two_gpus "multi_gpu bench"
mkdir -p "$OUT"
tmp=$(mktemp -d)
LOGS=${LOGS:-$tmp}
bench() { # bench NAME CMD...: runs (4 minutes at most), keeps the BENCH line's JSON in $tmp/NAME.json
  local name=$1; shift
  echo "== $name: $*"
  timeout 240 "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  grep -v '^NCCL INFO' "$LOGS/$name.log" | tail -20
  [ "$rc" -eq 0 ] || echo "($name exited with $rc$([ "$rc" -eq 124 ] && echo ": timed out"))"
  grep '^BENCH ' "$LOGS/$name.log" | tail -1 | sed 's/^BENCH //' > "$tmp/$name.json"
  [ -s "$tmp/$name.json" ] || echo "(no result from $name)"
}
# C: row chunks of the weight gradient all-reduced as they are computed
# (CHUNKS, 4), and the whole bucket after the whole gradient (1).
for n in 1 2; do
  bench "graphcore_$n" "$EX" --mode procs --ranks "$n" --bench "$STEPS" --dim "$DIM" --rows "$ROWS" --chunks "$CHUNKS"
  bench "torch_$n" python3 perf/multi_gpu/torch_dp.py --ranks "$n" --dim "$DIM" --rows "$ROWS" --steps "$STEPS" --chunks "$CHUNKS"
done
bench graphcore_2_unchunked "$EX" --mode procs --ranks 2 --bench "$STEPS" --dim "$DIM" --rows "$ROWS" --chunks 1
bench torch_2_unchunked python3 perf/multi_gpu/torch_dp.py --ranks 2 --dim "$DIM" --rows "$ROWS" --steps "$STEPS" --chunks 1
# What the side stream's priority and the chunk count are worth.
bench graphcore_2_normal_priority "$EX" --mode procs --ranks 2 --bench "$STEPS" --dim "$DIM" --rows "$ROWS" --chunks "$CHUNKS" --comm-priority normal
bench graphcore_2_chunks8 "$EX" --mode procs --ranks 2 --bench "$STEPS" --dim "$DIM" --rows "$ROWS" --chunks 8
bench torch_2_normal_priority python3 perf/multi_gpu/torch_dp.py --ranks 2 --dim "$DIM" --rows "$ROWS" --steps "$STEPS" --chunks "$CHUNKS" --priority normal
# Scaling as the step grows: the same, at more rows per GPU.
for rows in $MORE_ROWS; do
  for n in 1 2; do
    bench "graphcore_${n}_rows$rows" "$EX" --mode procs --ranks "$n" --bench "$STEPS" --dim "$DIM" --rows "$rows" --chunks "$CHUNKS"
    bench "torch_${n}_rows$rows" python3 perf/multi_gpu/torch_dp.py --ranks "$n" --dim "$DIM" --rows "$rows" --steps "$STEPS" --chunks "$CHUNKS"
  done
done
python3 - "$tmp" "$OUT/multi_gpu.json" "$ROWS $MORE_ROWS" <<'PY'
import json, os, subprocess, sys
tmp, out, all_rows = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split()]
names = ("graphcore_1", "graphcore_2", "graphcore_2_unchunked", "torch_1", "torch_2", "torch_2_unchunked")
extra = ("graphcore_2_normal_priority", "graphcore_2_chunks8", "torch_2_normal_priority")
r = {}
sized = tuple("%s_%d_rows%d" % (w, n, rows) for rows in all_rows[1:] for w in ("graphcore", "torch") for n in (1, 2))
for name in names + extra + sized:
    p = os.path.join(tmp, name + ".json")
    r[name] = json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) else None
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.split("\n")[0]
res = {"gpu": gpu, "gpus": 2, "runs": r}
g1, g2, g2u, t1, t2, t2u = (r[k] for k in names)
ratio = lambda a, b: a["samples_per_s"] / b["samples_per_s"] if a and b else None
if g2:
    res["allreduce_graph_over_eager_2gpu"] = g2["graph_over_eager"]
res["graphcore_scaling_2_over_1"] = ratio(g2, g1)
if g1 and g2:
    # Against the plain one-GPU step (no communicator, no side stream).
    res["graphcore_scaling_2_over_plain_1"] = g2["samples_per_s"] / (
        g1["ranks"] * g1["rows_per_rank"] / (g1["plain_step_us"] * 1e-6))
res["graphcore_scaling_2_over_1_unchunked"] = ratio(g2u, g1)
res["torch_scaling_2_over_1"] = ratio(t2, t1)
res["torch_scaling_2_over_1_unchunked"] = ratio(t2u, t1)
res["graphcore_over_torch_1gpu"] = ratio(g1, t1)
res["graphcore_over_torch_2gpu"] = ratio(g2, t2)
res["graphcore_over_torch_2gpu_unchunked"] = ratio(g2u, t2u)
res["graphcore_scaling_2_over_1_normal_priority"] = ratio(r["graphcore_2_normal_priority"], g1)
res["graphcore_scaling_2_over_1_chunks8"] = ratio(r["graphcore_2_chunks8"], g1)
res["torch_scaling_2_over_1_normal_priority"] = ratio(r["torch_2_normal_priority"], t1)
# Scaling by rows per GPU (the first is ROWS, the runs above).
res["scaling_by_rows"] = []
for rows in all_rows:
    key = lambda w, n: "%s_%d" % (w, n) if rows == all_rows[0] else "%s_%d_rows%d" % (w, n, rows)
    res["scaling_by_rows"].append({
        "rows_per_gpu": rows,
        "graphcore_step_us_1gpu": (r[key("graphcore", 1)] or {}).get("step_us"),
        "graphcore_step_us_2gpu": (r[key("graphcore", 2)] or {}).get("step_us"),
        "graphcore_scaling": ratio(r[key("graphcore", 2)], r[key("graphcore", 1)]),
        "torch_scaling": ratio(r[key("torch", 2)], r[key("torch", 1)]),
        "graphcore_over_torch_2gpu": ratio(r[key("graphcore", 2)], r[key("torch", 2)]),
    })
json.dump(res, open(out, "w"), indent=1)
print("\n== multi-GPU targets (%s)" % gpu)
row = lambda k, v, t: print("  %-62s %10s   target %s" % (k, "%.3f" % v if v is not None else "-", t))
row("all-reduce in graph / eager (2 GPUs)", res.get("allreduce_graph_over_eager_2gpu"), "<= 1.05")
row("graphcore samples/s, 2 GPUs / 1", res["graphcore_scaling_2_over_1"], ">= 1.8")
row("graphcore samples/s, 2 GPUs / plain one-GPU step", res.get("graphcore_scaling_2_over_plain_1"), "-")
row("graphcore samples/s, 2 GPUs unchunked / 1", res["graphcore_scaling_2_over_1_unchunked"], "-")
row("PyTorch samples/s, 2 GPUs / 1", res["torch_scaling_2_over_1"], "-")
row("graphcore samples/s, 2 GPUs (side stream normal priority) / 1", res["graphcore_scaling_2_over_1_normal_priority"], "-")
row("graphcore samples/s, 2 GPUs (8 chunks) / 1", res["graphcore_scaling_2_over_1_chunks8"], "-")
row("PyTorch samples/s, 2 GPUs (normal priority) / 1", res["torch_scaling_2_over_1_normal_priority"], "-")
row("graphcore / PyTorch samples/s (1 GPU)", res["graphcore_over_torch_1gpu"], "-")
row("graphcore / PyTorch samples/s (2 GPUs)", res["graphcore_over_torch_2gpu"], "-")
row("graphcore / PyTorch samples/s (2 GPUs, unchunked)", res["graphcore_over_torch_2gpu_unchunked"], "-")
print("\n  rows/GPU  graphcore 1 GPU  2 GPUs (us)  scaling  PyTorch scaling  graphcore/PyTorch (2 GPUs)")
f = lambda v, p: ("%" + p) % v if v is not None else "-"
for x in res["scaling_by_rows"]:
    print("  %8d  %15s  %11s  %7s  %15s  %s" % (x["rows_per_gpu"], f(x["graphcore_step_us_1gpu"], ".1f"),
          f(x["graphcore_step_us_2gpu"], ".1f"), f(x["graphcore_scaling"], ".3f"), f(x["torch_scaling"], ".3f"),
          f(x["graphcore_over_torch_2gpu"], ".3f")))
print("written:", out)
PY
rm -rf "$tmp"
