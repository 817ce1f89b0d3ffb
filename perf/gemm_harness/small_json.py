"""Turns the small-batch harnesses' output into perf/results JSON.

    python3 small_json.py traffic OUT.json TRAFFIC.txt
        (small_traffic.sh: each (layer, rows) row holds every run's time per
        variant and their mean, and what the memory traffic accounts for:
        shipped minus both-free, as a share of shipped minus the empty grid)
    python3 small_json.py occupancy OUT.json RUN_2.txt RUN_3.txt RUN_4.txt
        (small_occupancy.sh; RUN_b.txt: small.cu built with the kernel's
        bounds at b blocks per SM. For each layer and row count: the time of
        the config the harness's launcher picks, and of the fastest config
        within 1e-5 of float64, per build)
    python3 small_json.py wgmma OUT.json RUN.txt...
        (`wgmma.sh small`, one file per run: each layer and the notes' chain,
        shipped beside the wgmma 3xTF32 layer at clusters of 8 and 16, and
        the wgmma layer's time with parts left out)
    python3 small_json.py trigger OUT.json RUN.txt...
        (pdl_trigger.sh: `mlp_cluster parts` with gc_linear_small_f32 as
        shipped and triggering its dependents at its start, one file per
        variant and call (lines prefixed with the variant); per variant,
        row count and part, every run's times)
    python3 small_json.py update OUT.json RUN.txt...
        (`wgmma.sh update`, one file per run: the training step's weight
        update as shipped and on wgmma in 3xTF32, alone and after the
        forward, and the wgmma update with parts left out)
"""
import collections
import json
import statistics
import sys

VARIANTS = ("shipped", "x_row0", "w_col0", "both")


def write(out, benchmark, method, rows):
    """Writes one results file (H200, microseconds)."""
    doc = {"benchmark": benchmark, "gpu": "NVIDIA H200", "method": method, "units": "us", "rows": rows}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def tokens(*paths):
    """The non-empty lines of `paths`, in order, split into words."""
    for path in paths:
        for line in open(path):
            t = line.split()
            if t:
                yield t


def after(t, word, cast=float):
    """The word after `word` in the split line `t`, as `cast`."""
    return cast(t[t.index(word) + 1])


def traffic(out, src):
    """small_traffic.sh's TRAFFIC lines in `src` into `out`."""
    times = collections.defaultdict(list)
    empty = collections.defaultdict(list)
    launch = {}
    for t in tokens(src):
        if t[0] != "TRAFFIC":
            continue
        variant, m, k, n = t[1], int(t[2]), int(t[3]), int(t[4])
        key = (k, n, m)
        times[key + (variant,)].append(after(t, "us"))
        empty[key].append(after(t, "empty"))
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
    write(out, "small_traffic",
          "perf/gemm_harness/small_traffic.sh: gc_linear_small_f32 (nvcc 13, sm_90, the harness's copy of "
          "the launcher's tile rule) on the notes' layer shapes, GPU time per call in a graph of many (mean "
          "of 3 medians, each variant run twice, alternated); variants read every x row from row 0 "
          "(x_row0), every W column from column 0 (w_col0), or both, so those loads hit L1; the empty grid "
          "is the same grid of blocks doing nothing",
          rows)


def configs(path):
    """small.cu's CFG lines in `path`, by (m, k, n)."""
    out = collections.defaultdict(list)
    for t in tokens(path):
        if t[0] != "CFG":
            continue
        out[(int(t[1]), int(t[2]), int(t[3]))].append({
            "tile": t[5], "groups": t[7], "blocks": int(t[9]), "us": float(t[11]), "err": float(t[13]),
            "launcher": t[-1] == "SHIPPED",
        })
    return out


