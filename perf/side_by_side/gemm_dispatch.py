"""gc_op_linear's GEMM dispatch, measured: graphcore's own kernels against
cuBLASLt per shape (the table compiled into the library), and graphcore's
op on the cuBLASLt path against the same cuBLASLt call made directly.

GPU time, not launch overhead: each side's calls are captured into a CUDA
graph (torch.cuda.graph; graphcore launches on PyTorch's capture stream),
the replays timed with CUDA events, median of `reps`; all sides of a cell
side by side in one run on one GPU. Per shape (m, n, k) and precision
(f32; TF32 = GC_LINEAR_TF32 / CUBLAS_COMPUTE_32F_FAST_TF32), bias + ReLU:

  graphcore   gc_op_linear with GC_LINEAR_GRAPHCORE (graphcore's kernels)
  op_lt       gc_op_linear with GC_LINEAR_CUBLASLT (cuBLASLt through the op)
  direct      cublasLtMatmul called here (ctypes): the same descriptors,
              epilogue RELU_BIAS, heuristic's first algorithm, no workspace
  direct_ws   the same with a 32 MiB workspace (what PyTorch gives cuBLASLt
              on Hopper), to show what graphcore's no-workspace choice costs
  torch       torch.nn.functional.linear + relu (TF32 per precision)

The winner of a cell is cuBLASLt where op_lt is faster than graphcore by
more than 1% (a tie keeps graphcore's kernels, which need no library).
`--write-table` rewrites kernels/src/ops/gemm_dispatch.txt from the
winners (then rebuild the library and commit the table with the JSON).

Run on the GPU machine (from the repository root):
  GRAPHCORE_CUBLASLT=<libcublasLt.so.N> python3 perf/side_by_side/gemm_dispatch.py [--quick] [--write-table]
(LIBGRAPHCORE names the library, default stage/lib/libgraphcore.so;
GRAPHCORE_CUBLASLT defaults to what scripts/find-cublaslt finds: the pip
wheel nvidia-cublas's library, or the CUDA toolkit's.) Writes $OUT/gemm_dispatch.json (or perf/results/) and prints
the table last.
"""
import ctypes as C
import datetime
import json
import os
import sys

import torch
import torch.nn.functional as F

from walltime import gpu_us


def find_cublaslt():
    """scripts/find-cublaslt's answer (the pip wheel's libcublasLt, or the
    CUDA toolkit's), if any."""
    import subprocess
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "scripts", "find-cublaslt")
    r = subprocess.run(["bash", script], capture_output=True, text=True)
    return r.stdout.strip() or None


if not os.environ.get("GRAPHCORE_CUBLASLT"):
    found = find_cublaslt()
    if found:
        os.environ["GRAPHCORE_CUBLASLT"] = found
LT_PATH = os.environ.get("GRAPHCORE_CUBLASLT") or "libcublasLt.so.12"

QUICK = "--quick" in sys.argv
WRITE = "--write-table" in sys.argv
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

lib = C.CDLL(os.environ.get("LIBGRAPHCORE", "stage/lib/libgraphcore.so"))
P, U64, U32, I = C.c_void_p, C.c_uint64, C.c_uint32, C.c_int
for name, args in {
    "gc_context_create": [I, C.POINTER(P)],
    "gc_stream_wrap": [P, P, C.POINTER(P)],
    "gc_stream_destroy": [P],
    "gc_op_linear": [P, P, P, P, P, U32, U32, U32, I],
    "gc_op_linear_backend": [P, U32, U32, U32, I, C.POINTER(I)],
    "gc_cublaslt_version": [C.POINTER(C.c_size_t)],
}.items():
    getattr(lib, name).argtypes = args
    getattr(lib, name).restype = I
lib.gc_last_error.restype = C.c_char_p
RELU, TF32, OWN, CUBLASLT = 1, 2, 4, 8


def ok(status):
    if status != 0:
        raise RuntimeError(lib.gc_last_error().decode())


ctx = P()
ok(lib.gc_context_create(0, C.byref(ctx)))
version = C.c_size_t()
if lib.gc_cublaslt_version(C.byref(version)) != 0:
    sys.exit("graphcore did not load cuBLASLt: %s (set GRAPHCORE_CUBLASLT)"
             % lib.gc_last_error().decode())


def gc_stream():
    s = P()
    ok(lib.gc_stream_wrap(ctx, P(torch.cuda.current_stream().cuda_stream), C.byref(s)))
    return s


