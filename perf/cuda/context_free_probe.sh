#!/usr/bin/env bash
# Builds context_free_probe.cu and runs each of its calls in a process of
# its own (a call that needs a current context may crash the driver), then
# writes ${OUT:-.}/context_free_probe.json. From the repository root on the
# GPU machine.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
tmp=$(mktemp -d)
nvcc -O2 -arch=sm_90 perf/cuda/context_free_probe.cu -lcuda -o "$tmp/probe" || exit 1
for call in $("$tmp/probe" list); do
  line=$("$tmp/probe" "$call" 2>&1)
  rc=$?
  printf '%s\t%s\t%s\n' "$call" "$rc" "$line" | tee -a "$tmp/results.tsv"
done
python3 - "$tmp/results.tsv" "${OUT:-.}/context_free_probe.json" <<'PY'
import json, subprocess, sys
src, out = sys.argv[1], sys.argv[2]
gpu, driver = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.splitlines()[0].split(", ")
rows = []
for line in open(src):
    call, rc, text = line.rstrip("\n").split("\t", 2)
    rc = int(rc)
    words = text.split()
    rows.append({
        "call": call,
        "outcome": "crashed (signal %d)" % (rc - 128) if rc > 128 else words[1] if len(words) > 1 else text,
        "context_left_current": None if rc > 128 else "after SET" in text,
    })
doc = {
    "benchmark": "context_free_probe",
    "gpu": gpu,
    "driver": driver,
    "method": "perf/cuda/context_free_probe.cu: each call made once, in a process of its own, on a new thread "
              "that never had a context current, on a graph and exec made on the main thread; "
              "ctx_set: CUDA_KERNEL_NODE_PARAMS.ctx names the primary context",
    "rows": rows,
}
json.dump(doc, open(out, "w"), indent=1)
print(f"wrote {out}")
PY
