"""The project's own runs: the suite's counts and reliability, the GPU run, the
device, `make test` from fresh clones, several GPUs."""

import re
import sys

from .common import REPO, RESULTS, covered, exports, load, n0, prose, suite_counts, verdict


def block_reliability():
    ex = exports()
    cov = len(ex & covered())
    counts = suite_counts()
    rows = [
        (
            "Functions covered by the bad-input suite",
            f"**{cov} of {len(ex)}** exports (`nm -D`); a test fails when an export (in `libgraphcore.so` "
            "or the headers) has no `COVER(...)` section (the map ops: an entry of `tests/c/map_ops.h`)",
            "`cargo test --test suite c_abi::every_export_is_covered_by_the_bad_input_suite`",
        ),
        (
            "Bad inputs, no driver (ASan + UBSan, one process per section)",
            f"**{n0(counts['bad_input_checks_no_driver'])} checks** in "
            f"{counts['bad_input_sections']} sections, **0 failed**",
            "`cargo test --test suite c_abi::bad_input -- --nocapture`",
        ),
        (
            "Bad inputs, on the GPU (`GC_GPU=1`)",
            "every section, with the full argument and state checks: **0 failed**",
            "`bash stage/run.sh` (suite step)",
        ),
        (
            "The no-driver suite under valgrind (`--leak-check=full`, errors for definite, indirect "
            "and possible leaks)",
            "**0 errors, 0 bytes lost** (what stays reachable is the cached \"no CUDA driver\" "
            "error in a static); no suppressions",
            "`GC_REQUIRE_VALGRIND=1 cargo test --test suite c_abi::bad_input_under_valgrind`",
        ),
        (
            "Fuzzing `pool_ops` (allocator vs a reference model, libFuzzer)",
            "**0 crashes, 0 mismatches**; the two defects it found (`plan_trim`'s underflow, a plan "
            "that mapped only one run of pages) are fixed, their inputs kept in `fuzz/artifacts/pool_ops/`",
            "`FUZZ_SECS=60 fuzz/run pool_ops`",
        ),
        (
            "Fuzzing `graph_ops` (graph descriptions vs the validator's rules)",
            "**0 crashes, 0 mismatches**",
            "`FUZZ_SECS=60 fuzz/run graph_ops`",
        ),
        (
            "Fuzz targets on stable, no libFuzzer (corpus, regression inputs, random inputs)",
            "**0 failures**",
            "`GC_FUZZ_RANDOM=50000 cargo test --release --manifest-path fuzz/Cargo.toml`",
        ),
        (
            "Concurrency stress: 16 threads x 10 s (alloc/free, thread-local captures into one "
            "pool, replay, update, destroy; one thread reading statistics)",
            "invariants held, statistics back to 0, device free memory back to within 2 MiB",
            "`stage/bin/suite --ignored --exact gpu::stress::sixteen_threads_allocate_capture_replay_update_and_destroy --nocapture`",
        ),
        (
            "Leaks: 11 kinds of object x 10,000 create/destroy cycles through the C ABI",
            "**no leak** (tolerance 1 MiB host, 2 MiB device per kind, after 200 warm-up cycles)",
            "`stage/bin/suite --ignored --exact gpu::leaks::ten_thousand_objects_of_each_kind_return_host_and_device_memory --nocapture`",
        ),
        (
            "Faults: max_bytes during a capture, device out of memory while growing, trapping kernel "
            "(`GC_ERROR_DEVICE_FAULT`, in a child process), copies overrunning a pool block, "
            "synchronize/trim/stream destroy during captures",
            "**all pass**",
            "`stage/bin/suite --ignored gpu::faults::`",
        ),
        (
            "compute-sanitizer memcheck (every GPU test and example), synccheck (every GPU test and "
            "example outside conditional bodies: docs/limits.md), racecheck (the kernel tests, "
            "`gpu::kernels::`: racecheck is slow)",
            "**0 errors** from each tool",
            "`bash stage/run.sh`",
        ),
        (
            "Driver older than CUDA 12.0 \u2192 `GC_ERROR_NOT_SUPPORTED`",
            "the version rule is a pure function, unit-tested for 9.2 \u2026 11.9 and 12.0 \u2026 13.x",
            "`cargo test -p graphcore-core driver::`",
        ),
        (
            "ABI of `libgraphcore.so` against `abi/libgraphcore.abi` (abidiff)",
            "matches",
            "`make abi-check` (`make abi-baseline` refreshes it)",
        ),
    ]
    out = ["| check | figure | reproduce |", "|---|---|---|"]
    out += ["| %s | %s | %s |" % r for r in rows]
    return "\n".join(out)


