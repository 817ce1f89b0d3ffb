#!/bin/bash
# The cluster split-K harness on the GPU machine, from the repository root:
# builds splitk.cu with nvcc for sm_90 (cuBLAS is timed meanwhile), runs it,
# prints the comparison. Output in ${OUT:-.}/splitk.txt, torch.txt, summary.txt.
set -eu
H=perf/gemm_harness
OUT=${OUT:-.}
python3 $H/splitk_ref.py torch > "$OUT/torch.txt" 2>&1 &
nvcc -O3 -std=c++17 -arch=sm_90 -I kernels -o "$OUT/splitk" $H/splitk.cu
wait
"$OUT/splitk" > "$OUT/splitk.txt"
python3 $H/splitk_ref.py compare "$OUT/splitk.txt" "$OUT/torch.txt" | tee "$OUT/summary.txt"
