#!/usr/bin/env bash
# Runs c_examples/train_data_parallel in the three configurations of issue
# 17 and prints one line per run, then a summary:
#   1. threads:  one process, one thread per GPU;
#   2. procs:    one process per GPU, bootstrapped through an id file;
#   3. procs-net: as 2 with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 (NCCL's
#      network transport, what separate hosts use).
# Each runs on every GPU (N = the device count, at most 8). With one GPU
# each runs N = 1 and the two-GPU runs are skipped, saying so. With
# GC_SANITIZE=1 the threads configuration also runs under compute-sanitizer
# memcheck. Results (pass/fail per configuration, nothing measured) go to
# $OUT/multi-gpu.json when OUT is set.
#
# Usage (repo root): scripts/multi-gpu.sh [path/to/train_data_parallel]
#   default: c_examples/build/train_data_parallel (make examples), or
#   stage/examples/train_data_parallel (scripts/gpu-check).
# NCCL: $NCCL_LIB, else the nvidia-nccl wheel's libnccl.so.2 found through
# python3, else the loader's libnccl.so.2.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off, in every run
EX=${1:-}
if [ -z "$EX" ]; then
  for c in c_examples/build/train_data_parallel stage/examples/train_data_parallel; do
    [ -x "$c" ] && { EX=$c; break; }
  done
fi
[ -n "$EX" ] && [ -x "$EX" ] || { echo "multi-gpu: no train_data_parallel binary (make examples)"; exit 2; }

if [ -z "${NCCL_LIB:-}" ]; then
  NCCL_LIB=$(python3 - <<'PY' 2>/dev/null
import glob, os, site, sys
dirs = []
try:
    import nvidia.nccl
    dirs += list(nvidia.nccl.__path__)
except Exception:
    pass
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    dirs += glob.glob(os.path.join(sp, "nvidia", "nccl*"))
for d in dirs:
    for f in glob.glob(os.path.join(d, "**", "libnccl.so*"), recursive=True):
        print(f); sys.exit(0)
PY
)
fi
export NCCL_LIB=${NCCL_LIB:-libnccl.so.2}
echo "multi-gpu: NCCL library $NCCL_LIB; NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
gpus=${gpus:-0}
[ "$gpus" -ge 1 ] || { echo "multi-gpu: no GPU"; exit 2; }
ranks=$(( gpus > 8 ? 8 : gpus ))
echo "multi-gpu: $gpus GPU(s): every configuration runs on $ranks rank(s)"

declare -a names results
fail=0
run() { # run NAME [VAR=VALUE...] [WRAPPER ARGS...] -- ARGS...: one configuration
  local name=$1; shift
  local prefix=() # env(1)'s operands: assignments, then an optional wrapper command
  while [ "$1" != "--" ]; do prefix+=("$1"); shift; done
  shift
  echo "== $name (N=$ranks): ${prefix[*]:-} $EX $*"
  if env "${prefix[@]}" "$EX" "$@"; then results+=("ok"); else results+=("FAILED"); fail=$((fail+1)); fi
  names+=("$name")
}
run threads -- --mode threads --ranks "$ranks"
run procs -- --mode procs --ranks "$ranks"
run procs-net NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 -- --mode procs --ranks "$ranks"
if [ "${GC_SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  # API errors are not reported: NCCL's set-up probes the driver with calls
  # that fail by design (as gpu-check's sanitizer steps, --report-api-errors no).
  run threads-memcheck compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 \
    -- --mode threads --ranks "$ranks" --steps 50
fi
if [ "$gpus" -lt 2 ]; then
  echo "SKIPPED: the two-GPU configurations (threads, procs, procs-net with N=2) need two devices; this machine has $gpus"
fi

echo "== summary (N=$ranks)"
json="{\"gpus\": $gpus, \"ranks\": $ranks, \"nccl_lib\": \"$NCCL_LIB\", \"results\": {"
for i in "${!names[@]}"; do
  printf '  %-18s %s\n' "${names[$i]}" "${results[$i]}"
  json+="$([ "$i" -gt 0 ] && echo ", ")\"${names[$i]}\": \"${results[$i]}\""
done
json+="}, \"two_gpu_runs\": $([ "$gpus" -ge 2 ] && echo true || echo false)}"
[ -n "${OUT:-}" ] && { mkdir -p "$OUT"; echo "$json" > "$OUT/multi-gpu.json"; }
echo "multi-gpu: $(( ${#names[@]} - fail )) passed, $fail failed"
[ "$fail" -eq 0 ]