# ----------------------------------------------------- cuBLASLt, called directly
lt = C.CDLL(LT_PATH)
for name, args in {
    "cublasLtCreate": [C.POINTER(P)],
    "cublasLtMatmulDescCreate": [C.POINTER(P), I, I],
    "cublasLtMatmulDescSetAttribute": [P, I, P, C.c_size_t],
    "cublasLtMatrixLayoutCreate": [C.POINTER(P), I, U64, U64, C.c_int64],
    "cublasLtMatmulPreferenceCreate": [C.POINTER(P)],
    "cublasLtMatmulPreferenceSetAttribute": [P, I, P, C.c_size_t],
    "cublasLtMatmulAlgoGetHeuristic": [P, P, P, P, P, P, P, I, P, C.POINTER(I)],
    "cublasLtMatmul": [P, P, P, P, P, P, P, P, P, P, P, P, P, P, C.c_size_t, P],
}.items():
    getattr(lt, name).argtypes = args
    getattr(lt, name).restype = I


class Heuristic(C.Structure):
    _fields_ = [("algo", C.c_uint64 * 8), ("workspace", C.c_size_t), ("state", I),
                ("waves", C.c_float), ("reserved", I * 4)]


def lt_ok(status, what):
    if status != 0:
        raise RuntimeError("%s: cublasStatus_t %d" % (what, status))


handle = P()
lt_ok(lt.cublasLtCreate(C.byref(handle)), "cublasLtCreate")
WS_BYTES = 32 << 20
workspace = torch.empty(WS_BYTES, dtype=torch.uint8, device="cuda")


def direct(y, x, w, b, m, n, k, tf32, ws):
    """y = relu(x W^T + b) as graphcore's vendor path plans it (A = W
    transposed, B = x, D = y column-major n x m, epilogue RELU_BIAS), with
    `ws` bytes of workspace; returns the call."""
    desc = P()
    lt_ok(lt.cublasLtMatmulDescCreate(C.byref(desc), 77 if tf32 else 68, 0), "desc")
    for attr, val in ((3, C.c_int32(1)), (4, C.c_int32(0)), (7, C.c_uint32(6)),
                      (8, C.c_uint64(b.data_ptr()))):
        lt_ok(lt.cublasLtMatmulDescSetAttribute(desc, attr, C.byref(val), C.sizeof(val)), "attr")
    lays = []
    for rows, cols, ld in ((k, n, k), (k, m, k), (n, m, n)):
        lay = P()
        lt_ok(lt.cublasLtMatrixLayoutCreate(C.byref(lay), 0, rows, cols, ld), "layout")
        lays.append(lay)
    pref = P()
    lt_ok(lt.cublasLtMatmulPreferenceCreate(C.byref(pref)), "pref")
    wsv = C.c_uint64(ws)
    lt_ok(lt.cublasLtMatmulPreferenceSetAttribute(pref, 1, C.byref(wsv), 8), "pref ws")
    for i in range(4):
        al = C.c_uint32(16)
        lt_ok(lt.cublasLtMatmulPreferenceSetAttribute(pref, 5 + i, C.byref(al), 4), "pref align")
    res, count = Heuristic(), I()
    lt_ok(lt.cublasLtMatmulAlgoGetHeuristic(handle, desc, lays[0], lays[1], lays[2], lays[2], pref,
                                            1, C.byref(res), C.byref(count)), "heuristic")
    if count.value == 0:
        raise RuntimeError("no algorithm")
    alpha, beta = C.c_float(1.0), C.c_float(0.0)
    keep = (desc, lays, pref, res, alpha, beta)

    def call():
        _ = keep
        lt_ok(lt.cublasLtMatmul(handle, desc, C.byref(alpha), P(w.data_ptr()), lays[0],
                                P(x.data_ptr()), lays[1], C.byref(beta), P(y.data_ptr()), lays[2],
                                P(y.data_ptr()), lays[2], C.byref(res.algo),
                                P(workspace.data_ptr()) if ws else None, ws,
                                P(torch.cuda.current_stream().cuda_stream)), "cublasLtMatmul")
    return call


def gc_linear(y, x, w, b, m, n, k, flags):
    def call():
        s = gc_stream()
        ok(lib.gc_op_linear(s, P(y.data_ptr()), P(x.data_ptr()), P(w.data_ptr()),
                            P(b.data_ptr()), m, n, k, flags))
        lib.gc_stream_destroy(s)
    return call


def backend(m, n, k, flags):
    s = gc_stream()
    out = I()
    ok(lib.gc_op_linear_backend(s, m, n, k, flags, C.byref(out)))
    lib.gc_stream_destroy(s)
    return "cublaslt" if out.value == 1 else "graphcore"


ROWS = [1, 16, 64, 256, 512, 1024, 2048] if QUICK else [1, 8, 32, 64, 128, 256, 384, 512, 768,
                                                        1024, 2048, 4096]
WIDTHS = ([(1024, 1024), (4096, 4096)] if QUICK else
          [(256, 256), (1024, 1024), (4096, 1024), (1024, 4096), (4096, 4096), (8192, 8192)])