def block_gpu_run():
    """The newest complete stage/run.sh, whole or in its parts, of the GPU
    checks kept (perf/results/gpu_check.txt, perf/results/h100/gpu_check.txt):
    its device and date, its summary and the suite's test count."""

    def date_of(path):
        return re.search(r"\d{4}-\d{2}-\d{2}", path.read_text().splitlines()[0]).group(0)

    path = max((RESULTS / "gpu_check.txt", RESULTS / "h100" / "gpu_check.txt"), key=date_of)
    text = path.read_text()
    head = text.splitlines()[0]
    device = re.search(r"on an (NVIDIA [^(]+?) \(", head).group(1)
    date = date_of(path)
    # One summary line, or one per part (stage/run.sh 1, 2, ...).
    sums = re.findall(r"^gpu-check: (\d+) passed, (\d+) failed.*?( \(part \d of (\d)\))?$", text, re.M)
    passed, failed = (sum(int(x[i]) for x in sums) for i in (0, 1))
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    how = f"in its {words[len(sums)]} parts" if any(x[2] for x in sums) else "complete"
    suite = int(re.search(r"^test result: ok\. (\d+) passed", text, re.M).group(1))
    ranks = re.search(r"^multi-gpu: (\d+) GPU\(s\): every configuration runs on (\d+) rank", text, re.M)
    gpus, ranks = map(int, ranks.groups()) if ranks else (1, 1)
    machine = f"an {device}" if gpus == 1 else f"{words.get(gpus, gpus)} {device}s of one host"
    multi = (
        "multi-GPU at one rank" if ranks == 1
        else f"data-parallel training on {words.get(ranks, ranks)} ranks in its three configurations"
    )
    return prose(
        f"The GPU rows were last confirmed by `bash stage/run.sh`, {how}, on {machine} on "
        f"{date}: {passed} of {passed + failed} steps passed ({suite} suite tests with the GPU ones, the "
        f"examples, {multi}, Python, memcheck, racecheck, synccheck, the device fault; "
        f"`{path.relative_to(REPO)}`)."
    )


def block_device():
    device, _, driver = (RESULTS / "bench_log.txt").read_text().splitlines()[0].partition(", ")
    torch = load("kernels_vs_torch.json")["torch"]
    return (
        f"Measured on one {device} (driver {driver}; PyTorch {torch}\n"
        "for the side-by-side scripts) with `scripts/gpu-check`, then `bash stage/run.sh` (tests and\n"
        "sanitizers) and `bash stage/bench.sh` (benchmarks) there. The benchmark\n"
        "JSON, the chart and the log of that run are in `perf/results/`; the\n"
        "figures below are generated from them (`make readme-results`; `make\n"
        "results-check` checks them). Every figure is a ratio of two things\n"
        "measured side by side in the same run."
    )


def block_fresh_make_test():
    log = (REPO / "perf" / "logs" / "fresh-make-test.log").read_text()
    runs = re.findall(r"^# run \d+: (.*?), (\d{4}-\d\d-\d\d) .*?^# make test exit status (\d+), "
                      r"wall time (\d+) s$", log, re.S | re.M)
    if not runs or any(rc != "0" for _, _, rc, _ in runs):
        sys.exit("readme_results: perf/logs/fresh-make-test.log has no run, or a failed one")
    parts = [f"**{int(secs) // 60} min {int(secs) % 60:02d} s** {title}" for title, _, _, secs in runs]
    text = (
        f"Measured on {runs[-1][1]} (2 cores, empty cargo and pip caches: crates and wheels "
        f"are downloaded), a fresh clone's `make test` passes in {'; in '.join(parts)} "
        "(transcript: `perf/logs/fresh-make-test.log`; the machine is shared, so times vary with its "
        "load)."
    )
    return prose(text)


