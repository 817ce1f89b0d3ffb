"""Markdown tables of the MLP and training sweeps, generated from their JSON
(mlp_vs_torch.json, train_vs_torch.json as mlp_vs_torch.py and
train_vs_torch.py write them): one table per precision (fp32, TF32), a row
per network (width and layers, or step kind and width), a column per batch;
each cell PyTorch's graph time over graphcore's, the cell's winner
(graphcore, PyTorch, or a tie within 3%), and the GEMM dispatch's choice
(graphcore's kernels or cuBLASLt). Rows of older JSON without a precision
are fp32; without a winner or dispatch, they are computed or left blank.

    python3 perf/side_by_side/sweep_table.py perf/results/mlp_vs_torch.json [OUT.md]
"""
import json
import sys

TIE = 0.03
MARK = {"graphcore": "gc", "torch": "**torch**", "tie": "tie"}
SHORT = {"graphcore": "g", "cublaslt": "L"}


def _winner(r):
    if "winner" in r:
        return r["winner"]
    ratio = r["speedup"]
    return "tie" if abs(ratio - 1.0) <= TIE else ("graphcore" if ratio > 1.0 else "torch")


def _dispatch(r):
    d = r.get("dispatch")
    if not d:
        return ""
    if d in SHORT:
        return " " + SHORT[d]
    return " L" + d.split(" ", 1)[1] if d.startswith("cublaslt ") else " " + d


def _cell(r):
    if r is None:
        return "-"
    if "error" in r:
        return "failed"
    return "%.2f\u00d7 %s%s" % (r["speedup"], MARK[_winner(r)], _dispatch(r))


def table(results):
    """The Markdown lines for one sweep's results (either kind)."""
    sweep = results["sweep"]
    is_train = any("kind" in r for r in sweep)
    label = (lambda r: (r["kind"], r["width"])) if is_train else (lambda r: (r["width"], r["layers"]))
    head = "| step | width |" if is_train else "| width | layers |"
    lines = []
    for precision in ("fp32", "tf32"):
        rows = [r for r in sweep if r.get("precision", "fp32") == precision]
        if not rows:
            continue
        batches = sorted({r["batch"] for r in rows})
        lines += ["", "%s, %s: PyTorch graph time / graphcore time, winner, dispatch" % (
            "Training steps" if is_train else "MLP forward (graph replay)", precision.upper()), "",
            head + "".join(" batch %d |" % b for b in batches),
            "|---|---|" + "---|" * len(batches)]
        for key in sorted({label(r) for r in rows}):
            cells = [_cell(next((r for r in rows if label(r) == key and r["batch"] == b), None))
                     for b in batches]
            lines.append("| %s | %s | " % key + " | ".join(cells) + " |")
        ok = [r for r in rows if "error" not in r]
        won = {w: [r for r in ok if _winner(r) == w] for w in ("graphcore", "tie", "torch")}
        lines += ["", "%d cells: graphcore wins %d, ties %d (within 3%%), PyTorch wins %d%s." % (
            len(rows), len(won["graphcore"]), len(won["tie"]), len(won["torch"]),
            (": " + ", ".join("%s x %d (%.2f\u00d7)" % ("/".join(map(str, label(r))), r["batch"], r["speedup"])
                              for r in won["torch"])) if won["torch"] else "")]
        lt = [r for r in ok if r.get("dispatch", "graphcore") != "graphcore"]
        if any("dispatch" in r for r in rows):
            lines.append("cuBLASLt chosen in %d of them (L; g: graphcore's kernels; L1/3: one GEMM of three)." % len(lt))
    lines += ["", "Device: %s, PyTorch %s." % (results.get("device", "?"), results.get("torch", "?"))]
    return lines


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "perf/results/mlp_vs_torch.json"
    with open(src) as f:
        text = "\n".join(table(json.load(f))) + "\n"
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
