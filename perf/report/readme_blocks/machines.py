"""The headline figures rerun on one machine: the H100 and the H200 sections."""

import re

from .common import RESULTS, load, prose, DAGGER, rerun_cells, rerun_note
from .host import pool_text, one_kernel_graph_text, checked_floor
from .kernels import programs_table


def runs_text(runs):
    """PyTorch's graph path against graphcore's bound requests at batch 1 /
    4 / 16 / 32 in each run of a programs_vs_torch_runs.json, as a sentence."""

    def run_text(run):
        mlp = [r for r in run["rows"] if r["case"].startswith("MLP")]
        return (
            " / ".join(f"{r['torch_graph_us']:.1f}" for r in mlp) + " \u00b5s against "
            + " / ".join(f"{r['graphcore_bound_us']:.2f}" for r in mlp) + " ("
            + " / ".join(f"{r['torch_graph_us'] / r['graphcore_bound_us']:.2f}\u00d7" for r in mlp) + ")"
        )

    return (
        f"PyTorch against graphcore at batch 1 / 4 / 16 / 32 in the {len(runs['runs'])} runs that day "
        "(`programs_vs_torch_runs.json`): "
        + "; ".join(f"{run['run']}: {run_text(run)}" for run in runs["runs"])
        + ". So a 4\u00d7 at batch 1 or 4 in the table above holds in the runs where PyTorch's path was "
        "slow, not in all of them."
    )


def block_h100():
    """The headline figures rerun on the H100 that is the default GPU machine again
    (perf/results/h100/): the notes' programs, graph_perf_scaling with its
    checked side, the pool, and the GPU check (each names its library)."""
    h = lambda name: load(f"h100/{name}")  # noqa: E731
    progs = h("programs_vs_torch.json")
    check = (RESULTS / "h100" / "gpu_check.txt").read_text()
    head = check.splitlines()[0]
    driver = re.search(r"\(driver ([\d.]+)\)", head).group(1)
    library = re.search(r"the library of (\w+)", head).group(1)
    date = re.search(r"\d{4}-\d{2}-\d{2}", head).group(0)
    sums = re.findall(r"^gpu-check: (\d+) passed, (\d+) failed in \d+ s(?: \(part (\d) of \d\))?$", check, re.M)
    suite = re.search(r"^test result: ok\. (\d+) passed", check, re.M).group(1)
    parts = ", ".join(f"part {x[2]}: {x[0]} of {int(x[0]) + int(x[1])} steps passed" if x[2]
                      else f"{x[0]} of {int(x[0]) + int(x[1])} steps passed" for x in sums)
    # What the run's record adds about a step (a rerun and why), as it says it.
    note = re.search(r"^# note: (.*?)(?: The first run's step lines:)?$", check, re.M)
    note = " " + note.group(1)[0].upper() + note.group(1)[1:] if note else ""
    lines = [
        prose(
            f"Since 2026-12-06 the default GPU machine is an {progs['device']} again (driver {driver}), the "
            "kind of machine the first targets were measured on; H100 timings are compared only with "
            f"H100 timings. The programs below ran with the library of {progs['library']}, PyTorch "
            f"{progs['torch']} beside graphcore in the same run (`perf/results/h100/`). `bash stage/run.sh` "
            f"on it on {date} with the library of {library} (`h100/gpu_check.txt`): {parts} (the suite's {suite} tests "
            "with the GPU ones, the examples, multi-GPU at one rank, Python)." + note
        ),
        "",
    ]
    lines += programs_table(progs)
    lines += [
        "",
        prose(
            "`programs_vs_torch.py` as on the H200 (below): 1000 back-to-back requests or steps, then a "
            "synchronize, median of 7; the bound requests are bound by GPU time, PyTorch's graph path by "
            "CPU time, which moves between runs. " + runs_text(h("programs_vs_torch_runs.json"))
        ),
        "",
    ]
    lines += checked_floor("h100/graph_perf_scaling_checked.json", "the same H100")
    lines += [
        "",
        prose(
            "What instantiating one node adds on this H100, and three changes measured against it (a "
            "captured graph's emptiness known without asking CUDA, shipped; the library laid out by "
            "llvm-bolt, and the exec made before CUDA's call, neither shipped): "
            "[Instantiate at one node on the H100](#instantiate-at-one-node-on-the-h100)."
        ),
    ]
    lines += ["", prose(pool_text(h("pool_bench.json")[0], h("pool_threads.json")["rows"]))]
    return "\n".join(lines)