def occupancy(out, *runs):
    """small_occupancy.sh's runs (one file per bounds) into `out`."""
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
    write(out, "small_occupancy",
          "perf/gemm_harness/small_occupancy.sh: small.cu (every legal config of gc_linear_small_f32 "
          "on the notes' layers at 1-32 rows, each checked against float64; graph of many, nvcc 13 "
          "sm_90) built with the kernel's __launch_bounds__ at 2 blocks of 256 threads per SM (as "
          "shipped: 128 registers, no spills), 3 (80 registers, 336 bytes of spill stores) and 4 (64, "
          "880 bytes); the harness's launcher lacks the library's one-warp-per-output rule for 2-4 rows",
          rows)


SKIPPED = {1: "W loads", 2: "products", 4: "cluster reduction", 8: "x loads"}


def wgmma(out, *runs):
    """`wgmma.sh small`'s PARTS, LAYER and CHAIN lines, one file per run."""
    parts = collections.defaultdict(list)
    layers = collections.defaultdict(lambda: {"us": []})
    chains = collections.defaultdict(lambda: {"in_graph_us": [], "replay_us": []})
    for t in tokens(*runs):
        if t[0] == "PARTS":
            parts[(int(t[2]), after(t, "skip", int))].append(after(t, "us"))
        elif t[0] == "LAYER":
            m, k, n = int(t[2]), int(t[3]), int(t[5])
            variant = "shipped" if t[6] == "shipped" else f"wg cs {t[8]}"
            row = layers[(m, k, n, variant)]
            row["us"].append(after(t, "us"))
            row["err_vs_float64"] = after(t, "err")
            if "repeat" in t:
                row["repeat_bitwise"] = after(t, "repeat", str) == "bitwise"
                row["unwritten"] = after(t, "unwritten", int)
        elif t[0] == "CHAIN":
            m = int(t[2])
            variant = "shipped" if t[3] == "shipped" else f"wg cs {t[5]}"
            row = chains[(m, variant)]
            row["in_graph_us"].append(after(t, "in-graph"))
            row["replay_us"].append(after(t, "replay"))
            if "vs" in t:
                row["rel_diff_vs_shipped"] = float(t[t.index("shipped", 4) + 1])

    def left_out(skip):
        if skip == 16:
            return ["everything: the launch alone"]
        if skip == 32:
            return ["everything but two cluster barriers"]
        return [name for bit, name in SKIPPED.items() if skip & bit]

    doc_rows = {
        "parts_1024_to_512_cs16": [
            {"m": m, "skip": skip, "left_out": left_out(skip), "us": us}
            for (m, skip), us in sorted(parts.items())
        ],
        "layers": [
            {"m": m, "k": k, "n": n, "variant": v, **row}
            for (m, k, n, v), row in sorted(layers.items(), key=lambda kv: (kv[0][0], -kv[0][1], kv[0][3]))
        ],
        "chains": [{"m": m, "variant": v, **row} for (m, v), row in sorted(chains.items())],
    }
    write(out, "wgmma_small",
          "perf/gemm_harness/wgmma.sh small: the notes' layers as shipped (gc_linear_small_f32, the "
          "launcher's config) and as wg_layer (wgmma m64nNk8 in 3xTF32, y^T = W x^T: 64 output features "
          "a block, K split over a cluster of 8 or 16 blocks, partial tiles added in rank order through "
          "distributed shared memory), nvcc 13 sm_90a, GPU time per call in a graph of many; chains are "
          "the notes' three layers with programmatic launches (layers 1-2 on wg_layer, layer 3 shipped), "
          "also replayed as a one-forward graph; one entry per run in each list. Parts rows leave parts "
          "of wg_layer out (m = 32 with the cluster reduction left out has 16 blocks storing each "
          "output, which those conflicting stores dominate)",
          doc_rows)


