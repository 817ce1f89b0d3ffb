#!/usr/bin/env bash
# Builds wgmma_small.cu for sm_90a and runs it (see there). From the
# repository root on the GPU machine; the output goes to $OUT/wgmma_small.txt.
set -euo pipefail
export PATH=/usr/local/cuda/bin:$PATH
tmp=$(mktemp -d)
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -I kernels -I benches/gemm_harness \
  -o "$tmp/wgmma_small" benches/gemm_harness/wgmma_small.cu 2>&1 | grep -A2 "wg_layer" | grep -E "registers|spill|Compiling" || true
echo "HGMMA instructions in SASS: $(cuobjdump --dump-sass "$tmp/wgmma_small" | grep -c HGMMA)"
"$tmp/wgmma_small" | tee "${OUT:-.}/wgmma_small.txt"
