"""Features measured: fusion, graph arguments, control flow on the device,
programmatic dependent launch."""


from .common import RESULTS, H100_FP32_T, load, n0, times, verdict


def block_fusion():
    rows = load("graph_bench.json")["fusion"]
    lines = [
        "| floats | eager | graph | fused graph | fused vs graph | target |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = r["floats"]
        name = f"{f // 2**20} Mi" if f >= 2**20 else str(f)
        speed = r["graph_us"] / r["fused_us"]
        if f >= 2**20:
            tg = f"one pass over memory ({r['copy_us']:.0f} \u00b5s)" + verdict(
                r["fused_us"] <= r["copy_us"] * 1.1, "", ": **missed**"
            )
        else:
            tg = "\u2265 20\u00d7" + verdict(speed >= 20, "", ": **missed**")
        lines.append(
            f"| {name} | {n0(r['eager_us'])} \u00b5s | {n0(r['graph_us'])} \u00b5s | "
            f"**{r['fused_us']:.{2 if r['fused_us'] < 10 else 0}f} \u00b5s** | **{speed:.0f}\u00d7** | {tg} |"
        )
    big = max(rows, key=lambda r: r["floats"])
    mults = big["floats"] * 200 / 1e9
    lines += [
        "",
        "Fused results are bitwise equal to the unfused graph's (tested on random",
        f"chains of 1\u2013300 operations, built and captured). At {big['floats'] // 2**20} Mi floats the fused",
        "kernel reads and writes memory once but does 200 multiplications per",
        f"element: {mults:.1f} G float multiplications take at least {mults / H100_FP32_T:.1f} ms on an H100",
        f"(about {H100_FP32_T} T per second), so \"one pass over memory\" cannot be reached without",
        "changing results (\u00d72 then \u00f72 is not the identity for every float: it",
        "overflows for the largest), which fusion must not do.",
    ]
    return "\n".join(lines)


def block_args():
    b = load("args_bench.json")
    py = load("args_python.json")
    progs = [r for r in load("programs_vs_torch.json")["rows"] if "graphcore_bound_us" in r]
    lines = [
        "From C (`c_examples/mlp_inference`; PyTorch measured in the same run by "
        "`perf/side_by_side/programs_vs_torch.py`):",
        "",
        "| MLP batch | bindings, no copies | copy in + replay + copy out | PyTorch's graph path | "
        "bindings vs copies | bindings vs PyTorch (target \u2265 3\u00d7) |",
        "|---|---|---|---|---|---|",
    ]
    for r in progs:
        vs_copies = r["graphcore_us"] / r["graphcore_bound_us"]
        vs_torch = r["torch_graph_us"] / r["graphcore_bound_us"]
        lines.append(
            f"| {r['case'].split()[-1]} | **{r['graphcore_bound_us']:.2f} \u00b5s** | {r['graphcore_us']:.2f} \u00b5s | "
            f"{r['torch_graph_us']:.2f} \u00b5s | {times(vs_copies, 2)}{verdict(vs_copies > 1, '', ': **missed**')} | "
            f"**{times(vs_torch, 2)}**{verdict(vs_torch >= 3, '', ': **missed**')} |"
        )
    if (RESULTS / "args_mlp_python.json").exists():
        lines += [
            "",
            "From Python, in one process beside PyTorch "
            "(`perf/side_by_side/args_mlp_python.py`, `runner.replay(rows, stream, x=, y=)` with torch tensors):",
            "",
            "| MLP batch | bindings, no copies | copy in + replay + copy out | PyTorch's graph path | "
            "PyTorch eager | bindings vs copies | bindings vs PyTorch (target \u2265 2\u00d7) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in load("args_mlp_python.json")["timings"]:
            vs_copies, vs_torch = r["bound_vs_copies"], r["bound_vs_torch_graph"]
            lines.append(
                f"| {r['batch']} | **{r['bound_us']:.2f} \u00b5s** | {r['copies_us']:.2f} \u00b5s | "
                f"{r['torch_graph_us']:.2f} \u00b5s | {r['torch_eager_us']:.2f} \u00b5s | "
                f"{times(vs_copies, 2)}{verdict(vs_copies > 1, '', ': **missed**')} | "
                f"**{times(vs_torch, 2)}**{verdict(vs_torch >= 2, '', ': **missed**')} |"
            )
    lines += [
        "",
        "CPU cost per launch, x rebound on every call (enqueue only):",
        "",
        "| nodes patched | raw `cuGraphLaunch` | "
        "raw `cuGraphExecKernelNodeSetParams` + launch | `gc_exec_launch_with` | target (raw + 0.5 \u00b5s/node) | "
        "`gc_exec_launch_with`, x bound where it is |",
        "|---|---|---|---|---|---|",
    ]
    for c in b["launch_cost_ns"]:
        target = c["raw_launch"] + 500 * c["nodes"]
        same = c.get("gc_launch_with_same")
        lines.append(
            f"| {c['nodes']} | {n0(c['raw_launch'])} ns | {n0(c['raw_set_launch'])} ns | "
            f"**{n0(c['gc_launch_with'])} ns** | {n0(target)} ns"
            + verdict(c["gc_launch_with"] <= target, "", ": **missed**")
            + f" | {n0(same) + ' ns' if same is not None else 'not measured'} |"
        )
    big = b["input_64mib_us"]
    speed = big["copy"] / big["bind"]
    floor = ""
    if "graph_only" in big:
        most = (big["copy_only"] + big["graph_only"]) / big["graph_only"]
        floor = (
            f" Apart, the copy alone takes {big['copy_only']:.0f} \u00b5s and the graph alone "
            f"{big['graph_only']:.0f} \u00b5s (its kernel reads and writes the 64 MiB): rebinding "
            f"saves the copy, never the kernel, so no binding can do better than "
            f"(copy + graph) / graph = {times(most)} here."
        )
    lines += [
        "",
        f"A 64 MiB input, end to end (y = 2x over it): copying it into the static input and "
        f"launching takes {big['copy']:.0f} \u00b5s, rebinding and launching {big['bind']:.0f} \u00b5s: "
        f"**{speed:.1f}\u00d7** (target 10\u00d7"
        + verdict(speed >= 10, "", ": **missed**: the graph's own kernel reads the 64 MiB too")
        + ")." + floor,
        "",
        f"From Python, `exec.launch(stream, x=t, y=t)` with two torch tensors costs "
        f"{py['launch_ns']['python'] / 1000:.1f} \u00b5s of CPU, "
        f"{(py['launch_ns']['python'] - py['launch_ns']['raw']) / 1000:.1f} \u00b5s over the raw C call "
        f"through ctypes (target 2 \u00b5s"
        + verdict(py["launch_ns"]["python"] - py["launch_ns"]["raw"] <= 2000, "", ": **missed**")
        + "); `runner.replay(rows, stream, x=, y=)` "
        f"{(py['replay_ns']['python'] - py['replay_ns']['raw']) / 1000:.1f} \u00b5s over its raw call.",
    ]
    return "\n".join(lines)


def block_control():
    if not (RESULTS / "control_flow.json").exists():
        return (
            "Not measured yet: `GC_CONTROL_JSON=perf/results/control_flow.json` with the GPU\n"
            "test `gpu::control::control_flow_measurements` writes the figures this table shows."
        )
    r = load("control_flow.json")
    ratio, issue = r["cpu_ratio"], r["issue_cpu_ratio"]
    floor, loop_floor = "", ""
    if (RESULTS / "conditional_floor.json").exists():
        raw = load("conditional_floor.json")
        floor = (f"; the same chain in plain CUDA (`perf/cuda/conditional_floor.cu`) costs "
                 f"{raw['if_false_us']:.2f} \u00b5s per IF: the driver's floor")
        extra = raw["while_iteration_us"] - raw["same_kernel_replayed_us"]
        loop_floor = (f"; in plain CUDA a WHILE iteration costs {extra:.2f} \u00b5s more than replaying "
                      f"its body's one kernel in a graph, which puts the floor at "
                      f"{(r['replayed_step_us'] + extra) / r['replayed_step_us']:.2f}\u00d7 for this step "
                      "even with the setter fused into a step kernel")
    lines = [
        "| measure | figure | target |",
        "|---|---|---|",
        f"| {r['steps']} training steps: losses and weights | "
        f"{'**bitwise equal**' if r['bitwise_equal'] else '**differ**'} (one WHILE launch vs "
        f"{r['steps']} host launches) | bitwise equal |",
        f"| host CPU time to run {r['steps']} steps (thread CPU clock) | launching the WHILE: "
        f"{r['while_issue_cpu_ms']:.3f} ms, **{issue:.4f}** of the host loop's "
        f"{r['host_loop_cpu_ms']:.2f} ms; with the final synchronize (a spin-wait) "
        f"{r['while_cpu_ms']:.2f} ms, {ratio:.2f} | \u2264 1/50 = 0.02"
        + verdict(issue <= 0.02, " (issuing)", ": **missed**") + " |",
        f"| device time per iteration | {r['while_iteration_us']:.2f} \u00b5s in the WHILE vs "
        f"{r['replayed_step_us']:.2f} \u00b5s per replayed step: **{r['iteration_vs_replay']:.2f}\u00d7**{loop_floor} | "
        "\u2264 1.1\u00d7" + verdict(r["iteration_vs_replay"] <= 1.1, "", ": **missed**") + " |",
        f"| early stop | after **{r['early_stop_iterations']}** iterations; host reference "
        f"{r['early_stop_host_reference']} | equal"
        + verdict(r["early_stop_iterations"] == r["early_stop_host_reference"], "", ": **missed**")
        + " |",
        f"| an IF whose condition is false | **{r['if_false_us']:.2f} \u00b5s** of device time{floor} | "
        "\u2264 2 \u00b5s" + verdict(r["if_false_us"] <= 2, "", ": **missed**") + " |",
        f"| SWITCH bucket on the device (buckets {', '.join(map(str, r['switch_buckets']))}) | "
        f"equal to gc_runner_replay's for all **{r['switch_rows_checked']}** row counts | every row count |",
    ]
    return "\n".join(lines)


def block_pdl():
    r = load("pdl_ab.json")
    lines = [
        "| program (H100, us per replay) | `GC_PDL=1` | `GC_PDL=0` | before (compute_75 PTX) | on vs off |",
        "|---|---|---|---|---|",
    ]
    for w in r["pdl_chain"]:
        lines.append(
            f"| `pdl_chain` {w['workload']} ({w['programmatic_edges']} programmatic "
            f"edge{'' if w['programmatic_edges'] == 1 else 's'}) | "
            f"**{w['pdl_on_us']:.2f}** | {w['pdl_off_us']:.2f} | {w['before_us']:.2f} | "
            f"{w['speedup_pdl_on_vs_off']:.3f}\u00d7 |"
        )
    for b in r["mlp_inference_bound"]:
        lines.append(
            f"| `mlp_inference` batch {b['batch']}, bound ({b['nodes']} node{'s' if b['nodes'] > 1 else ''}) | "
            f"**{b['pdl_on_us']:.2f}** | {b['pdl_off_us']:.2f} | | {b['speedup']:.3f}\u00d7 |"
        )
    t = r["train_step_replay"]
    lines.append(
        f"| `train_step` replay (fused, 2 nodes) | **{t['pdl_on_us']:.2f}** | {t['pdl_off_us']:.2f} | | "
        f"{t['speedup']:.3f}\u00d7 |"
    )
    lines.append(
        f"| `train_step` replay (unfused, 4 nodes) | **{t['unfused_pdl_on_us']:.2f}** | "
        f"{t['unfused_pdl_off_us']:.2f} | | {t['unfused_speedup']:.3f}\u00d7 |"
    )
    same = all(w["checksums_equal"] for w in r["pdl_chain"])
    san = r["sanitizer_pdl_chain_quick"]
    lines += [
        "",
        f"Outputs {'**bitwise equal**' if same else '**differ**'} in every configuration; "
        f"compute-sanitizer on a PDL chain: memcheck {san['memcheck']}, synccheck {san['synccheck']}, "
        f"racecheck {san['racecheck']}. {r['date']}, {r['gpu']}, commit {r['commit']} "
        "(`perf/results/pdl_ab.json` has the method and every run).",
    ]
    return "\n".join(lines)