def trigger(out, *runs):
    """pdl_trigger.sh's prefixed PART lines (one file per variant)."""
    rows = collections.defaultdict(lambda: {"in_graph_us": [], "replay_us": []})
    for t in tokens(*runs):
        if len(t) < 4 or t[1] != "PART" or "in-graph" not in t:
            continue
        variant = t[0]
        if t[2] == "m":
            m, part = int(t[3]), " ".join(t[4:t.index("in-graph")])
        else:  # a chain of empty kernels of the first layer's grid
            m, part = None, " ".join(t[2:t.index("in-graph")])
        row = rows[(m, part, variant)]
        row["in_graph_us"].append(after(t, "in-graph"))
        row["replay_us"].append(after(t, "replay"))
    write(out, "pdl_trigger",
          "perf/gemm_harness/pdl_trigger.sh: `mlp_cluster parts` (the notes' MLP layer by layer, nvcc 13 "
          "sm_90, the launcher's configs; chains programmatic after the first launch) built from "
          "kernels/linear.cu as shipped (gc_linear_small_f32 lets its dependents launch after its main "
          "loop), patched to let them launch at its start (early), and patched to do so only when its grid "
          "has fewer blocks than the H200's 132 SMs (sparse); in-graph: GPU time per call in a graph of "
          "many, replay: a one-call graph replayed back to back; variants alternated, two rounds per "
          "device call, two calls (the second added sparse)",
          [{"m": m, "part": part, "variant": v, **r}
           for (m, part, v), r in sorted(rows.items(), key=lambda kv: (kv[0][0] or 0, kv[0][1], kv[0][2]))])


UPDATE_SKIPPED = {1: "products", 2: "W loads and stores", 4: "x and dY loads", 8: "everything: the launch alone"}


def update(out, *runs):
    """`wgmma.sh update`'s UPDATE, PARTS, FORWARD and STEP lines, one file per run."""
    alone = collections.defaultdict(lambda: {"us": []})
    parts = collections.defaultdict(list)
    steps = collections.defaultdict(lambda: {"in_graph_us": [], "replay_us": []})
    forward = []
    for t in tokens(*runs):
        if t[0] == "UPDATE":
            row = alone[t[1]]
            row["us"].append(after(t, "us"))
            row["err_vs_float64"] = after(t, "err")
            if "repeat" in t:
                row["repeat_bitwise"] = after(t, "repeat", str) == "bitwise"
            if "vs-wg" in t:
                row["bitwise_equal_to_wg"] = after(t, "vs-wg", str) == "bitwise"
        elif t[0] == "PARTS":
            parts[after(t, "skip", int)].append(after(t, "us"))
        elif t[0] == "FORWARD":
            forward.append(after(t, "us"))
        elif t[0] == "STEP":
            steps[t[1]]["in_graph_us"].append(after(t, "in-graph"))
            steps[t[1]]["replay_us"].append(after(t, "replay"))
    rows = {
        "update_alone": [{"variant": v, **r} for v, r in sorted(alone.items())],
        "wg_parts": [
            {"skip": skip, "left_out": [name for bit, name in UPDATE_SKIPPED.items() if skip & bit], "us": us}
            for skip, us in sorted(parts.items())
        ],
        "forward_us": forward,
        "step": [{"variant": v, **r} for v, r in sorted(steps.items())],
    }
    write(out, "wgmma_update",
          "perf/gemm_harness/wgmma.sh update: the notes' training step (Linear 1024 x 1024, 64 rows) "
          "weight update W -= lr dY^T x as shipped (gc_linear_sgd_f32, 64 x 64 tiles on FFMA, no bias or "
          "loss blocks) and as wg_update (wgmma m64n64k8 in 3xTF32, one 64 x 64 tile a block, K = the 64 "
          "rows), nvcc 13 sm_90a; us in a graph of many; err: worst |update - float64| over sum |dy x|; "
          "step: gc_linear_mse_f32 (the launcher's config) then each update, programmatic, in a graph of "
          "many and replayed as a one-step graph; parts: wg_update instantiated with parts left out",
          rows)


if __name__ == "__main__":
    {"traffic": traffic, "occupancy": occupancy, "wgmma": wgmma, "trigger": trigger,
     "update": update}[sys.argv[1]](*sys.argv[2:])
