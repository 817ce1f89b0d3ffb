#!/usr/bin/env bash
# Before/after comparison of two builds of libgraphcore.so, side by side in
# one run on one GPU: the same benchmark binaries (stage/bin: pool_bench,
# capture_bench, graph_bench) run alternately against BEFORE_LIB and the
# staged library, ROUNDS times each, and perf/compare/summarize.py prints
# the medians and ratios and writes $OUT/compare.json.
#   BEFORE_LIB=dir/with/libgraphcore.so bash perf/compare/run.sh
set -uo pipefail
: "${BEFORE_LIB:?BEFORE_LIB must name a folder holding the earlier libgraphcore.so}"
AFTER_LIB=${AFTER_LIB:-$PWD/stage/lib}
ROUNDS=${ROUNDS:-3}
OUTDIR=${OUT:-/tmp/gc-compare}
mkdir -p "$OUTDIR"
[ -e "$BEFORE_LIB/libgraphcore.so.0" ] || ln -sf libgraphcore.so "$BEFORE_LIB/libgraphcore.so.0"
for r in $(seq 1 "$ROUNDS"); do
  for side in before after; do
    lib=$BEFORE_LIB; [ "$side" = after ] && lib=$AFTER_LIB
    dir="$OUTDIR/raw/$side-$r"; mkdir -p "$dir"
    for b in pool_bench capture_bench graph_bench; do
      [ -x "stage/bin/$b" ] || continue
      echo "== round $r, $side, $b"
      OUT="$dir" LD_LIBRARY_PATH="$lib" "stage/bin/$b" > "$dir/$b.txt" 2>&1 || { echo "$b failed:"; tail -5 "$dir/$b.txt"; }
    done
  done
done
python3 perf/compare/summarize.py "$OUTDIR/raw" "$OUTDIR/compare.json"
