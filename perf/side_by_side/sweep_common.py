"""What the MLP and training sweeps share (mlp_vs_torch.py, train_vs_torch.py):
the sweep's shape (widths up to 8192, batches up to 2048, fp32 and TF32, or
the --quick subset), a timer whose iterations fit a time budget (so a cell
of 8192 x 2048 takes seconds, not minutes), each cell's winner (a tie within
3%), the GEMM dispatch's choice per cell, and progress lines.

The dispatch's choice is read through gc.op_linear_backend where the
package has it; where it does not (a library from before the vendor GEMM)
or the query fails, the choice is "graphcore" (graphcore's own kernels are
what runs then)."""
import os
import sys
import time

import torch

from walltime import median_us

# --quick (or GC_QUICK=1): a subset that runs in a minute or two.
QUICK = os.environ.get("GC_QUICK") == "1" or "--quick" in sys.argv[1:]
WIDTHS = (256, 1024) if QUICK else (256, 1024, 4096, 8192)
BATCHES = (1, 32, 256) if QUICK else (1, 8, 32, 64, 128, 256, 512, 1024, 2048)
PRECISIONS = ("fp32", "tf32")
# A cell within 3% either way is a tie.
TIE = 0.03
# Which GEMM dispatch table the library used (for the JSON).
GEMM_TABLE = os.environ.get("GRAPHCORE_GEMM_TABLE") or "compiled in"


def set_torch_precision(precision):
    """PyTorch's matmuls in fp32 or TF32 (set before capturing its graph)."""
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def timed_us(fn, budget_ms=40.0, reps=5, most=200, least=3):
    """median_us with as many back-to-back calls per repetition as fit
    `budget_ms` (at least `least`, at most `most`), estimated from one
    synchronized call after a warm-up call."""
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one_ms = (time.perf_counter() - t) * 1e3
    iters = int(max(least, min(most, budget_ms / max(one_ms, 1e-3))))
    return median_us(fn, iters=iters, reps=reps)


def winner(torch_us, graphcore_us):
    """"graphcore", "torch" or "tie" (within TIE of each other)."""
    ratio = torch_us / graphcore_us
    if abs(ratio - 1.0) <= TIE:
        return "tie"
    return "graphcore" if ratio > 1.0 else "torch"


def backend_of(stream, m, n, k, flags):
    """The GEMM op_linear's dispatch runs for (m, n, k, flags):
    "cublaslt" or "graphcore" (also where the query is missing or fails)."""
    query = getattr(__import__("graphcore"), "op_linear_backend", None)
    if query is None:
        return "graphcore"
    try:
        choice = query(stream, m, n, k, flags)
    except Exception:  # noqa: BLE001 - a failed query: graphcore's kernels run
        return "graphcore"
    cublaslt = getattr(__import__("graphcore"), "LINEAR_BACKEND_CUBLASLT", 1)
    return "cublaslt" if choice == cublaslt else "graphcore"


def dispatch_of(stream, shapes):
    """The dispatch's choice over the GEMMs of a cell, `shapes` being
    (m, n, k, flags) each: "graphcore", "cublaslt", or "cublaslt i/n"
    where only i of the n take it."""
    picks = [backend_of(stream, *s) for s in shapes]
    lt = picks.count("cublaslt")
    if lt == 0:
        return "graphcore"
    return "cublaslt" if lt == len(picks) else "cublaslt %d/%d" % (lt, len(picks))


class Progress:
    """One line per cell: its number, the elapsed time and the cell."""

    def __init__(self, total, name):
        self.total, self.name, self.done, self.t0 = total, name, 0, time.perf_counter()

    def cell(self, row):
        self.done += 1
        spent = time.perf_counter() - self.t0
        left = spent / self.done * (self.total - self.done)
        keys = ("precision", "kind", "width", "layers", "batch", "speedup", "winner", "dispatch", "error")
        what = " ".join("%s=%s" % (k, ("%.2f" % row[k]) if isinstance(row.get(k), float) else row[k])
                        for k in keys if k in row)
        print("[%s %d/%d, %.0f s, ~%.0f s left] %s" % (self.name, self.done, self.total, spent, left, what),
              flush=True)
