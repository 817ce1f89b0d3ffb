#!/usr/bin/env python3
"""graphcore's cache footprint per call, on the CPU alone (no GPU).

Each measured call runs between driver calls that, in a real driver, touch
far more code and data than an L1 cache holds: after one, graphcore's code
and data come back from L2 or further. So what a call costs past its
instructions is about how many distinct cache lines it touches. This counts
them: it builds the no-op driver with -DNOOP_EVICT (each working driver
call runs 40 KB of code and sweeps 48 KB of data) and runs
perf/footprint/footprint.c under callgrind's cache simulation (32 KB
L1i, 48 KB L1d), counting only inside the named entry points; graphcore's
L1 misses per call are then the lines it touched. Two iteration counts are
run and subtracted, so set-up and tear-down cancel out.

    python3 perf/footprint/footprint.py LABEL=LIBGRAPHCORE.so ... [-o OUT.json] [--ops=OP,OP]

Prints, per library and operation, graphcore's instructions, L1i misses
(code lines) and L1d read and write misses per call, the C library's and
loader's (__tls_get_addr, malloc), and the driver calls made per call
(each costs far more in a real driver: perf/c/driver_floor.c prices
them); with -o writes them as JSON.
Needs valgrind and cc; run from anywhere.
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# operation: (entry points measured, calls per iteration, what one call is)
OPS = {
    "build": (["gc_graph_add_kernel"], 100, "gc_graph_add_kernel, a chain's next node"),
    "capture": (["gc_launch"], 100, "gc_launch under capture"),
    "capture1": (["gc_capture_begin", "gc_launch", "gc_capture_end"], 1,
                 "a capture of one launch: begin, launch, end"),
    "checked_build": (["gc_graph_raw", "gc_function_raw"], 100,
                      "the checked lookups of a node added: gc_graph_raw and gc_function_raw"),
    "launch": (["gc_exec_launch"], 100, "gc_exec_launch of a one-node exec"),
    "build10": (["gc_graph_create", "gc_graph_add_kernel"], 1, "a 10-node chain built: create and 10 adds"),
    "instantiate": (["gc_graph_instantiate"], 1, "gc_graph_instantiate of a one-node graph"),
    "instantiate_captured": (["gc_graph_instantiate"], 1,
                             "gc_graph_instantiate of a captured one-node graph"),
    "update": (["gc_exec_update"], 2, "gc_exec_update of a captured one-node graph's exec to another such graph"),
    "cache_hit": (["gc_cache_launch"], 100,
                  "gc_cache_launch, a hit among 1000 entries (12-byte keys, one node each), each call another"),
    "cache_lookup": (["gc_cache_entry_info"], 100, "gc_cache_entry_info of those entries, each call another"),
    "launch_cycle": (["gc_exec_launch"], 100,
                     "gc_exec_launch of 1000 execs of one captured one-node graph, each call another"),
}
EVENTS = ("Ir", "I1mr", "D1mr", "D1mw")


def costs(path):
    """Exclusive costs per (object, function) of a callgrind output, and the
    calls made into the driver (libcuda), per driver function."""
    ev, ob, fn, skip = None, None, None, False
    cob, cfn = None, None  # the object and function of the next call
    names = {"ob": {}, "fn": {}}
    out = collections.defaultdict(collections.Counter)
    driver = collections.Counter()
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("events:"):
            ev = line.split()[1:]
            continue
        m = re.match(r"^(c?)(ob|fn|fl|fi|fe)=\((\d+)\)(?: (.*))?$", line)
        if m:
            called, kind, ident, name = m.groups()
            if kind in names:
                if name:
                    names[kind][ident] = name
                if not called:
                    if kind == "ob":
                        ob = names["ob"][ident]
                    else:
                        fn = names["fn"][ident]
                elif kind == "ob":
                    cob = names["ob"][ident]
                else:
                    cfn = names["fn"][ident]
            continue
        if line.startswith("calls="):
            skip = True  # the next cost line is the call's inclusive cost
            if group(cob or ob, "") == "driver":
                driver[cfn] += int(line.split("=")[1].split()[0])
            cob = None
            continue
        if ev and re.match(r"^([+-]\d+|\d+|\*)\s", line):
            if skip:
                skip = False
                continue
            for e, x in zip(ev, line.split()[1:]):
                out[(ob, fn)][e] += int(x)
    return out, driver


def group(ob, lib):
    """Which share an object's costs count toward (`lib`: graphcore's file,
    which the tools may name by its real path)."""
    if "libgraphcore" in (ob or "") or ob == os.path.realpath(lib):
        return "graphcore"
    if "libcuda" in (ob or ""):
        return "driver"
    return "libc and loader"


def measure(lib, op, work):
    """Per-call costs of `op` with library `lib`: totals per group,
    graphcore's functions, and the driver calls it makes."""
    entries, per, _ = OPS[op]
    libdir = os.path.join(work, "lib-" + str(abs(hash(lib))))
    os.makedirs(libdir, exist_ok=True)
    for name, target in (("libgraphcore.so.0", os.path.abspath(lib)),
                         ("libcuda.so.1", os.path.join(work, "libcuda.so.1"))):
        link = os.path.join(libdir, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(target, link)
    runs = {}
    for n in (20, 40) if per >= 100 else (200, 400):
        out = os.path.join(work, f"cg.{op}.{n}")
        cmd = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--I1=32768,8,64",
               "--D1=49152,12,64", "--LL=2097152,16,64", f"--callgrind-out-file={out}"]
        cmd += [f"--toggle-collect={e}" for e in entries]
        cmd += [os.path.join(work, "footprint"), op, str(n)]
        subprocess.run(cmd, env=dict(os.environ, LD_LIBRARY_PATH=libdir), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs[n] = costs(out)
    (n1, (a, da)), (n2, (b, db)) = sorted(runs.items())
    calls = (n2 - n1) * per
    diff = {k: {e: (b[k][e] - a[k][e]) / calls for e in EVENTS} for k in set(a) | set(b)}
    totals = {}
    for g in ("graphcore", "libc and loader"):
        totals[g] = {e: round(sum(v[e] for k, v in diff.items() if group(k[0], lib) == g), 1)
                     for e in EVENTS}
    top = sorted(((k[1], v) for k, v in diff.items() if group(k[0], lib) == "graphcore"),
                 key=lambda kv: -kv[1]["I1mr"])
    functions = [{"function": f, **{e: round(v[e], 1) for e in EVENTS}}
                 for f, v in top if v["I1mr"] >= 0.5]
    driver = {f: round((db[f] - da[f]) / calls, 2) for f in sorted(set(da) | set(db)) if db[f] != da[f]}
    return {"per_call": totals, "graphcore_functions": functions, "driver_calls": driver}


def main():
    args, out = sys.argv[1:], None
    only = [a for a in args if a.startswith("--ops=")]
    if only:
        args.remove(only[0])
        for op in [o for o in OPS if o not in only[0][6:].split(",")]:
            del OPS[op]
    if "-o" in args:
        i = args.index("-o")
        out = args[i + 1]
        del args[i:i + 2]
    libs = [a.split("=", 1) for a in args]
    if not libs or any(len(x) != 2 for x in libs):
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(["cc", "-O2", "-g", "-shared", "-fPIC", "-DNOOP_EVICT", "-o",
                        os.path.join(work, "libcuda.so.1"),
                        os.path.join(REPO, "perf/noop_driver/noop_cuda.c")], check=True)
        subprocess.run(["cc", "-std=c11", "-O2", "-I" + os.path.join(REPO, "include"),
                        os.path.join(HERE, "footprint.c"), "-o", os.path.join(work, "footprint"),
                        os.path.abspath(libs[0][1]), "-ldl", "-lm"], check=True)
        result = {"benchmark": "footprint",
                  "method": __doc__.split("\n\n")[1].replace("\n", " "),
                  "operations": {op: what for op, (_, _, what) in OPS.items()},
                  "libraries": {}}
        for label, lib in libs:
            result["libraries"][label] = {op: measure(lib, op, work) for op in OPS}
    print(f"{'operation':10s} " + " ".join(f"{l:>34s}" for l, _ in libs))
    print(f"{'':10s} " + " ".join(f"{'Ir  code lines  data r/w':>34s}" for _ in libs))
    for op in OPS:
        cells = []
        for label, _ in libs:
            t = result["libraries"][label][op]["per_call"]["graphcore"]
            cells.append(f"{t['Ir']:8.0f} {t['I1mr']:7.1f} {t['D1mr']:7.1f}/{t['D1mw']:<5.1f}")
        print(f"{op:10s} " + " ".join(f"{c:>34s}" for c in cells))
    print("driver calls per call (the no-op driver's)")
    for op in OPS:
        for label, _ in libs:
            d = result["libraries"][label][op]["driver_calls"]
            print(f"{op:10s} {label:>8s}: " + ", ".join(f"{f} {n:g}" for f, n in d.items()))
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        print("wrote", out)


if __name__ == "__main__":
    main()
