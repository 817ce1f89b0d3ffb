"""The graphcore.torch block: PyTorch's own models through graphcore.torch
against eager, the notes' torch.cuda.graph recipe, make_graphed_callables
and torch.compile (perf/side_by_side/torch_graphs.py ->
perf/results/torch_graphs.json). Targets (the issue's): at least 2x the
recipe end to end for the MLP and the decoder step at batch <= 16 and no
slower at any batch; the decode loop's CPU time per token at most 1/20 of
a Python loop of per-token calls, wall time no worse; a bucket family's
pool at most 1.05x its largest bucket alone."""

from .common import RESULTS, load, verdict

NAME = "torch_graphs.json"


def _us(r, key):
    return f"{r[key]:.1f} \u00b5s" if key in r else "-"


def _family_line(name, fam):
    parts = []
    for way, f in fam.items():
        if "skipped" in f:
            parts.append(f"{way}: skipped ({f['skipped']})")
            continue
        cap = f.get("capture_s", f.get("compile_s"))
        mem = f.get("reserved_bytes", f.get("pool_bytes"))
        text = f"{way}: {cap * 1e3:.0f} ms" if cap is not None else way
        if mem is not None:
            text += f", {mem / 2**20:.1f} MiB"
        parts.append(text)
    return f"- {name} capture and memory: " + "; ".join(parts) + "."


def block_torch():
    if not (RESULTS / NAME).exists():
        return ("Not measured yet: `python3 perf/side_by_side/torch_graphs.py` on the GPU "
                "machine (run by\n`stage/bench.sh`) writes `perf/results/torch_graphs.json`, "
                "from which this table is made.")
    r = load(NAME)
    lines = [
        f"{r['device']}, PyTorch {r['torch']}, per call from Python, end to end:",
        "",
        "| model, batch | eager | `torch.cuda.graph` recipe | make_graphed_callables | "
        "torch.compile | graphcore.torch (+ clone) | vs recipe | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in r["mlp"] + r.get("decoder", []) + r.get("cnn", []):
        name = row.get("model", "MLP")
        s = row["speedup_vs_recipe"]
        goal = 2.0 if name in ("MLP", "decoder step") and row["batch"] <= 16 else 1.0
        tg = f"\u2265 {goal:g}\u00d7" + verdict(s >= goal, "", ": **missed**")
        same = "" if row["bitwise_equal_to_recipe"] else " (not bitwise equal)"
        lines.append(
            f"| {name} {row['batch']} | {_us(row, 'eager_us')} | "
            f"{_us(row, 'torch_graph_recipe_us')} | {_us(row, 'make_graphed_callables_us')} | "
            f"{_us(row, 'torch_compile_us')} | {row['graphcore_us']:.1f} "
            f"({row['graphcore_clone_us']:.1f}) \u00b5s{same} | {s:.2f}\u00d7 | {tg} |")
    t = r["train_step"]
    lines += ["", f"- Training step (Linear 1024\u00b2, batch 64, MSELoss, SGD): eager "
                  f"{t['eager_us']:.1f} \u00b5s, recipe {t['torch_graph_recipe_us']:.1f} \u00b5s, "
                  f"graphcore.torch.step {t['graphcore_us']:.1f} \u00b5s "
                  f"({t['speedup_vs_recipe']:.2f}\u00d7, inputs {t['mode']})."]
    d = r.get("decode_loop")
    if d:
        ratio = d["cpu_ratio_vs_python_graphcore"]
        wall_ok = d["loop_wall_us_per_token"] <= d["python_graphcore_wall_us_per_token"]
        lines.append(
            f"- Greedy decode, {d['tokens']} tokens in one launch (graphcore.torch.loop): CPU "
            f"{d['loop_cpu_us_per_token']:.2f} \u00b5s per token against "
            f"{d['python_graphcore_cpu_us_per_token']:.1f} \u00b5s for a Python loop of steps "
            f"({ratio:.3f}; \u2264 1/20{verdict(ratio <= 0.05, '', ': **missed**')}), wall "
            f"{d['loop_wall_us_per_token']:.1f} against "
            f"{d['python_graphcore_wall_us_per_token']:.1f} \u00b5s"
            f"{verdict(wall_ok, '', ' (**slower**)')} (recipe replays: "
            f"{d['python_recipe_wall_us_per_token']:.1f} \u00b5s).")
    fams = r["families"]
    g = fams.get("graphcore_torch", {})
    if "largest_bucket_alone_pool_bytes" in g:
        share = g["pool_bytes"] / max(1, g["largest_bucket_alone_pool_bytes"])
        lines.append(f"- MLP family (4 buckets) pool {g['pool_bytes'] / 2**20:.1f} MiB, the "
                     f"largest bucket alone {g['largest_bucket_alone_pool_bytes'] / 2**20:.1f} "
                     f"MiB ({share:.2f}\u00d7; \u2264 1.05\u00d7"
                     f"{verdict(share <= 1.05, '', ': **missed**')}).")
    top = {k: v for k, v in fams.items() if k not in ("decoder", "cnn")}
    lines.append(_family_line("MLP", top))
    for name in ("decoder", "cnn"):
        if name in fams:
            lines.append(_family_line(name, fams[name]))
    for part, why in r.get("failed", {}).items():
        lines.append(f"- {part}: failed ({why}).")
    return "\n".join(lines)
