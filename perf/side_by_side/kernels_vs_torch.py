"""graphcore's built-in kernels vs PyTorch on the same GPU, in one process.

GPU time, not launch overhead: each side's calls are captured into a CUDA
graph (torch.cuda.graph; graphcore launches on PyTorch's capture stream) and
the replays are timed with CUDA events. fp32 with TF32 off.

  1. elementwise at 256 MiB: bandwidth vs a device-to-device copy; the fused
     chain of 8 operations vs 1 operation;
  2. linear + bias + ReLU for M in {1, 8, 32, 64} and the MLP's layer shapes
     and 1024x1024, vs torch.nn.functional.linear + relu, with each as a
     fraction of the floor (bytes of W, x, y over the copy bandwidth);
  3. weight gradient + SGD for 1024x1024 at batch 64 vs torch.mm for dW plus
     torch.optim.SGD.step();
  4. the linear layer's GEMM for M >= 256 (gc_op_linear, bias, no ReLU) vs
     cuBLAS through torch.addmm, TF32 off (SGEMM) and, with GC_LINEAR_TF32,
     vs TF32 on; plus each GEMM kernel tile launched by hand
     (gc_kernel_builtin + gc_launch) on the same shapes, to show what the
     launcher's tile rule leaves.

Run on the GPU machine: python3 perf/side_by_side/kernels_vs_torch.py
(LIBGRAPHCORE names the library; default stage/lib/libgraphcore.so).
Writes $OUT/kernels_vs_torch.json and prints a table last.
"""
import ctypes as C
import json
import os

import torch
import torch.nn.functional as F

from walltime import gpu_us

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

lib = C.CDLL(os.environ.get("LIBGRAPHCORE", "stage/lib/libgraphcore.so"))
P, U64, U32, F32, I = C.c_void_p, C.c_uint64, C.c_uint32, C.c_float, C.c_int
SIGS = {
    "gc_context_create": [I, C.POINTER(P)],
    "gc_stream_wrap": [P, P, C.POINTER(P)],
    "gc_stream_destroy": [P],
    "gc_op_copy": [P, P, P, U64],
    "gc_op_scale": [P, P, P, U64, F32],
    "gc_op_add": [P, P, P, P, U64],
    "gc_op_chain": [P, P, P, U64, P, U32],
    "gc_op_linear": [P, P, P, P, P, U32, U32, U32, I],
    "gc_op_linear_weight_sgd": [P, P, P, P, U32, U32, U32, F32],
    "gc_kernel_builtin": [P, C.c_char_p, C.POINTER(P)],
}
for name, args in SIGS.items():
    getattr(lib, name).argtypes = args
    getattr(lib, name).restype = I
lib.gc_last_error.restype = C.c_char_p


def ok(status):
    if status != 0:
        raise RuntimeError(lib.gc_last_error().decode())


ctx = P()
ok(lib.gc_context_create(0, C.byref(ctx)))


class ChainOp(C.Structure):
    _fields_ = [("op", C.c_uint32), ("value", C.c_float)]


def gc_stream():
    """The current PyTorch stream, borrowed by graphcore."""
    s = P()
    ok(lib.gc_stream_wrap(ctx, P(torch.cuda.current_stream().cuda_stream), C.byref(s)))
    return s


def gc(fn_name, *args):
    """A graphcore op on PyTorch's current stream (the capture stream while
    capturing)."""
    def call():
        s = gc_stream()
        ok(getattr(lib, fn_name)(s, *args))
        lib.gc_stream_destroy(s)
    return call


def ptr(t):
    return P(t.data_ptr())


results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
rows = []

# 1. Elementwise at 256 MiB.
n = 64 * 1024 * 1024
x = torch.randn(n, device="cuda")
y = torch.empty_like(x)
z = torch.empty_like(x)
copy_us = gpu_us(lambda: y.copy_(x), inner=5, reps=9)
bw = 2 * n * 4 / (copy_us * 1e-6)
results["copy_bandwidth_GBps"] = bw / 1e9
elem = {}
for name, fn, bytes_ in [
    ("copy", gc("gc_op_copy", ptr(y), ptr(x), n), 2 * n * 4),
    ("scale", gc("gc_op_scale", ptr(y), ptr(x), n, 2.0), 2 * n * 4),
    ("add", gc("gc_op_add", ptr(z), ptr(x), ptr(y), n), 3 * n * 4),
]:
    us = gpu_us(fn, inner=5, reps=9)
    elem[name] = {"us": us, "fraction_of_copy_bw": bytes_ / (us * 1e-6) / bw}
for count in (1, 8):
    ops = (ChainOp * 8)(*[ChainOp(2 if i % 2 == 0 else 3, 1.0001) for i in range(8)])
    us = gpu_us(gc("gc_op_chain", ptr(y), ptr(x), n, C.cast(ops, P), count), inner=5, reps=9)
    elem[f"chain_{count}"] = {"us": us, "fraction_of_copy_bw": 2 * n * 4 / (us * 1e-6) / bw}
results["elementwise_256MiB"] = elem
del x, y, z
torch.cuda.empty_cache()

