#!/usr/bin/env python3
"""Merges several runs of stage/bin/host_ab into one file, by library.

    python3 perf/c/host_ab_runs.py OUT.json RUNS.json [RUNS.json ...] FILE=LABEL [FILE=LABEL ...] [KEY=VALUE ...]

Each RUNS.json is one run's host_ab.json, a JSON list of them, or an object
whose values are runs (as the GPU machine's loop gathers them). FILE=LABEL
names a library by its file name (the path's last part, as the runs record
it: main.so=bc85995); every library the runs name needs a label, and two
files may share one (two copies of the same build). Any other KEY=VALUE adds
a header field (device_kind). OUT.json keeps the first run's header, the
labels, the number of runs and, per row and length: raw CUDA's median time,
each label's ratios to raw CUDA (every run's, as A or B, and their median),
and each ordered pair's per-run B / A ratios with their median (the pair
of one label with itself is the noise floor). A label's "met" says whether
its median ratio to raw CUDA meets issue 15's target for the row.
On the GPU machine, for example:

    for i in $(seq 10); do for p in "main new" "new main"; do set -- $p
      OUT=/tmp/ab/$1_$2_$i stage/bin/host_ab stage/ab/$1.so stage/ab/$2.so; done; done
    python3 perf/c/host_ab_runs.py $OUT/host_ab_runs.json /tmp/ab/*/host_ab.json main.so=REV new.so=REV
"""
import json
import os
import statistics
import sys

# Issue 15's targets, graphcore / raw CUDA (graph_perf_scaling.c's rows).
TARGETS = {"capture": 1.10, "build": 1.10, "instantiate": 1.05, "launch": 1.02}


def runs_of(path):
    data = json.load(open(path))
    if isinstance(data, dict) and "rows" not in data:
        return list(data.values())
    return data if isinstance(data, list) else [data]


def median(values):
    return round(statistics.median(values), 4)


def main(argv):
    pairs = [a.split("=", 1) for a in argv if "=" in a]
    paths = [a for a in argv if "=" not in a]
    if len(paths) < 2:
        sys.exit(__doc__)
    out, runs = paths[0], [r for p in paths[1:] for r in runs_of(p)]
    labels = {f: l for f, l in pairs if f.endswith(".so") or ".so." in f}
    header = {k: v for k, v in pairs if k not in labels}
    label = {}
    for run in runs:
        for side in ("A", "B"):
            name = os.path.basename(run["libraries"][side])
            if name not in labels:
                sys.exit(f"host_ab_runs: no label for {name}: add {name}=LABEL")
            label[run["libraries"][side]] = labels[name]
    first = runs[0]
    merged = {k: first[k] for k in ("benchmark", "gpu", "cuda_driver_version", "date", "units") if k in first}
    merged.update(header)
    merged["method"] = first["method"] + f"; {len(runs)} runs, merged by library (perf/c/host_ab_runs.py)"
    merged["libraries"] = labels
    merged["runs"] = len(runs)
    rows = {}
    for run in runs:
        a, b = (label[run["libraries"][s]] for s in ("A", "B"))
        for r in run["rows"]:
            row = rows.setdefault((r["row"], r["nodes"]), {"raw": [], "ratio": {}, "b_over_a": {}})
            row["raw"].append(r["raw_us"])
            row["ratio"].setdefault(a, []).append(r["A_raw_ratio"])
            row["ratio"].setdefault(b, []).append(r["B_raw_ratio"])
            row["b_over_a"].setdefault(f"{b} / {a}", []).append(r["B_A_ratio"])
    merged["rows"] = []
    for (name, nodes), row in rows.items():
        target = TARGETS.get(name)
        merged["rows"].append({
            "row": name,
            "nodes": nodes,
            "target": target,
            "raw_us": median(row["raw"]),
            "raw_us_range": [min(row["raw"]), max(row["raw"])],
            "ratio": {
                lib: {"median": median(v), "runs": v, "met": target is None or median(v) <= target}
                for lib, v in row["ratio"].items()
            },
            "b_over_a": {pair: {"median": median(v), "runs": v} for pair, v in row["b_over_a"].items()},
        })
    with open(out, "w") as f:
        json.dump(merged, f, indent=1)
        f.write("\n")
    for r in merged["rows"]:
        print(f"{r['row']:12} {r['nodes']:5} " + "  ".join(
            f"{lib} {v['median']:.3f}" for lib, v in r["ratio"].items()) + "  |  " + "  ".join(
            f"{p} {v['median']:.3f}" for p, v in r["b_over_a"].items()))


if __name__ == "__main__":
    main(sys.argv[1:])
