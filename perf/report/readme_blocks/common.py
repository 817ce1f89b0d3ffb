"""What every block shares: where the results are, loading them, and the
formatting of figures and prose."""

import json
import re
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RESULTS = REPO / "perf" / "results"
# An H100's f32 multiplications per second, in T (its data sheet's FP32
# rate, one multiplication per FMA).
H100_FP32_T = 33


def load(name):
    return json.loads((RESULTS / name).read_text())


def n0(x):
    """An integer with thousands separators: 126,036."""
    return f"{round(x):,}"


def times(x, digits=1):
    return f"{x:.{digits}f}\u00d7"


def verdict(ok, met="", missed="**missed**"):
    return met if ok else missed


def prose(text):
    """A README paragraph: `text` wrapped at 76 columns, words and hyphenated
    names kept whole."""
    return textwrap.fill(text, 76, break_long_words=False, break_on_hyphens=False)


# The mark of a table cell that comes from a GC_CELLS rerun.
DAGGER = " \u2020"


def rerun_cells(sweep, cells_name, key):
    """The sweep rows with the rows of `cells_name` (a GC_CELLS rerun, when
    the file exists) in place of the ones with the same `key`; those carry
    "rerun": True. Returns (rows, the rerun file or None, the rows replaced)."""
    if not (RESULTS / cells_name).exists():
        return sweep, None, []
    cells = load(cells_name)
    new = {key(r): dict(r, rerun=True) for r in cells["sweep"] if "error" not in r}
    return [new.get(key(r), r) for r in sweep], cells, [r for r in sweep if key(r) in new]


def rerun_note(cells, cells_name, replaced, label):
    """The footnote of a table whose cells marked \u2020 come from a rerun."""
    if not cells:
        return []
    was = ", ".join(f"{label(r)} {r['speedup']:.2f}\u00d7" for r in replaced)
    return ["", prose(
        f"\u2020 Rerun on {cells['date']} ({cells_name}, {cells['device']}, PyTorch beside graphcore in that "
        f"run): {cells['why']} Those cells of the full sweep read {was}. `GC_CELLS={cells['cells']} python3 "
        f"perf/side_by_side/{Path(cells_name).name.replace('_cells.json', '.py')}` reruns them."
    )]


def library():
    """The built C library whose exports the figures count:
    $GC_LIB_DIR/libgraphcore.so, else target/debug/libgraphcore.so."""
    import os
    lib = Path(os.environ.get("GC_LIB_DIR", REPO / "target" / "debug")) / "libgraphcore.so"
    if not lib.exists():
        raise SystemExit(f"readme_results: no {lib}: build it first (cargo build -p graphcore-ffi)")
    return lib


def exports():
    """The functions libgraphcore.so exports: its defined dynamic symbols
    named gc_* (`nm -D --defined-only`), taken from the library itself."""
    import subprocess
    out = subprocess.run(["nm", "-D", "--defined-only", str(library())],
                         check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "T" and parts[2].startswith("gc_"):
            names.add(parts[2])
    if not names:
        raise SystemExit(f"readme_results: nm found no gc_* function in {library()}")
    return names


def covered():
    """Functions the bad-input suite covers: a COVER(...) section of
    tests/c/bad_input.c each, or (the map ops, declared once in the kernel
    table) an entry of the generated tests/c/map_ops.h it runs them all from."""
    text = (REPO / "tests" / "c" / "bad_input.c").read_text()
    names = set(re.findall(r"\bCOVER\((gc_\w+)\)", text))
    map_ops = REPO / "tests" / "c" / "map_ops.h"
    if map_ops.exists():
        names.update(re.findall(r'\{"(gc_\w+)", map_\w+\}', map_ops.read_text()))
    return names


def suite_counts():
    return json.loads((REPO / "tests" / "counts.json").read_text())