# 2. Linear + bias + ReLU.
lin = []
for k, nn in [(1024, 512), (512, 256), (256, 10), (1024, 1024)]:
    w = torch.randn(nn, k, device="cuda") / k ** 0.5
    b = torch.randn(nn, device="cuda")
    for m in (1, 8, 32, 64):
        xx = torch.randn(m, k, device="cuda")
        out = torch.empty(m, nn, device="cuda")
        ok_call = gc("gc_op_linear", ptr(out), ptr(xx), ptr(w), ptr(b), m, nn, k, 1)
        ok_call()
        torch.cuda.synchronize()
        ref = F.relu(F.linear(xx.double(), w.double(), b.double()))
        err = ((out.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()
        t_gc = gpu_us(ok_call)
        t_torch = gpu_us(lambda: F.relu(F.linear(xx, w, b)))
        floor_us = (m * k + nn * k + m * nn + nn) * 4 / bw * 1e6
        lin.append({"m": m, "k": k, "n": nn, "graphcore_us": t_gc, "torch_us": t_torch,
                    "speedup": t_torch / t_gc, "floor_us": floor_us,
                    "graphcore_floor_fraction": floor_us / t_gc, "rel_err_vs_fp64": err})
results["linear_bias_relu"] = lin

# 3. Weight gradient + SGD, 1024x1024, batch 64.
m, k, nn, lr = 64, 1024, 1024, 1e-3
X = torch.randn(m, k, device="cuda")
dY = torch.randn(m, nn, device="cuda")
W = torch.randn(nn, k, device="cuda", requires_grad=True)
W.grad = torch.zeros_like(W)
opt = torch.optim.SGD([W], lr=lr)
Wg = W.detach().clone()


def torch_step():
    torch.mm(dY.t(), X, out=W.grad)
    opt.step()


t_torch = gpu_us(torch_step)
t_gc = gpu_us(gc("gc_op_linear_weight_sgd", ptr(Wg), ptr(dY), ptr(X), m, nn, k, lr))
results["weight_grad_sgd_1024x1024_b64"] = {"graphcore_us": t_gc, "torch_us": t_torch,
                                           "speedup": t_torch / t_gc}

# 4. GEMM, M >= 256, vs cuBLAS (f32 and TF32).
class Dim3(C.Structure):
    _fields_ = [("x", C.c_uint32), ("y", C.c_uint32), ("z", C.c_uint32)]


lib.gc_launch.argtypes = [P, P, Dim3, Dim3, U32, C.POINTER(P)]
lib.gc_launch.restype = I
GC_LINEAR_TF32 = 2


def gpu_us_adaptive(fn):
    """gpu_us with the calls per graph and replays scaled to the call's
    time (about 2 ms a graph, 5 timed replays)."""
    fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    fn()
    b.record()
    b.synchronize()
    est = max(a.elapsed_time(b) * 1000.0, 1.0)
    return gpu_us(fn, inner=int(min(20, max(1, 2000 / est))), reps=5)


def builtin(name):
    f = P()
    ok(lib.gc_kernel_builtin(ctx, name.encode(), C.byref(f)))
    return f


GEMM_KERNELS = {  # (entry, tile) -> block tile (rows, columns)
    ("gc_gemm_f32", 0): (128, 128), ("gc_gemm_f32", 1): (64, 64), ("gc_gemm_f32", 2): (32, 32),
    ("gc_gemm_wide_f32", 0): (128, 256), ("gc_gemm_wide_f32", 1): (128, 128),
    ("gc_gemm_wide_f32", 2): (64, 64), ("gc_gemm_128x256_f32", 0): (128, 256),
    ("gc_gemm_mid_f32", 0): (64, 128),
    ("gc_gemm_tf32", 0): (128, 128), ("gc_gemm_tf32", 1): (64, 64),
}
functions = {name: builtin(name) for name, _ in GEMM_KERNELS}


def gemm_launch(name, tile, out, xx, w, b, m, nn, k):
    """C = x . W^T + b by kernel `name` with `tile`, on the current stream."""
    tm, tn = GEMM_KERNELS[(name, tile)]
    vals = [C.c_uint64(out.data_ptr()), C.c_uint64(xx.data_ptr()), C.c_uint64(w.data_ptr()),
            C.c_uint64(b.data_ptr())] + [C.c_uint32(v) for v in (m, nn, k, k, k, nn, 2)] + \
        [C.c_float(1.0), C.c_float(0.0), C.c_uint32(tile)]
    argv = (P * len(vals))(*[C.cast(C.pointer(v), P) for v in vals])
    grid = Dim3(((m + tm - 1) // tm) * ((nn + tn - 1) // tn), 1, 1)

    def call():
        s = gc_stream()
        ok(lib.gc_launch(functions[name], s, grid, Dim3(256, 1, 1), 0, argv))
        lib.gc_stream_destroy(s)
    call.keep = (vals, argv)
    return call


gemm = []
for m in (256, 512, 1024, 2048, 4096):
    for k, nn in [(1024, 1024), (1024, 4096), (4096, 1024), (4096, 4096), (1024, 512)]:
        xx = torch.rand(m, k, device="cuda") * 2 - 1
        w = (torch.rand(nn, k, device="cuda") * 2 - 1) / k ** 0.5
        b = torch.rand(nn, device="cuda")
        out = torch.empty(m, nn, device="cuda")
        ref = torch.addmm(b.double(), xx.double(), w.double().t())
        mag = torch.addmm(b.double().abs(), xx.double().abs(), w.double().abs().t())
        row = {"m": m, "k": k, "n": nn}
        for tf32 in (False, True):
            key = "tf32" if tf32 else "f32"
            torch.backends.cuda.matmul.allow_tf32 = tf32
            row[f"cublas_{key}_us"] = gpu_us_adaptive(lambda: torch.addmm(b, xx, w.t(), out=out))
            call = gc("gc_op_linear", ptr(out), ptr(xx), ptr(w), ptr(b), m, nn, k,
                      GC_LINEAR_TF32 if tf32 else 0)
            out.fill_(float("nan"))
            call()
            torch.cuda.synchronize()
            row[f"graphcore_{key}_err"] = ((out.double() - ref).abs() / mag).max().item()
            row[f"graphcore_{key}_us"] = gpu_us_adaptive(call)
            row[f"ratio_{key}"] = row[f"graphcore_{key}_us"] / row[f"cublas_{key}_us"]
        torch.backends.cuda.matmul.allow_tf32 = False
        tiles = {}
        for (name, tile), (tm, tn) in GEMM_KERNELS.items():
            if tile == 2 and name == "gc_gemm_f32" and m * nn > 512 * 1024:
                continue  # the split-K tile is for small outputs
            call = gemm_launch(name, tile, out, xx, w, b, m, nn, k)
            out.fill_(float("nan"))
            call()
            torch.cuda.synchronize()
            err = ((out.double() - ref).abs() / mag).max().item()
            tiles[f"{name}:{tile}"] = {"us": gpu_us_adaptive(call), "err": err}
        row["tiles"] = tiles
        gemm.append(row)
        del xx, w, b, out, ref, mag
torch.cuda.empty_cache()
results["gemm_vs_cublas"] = gemm

out_dir = os.environ.get("OUT", ".")
with open(os.path.join(out_dir, "kernels_vs_torch.json"), "w") as f:
    json.dump(results, f, indent=1)

print(f"device: {results['device']}, torch {results['torch']}, copy bandwidth {bw / 1e9:.0f} GB/s")
print("elementwise at 256 MiB (fraction of copy bandwidth):")
for name, e in elem.items():
    print(f"  {name:9s} {e['us']:9.1f} us  {e['fraction_of_copy_bw']:.2f}")
print("linear + bias + ReLU (GPU time per call):")
print(f"  {'M':>3} {'K':>5} {'N':>5} {'graphcore':>10} {'torch':>10} {'speedup':>8} {'floor':>8} {'of floor':>8} {'rel err':>9}")
for r in lin:
    print(f"  {r['m']:3d} {r['k']:5d} {r['n']:5d} {r['graphcore_us']:8.2f}us {r['torch_us']:8.2f}us "
          f"{r['speedup']:7.2f}x {r['floor_us']:6.2f}us {r['graphcore_floor_fraction']:7.2f} {r['rel_err_vs_fp64']:9.1e}")
w = results["weight_grad_sgd_1024x1024_b64"]
print(f"weight grad + SGD 1024x1024 b64: graphcore {w['graphcore_us']:.2f} us, torch {w['torch_us']:.2f} us, "
      f"{w['speedup']:.2f}x")
print("linear GEMM (x . W^T + b) vs cuBLAS, us; ratio = graphcore / cuBLAS (target <= 1.25 for f32);"
      " best hand-launched tile:")
print(f"  {'M':>4} {'K':>5} {'N':>5} {'cuBLAS':>8} {'gc f32':>8} {'ratio':>6} {'best tile':>22} {'err':>8} |"
      f" {'cuBLAS tf32':>11} {'gc tf32':>8} {'ratio':>6} {'err':>8}")
for r in gemm:
    f32 = {t: v for t, v in r["tiles"].items() if "tf32" not in t}
    best = min(f32, key=lambda t: f32[t]["us"])
    print(f"  {r['m']:4d} {r['k']:5d} {r['n']:5d} {r['cublas_f32_us']:8.1f} {r['graphcore_f32_us']:8.1f} "
          f"{r['ratio_f32']:6.2f} {best:>15} {f32[best]['us']:6.1f} {r['graphcore_f32_err']:8.1e} | "
          f"{r['cublas_tf32_us']:11.1f} {r['graphcore_tf32_us']:8.1f} {r['ratio_tf32']:6.2f} "
          f"{r['graphcore_tf32_err']:8.1e}")
print("  all tiles (us): " + "; ".join(
    f"{r['m']}x{r['k']}x{r['n']}: " + " ".join(f"{t.replace('gc_gemm_', '')}={v['us']:.1f}"
                                              for t, v in r["tiles"].items()) for r in gemm))
