"""cuBLAS (through torch.addmm) on harness.cu's shapes, TF32 off and on, then
the comparison: per shape the fastest f32 and TF32 kernel or variant and its
time over cuBLAS's, and every variant's ratio.

    python3 perf/gemm_harness/torch_ref.py harness.txt
"""
import sys, collections
import torch
import torch.nn.functional as F
from graph_timer import time_fn


res = {}
for M in [256, 512, 1024, 2048, 4096]:
    for K, N in [(1024, 1024), (1024, 4096), (4096, 1024), (4096, 4096), (1024, 512)]:
        x = torch.rand(M, K, device="cuda") * 2 - 1
        w = (torch.rand(N, K, device="cuda") * 2 - 1) / 32
        b = torch.rand(N, device="cuda")
        ref = F.linear(x.double(), w.double(), b.double())
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            y = torch.empty(M, N, device="cuda")
            us = time_fn(lambda: torch.addmm(b, x, w.t(), out=y))
            err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
            res[(M, K, N, tf32)] = us
            print(f"TORCH {M} {K} {N} {'tf32' if tf32 else 'f32'} {us:.2f} {err:.3g}", flush=True)

ours = collections.defaultdict(dict)
errs = {}
for line in open(sys.argv[1]):
    p = line.split()
    if p and p[0] == "RES":
        M, K, N = map(int, p[1:4]); ours[(M, K, N)][p[4]] = float(p[5]); errs[(M, K, N, p[4])] = float(p[6])
    if p and p[0] == "EDGE" and float(p[5]) > (1e-5 if p[4].startswith(("f", "ship")) else 4e-3):
        print("EDGE FAIL", line.strip())
bad = [(k, e) for k, e in errs.items() if e > (1e-5 if k[3].startswith(("f", "ship")) else 4e-3)]
print("numerics failures:", bad[:20])
names = sorted({n for d in ours.values() for n in d})
print("\nM K N | cublas_f32 best_f32 (name) ratio ship_best | cublas_tf32 best_tf32 (name) ratio")
for key in sorted(ours):
    d = ours[key]
    f = {n: v for n, v in d.items() if n.startswith(("f", "ship"))}
    t = {n: v for n, v in d.items() if n.startswith("t")}
    bf = min(f, key=f.get); bt = min(t, key=t.get)
    sb = min(v for n, v in d.items() if n.startswith("ship"))
    cf, ct = res[key + (False,)], res[key + (True,)]
    print(f"{key[0]} {key[1]} {key[2]} | {cf:.1f} {f[bf]:.1f} ({bf}) {f[bf]/cf:.2f}x {sb/cf:.2f}x | {ct:.1f} {t[bt]:.1f} ({bt}) {t[bt]/ct:.2f}x")
print("\nper variant, time / cuBLAS same precision:")
print("M K N " + " ".join(names))
for key in sorted(ours):
    d = ours[key]
    print(f"{key[0]} {key[1]} {key[2]} " + " ".join(
        f"{d[n] / res[key + (n.startswith('t'),)]:.2f}" if n in d else "-" for n in names))
