"""The graphcore.torch block: PyTorch's own models through graphcore.torch
against eager, the notes' torch.cuda.graph recipe, make_graphed_callables
and torch.compile (perf/side_by_side/torch_graphs.py ->
perf/results/torch_graphs.json). Targets (the issue's): at least 2x the
recipe end to end for the MLP and the decoder step at batch <= 16 and no
slower at any batch; the decode loop's CPU time per token at most 1/20 of
a Python loop of per-token calls, wall time no worse; a bucket family's
pool at most 1.05x its largest bucket alone and no more than PyTorch's
graphs reserve for the same family; a family captured no slower than
PyTorch captures it."""

from .common import RESULTS, load, verdict

NAME = "torch_graphs.json"
LABEL = {"mlp": "MLP", "decoder": "decoder step", "cnn": "CNN"}
WAYS = (("torch_cuda_graph", "torch.cuda.graph recipe"),
        ("make_graphed_callables", "make_graphed_callables"),
        ("torch_compile_reduce_overhead", "torch.compile"),
        ("graphcore_torch", "graphcore.torch"))


def _us(r, key):
    return f"{r[key]:.1f} \u00b5s" if key in r else "-"


def _floor(row):
    """Each side's bare replay of the bucket (no copy, binding or check),
    and the best ratio to the recipe a call could reach: the recipe's time
    over graphcore's bare replay."""
    if "graphcore_launch_only_us" not in row:
        return "-"
    best = row["torch_graph_recipe_us"] / row["graphcore_launch_only_us"]
    return (f"{row['torch_graph_replay_only_us']:.1f} / {row['graphcore_launch_only_us']:.1f}"
            f" \u00b5s (floor {best:.2f}\u00d7)")


def _mib(b):
    return f"{b / 2**20:.1f} MiB"


def _way(f):
    if "skipped" in f:
        return f"skipped ({f['skipped']})"
    if "compile_s" in f:
        text = f"compiled in {f['compile_s']:.1f} s (a child process)"
    elif "capture_s" in f:
        text = f"{f['capture_s'] * 1e3:.0f} ms"
    else:
        text = "built"
    if f.get("cudagraph_skips"):
        text += f", {f['cudagraph_skips']} cudagraph skip(s): not all replayed as CUDA graphs"
    if "reserved_bytes" in f:
        text += f", {_mib(f['reserved_bytes'])} reserved"
    if "pool_bytes" in f:
        text += f", pool {_mib(f['pool_bytes'])}"
    return text


def _family_lines(label, fams):
    """Capture and memory of one model's families, and the targets."""
    parts = [f"{name}: {_way(fams[key])}" for key, name in WAYS if key in fams]
    lines = [f"- {label[:1].upper() + label[1:]} families (capture; memory): "
             + "; ".join(parts) + "."]
    g, t = fams.get("graphcore_torch", {}), fams.get("torch_cuda_graph", {})
    checks = []
    if "largest_bucket_alone_pool_bytes" in g:
        share = g["pool_bytes"] / max(1, g["largest_bucket_alone_pool_bytes"])
        checks.append(f"pool {share:.2f}\u00d7 its largest bucket alone (\u2264 1.05\u00d7"
                      f"{verdict(share <= 1.05, '', ': **missed**')})")
    if "pool_bytes" in g and "reserved_bytes" in t:
        mine = g.get("pool_reserved_bytes", g["pool_bytes"])
        checks.append(f"{_mib(mine)} reserved against PyTorch's {_mib(t['reserved_bytes'])}"
                      f"{verdict(mine <= t['reserved_bytes'], '', ' (**more**)')}")
    if "capture_s" in g and "capture_s" in t:
        ok = g["capture_s"] <= t["capture_s"]
        checks.append(f"captured in {g['capture_s'] * 1e3:.0f} ms against PyTorch's "
                      f"{t['capture_s'] * 1e3:.0f} ms{verdict(ok, '', ' (**slower**)')}")
    if checks:
        lines.append(f"  graphcore.torch's {label} family: " + "; ".join(checks) + ".")
    return lines


