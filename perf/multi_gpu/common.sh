# Sourced by perf/multi_gpu/run.sh and channels.sh (bash): NVLink
# multicast off, the GPU count, and NCCL_LIB (the nvidia-nccl wheel's
# library found through python3 when unset, else the loader's libnccl.so.2).
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off
# needs_two_gpus NAME: exits 0 (saying so, writing nothing) below two GPUs.
needs_two_gpus() {
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [ "${gpus:-0}" -lt 2 ]; then
    echo "$1: SKIPPED: needs two GPUs; this machine has ${gpus:-0}. Nothing measured, nothing written."
    exit 0
  fi
}
if [ -z "${NCCL_LIB:-}" ]; then
  NCCL_LIB=$(python3 -c 'import glob, os, nvidia.nccl as n; print(glob.glob(os.path.join(n.__path__[0], "lib", "libnccl.so*"))[0])' 2>/dev/null)
fi
export NCCL_LIB=${NCCL_LIB:-libnccl.so.2}
