#!/usr/bin/env python3
"""Writes the README's figures from the files that hold them.

Every block of README.md, docs/results.md and docs/reliability.md between
``<!-- results:begin NAME -->`` and ``<!-- results:end -->`` is generated
here (each block in one of the files), from

  - perf/results/*.json (the benchmark run on the GPU machine, written by
    ``bash stage/bench.sh``) and the first line of perf/results/bench_log.txt
    (the device and driver of that run);
  - the built library: the gc_* functions libgraphcore.so exports (``nm -D``
    on $GC_LIB_DIR/libgraphcore.so, else target/debug's: build it first);
  - the ``COVER(...)`` sections of tests/c/bad_input.c;
  - tests/counts.json, which the suite checks against its own run
    (tests/c_abi.rs, ``bad_input``: GC_BLESS=1 rewrites it);
  - perf/logs/fresh-make-test.log, the transcript of `make test` run from fresh
    clones (its "# run N: ..." and "wall time" lines).

    python3 perf/report/readme_results.py          # rewrite them (make readme-results)
    python3 perf/report/readme_results.py --check  # exit 1 with a diff if any differs
                                                   # (make results-check, run by CI)

Python 3 only, no packages. The blocks are written by the modules of
perf/report/readme_blocks/, one per subject (BLOCKS below maps each block's name
to its function). Targets (the issues' goals) are constants there; whether
each is met is computed from the figures.
"""

import argparse
import difflib
import fnmatch
import re
import sys

from readme_blocks.common import REPO
from readme_blocks.house import (
    block_reliability,
    block_gpu_run,
    block_device,
    block_fresh_make_test,
    block_multi_gpu,
)
from readme_blocks.host import (
    block_pool,
    block_graphs,
    block_simple_graphs,
    block_perf_scaling,
    block_call_breakdown,
    block_host_profile,
    block_launch_bind,
    block_build_paths,
    block_capture_bind,
    block_checked_floor,
    block_lazy_build,
    block_footprint,
    block_h100_instantiate,
)
from readme_blocks.kernels import (
    block_kernels,
    block_gemm,
    block_programs,
    block_mlp,
    block_train_sweep,
    block_small_traffic,
)
from readme_blocks.features import block_fusion, block_args, block_control, block_pdl
from readme_blocks.machines import block_h100, block_h200
from readme_blocks.headline import block_headline
from readme_blocks.torch import block_torch
from readme_blocks.cache import block_cache


README = REPO / "README.md"
# The files whose blocks are generated: each block is in exactly one.
DOCS = (README, REPO / "docs" / "results.md", REPO / "docs" / "reliability.md")
BLOCK = re.compile(
    r"(<!-- results:begin (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- results:end -->)", re.S
)


BLOCKS = {
    "headline": block_headline,
    "multi-gpu": block_multi_gpu,
    "pdl": block_pdl,
    "args": block_args,
    "control": block_control,
    "fresh-make-test": block_fresh_make_test,
    "reliability": block_reliability,
    "device": block_device,
    "h100": block_h100,
    "h100-instantiate": block_h100_instantiate,
    "h200": block_h200,
    "gpu-run": block_gpu_run,
    "pool": block_pool,
    "graphs": block_graphs,
    "perf-scaling": block_perf_scaling,
    "footprint": block_footprint,
    "launch-bind": block_launch_bind,
    "build-paths": block_build_paths,
    "capture-bind": block_capture_bind,
    "checked-floor": block_checked_floor,
    "lazy-build": block_lazy_build,
    "small-traffic": block_small_traffic,
    "simple-graphs": block_simple_graphs,
    "call-breakdown": block_call_breakdown,
    "host-profile": block_host_profile,
    "kernels": block_kernels,
    "gemm": block_gemm,
    "programs": block_programs,
    "mlp": block_mlp,
    "train-sweep": block_train_sweep,
    "fusion": block_fusion,
    "torch": block_torch,
    "cache": block_cache,
}


def render(text, seen):
    """`text` with each of its blocks generated anew; the names met go to
    `seen`."""

    def one(m):
        name = m.group("name")
        if name not in BLOCKS:
            sys.exit(f"readme_results: unknown block {name!r}")
        seen.append(name)
        return m.group(1) + BLOCKS[name]() + "\n" + m.group(4)

    return BLOCK.sub(one, text)


def unlisted_results():
    """The files of perf/results/ that perf/README.md's Results table does
    not name (by path or by a `*` pattern), and the plain names it gives
    that are not there."""
    readme = (REPO / "perf" / "README.md").read_text()
    table = readme[readme.index("\n## Results"):]
    names = re.findall(r"`([^`\s]+\.(?:json|txt|png))`", table)
    results = REPO / "perf" / "results"
    files = sorted(str(f.relative_to(results)) for f in results.rglob("*") if f.is_file())
    unnamed = [f for f in files if not any(fnmatch.fnmatchcase(f, n) for n in names)]
    gone = [n for n in names if "*" not in n and n not in files]
    return unnamed, gone


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = ap.parse_args()
    seen, stale = [], False
    for path in DOCS:
        text = path.read_text()
        new = render(text, seen)
        name = path.relative_to(REPO)
        if args.check:
            if new != text:
                sys.stdout.writelines(
                    difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(name), "generated")
                )
                stale = True
        elif new != text:
            path.write_text(new)
            print(f"{name}: figures rewritten")
        else:
            print(f"{name}: figures unchanged")
    missing = sorted(set(BLOCKS) - set(seen))
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if missing or twice:
        sys.exit(f"readme_results: blocks missing {missing}, blocks written twice {twice}")
    unnamed, gone = unlisted_results()
    if unnamed or gone:
        sys.exit(f"readme_results: perf/README.md's Results table does not name {unnamed}; "
                 f"it names files perf/results/ lacks: {gone}")
    if args.check:
        if stale:
            print("generated figures are stale: run `make readme-results`", file=sys.stderr)
            return 1
        print("the figures of " + ", ".join(str(p.relative_to(REPO)) for p in DOCS)
              + " match perf/results, the library and the suite's counts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
