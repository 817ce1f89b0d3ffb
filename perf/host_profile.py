#!/usr/bin/env python3
"""Summarizes stage/bin/host_profile's samples (perf/c/host_profile.c)
into perf/results/host_profile.json: per phase, the ns per operation
and which share of the samples fell in graphcore, libcuda, the C library
and elsewhere, with graphcore's busiest functions.

    python3 perf/host_profile.py <host_profile.txt> <unstripped libgraphcore.so> [out.json]

The library must be the build the GPU machine ran, before stripping (the
staged one is `strip --strip-unneeded` of target/release/libgraphcore.so:
the same code at the same offsets), since the samples are offsets in it.
"""
import bisect
import collections
import json
import re
import statistics
import subprocess
import sys


def symbols(lib):
    """(sorted start offsets, names) of the library's code symbols."""
    out = subprocess.run(["nm", "-C", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), re.sub(r"::h[0-9a-f]{16}$", "", parts[2])))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def group(name):
    """The share a loaded object counts toward."""
    if "graphcore" in name:
        return "graphcore"
    if "libcuda" in name:
        return "libcuda"
    if re.match(r"libc[.-]", name):
        return "libc"
    return "other"


def main():
    prof, lib = sys.argv[1], sys.argv[2]
    dest = sys.argv[3] if len(sys.argv) > 3 else "perf/results/host_profile.json"
    starts, names = symbols(lib)

    def sym(off):
        i = bisect.bisect_right(starts, off) - 1
        return names[i] if i >= 0 else "?"

    objects, rounds, stacks, machine = {}, collections.defaultdict(list), collections.defaultdict(list), {}
    for line in open(prof):
        kind, _, rest = line.rstrip("\n").partition(" ")
        if kind == "M":
            date, driver, gpu = rest.split(" ", 2)
            machine = {"gpu": gpu, "cuda_driver_version": int(driver), "date": date}
        elif kind == "O":
            index, name = rest.split()[:2]
            objects[int(index)] = group(name.rsplit("/", 1)[-1])
        elif kind == "R":
            phase, _, _, ns = rest.split()
            rounds[phase].append(float(ns))
        elif kind == "S":
            count, phase, *frames = rest.split()
            stacks[phase].append((int(count), [(int(o), int(a, 16)) for o, a in
                                               (f.split(":") for f in frames)]))
    phases = {}
    for phase, ss in stacks.items():
        total = sum(c for c, _ in ss)
        share = collections.Counter()
        own = collections.Counter()
        for count, frames in ss:
            o, a = frames[0]
            g = objects.get(o, "other")
            share[g] += count
            if g == "graphcore":
                own[sym(a)] += count
        phases[phase] = {
            "ns_per_op_rounds": rounds[phase],
            "ns_per_op": statistics.median(rounds[phase]),
            "samples": total,
            "share": {g: round(share[g] / total, 4) for g in ("graphcore", "libcuda", "libc", "other")},
            "graphcore_top": [{"function": f[:120], "share": round(c / total, 4)} for f, c in own.most_common(8)],
        }
    result = {"benchmark": "host_profile", **machine,
              "method": "SIGPROF every 100 us (CLOCK_MONOTONIC timer aimed at the calling thread) during "
                        "loops of one operation each, raw CUDA and graphcore in turn, 3 rounds; the "
                        "interrupted program counter is attributed to the object it lies in (libc: the C "
                        "library, which the driver calls for memory and locks)",
              "phases": phases}
    with open(dest, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    for phase, p in phases.items():
        s = p["share"]
        print(f"{phase:12s} {p['ns_per_op']:8.1f} ns  graphcore {100 * s['graphcore']:5.1f}%  "
              f"libcuda {100 * s['libcuda']:5.1f}%  libc {100 * s['libc']:5.1f}%  other {100 * s['other']:5.1f}%")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
