#!/usr/bin/env python3
"""perf/c/cache_bench's hit figures (a and b) over the no-op driver, for
two builds of the library, alternated: graphcore's own CPU cost of a cache
hit against gc_exec_launch, and of threads hitting at once.

    python3 perf/noop_driver/cache_bench_noop.py LABEL=LIBGRAPHCORE.so LABEL=... \\
        [--runs=N] [--threads=T] [--batch=B] [-o OUT.json]

Builds the no-op driver twice (plain; and -DNOOP_EVICT, whose launch runs
40 KB of code and sweeps 48 KB of data, so graphcore's code and data come
back from L2 as after a real driver's launch) and perf/c/cache_bench.c,
then runs cache_bench with CACHE_BENCH_HITS_ONLY=1 and
CACHE_BENCH_THREADS=T (default 2: on a machine of 2 cores, more threads
only time-share) and CACHE_BENCH_BATCH=B (b's calls per timed batch,
default 10000, so the threads overlap for long enough on shared cores) N
times per library and driver (default 3), the libraries alternated within
each round. Writes every run's JSON and the
median of each figure per library and driver.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIGURES = {"hit": ["exec_launch_ns", "cache_launch_ns", "over_ns", "exec_cycle_launch_ns",
                   "over_exec_cycle_ns"],
           "threads": ["cache_launch_ns_1", "cache_launch_ns_n", "ratio", "exec_launch_ns_1",
                       "exec_launch_ns_n", "exec_launch_ratio", "lookup_ns_1", "lookup_ns_n",
                       "lookup_ratio"]}


def main():
    args = sys.argv[1:]
    opt = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if a.startswith("--")}
    out = None
    if "-o" in args:
        out = args[args.index("-o") + 1]
        args = [a for i, a in enumerate(args) if a != "-o" and (i == 0 or args[i - 1] != "-o")]
    libs = [a.split("=", 1) for a in args if not a.startswith("--")]
    if not libs or any(len(x) != 2 for x in libs):
        sys.exit(__doc__)
    runs, threads, batch = int(opt.get("--runs", 3)), opt.get("--threads", "2"), opt.get("--batch", "10000")
    result = {"benchmark": "cache_bench (a and b) over perf/noop_driver",
              "method": __doc__.split("\n\n")[2].replace("\n", " "),
              "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()},
              "threads": int(threads), "batch": int(batch), "runs": runs, "libraries": {}}
    with tempfile.TemporaryDirectory() as work:
        for driver, flags in (("noop", []), ("noop_evict", ["-DNOOP_EVICT"])):
            os.makedirs(os.path.join(work, driver))
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", *flags, "-o",
                            os.path.join(work, driver, "libcuda.so.1"),
                            os.path.join(REPO, "perf/noop_driver/noop_cuda.c")], check=True)
        for label, lib in libs:
            d = os.path.join(work, "lib-" + label)
            os.makedirs(d)
            for name in ("libgraphcore.so", "libgraphcore.so.0"):
                os.symlink(os.path.abspath(lib), os.path.join(d, name))
        bench = os.path.join(work, "cache_bench")
        subprocess.run(["cc", "-O2", "-I" + os.path.join(REPO, "include"),
                        os.path.join(REPO, "perf/c/cache_bench.c"), "-o", bench,
                        "-L" + os.path.join(work, "lib-" + libs[0][0]), "-lgraphcore", "-ldl",
                        "-lpthread"], check=True)
        raw = {label: {"noop": [], "noop_evict": []} for label, _ in libs}
        for _ in range(runs):
            for driver in ("noop", "noop_evict"):
                for label, _ in libs:
                    o = os.path.join(work, "out")
                    os.makedirs(o, exist_ok=True)
                    env = dict(os.environ, OUT=o, CACHE_BENCH_HITS_ONLY="1",
                               CACHE_BENCH_THREADS=threads, CACHE_BENCH_BATCH=batch,
                               LD_LIBRARY_PATH=os.path.join(work, driver) + ":" +
                               os.path.join(work, "lib-" + label))
                    subprocess.run([bench], env=env, check=True, stdout=subprocess.DEVNULL)
                    with open(os.path.join(o, "cache_bench.json")) as f:
                        raw[label][driver].append(json.load(f))
        for label, _ in libs:
            result["libraries"][label] = {}
            for driver, rs in raw[label].items():
                med = {part: {k: round(statistics.median(r[part][k] for r in rs), 3) for k in keys}
                       for part, keys in FIGURES.items()}
                result["libraries"][label][driver] = {"median": med, "runs": rs}
    for label, _ in libs:
        for driver in ("noop", "noop_evict"):
            m = result["libraries"][label][driver]["median"]
            print(f"{label:>8s} {driver:10s} hit {m['hit']['cache_launch_ns']:7.1f} ns, exec launch "
                  f"{m['hit']['exec_launch_ns']:7.1f}, 1000 execs in turn "
                  f"{m['hit']['exec_cycle_launch_ns']:7.1f}: +{m['hit']['over_ns']:.1f} ns; "
                  f"{threads} threads: hit {m['threads']['ratio']:.2f}x, exec "
                  f"{m['threads']['exec_launch_ratio']:.2f}x, lookup {m['threads']['lookup_ratio']:.2f}x")
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        print("wrote", out)


if __name__ == "__main__":
    main()
