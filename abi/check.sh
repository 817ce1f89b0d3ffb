#!/usr/bin/env bash
# ABI check of libgraphcore.so against the committed baseline
# (abi/libgraphcore.abi, written by `make abi-baseline` with abidw from
# Debian's abigail-tools). Fails on an incompatible change (a function or
# variable removed, or changed: its parameters, return type, or a type they
# reach, such as a struct's layout) unless the major version changed; a
# compatible change (an addition) passes, with a note to refresh the
# baseline. Growing a struct_size-versioned struct is compatible by design
# but shows as a change: review it and refresh the baseline in the same
# commit (make abi-baseline).
#
# The ABI is read from the debug build (target/debug/libgraphcore.so, the
# one `make test` builds): abidw needs full debug information (types),
# which the release profile drops; the exported functions and their
# #[repr(C)] types are the same in both profiles.
#   abi/check.sh [LIB]
set -uo pipefail
cd "$(dirname "$0")/.."
LIB=${1:-}
BASE=abi/libgraphcore.abi
if ! command -v abidiff >/dev/null; then
  echo "abi: abidiff not found (apt-get install -y abigail-tools)"; exit 2
fi
if [ -z "$LIB" ]; then
  cargo build -p graphcore-ffi || exit 1
  LIB=target/debug/libgraphcore.so
fi
major=$(sed -n 's/^#define GC_VERSION_MAJOR \([0-9][0-9]*\)$/\1/p' include/graphcore.h)
base_soname=$(grep -o "soname='[^']*'" "$BASE" | head -1 | cut -d"'" -f2)
base_major=${base_soname##*.so.}
mkdir -p target
abidiff --no-show-locs "$BASE" "$LIB" >target/abidiff.txt 2>&1
rc=$?
# abidiff's exit status is a bit set: 1 error, 2 usage error, 4 ABI change,
# 8 incompatible ABI change.
if (( rc & 3 )); then
  cat target/abidiff.txt; echo "abi: abidiff failed (status $rc)"; exit 1
fi
# abidiff marks only removals as incompatible (8); a changed parameter or
# struct layout is just a change (4). Here any removed or changed function
# or variable is incompatible; additions alone are not.
changed=$(grep -E '^(Functions|Variables) changes summary' target/abidiff.txt \
  | grep -oE '[0-9]+ (Removed|Changed)' | awk '{s += $1} END {print s + 0}')
if (( rc & 8 )) || (( changed > 0 )); then
  cat target/abidiff.txt
  if [ "$major" != "$base_major" ]; then
    echo "abi: incompatible change, and the major version moved ($base_major -> $major):" \
         "allowed; refresh the baseline with make abi-baseline"
    exit 0
  fi
  echo "abi: INCOMPATIBLE change to libgraphcore.so.$major without a major version bump" \
       "(GC_VERSION_MAJOR in ffi/src/version.rs and Cargo.toml)"
  exit 1
fi
if (( rc & 4 )); then
  cat target/abidiff.txt
  echo "abi: compatible changes only (additions); refresh the baseline with make abi-baseline"
  exit 0
fi
echo "abi: libgraphcore.so.$major matches abi/libgraphcore.abi"
