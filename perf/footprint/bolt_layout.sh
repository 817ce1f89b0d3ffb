#!/usr/bin/env bash
# Lays libgraphcore.so out by its hot paths with llvm-bolt (an experiment:
# perf/results/footprint_bolt.json, h100/host_ab_bolt.json). Builds the
# release library relinked with --emit-relocs, instruments it, runs
# perf/footprint/footprint.c's operations over the no-op driver (200
# iterations each) for the profile, and writes the reordered library:
#
#   perf/footprint/bolt_layout.sh OUT.so
#
# then, for example, `python3 perf/footprint/footprint.py main=target/release/libgraphcore.so
# bolt=OUT.so`. Needs llvm-bolt and merge-fdata (Debian: bolt-19), valgrind
# is not needed. Leaves target/release/libgraphcore.so relinked with
# relocations (the same code: footprint counts it alike).
set -euo pipefail
out=$(realpath -m "${1:?usage: bolt_layout.sh OUT.so}")
repo=$(cd "$(dirname "$0")/../.." && pwd)
bolt=${BOLT_BIN:-/usr/lib/llvm-19/bin}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$repo"
cargo rustc --release -p graphcore-ffi --lib -- -C link-arg=-Wl,--emit-relocs >&2
cp target/release/libgraphcore.so "$work/relocs.so"
cc -O2 -shared -fPIC -o "$work/libcuda.so.1" perf/noop_driver/noop_cuda.c
cc -std=c11 -O2 -Iinclude perf/footprint/footprint.c -o "$work/footprint" "$work/relocs.so" -ldl -lm
mkdir "$work/lib" "$work/prof"
"$bolt/llvm-bolt" "$work/relocs.so" -instrument -o "$work/lib/libgraphcore.so.0" \
  --instrumentation-file="$work/prof/p.fdata" --instrumentation-file-append-pid >/dev/null
ln -s "$work/libcuda.so.1" "$work/lib/libcuda.so.1"
for op in build capture capture1 launch build10 instantiate instantiate_captured update; do
  LD_LIBRARY_PATH="$work/lib" "$work/footprint" "$op" 200 >/dev/null
done
"$bolt/merge-fdata" "$work"/prof/*.fdata >"$work/merged.fdata" 2>/dev/null
"$bolt/llvm-bolt" "$work/relocs.so" -data="$work/merged.fdata" -reorder-blocks=ext-tsp \
  -reorder-functions=cdsort -split-functions -split-all-cold -split-eh -o "$out" >&2
echo "wrote $out" >&2
