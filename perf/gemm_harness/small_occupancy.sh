#!/usr/bin/env bash
# Would gc_linear_small_f32 gain from more blocks per SM? Its one entry point
# serves every thread tile, so it takes the registers of the largest (8 x 4,
# up to 128 under __launch_bounds__(256, 2)): 2 blocks of 8 warps per SM
# whatever the tile. This builds small.cu (every legal config of the notes'
# layers at 1-32 rows, each checked against float64) with the kernel's bounds
# at 2 (as shipped), 3 and 4 blocks per SM, prints each build's register
# count (ptxas -v), and runs them. From the repository root on the GPU
# machine; output in ${OUT:-.}/small_occupancy_<blocks>.txt and
# small_occupancy.json (small_json.py).
set -euo pipefail
export PATH=/usr/local/cuda/bin:$PATH
tmp=$(mktemp -d)
for b in 2 3 4; do
  mkdir -p "$tmp/$b"
  python3 - "$b" kernels/linear.cu "$tmp/$b/linear.cu" <<'PY'
import sys
blocks, src, dst = sys.argv[1:]
s = open(src).read()
entry = s.index("gc_linear_small_f32(float *y")
at = s.rindex("__launch_bounds__(GC_SMALL_THREADS, 2)", 0, entry)
s = s[:at] + f"__launch_bounds__(GC_SMALL_THREADS, {blocks})" + s[at + len("__launch_bounds__(GC_SMALL_THREADS, 2)"):]
open(dst, "w").write(s)
PY
  nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -I "$tmp/$b" -I kernels -o "$tmp/$b/small" \
    perf/gemm_harness/small.cu 2>&1 | grep -A4 "entry function 'gc_linear_small_f32'" \
    | grep -E "spill|Used" | sed "s/^ptxas info *: /bounds $b: /" || true
done
for b in 2 4 3; do "$tmp/$b/small" > "${OUT:-.}/small_occupancy_$b.txt"; done
o=${OUT:-.}
python3 perf/gemm_harness/small_json.py occupancy "$o/small_occupancy.json" \
  "$o/small_occupancy_2.txt" "$o/small_occupancy_3.txt" "$o/small_occupancy_4.txt"
