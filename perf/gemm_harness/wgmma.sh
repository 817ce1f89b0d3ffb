#!/usr/bin/env bash
# Builds wgmma_NAME.cu (NAME: small or update) for sm_90a and runs it (see
# there). From the repository root on the GPU machine; the output goes to
# $OUT/wgmma_NAME.txt.
set -euo pipefail
export PATH=/usr/local/cuda/bin:$PATH
name=${1:?usage: wgmma.sh small|update}
tmp=$(mktemp -d)
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -I kernels -I perf/gemm_harness \
  -o "$tmp/wgmma_$name" "perf/gemm_harness/wgmma_$name.cu" 2>&1 | grep -A2 "wg_" | grep -E "registers|spill|Compiling" || true
echo "HGMMA instructions in SASS: $(cuobjdump --dump-sass "$tmp/wgmma_$name" | grep -c HGMMA)"
"$tmp/wgmma_$name" | tee "${OUT:-.}/wgmma_$name.txt"