cells = []
for tf32 in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    for n, k in WIDTHS:
        w = torch.randn(n, k, device="cuda") / k ** 0.5
        b = torch.randn(n, device="cuda")
        for m in ROWS:
            x = torch.randn(m, k, device="cuda")
            ys = [torch.empty(m, n, device="cuda") for _ in range(5)]
            flags = RELU | (TF32 if tf32 else 0)
            big = m * n * k >= 1 << 33
            inner, reps = (3, 9) if big else (20, 15)
            t = {
                "graphcore": gpu_us(gc_linear(ys[0], x, w, b, m, n, k, flags | OWN), inner, reps),
                "op_lt": gpu_us(gc_linear(ys[1], x, w, b, m, n, k, flags | CUBLASLT), inner, reps),
                "direct": gpu_us(direct(ys[2], x, w, b, m, n, k, tf32, 0), inner, reps),
                "direct_ws": gpu_us(direct(ys[3], x, w, b, m, n, k, tf32, WS_BYTES), inner, reps),
                "torch": gpu_us(lambda: torch.relu_(F.linear(x, w, b)), inner, reps),
            }
            ref = ys[0]
            worst = max(float((yy - ref).abs().max() / (ref.abs().max() + 1e-30)) for yy in ys[1:4])
            winner = "cublaslt" if t["op_lt"] < 0.99 * t["graphcore"] else "graphcore"
            cell = {"m": m, "n": n, "k": k, "tf32": tf32, "us": t, "winner": winner,
                    "dispatch_now": backend(m, n, k, flags),
                    "op_over_direct": t["op_lt"] / t["direct"],
                    "graphcore_over_lt": t["graphcore"] / t["op_lt"],
                    "chosen_over_torch": min(t["graphcore"], t["op_lt"]) / t["torch"],
                    "max_rel_diff": worst}
            cells.append(cell)
            print("%-5s m=%5d n=%5d k=%5d  gc %9.2f  op_lt %9.2f  direct %9.2f  ws %9.2f  torch %9.2f"
                  "  -> %s (now %s)" % ("tf32" if tf32 else "f32", m, n, k, t["graphcore"], t["op_lt"],
                                        t["direct"], t["direct_ws"], t["torch"], winner,
                                        cell["dispatch_now"]), flush=True)
            del x, ys
        del w, b
        torch.cuda.empty_cache()

props = torch.cuda.get_device_properties(0)
results = {
    "what": "gc_op_linear (bias + ReLU): graphcore's kernels vs cuBLASLt through the op vs "
            "cuBLASLt called directly (no workspace, and 32 MiB), vs torch; GPU us per call "
            "in a CUDA graph, median",
    "device": torch.cuda.get_device_name(0),
    "sms": props.multi_processor_count,
    "cublaslt": LT_PATH,
    "cublaslt_version": version.value,
    "torch": torch.__version__,
    "date": datetime.date.today().isoformat(),
    "quick": QUICK,
    "cells": cells,
    "op_over_direct_max": max(c["op_over_direct"] for c in cells),
}
out_dir = os.environ.get("OUT") or os.path.join(REPO, "perf", "results")
os.makedirs(out_dir, exist_ok=True)
with open(os.path.join(out_dir, "gemm_dispatch.json"), "w") as f:
    json.dump(results, f, indent=1)

if WRITE:
    table = os.path.join(REPO, "kernels", "src", "ops", "gemm_dispatch.txt")
    head = [line for line in open(table)
            if line.startswith("#") and not line.startswith("# measured:")]
    with open(table, "w") as f:
        f.writelines(head)
        f.write("# measured: %s, %s, cuBLASLt %d\n" % (results["device"], results["date"],
                                                      version.value))
        for c in cells:
            f.write("%d %d %d %d %s\n" % (c["m"], c["n"], c["k"], int(c["tf32"]), c["winner"]))
    print("wrote", table)

print()
print("%-5s %5s %5s %5s %10s %10s %10s %8s %8s %-9s %-9s" % (
    "prec", "m", "n", "k", "graphcore", "op_lt", "direct", "op/dir", "gc/lt", "winner", "now"))
for c in cells:
    print("%-5s %5d %5d %5d %10.2f %10.2f %10.2f %8.3f %8.3f %-9s %-9s" % (
        "tf32" if c["tf32"] else "f32", c["m"], c["n"], c["k"], c["us"]["graphcore"], c["us"]["op_lt"],
        c["us"]["direct"], c["op_over_direct"], c["graphcore_over_lt"], c["winner"],
        c["dispatch_now"]))
print("op_lt / direct, worst cell: %.3f (target <= 1.05)" % results["op_over_direct_max"])
