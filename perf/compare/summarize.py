"""Summarizes perf/compare/run.sh: for each metric, the median over the
rounds of each side (before, after) and after/before. Prints a table and
writes the figures as JSON.

    python3 perf/compare/summarize.py RAW_DIR OUT_JSON
"""
import json
import os
import statistics
import sys


def metrics(d):
    """Flat {name: value} of one side's JSON files in folder d (lower is better)."""
    m = {}
    def load(name):
        p = os.path.join(d, name)
        return json.load(open(p)) if os.path.exists(p) else None
    pool = load("pool_bench.json")
    for row in pool or []:
        if "threads" in row:
            m[f"pool alloc+free, {row['threads']} threads (ns/pair/thread)"] = row["gc_pool_ns"]
        else:
            m[f"pool alloc+free {row['bytes']} B (ns)"] = row["gc_pool_ns"]
    cap = load("capture_bench.json")
    for row in cap or []:
        m[f"capture {row['nodes']} nodes (us)"] = row["gc_capture_us"]
    g = load("graph_bench.json")
    if g:
        for row in g.get("launch_overhead", []):
            m[f"gc_exec_launch {row['nodes']} nodes (ns)"] = row["gc_exec_launch_ns"]
        inst = g.get("instantiate_1000_us")
        if inst:
            m["instantiate 1000 nodes (us)"] = inst["gc"]
        upd = g.get("update_1000_us")
        if upd:
            m["update 1000 nodes, all changed (us)"] = upd["all_changed"]
            m["update 1000 nodes, one changed (us)"] = upd["one_changed"]
    return m


def main():
    raw, out = sys.argv[1], sys.argv[2]
    sides = {"before": [], "after": []}
    for name in sorted(os.listdir(raw)):
        side = name.split("-")[0]
        if side in sides:
            sides[side].append(metrics(os.path.join(raw, name)))
    names = sorted(set().union(*[set(m) for ms in sides.values() for m in ms]))
    rows = []
    print(f"{'metric':48} {'before':>10} {'after':>10} {'after/before':>12}")
    for n in names:
        b = [m[n] for m in sides["before"] if n in m]
        a = [m[n] for m in sides["after"] if n in m]
        if not a or not b:
            continue
        mb, ma = statistics.median(b), statistics.median(a)
        spread = (max(b) - min(b)) / mb if mb else 0.0
        rows.append({"metric": n, "before": mb, "after": ma, "ratio": ma / mb,
                     "before_spread": spread, "rounds": len(b)})
        print(f"{n:48} {mb:10.1f} {ma:10.1f} {ma / mb:11.3f}x  (before spread {spread * 100:.1f}%)")
    json.dump(rows, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
