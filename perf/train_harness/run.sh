#!/bin/bash
# The training-step harness on the GPU machine, from the repository root:
# builds harness.cu with nvcc for sm_90 and runs it (output in
# ${OUT:-.}/train_harness.txt; the RES lines are the results). Arguments go
# to the harness: `run.sh run5` runs run 5 only (RES5 / CHK5 lines).
set -eu
H=perf/train_harness
OUT=${OUT:-.}
nvcc -O3 -std=c++17 -arch=sm_90 -I kernels -Xptxas -v -o /tmp/train_harness $H/harness.cu -lcuda 2> "$OUT/ptxas.txt" || { cat "$OUT/ptxas.txt"; exit 1; }
/tmp/train_harness "$@" | tee "$OUT/train_harness.txt"
