"""The chart of benches/results/programs_vs_torch.json (PyTorch eager,
PyTorch CUDA graph, graphcore graph per case). programs_vs_torch.py calls it
after a run; run it alone to redraw: python3 benches/side_by_side/chart.py
[JSON [PNG]]."""
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


if __name__ == "__main__":
    src = sys.argv[1] if len(sys.argv) > 1 else "benches/results/programs_vs_torch.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    draw(json.load(open(src)), dst)
