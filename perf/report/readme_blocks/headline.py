"""The README's five lines of headline results: each a figure of the GPU
machine lent now (the H100's files in perf/results/h100/) or of the suite's
own counts, with a link to where docs/results.md or docs/reliability.md
tells the rest."""

import re

from .common import RESULTS, covered, exports, load, n0, suite_counts


def span(xs, fmt):
    lo, hi = min(xs), max(xs)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else fmt.format(lo) + "-" + fmt.format(hi)


def block_headline():
    h = lambda name: load(f"h100/{name}")  # noqa: E731
    runs = h("programs_vs_torch_runs.json")
    progs = h("programs_vs_torch.json")
    device = progs["device"].replace("NVIDIA ", "")
    b1 = [next(r for r in run["rows"] if r["case"] == "MLP batch 1") for run in runs["runs"]]
    step = next(r for r in progs["rows"] if r["case"] == "training step")
    pool = h("pool_bench.json")[0]
    g = h("graph_perf_scaling_checked.json")
    launch = [r["median_ratio"] for r in g["rows"] if r["row"] == "launch"]
    lengths = [r["nodes"] for r in g["rows"] if r["row"] == "launch"]
    counts = suite_counts()
    ex = exports()
    check = (RESULTS / "h100" / "gpu_check.txt").read_text()
    date = re.search(r"\d{4}-\d{2}-\d{2}", check.splitlines()[0]).group(0)
    library = re.search(r"the library of (\w+)", check.splitlines()[0]).group(1)
    sums = re.findall(r"^gpu-check: (\d+) passed, (\d+) failed", check, re.M)
    passed, failed = (sum(int(x[i]) for x in sums) for i in (0, 1))
    lines = [
        "- **A small MLP request** (the PyTorch notes' network, one row) replays in "
        f"{span([r['graphcore_bound_us'] for r in b1], '{:.2f}')} µs against "
        f"{span([r['torch_graph_us'] for r in b1], '{:.1f}')} µs for PyTorch's CUDA graph on one {device}: "
        f"{span([r['torch_graph_us'] / r['graphcore_bound_us'] for r in b1], '{:.2f}')}× over "
        f"{len(b1)} runs ([results](docs/results.md#on-the-h100)).",
        f"- **A training step** (Linear, MSE, SGD in {step['graphcore_nodes']} kernels): "
        f"{step['graphcore_us']:.2f} µs against {step['torch_graph_us']:.1f} µs, "
        f"{step['speedup_vs_torch_graph']:.2f}× PyTorch's CUDA graph.",
        f"- **Pool** alloc+free of {n0(pool['bytes'])} bytes through the C ABI: {pool['gc_pool_ns']:.1f} ns "
        f"against {n0(pool['cuMemAllocAsync_ns'])} ns for `cuMemAllocAsync` + `cuMemFreeAsync` "
        f"({pool['cuMemAllocAsync_ns'] / pool['gc_pool_ns']:.1f}×).",
        f"- **Graph launch** costs {span(launch, '{:.3f}')}× the raw `cuGraphLaunch` at "
        f"{min(lengths)}-{max(lengths)} nodes, handles checked "
        "([what the contract costs](docs/results.md#on-the-h100)).",
        f"- **Checked**: {n0(counts['bad_input_checks_no_driver'])} bad-input checks over "
        f"{len(ex & covered())} of {len(ex)} exports, 0 failed; on the GPU ({date}, library "
        f"{library}) {passed} of {passed + failed} steps of `stage/run.sh` passed, sanitizers "
        "included; later changes: [open findings](docs/limits.md#open-findings).",
    ]
    return "\n".join(lines)
