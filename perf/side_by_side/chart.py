"""The charts of the side-by-side results: perf/results/programs_vs_torch.json
(PyTorch eager, PyTorch CUDA graph, graphcore graph per case; draw) and
perf/results/mlp_vs_torch.json (the MLP sweep's speedups over PyTorch's
graph; draw_mlp). The benchmarks call them after a run; run this alone to
redraw: python3 perf/side_by_side/chart.py [JSON [PNG]] (the JSON's
contents pick the chart)."""
import json
import sys


def draw(results, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = results["rows"]
    fig, ax = plt.subplots(figsize=(9, 4))
    idx = np.arange(len(rows))
    w = 0.27
    for k, (key, label) in enumerate([("torch_eager_us", "PyTorch eager"),
                                      ("torch_graph_us", "PyTorch CUDA graph"),
                                      ("graphcore_us", "graphcore graph")]):
        ax.bar(idx + (k - 1) * w, [r[key] for r in rows], w, label=label)
    ax.set_xticks(idx)
    ax.set_xticklabels([r["case"] for r in rows])
    ax.set_ylabel("microseconds per call (lower is better)")
    ax.set_title(f"PyTorch notes' programs vs graphcore ({results['device']})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def draw_mlp(results, png):
    """Speedup over PyTorch's graph per batch, one line per (width, layers),
    for gc_op_mlp's default (one launch per layer) and GC_MLP_FUSED."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # fp32 cells (a sweep's TF32 cells are in its table, sweep_table.py).
    sweep = [r for r in results["sweep"] if r.get("precision", "fp32") == "fp32" and "error" not in r]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, (key, title) in zip(axes, [("graphcore_per_layer_us", "one launch per layer (default)"),
                                       ("graphcore_us", "GC_MLP_FUSED")]):
        for width, layers in sorted({(r["width"], r["layers"]) for r in sweep}):
            rows = sorted((r for r in sweep if (r["width"], r["layers"]) == (width, layers)),
                          key=lambda r: r["batch"])
            ax.plot([r["batch"] for r in rows], [r["torch_graph_us"] / r[key] for r in rows],
                    marker="o", label=f"width {width}, {layers} layers")
        ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch")
        ax.set_title(title)
    axes[0].set_ylabel("speedup over PyTorch CUDA graph")
    axes[1].legend(fontsize=7)
    fig.suptitle(f"MLP forward, graph replay ({results['device']})")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    src = sys.argv[1] if len(sys.argv) > 1 else "perf/results/programs_vs_torch.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    data = json.load(open(src))
    (draw_mlp if "sweep" in data else draw)(data, dst)
