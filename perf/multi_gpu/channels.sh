#!/usr/bin/env bash
# How the data-parallel step's overlap depends on the SMs NCCL takes: the
# 2-GPU step of perf/multi_gpu/run.sh (graphcore, one process per GPU)
# under NCCL_MAX_NCHANNELS (NCCL's blocks per collective) of each value in
# CHANNELS, for each chunk count in CHUNKS, with the 1-GPU step as the
# base. Writes $OUT/multi_gpu_channels.json and prints a table. Needs two
# GPUs (says so and writes nothing with fewer).
#
# Usage: perf/multi_gpu/channels.sh [path/to/train_data_parallel]
#   env: DIM (4096), ROWS (512), STEPS (50), CHANNELS ("default 4 8 16"),
#   CHUNKS ("2 4"), NCCL_LIB.
set -uo pipefail
source "$(dirname "$0")/common.sh"
EX=${1:-stage/examples/train_data_parallel}
[ -x "$EX" ] || { echo "channels: no $EX (scripts/gpu-check or make examples)"; exit 2; }
DIM=${DIM:-4096} ROWS=${ROWS:-512} STEPS=${STEPS:-50}
CHANNELS=${CHANNELS:-default 4 8 16} CHUNKS=${CHUNKS:-2 4}
OUT=${OUT:-perf/results}
needs_two_gpus channels
mkdir -p "$OUT"
lines=$(mktemp)
one() { # one RANKS CHUNKS CHANNELS: a BENCH line tagged with the channels
  local env=()
  [ "$3" = default ] || env=(NCCL_MAX_NCHANNELS="$3")
  timeout 120 env "${env[@]}" "$EX" --mode procs --ranks "$1" --bench "$STEPS" --dim "$DIM" --rows "$ROWS" --chunks "$2" 2>&1 \
    | sed -n 's/^BENCH {/{"nccl_max_nchannels": "'"$3"'", /p' | tee -a "$lines"
}
one 1 4 default
for ch in $CHANNELS; do
  for c in $CHUNKS; do one 2 "$c" "$ch"; done
done
python3 - "$lines" "$OUT/multi_gpu_channels.json" <<'PY'
import json, subprocess, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.split("\n")[0]
base = next((r for r in runs if r["ranks"] == 1), None)
for r in runs:
    if base and r["ranks"] == 2:
        r["scaling_2_over_1"] = r["samples_per_s"] / base["samples_per_s"]
json.dump({"gpu": gpu, "runs": runs}, open(sys.argv[2], "w"), indent=1)
print("%-10s %6s %9s %9s %8s" % ("channels", "chunks", "step_us", "allred_us", "scaling"))
for r in runs:
    print("%-10s %6s %9.1f %9s %8s" % (r["nccl_max_nchannels"], r["grad_chunks"] if r["ranks"] == 2 else "1 GPU",
          r["step_us"], r.get("allreduce_eager_us") or "-", "%.3f" % r["scaling_2_over_1"] if "scaling_2_over_1" in r else "-"))
print("written:", sys.argv[2])
PY
rm -f "$lines"