def block_h200():
    """The headline figures of issues 14 and 15 rerun on the H200 that was
    the GPU machine from 2026-11-28 to 2026-12-05 (perf/results/h200/)."""
    h = lambda name: load(f"h200/{name}")  # noqa: E731
    progs, runs = h("programs_vs_torch.json"), h("programs_vs_torch_runs.json")
    parts, scaling = h("mlp_parts.json"), h("graph_perf_scaling.json")
    lines = [
        prose(
            f"From 2026-11-28 to 2026-12-05 the GPU machine was an {progs['device']} (driver "
            f"{parts['driver']}), and H200 timings are compared only with H200 timings. Rerun there, "
            "PyTorch beside graphcore in each run (`perf/results/h200/`):"
        ),
        "",
    ]
    lines += programs_table(progs)

    lines += [
        "",
        prose(
            "`programs_vs_torch.py`: 1000 back-to-back requests or steps, then a synchronize, median of 7. "
            "\"CPU per request\" is the enqueue loop of the bound requests alone, \"same buffers\" a request "
            "bound to the previous request's buffers (no node patched): the requests are bound by GPU time. "
            "PyTorch's graph path is bound by CPU time and moves between runs, graphcore's requests do not. "
            + runs_text(runs)
        ),
        "",
        "A request's GPU time taken apart (`./mlp_cluster parts`, perf/gemm_harness/mlp_cluster.cu: a "
        "one-forward graph replayed back to back, \u00b5s; `mlp_parts.json`):",
        "",
        "| rows | layer 1 | layers 1-2 | layers 1-3 (the request's graph) | layer 1 / 2 / 3 alone |",
        "|---|---|---|---|---|",
    ]
    by = {}
    for r in parts["rows"]:
        if "replay_us" in r:
            by.setdefault(r["rows"], {})[r["what"]] = r["replay_us"]
    for m, d in sorted(by.items()):
        alone = " / ".join(f"{d[f'layer {i} alone']:.2f}" for i in (1, 2, 3))
        lines.append(
            f"| {m} | {d['layers 1-1 chained']:.2f} | {d['layers 1-2 chained']:.2f} | "
            f"{d['layers 1-3 chained']:.2f} | {alone} |"
        )
    empty = {f["kernels"]: f["replay_us"] for f in parts["empty_kernel_chains"]}
    launch_cpu_us = next(r["raw_us"] for r in scaling["rows"] if r["row"] == "launch" and r["nodes"] == 1)
    lines.append(f"| empty kernels | {empty[1]:.2f} | {empty[2]:.2f} | {empty[3]:.2f} | |")
    lines += [
        "",
        prose(
            f"A one-kernel graph replayed back to back took {empty[1]:.2f} \u00b5s a replay with an empty kernel "
            f"and a chain of three {empty[3]:.2f}; the rest is the layers' loads, products and the wait of each "
            "layer on the one before (perf/TUNING.md, \"On an H200\"). A raw launch of a one-node graph "
            f"took the CPU {launch_cpu_us:.2f} \u00b5s in that day's `graph_perf_scaling.json`, about as long as "
            "that replay, which may then have been bound by the CPU; graphs of one empty kernel ran "
            + one_kernel_graph_text()
            + "."
        ),
        "",
        "Raw CUDA vs graphcore, cudaGraphsPerfScaling's method (`stage/bin/graph_perf_scaling`, "
        f"chains of 1-1000 empty kernels; medians of {scaling['runs']} runs pinned to two CPUs, the "
        f"library of {scaling['library']}, {scaling['device_kind']}, {scaling['date'][:10]}; "
        "`graph_perf_scaling.json`):",
        "",
        "| operation | graphcore \u00f7 raw, 1-1000 nodes | target | met at |",
        "|---|---|---|---|",
    ]
    rows = {}
    for r in scaling["rows"]:
        if r["target"] is not None:
            rows.setdefault(r["row"], []).append(r)
    for name, rs in rows.items():
        ratios = [r["ratio"] for r in rs]
        met = [str(r["nodes"]) for r in rs if r["met"]]
        lines.append(
            f"| {name} | {min(ratios):.3f}-{max(ratios):.3f}\u00d7 | \u2264 {rs[0]['target']:.2f}\u00d7 | "
            f"{', '.join(met) + ' nodes' if met else 'none: **missed**'} |"
        )
    mlp = h("mlp_vs_torch.json")["sweep"]
    train, cells, replaced = rerun_cells(
        h("train_vs_torch.json")["sweep"], "h200/train_vs_torch_cells.json",
        lambda r: (r["kind"], r["width"], r["batch"]),
    )

    def span(rows, label):
        low = min(rows, key=lambda r: r["speedup"])
        high = max(r["speedup"] for r in rows)
        losses = [r for r in rows if r["speedup"] < 1]
        lost = "; it loses nowhere" if not losses else "; below 1\u00d7: " + ", ".join(
            f"{label(r)} {r['speedup']:.2f}\u00d7 ({r['graphcore_us']:.1f} against {r['torch_graph_us']:.1f} \u00b5s)"
            for r in losses
        )
        return f"{low['speedup']:.2f}-{high:.2f}\u00d7 (lowest: {label(low)}){lost}"

    shapes = sorted({f"{r['width']} x {r['batch']}" for r in replaced})
    rerun_cells_text = f", its {', '.join(shapes)} cells from a rerun{DAGGER}" if replaced else ""
    lines += [
        "",
        prose(
            f"The sweeps against PyTorch's graph (graph replays, widths 256-4096, batches 1-128): the MLP "
            f"({len(mlp)} cells, 2-4 layers; `mlp_vs_torch.json`) "
            + span(mlp, lambda r: f"width {r['width']}, {r['layers']} layers, batch {r['batch']}")
            + f"; the training steps ({len(train)} cells; `train_vs_torch.json`{rerun_cells_text}) "
            + span(train, lambda r: f"{'Linear' if r['kind'] == 'linear' else '2-layer'} step, width {r['width']}, "
                   f"batch {r['batch']}{DAGGER if r.get('rerun') else ''}")
            + "."
        ),
    ]
    lines += rerun_note(
        cells, "h200/train_vs_torch_cells.json", replaced,
        lambda r: f"{'Linear' if r['kind'] == 'linear' else '2-layer'} step {r['width']} x {r['batch']} rows",
    )
    lines += ["", prose(pool_text(h("pool_bench.json")[0], h("pool_threads.json")["rows"]))]
    return "\n".join(lines)
