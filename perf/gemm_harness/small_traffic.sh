#!/usr/bin/env bash
# Builds and runs small_traffic.cu four ways (see there), twice each. From the
# repository root on the GPU machine.
set -euo pipefail
export PATH=/usr/local/cuda/bin:$PATH
tmp=$(mktemp -d)
for v in shipped x_row0 w_col0 both; do
  mkdir -p "$tmp/$v"
  cp kernels/linear.cu "$tmp/$v/linear.cu"
  case $v in
    x_row0) sed -i 's/const u32 row = min(i0 + r, m - 1);/const u32 row = 0;/' "$tmp/$v/linear.cu" ;;
    w_col0) sed -i 's/const u32 col = min(j0 + c, n - 1);/const u32 col = 0;/' "$tmp/$v/linear.cu" ;;
    both) sed -i -e 's/const u32 row = min(i0 + r, m - 1);/const u32 row = 0;/' \
            -e 's/const u32 col = min(j0 + c, n - 1);/const u32 col = 0;/' "$tmp/$v/linear.cu" ;;
  esac
  nvcc -O3 -std=c++17 -arch=sm_90 -DVARIANT="\"$v\"" -I "$tmp/$v" -I kernels -I perf/gemm_harness \
    -o "$tmp/$v/run" perf/gemm_harness/small_traffic.cu
done
for round in 1 2; do
  for v in shipped x_row0 w_col0 both; do "$tmp/$v/run"; done
done | tee "$tmp/traffic.txt"
python3 perf/gemm_harness/small_json.py traffic "${OUT:-.}/small_traffic.json" "$tmp/traffic.txt"
