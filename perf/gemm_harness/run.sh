#!/bin/bash
# The GEMM harness on the GPU machine, from the repository root: builds
# harness.cu with nvcc for sm_90, runs it, then cuBLAS beside it
# (torch_ref.py). Output in ${OUT:-.}/harness.txt and summary.txt.
set -eu
H=perf/gemm_harness
OUT=${OUT:-.}
nvcc -O3 -std=c++17 -arch=sm_90 -I kernels -o "$OUT/gemm_harness" $H/harness.cu
"$OUT/gemm_harness" > "$OUT/harness.txt"
python3 $H/torch_ref.py "$OUT/harness.txt" | tee "$OUT/summary.txt" | grep -v '^TORCH'
