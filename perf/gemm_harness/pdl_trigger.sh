#!/usr/bin/env bash
# Does gc_linear_small_f32 shorten the notes' programmatic layer chain if it
# lets the next kernel launch at its start (GC_PDL_TRIGGER before its
# GC_PDL_WAIT) instead of after its main loop? Builds mlp_cluster.cu from
# kernels/linear.cu as shipped and from copies patched that way, and
# runs `mlp_cluster parts` (each layer alone and the chains of 1-3 layers,
# in a graph of many and replayed) for each, alternated, twice; a third
# build triggers at the start only in grids that leave SMs idle. From the
# repository root on the GPU machine; the outputs go to $OUT/pdl_trigger_*.txt.
set -euo pipefail
export PATH=/usr/local/cuda/bin:$PATH
tmp=$(mktemp -d)
VARIANTS=(shipped early sparse)
for v in "${VARIANTS[@]}"; do
  mkdir -p "$tmp/$v"
  cp kernels/linear.cu "$tmp/$v/linear.cu"
done
# early: every grid triggers at its start; sparse: only grids of fewer
# blocks than the H200's 132 SMs (the next kernel's blocks then take SMs
# this grid leaves idle).
python3 - "$tmp" <<'PY'
import sys
for v, trigger in (("early", "GC_PDL_TRIGGER();"),
                   ("sparse", "if (gridDim.x * gridDim.y < 132u) GC_PDL_TRIGGER();")):
    p = f"{sys.argv[1]}/{v}/linear.cu"
    s = open(p).read()
    at = s.index("gc_linear_small_f32(float *y")
    wait = s.index("GC_PDL_WAIT();", at)
    s = s[:wait] + trigger + "\n    " + s[wait:]
    open(p, "w").write(s)
PY
for v in "${VARIANTS[@]}"; do
  nvcc -O3 -std=c++17 -arch=sm_90 -I "$tmp/$v" -I kernels -I perf/gemm_harness -o "$tmp/$v/mlp_cluster" \
    perf/gemm_harness/mlp_cluster.cu &
done
wait
for round in 1 2; do
  for v in "${VARIANTS[@]}"; do
    "$tmp/$v/mlp_cluster" parts | sed "s/^/$v /" | tee -a "${OUT:-.}/pdl_trigger_$v.txt"
  done
done
