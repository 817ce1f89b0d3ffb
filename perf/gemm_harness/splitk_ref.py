"""cuBLAS (torch.addmm, TF32 off) on splitk.cu's shapes, then the comparison
with splitk.cu's output: per shape every kernel's time and its ratio to
cuBLAS, the fastest cluster variant, and the numerics and bitwise checks.

    python3 perf/gemm_harness/splitk_ref.py torch [quick] > torch.txt
    python3 perf/gemm_harness/splitk_ref.py compare splitk.txt torch.txt
"""
import sys, collections

from graph_timer import time_fn

SHAPES = [(64, 4096, 4096), (128, 4096, 4096), (256, 4096, 4096), (32, 4096, 4096),
          (64, 1024, 1024), (128, 1024, 1024), (512, 1024, 512), (64, 1024, 4096), (64, 4096, 1024)]
# `splitk quick`'s shapes (M, K, N): 33-64 rows with 2^24 weights.
QUICK = [(64, 4096, 4096), (56, 4096, 4096), (48, 4096, 4096), (40, 4096, 4096), (33, 4096, 4096),
         (64, 2048, 8192), (64, 8192, 2048)]


def torch_times(shapes):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for M, K, N in shapes:
        x = torch.rand(M, K, device="cuda") * 2 - 1
        w = (torch.rand(N, K, device="cuda") * 2 - 1) / 32
        b = torch.rand(N, device="cuda")
        y = torch.empty(M, N, device="cuda")
        us = time_fn(lambda: torch.addmm(b, x, w.t(), out=y))
        print(f"TORCH {M} {K} {N} {us:.2f}", flush=True)


def compare(ours_path, torch_path):
    cub = {}
    for line in open(torch_path):
        p = line.split()
        if p and p[0] == "TORCH":
            cub[tuple(map(int, p[1:4]))] = float(p[4])
    res = collections.defaultdict(dict)
    bad = []
    for line in open(ours_path):
        p = line.split()
        if not p:
            continue
        if p[0] == "RES":
            key = tuple(map(int, p[1:4]))
            res[key][p[4]] = float(p[5])
            if float(p[6]) > 1e-5 or p[7] != "1":
                bad.append(line.strip())
        elif p[0] == "EDGE" and (float(p[5]) > 1e-5 or p[6] != "1"):
            bad.append(line.strip())
    print("numerics / bitwise failures:", bad if bad else "none")
    for key in dict.fromkeys(SHAPES + QUICK):
        if key not in res:
            continue
        d, c = res[key], cub.get(key)
        cl = {n: v for n, v in d.items() if n.startswith(("ship", "c"))}
        best = min(cl, key=cl.get) if cl else None
        print(f"\n{key[0]} x {key[1]} -> {key[2]}: cuBLAS {c}")
        if best:
            print(f"  best cluster {best} {cl[best]:.2f} us ({cl[best] / c:.2f}x cuBLAS)")
        for n, v in sorted(d.items(), key=lambda t: t[1]):
            print(f"  {n:16s} {v:9.2f} us  {v / c:.2f}x")


if __name__ == "__main__":
    if sys.argv[1] == "torch":
        torch_times(QUICK if sys.argv[2:] == ["quick"] else SHAPES)
    else:
        compare(sys.argv[2], sys.argv[3])