def block_multi_gpu():
    r = load("multi_gpu.json")
    ok = load("multi_gpu_correctness.json")
    ch = load("multi_gpu_channels.json")
    g1, g2 = r["runs"]["graphcore_1"], r["runs"]["graphcore_2"]
    res = ok["results"]
    configs = ", ".join(f"{k} {v}" for k, v in res.items())
    same = ok["two_gpu_runs"] and all(v == "ok" for v in res.values())
    goe, scale = r["allreduce_graph_over_eager_2gpu"], r["graphcore_scaling_2_over_1"]
    lines = [
        f"| target ({ok['ranks']} × {r['gpu']}) | measured | target | |",
        "|---|---|---|---|",
        f"| data-parallel training equals one-GPU training, 1000 steps ({configs}) | "
        f"{'all within 1e-5' if same else '**not all**'} | within 1e-5 | {verdict(same, 'met')} |",
        f"| all-reduce of the {g2['allreduce_bytes'] / 2**20:.0f} MiB gradient in a graph ÷ eager "
        f"({g2['allreduce_graph_us']:.1f} / {g2['allreduce_eager_us']:.1f} us) | {goe:.3f} | ≤ 1.05 | "
        f"{verdict(goe <= 1.05, 'met')} |",
        f"| samples per second, 2 GPUs ÷ 1, Linear {g1['dim']}², {g1['rows_per_rank']} rows per GPU "
        f"({g2['step_us']:.0f} / {g1['step_us']:.0f} us per step) | {scale:.3f} | ≥ 1.8 | "
        f"{verdict(scale >= 1.8, 'met')} |",
        "",
        f"| rows per GPU (Linear {g1['dim']}²) | 1 GPU, us per step | 2 GPUs | graphcore 2 ÷ 1 | "
        "PyTorch 2 ÷ 1 | graphcore ÷ PyTorch, 2 GPUs |",
        "|---|---|---|---|---|---|",
    ]
    for x in r["scaling_by_rows"]:
        lines.append(
            f"| {x['rows_per_gpu']} | {x['graphcore_step_us_1gpu']:.0f} | {x['graphcore_step_us_2gpu']:.0f} | "
            f"**{x['graphcore_scaling']:.3f}** | {x['torch_scaling']:.3f} | {x['graphcore_over_torch_2gpu']:.3f} |"
        )
    best = max(ch["runs"], key=lambda x: x.get("scaling_2_over_1", 0))
    by_rows = r["scaling_by_rows"]
    met_rows = [x["rows_per_gpu"] for x in by_rows if x["graphcore_scaling"] >= 1.8]
    missed_rows = [str(x["rows_per_gpu"]) for x in by_rows if x["graphcore_scaling"] < 1.8]
    where = (f"met from {min(met_rows)} rows per GPU, where the all-reduce is small beside the GEMMs"
             if met_rows else "missed at every size measured")
    if met_rows and missed_rows:
        where += f", and missed at {' and '.join(missed_rows)}"
    slower = all(x["graphcore_over_torch_2gpu"] < 1 for x in by_rows)
    torch_note = (
        "graphcore's f32 GEMM is slower than cuBLAS's at these shapes, so PyTorch's same step (same overlap, "
        "`torch.distributed`, one CUDA graph per process) is faster. "
        if slower else
        "PyTorch's same step (same overlap, `torch.distributed`, one CUDA graph per process) is in the last column. "
    )
    lines += [
        "",
        prose(
            f"The step overlaps its all-reduce with the weight gradient ({g2['grad_chunks']} row chunks, each "
            f"all-reduced as soon as it is computed, on a high-priority side stream): "
            f"{g2['step_us']:.0f} us against {r['runs']['graphcore_2_unchunked']['step_us']:.0f} us with one "
            f"all-reduce after the whole gradient. The all-reduce and the GEMM contend for SMs, so the overlap "
            f"hides little of the all-reduce's {g2['allreduce_eager_us']:.0f} us: over NCCL block counts "
            f"(`NCCL_MAX_NCHANNELS`) and chunk counts the best scaling was "
            f"{best['scaling_2_over_1']:.3f} at {best['grad_chunks']} chunks "
            f"(`perf/results/multi_gpu_channels.json`). So the 1.8× target is {where}. {torch_note}"
            f"`perf/multi_gpu/run.sh` reproduces this; `docs/multi-gpu.md` has the rest."
        ),
    ]
    return "\n".join(lines)
