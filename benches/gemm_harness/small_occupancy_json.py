"""Turns small_occupancy's runs of small.cu into benches/results JSON.

    python3 small_occupancy_json.py OUT.json RUN_2.txt RUN_3.txt RUN_4.txt

(RUN_b.txt: small.cu built with the kernel's bounds at b blocks per SM.)
For each layer and row count: the time of the config the harness's
launcher picks, and of the fastest config within 1e-5 of float64, per build.
"""
import collections
import json
import sys


def configs(path):
    out = collections.defaultdict(list)
    for line in open(path):
        t = line.split()
        if not t or t[0] != "CFG":
            continue
        out[(int(t[1]), int(t[2]), int(t[3]))].append({
            "tile": t[5], "groups": t[7], "blocks": int(t[9]), "us": float(t[11]), "err": float(t[13]),
            "launcher": line.rstrip().endswith("SHIPPED"),
        })
    return out


def main(out, *runs):
    builds = {}
    for path in runs:
        blocks = int(path.rsplit("_", 1)[1].split(".")[0])
        builds[blocks] = configs(path)
    rows = []
    for m, k, n in sorted(builds[2], key=lambda s: (-s[1], s[0])):
        picked = next(c for c in builds[2][(m, k, n)] if c["launcher"])
        row = {"m": m, "k": k, "n": n, "launcher_config": f"{picked['tile']} groups {picked['groups']}"}
        for b, cfgs in sorted(builds.items()):
            cs = cfgs[(m, k, n)]
            same = next(c for c in cs if (c["tile"], c["groups"]) == (picked["tile"], picked["groups"]))
            best = min((c for c in cs if c["err"] < 1e-5), key=lambda c: c["us"])
            row[f"blocks_per_sm_{b}"] = {
                "launcher_config_us": same["us"],
                "best_us": best["us"],
                "best_config": f"{best['tile']} groups {best['groups']}, {best['blocks']} blocks",
            }
        rows.append(row)
    doc = {
        "benchmark": "small_occupancy",
        "gpu": "NVIDIA H200",
        "method": "benches/gemm_harness/small_occupancy.sh: small.cu (every legal config of gc_linear_small_f32 "
                  "on the notes' layers at 1-32 rows, each checked against float64; graph of many, nvcc 13 "
                  "sm_90) built with the kernel's __launch_bounds__ at 2 blocks of 256 threads per SM (as "
                  "shipped: 128 registers, no spills), 3 (80 registers, 336 bytes of spill stores) and 4 (64, "
                  "880 bytes); the harness's launcher lacks the library's one-warp-per-output rule for 2-4 rows",
        "units": "us",
        "rows": rows,
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
