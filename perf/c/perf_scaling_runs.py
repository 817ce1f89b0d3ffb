#!/usr/bin/env python3
"""Merges several runs of stage/bin/graph_perf_scaling into one file.

    python3 perf/c/perf_scaling_runs.py OUT.json RUN.json [RUN.json ...] [KEY=VALUE ...]

Each RUN.json is one run's graph_perf_scaling.json, or a JSON list of them.
OUT.json keeps the first run's header fields (benchmark, gpu, driver, date,
method), the number of runs, and per row and length every run's raw,
graphcore and checked times and ratios with their medians; a row's "met"
says whether the median graphcore / raw ratio meets the issue's target.
A KEY=VALUE argument adds or replaces a header field (library, device_kind).
On the GPU machine:

    for r in $(seq 10); do mkdir -p /tmp/gps/$r
      OUT=/tmp/gps/$r taskset -c 4,5 stage/bin/graph_perf_scaling; done
    python3 perf/c/perf_scaling_runs.py $OUT/runs.json /tmp/gps/*/graph_perf_scaling.json
"""
import json
import statistics
import sys


def runs_of(path):
    data = json.load(open(path))
    return data if isinstance(data, list) else [data]


def main(argv):
    sets = [a for a in argv if "=" in a]
    paths = [a for a in argv if "=" not in a]
    if len(paths) < 2:
        sys.exit(__doc__)
    out, runs = paths[0], [r for p in paths[1:] for r in runs_of(p)]
    first = runs[0]
    merged = {k: first[k] for k in ("benchmark", "gpu", "cuda_driver_version", "date", "method", "checked")
              if k in first}
    merged.update(dict(s.split("=", 1) for s in sets))
    merged["runs"] = len(runs)
    merged["units"] = first["units"]
    merged["method"] += f"; {len(runs)} runs, each row's medians over the runs"
    rows = {}
    for run in runs:
        for r in run["rows"]:
            rows.setdefault((r["row"], r["nodes"]), []).append(r)
    merged["rows"] = []
    for (row, nodes), rs in rows.items():
        m = {"row": row, "nodes": nodes}
        for key in ("raw_us", "graphcore_us", "checked_us", "ratio", "checked_ratio"):
            if all(key in r for r in rs):
                values = [r[key] for r in rs]
                m[key + "_runs"] = values
                m["median_" + key] = round(statistics.median(values), 4)
        m["target"] = rs[0]["target"]
        m["met"] = None if m["target"] is None else m["median_ratio"] <= m["target"]
        merged["rows"].append(m)
    with open(out, "w") as f:
        json.dump(merged, f, indent=1)
        f.write("\n")
    print(f"wrote {out}: {len(runs)} runs, {len(merged['rows'])} rows")


if __name__ == "__main__":
    main(sys.argv[1:])
