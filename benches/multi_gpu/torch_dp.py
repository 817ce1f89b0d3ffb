"""PyTorch's side of benches/multi_gpu/run.sh: the data-parallel step of
c_examples/train_data_parallel.c (Linear dim -> dim, loss (pred - y)^2
summed over the rank's rows, gradient averaged over them, all-reduce (sum)
of [dW | db], scale by 1/N, SGD) with torch.distributed (NCCL), one process
per GPU, the whole step captured in one CUDA graph after a warm-up on a side
stream, as PyTorch's CUDA graph notes do. Prints one BENCH line of JSON
(rank 0): the step's median time over 5 runs and samples per second.

Usage: python3 torch_dp.py --ranks N --dim 4096 --rows 512 --steps 50
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def step(w, b, x, y, bucket, n):
    """One step, in place: the same arithmetic as the C example's graph."""
    pred = torch.addmm(b, x, w.t())
    diff = pred - y
    grad = diff * (2.0 / x.shape[0])
    dim = w.shape[0]
    dw = bucket[: dim * dim].view(dim, dim)
    db = bucket[dim * dim:]
    torch.mm(grad.t(), x, out=dw)
    torch.sum(grad, 0, out=db)
    dist.all_reduce(bucket)
    bucket.mul_(1.0 / n)
    w.sub_(dw, alpha=0.064)
    b.sub_(db, alpha=0.064)


def rank_main(rank, n, init, args, out):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=init, rank=rank, world_size=n)
    g = torch.Generator(device="cuda").manual_seed(7)
    d, r = args.dim, args.rows
    w = (torch.rand(d, d, device="cuda", generator=g) * 2 - 1) / d**0.5
    b = (torch.rand(d, device="cuda", generator=g) * 2 - 1) / d**0.5
    x = (torch.rand(r, d, device="cuda", generator=g) * 2 - 1) * 0.1
    y = torch.rand(r, d, device="cuda", generator=g) * 2 - 1
    bucket = torch.empty(d * d + d, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(w, b, x, y, bucket, n)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(w, b, x, y, bucket, n)
    times = []
    for k in range(6):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            graph.replay()
        torch.cuda.synchronize()
        if k:  # the first run warms
            times.append((time.perf_counter() - t0) / args.steps)
    st = statistics.median(times)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"ranks": n, "dim": d, "rows_per_rank": r, "steps": args.steps,
                       "step_us": st * 1e6, "samples_per_s": n * r / st,
                       "torch": torch.__version__,
                       "nccl": ".".join(map(str, torch.cuda.nccl.version()))}, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--dim", type=int, default=4096)
    p.add_argument("--rows", type=int, default=512)
    p.add_argument("--steps", type=int, default=50)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        init = "file://" + os.path.join(tmp, "rendezvous")
        mp.spawn(rank_main, args=(args.ranks, init, args, out), nprocs=args.ranks, join=True)
        with open(out) as f:
            print("BENCH " + f.read(), flush=True)


if __name__ == "__main__":
    main()
