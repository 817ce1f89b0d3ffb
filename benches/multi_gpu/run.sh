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
# Writes $OUT/multi_gpu.json (OUT defaults to benches/results) and prints a
# table. With fewer than two GPUs it measures nothing and says so: no
# figure is written that was not measured.
#
# Usage: benches/multi_gpu/run.sh [path/to/train_data_parallel]
#   env: DIM (4096), ROWS (512 per GPU), STEPS (50 per timed run), NCCL_LIB.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
EX=${1:-}
for c in c_examples/build/train_data_parallel stage/examples/train_data_parallel; do
  [ -z "$EX" ] && [ -x "$c" ] && EX=$c
done
[ -n "$EX" ] && [ -x "$EX" ] || { echo "multi_gpu bench: no train_data_parallel binary (make examples)"; exit 2; }
DIM=${DIM:-4096} ROWS=${ROWS:-512} STEPS=${STEPS:-50}
OUT=${OUT:-benches/results}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${gpus:-0}" -lt 2 ]; then
  echo "multi_gpu bench: SKIPPED: the targets need two GPUs; this machine has ${gpus:-0}. Nothing measured, nothing written."
  exit 0
fi
if [ -z "${NCCL_LIB:-}" ]; then
  NCCL_LIB=$(python3 -c 'import glob, os, nvidia.nccl as n; print(glob.glob(os.path.join(n.__path__[0], "lib", "libnccl.so*"))[0])' 2>/dev/null)
  export NCCL_LIB=${NCCL_LIB:-libnccl.so.2}
fi
mkdir -p "$OUT"
tmp=$(mktemp -d)
bench() { # bench NAME CMD...: runs, keeps the BENCH line's JSON in $tmp/NAME.json
  local name=$1; shift
  echo "== $name: $*"
  "$@" | tee "$tmp/$name.log"
  grep '^BENCH ' "$tmp/$name.log" | tail -1 | sed 's/^BENCH //' > "$tmp/$name.json"
  [ -s "$tmp/$name.json" ] || echo "(no result from $name)"
}
for n in 1 2; do
  bench "graphcore_$n" "$EX" --mode procs --ranks "$n" --bench "$STEPS" --dim "$DIM" --rows "$ROWS"
  bench "torch_$n" python3 benches/multi_gpu/torch_dp.py --ranks "$n" --dim "$DIM" --rows "$ROWS" --steps "$STEPS"
done
python3 - "$tmp" "$OUT/multi_gpu.json" <<'PY'
import json, os, subprocess, sys
tmp, out = sys.argv[1:]
r = {}
for name in ("graphcore_1", "graphcore_2", "torch_1", "torch_2"):
    p = os.path.join(tmp, name + ".json")
    r[name] = json.load(open(p)) if os.path.getsize(p) else None
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.split("\n")[0]
res = {"gpu": gpu, "runs": r}
g1, g2, t1, t2 = (r[k] for k in ("graphcore_1", "graphcore_2", "torch_1", "torch_2"))
if g2:
    res["allreduce_graph_over_eager_2gpu"] = g2["graph_over_eager"]
if g1 and g2:
    res["graphcore_scaling_2_over_1"] = g2["samples_per_s"] / g1["samples_per_s"]
if t1 and t2:
    res["torch_scaling_2_over_1"] = t2["samples_per_s"] / t1["samples_per_s"]
if g2 and t2:
    res["graphcore_over_torch_2gpu"] = g2["samples_per_s"] / t2["samples_per_s"]
json.dump(res, open(out, "w"), indent=1)
print("\n== multi-GPU targets (%s)" % gpu)
row = lambda k, v, t: print("  %-44s %10s   target %s" % (k, "%.3f" % v if v is not None else "-", t))
row("all-reduce in graph / eager (2 GPUs)", res.get("allreduce_graph_over_eager_2gpu"), "<= 1.05")
row("graphcore samples/s, 2 GPUs / 1", res.get("graphcore_scaling_2_over_1"), ">= 1.8")
row("PyTorch samples/s, 2 GPUs / 1", res.get("torch_scaling_2_over_1"), "-")
row("graphcore / PyTorch samples/s (2 GPUs)", res.get("graphcore_over_torch_2gpu"), "-")
print("written:", out)
PY
rm -rf "$tmp"
