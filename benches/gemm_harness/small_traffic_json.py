"""Turns small_traffic's `TRAFFIC` lines into benches/results JSON.

    python3 small_traffic_json.py traffic.txt out.json [gpu name]

Each (layer, rows) row holds every run's time per variant and their mean,
and what the memory traffic accounts for: shipped minus both-free, as a
share of shipped minus the empty grid.
"""
import collections
import json
import statistics
import sys

VARIANTS = ("shipped", "x_row0", "w_col0", "both")


def main(src, out, gpu="NVIDIA H200"):
    times = collections.defaultdict(list)
    empty = collections.defaultdict(list)
    launch = {}
    for line in open(src):
        t = line.split()
        if not t or t[0] != "TRAFFIC":
            continue
        variant, m, k, n = t[1], int(t[2]), int(t[3]), int(t[4])
        key = (k, n, m)
        times[key + (variant,)].append(float(t[t.index("us") + 1]))
        empty[key].append(float(t[t.index("empty") + 1]))
        launch[key] = {"blocks": int(t[6]), "thread_tile": t[8], "groups": t[10]}
    rows = []
    for (k, n, m), shape in sorted(launch.items(), key=lambda kv: (-kv[0][0], -kv[0][1], kv[0][2])):
        mean = {v: statistics.mean(times[(k, n, m, v)]) for v in VARIANTS}
        floor = statistics.mean(empty[(k, n, m)])
        rows.append({
            "k": k, "n": n, "m": m, **shape,
            "runs_us": {v: times[(k, n, m, v)] for v in VARIANTS},
            "mean_us": {v: round(mean[v], 3) for v in VARIANTS},
            "empty_grid_us": round(floor, 3),
            "traffic_share_of_work": round((mean["shipped"] - mean["both"]) / (mean["shipped"] - floor), 3),
        })
    doc = {
        "benchmark": "small_traffic",
        "gpu": gpu,
        "method": "benches/gemm_harness/small_traffic.sh: gc_linear_small_f32 (nvcc 13, sm_90, the harness's copy of "
                  "the launcher's tile rule) on the notes' layer shapes, GPU time per call in a graph of many (mean "
                  "of 3 medians, each variant run twice, alternated); variants read every x row from row 0 "
                  "(x_row0), every W column from column 0 (w_col0), or both, so those loads hit L1; the empty grid "
                  "is the same grid of blocks doing nothing",
        "units": "us",
        "rows": rows,
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