def block_torch():
    if not (RESULTS / NAME).exists():
        return ("Not measured yet: `python3 perf/side_by_side/torch_graphs.py` on the GPU "
                "machine (run by\n`stage/bench.sh`) writes `perf/results/torch_graphs.json`, "
                "from which this table is made.")
    r = load(NAME)
    lines = [
        f"{r['device']}, PyTorch {r['torch']}, per call from Python, end to end"
        f"{' (--quick)' if r.get('quick') else ''}:",
        "",
        "| model, batch | eager | `torch.cuda.graph` recipe | make_graphed_callables | "
        "torch.compile | graphcore.torch (+ clone) | bare replay: torch / graphcore | "
        "vs recipe | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    models = r.get("models", {})
    for name, m in models.items():
        for row in m["rows"]:
            if "speedup_vs_recipe" not in row:
                continue
            s, goal = row["speedup_vs_recipe"], row["goal_vs_recipe"]
            tg = f"\u2265 {goal:g}\u00d7" + verdict(s >= goal, "", ": **missed**")
            same = "" if row["bitwise_equal_to_recipe"] else " (not bitwise equal)"
            lines.append(
                f"| {LABEL.get(name, name)} {row['batch']} | {_us(row, 'eager_us')} | "
                f"{_us(row, 'torch_graph_recipe_us')} | "
                f"{_us(row, 'make_graphed_callables_us')} | {_us(row, 'torch_compile_us')} | "
                f"{row['graphcore_us']:.1f} ({row['graphcore_clone_us']:.1f}) \u00b5s{same} | "
                f"{_floor(row)} | {s:.2f}\u00d7 | {tg} |")
    lines.append("")
    t = r.get("train_step")
    if t and "graphcore_us" in t:
        lines.append(
            f"- Training step (Linear 1024\u00b2, batch 64, MSELoss, SGD): eager "
            f"{_us(t, 'eager_us')}, recipe {_us(t, 'torch_graph_recipe_us')}, "
            f"make_graphed_callables {_us(t, 'make_graphed_callables_us')}, torch.compile "
            f"{_us(t, 'torch_compile_us')}, graphcore.torch.step {t['graphcore_us']:.1f} \u00b5s"
            + (f" ({t['speedup_vs_recipe']:.2f}\u00d7 the recipe)" if "speedup_vs_recipe" in t
               else "") + ".")
    d = r.get("decode_loop")
    if d:
        ratio, wall = d["issue_ratio_vs_python_graphcore"], d["wall_ratio_vs_python_graphcore"]
        lines.append(
            f"- Greedy decode, {d['tokens']} tokens at batch 1 in one launch "
            f"(graphcore.torch.loop): the calling thread spends "
            f"{d['loop_issue_us_per_token']:.2f} \u00b5s a token against "
            f"{d['python_graphcore_issue_us_per_token']:.1f} \u00b5s for a Python loop of "
            f"graphcore calls ({ratio:.3f}; \u2264 1/20{verdict(ratio <= 0.05, '', ': **missed**')}"
            f"); wall {d['loop_wall_us_per_token']:.1f} against "
            f"{d['python_graphcore_wall_us_per_token']:.1f} \u00b5s a token ({wall:.3f}\u00d7"
            f"{verdict(wall <= 1.0, '', ': **slower**')}; recipe replays "
            f"{d['python_recipe_wall_us_per_token']:.1f} \u00b5s)"
            + (f"; the WHILE graph's launch alone (no state copy), the floor: "
               f"{d['loop_launch_only_issue_us_per_token']:.2f} \u00b5s a token"
               if "loop_launch_only_issue_us_per_token" in d else "")
            + (f"; the loop's own body launched once a token from Python: "
               f"{d['python_body_issue_us_per_token']:.1f} \u00b5s issued, "
               f"{d['python_body_wall_us_per_token']:.1f} \u00b5s wall, "
               f"{d['python_body_checked_wall_us_per_token']:.1f} \u00b5s wall with the "
               f"flag read after each token" if "python_body_wall_us_per_token" in d else "")
            + ".")
    for name, m in models.items():
        lines += _family_lines(LABEL.get(name, name), m["families"])
    if t and "families" in t:
        lines += _family_lines("training step", t["families"])
    for part, why in r.get("failed", {}).items():
        lines.append(f"- {part}: failed ({why}).")
    for part, why in r.get("skipped", {}).items():
        lines.append(f"- {part}: skipped ({why}).")
    return "\n".join(lines)
