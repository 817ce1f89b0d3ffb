"""PyTorch's side of perf/multi_gpu/run.sh: the data-parallel step of
c_examples/train_data_parallel.c (Linear dim -> dim, loss (pred - y)^2
summed over the rank's rows, gradient averaged over them, all-reduce (sum)
of the gradient, scaled by 1/N in SGD's rate, overlapped with the weight
gradient's row chunks as in the C example) with torch.distributed (NCCL),
one process per GPU, the whole step captured in one CUDA graph after a
warm-up on a side stream, as PyTorch's CUDA graph notes do. Prints one
BENCH line of JSON (rank 0): the step's median time over 5 runs and samples
per second.

Usage: python3 torch_dp.py --ranks N --dim 4096 --rows 512 --steps 50 --chunks 4
       [--priority high|normal]
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


def step(w, b, x, y, bucket, n, chunks, side):
    """One step, in place: the same arithmetic and order as the C example's
    graph. The gradient is summed over the ranks and scaled by 1/n inside
    SGD's rate. With a side stream, [db] is all-reduced first and then each
    of `chunks` row chunks of dW as soon as it is computed, overlapping the
    next chunk's GEMM (DDP's buckets); without one, the whole bucket after
    the whole gradient."""
    pred = torch.addmm(b, x, w.t())
    grad = (pred - y) * (2.0 / x.shape[0])
    dim = w.shape[0]
    dw = bucket[: dim * dim].view(dim, dim)
    db = bucket[dim * dim:]
    lr = 0.064 / n
    torch.sum(grad, 0, out=db)
    if side is None:
        torch.mm(grad.t(), x, out=dw)
        dist.all_reduce(bucket)
        w.sub_(dw, alpha=lr)
        b.sub_(db, alpha=lr)
        return
    main = torch.cuda.current_stream()
    side.wait_stream(main)
    with torch.cuda.stream(side):
        dist.all_reduce(db)
        b.sub_(db, alpha=lr)
    for c in range(chunks):
        r0 = (dim * c // chunks) & ~3
        r1 = dim if c + 1 == chunks else (dim * (c + 1) // chunks) & ~3
        torch.mm(grad[:, r0:r1].t(), x, out=dw[r0:r1])
        side.wait_stream(main)
        with torch.cuda.stream(side):
            dist.all_reduce(dw[r0:r1])
            w[r0:r1].sub_(dw[r0:r1], alpha=lr)
    main.wait_stream(side)


def rank_main(rank, n, init, args, out):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    # As the C example's side stream: NCCL's stream (the process group's)
    # and the SGD stream at high priority; torch.cuda.graph instantiates
    # with node priorities.
    high = args.priority == "high"
    os.environ["TORCH_NCCL_HIGH_PRIORITY"] = "1" if high else "0"
    torch.cuda.set_device(rank)
    torch.backends.cuda.matmul.allow_tf32 = False  # graphcore's GEMM is f32
    torch.backends.cudnn.allow_tf32 = False
    dist.init_process_group("nccl", init_method=init, rank=rank, world_size=n)
    g = torch.Generator(device="cuda").manual_seed(7)
    d, r = args.dim, args.rows
    w = (torch.rand(d, d, device="cuda", generator=g) * 2 - 1) / d**0.5
    b = (torch.rand(d, device="cuda", generator=g) * 2 - 1) / d**0.5
    x = (torch.rand(r, d, device="cuda", generator=g) * 2 - 1) * 0.1
    y = torch.rand(r, d, device="cuda", generator=g) * 2 - 1
    bucket = torch.empty(d * d + d, device="cuda")
    comm = torch.cuda.Stream(priority=-1 if high else 0) if args.chunks > 1 else None
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        for _ in range(3):
            step(w, b, x, y, bucket, n, args.chunks, comm)
    torch.cuda.current_stream().wait_stream(warm)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(w, b, x, y, bucket, n, args.chunks, comm)
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
            json.dump({"ranks": n, "dim": d, "rows_per_rank": r, "grad_chunks": args.chunks,
                       "comm_priority": args.priority,
                       "steps": args.steps, "step_us": st * 1e6, "samples_per_s": n * r / st,
                       "torch": torch.__version__,
                       "nccl": ".".join(map(str, torch.cuda.nccl.version()))}, f)
    # destroy_process_group() can hang in ncclCommDestroy once a graph has
    # captured NCCL calls (pytorch/pytorch#115388; it hung here on two
    # H200s): the graph goes first, then the process ends without it.
    del graph
    torch.cuda.synchronize()
    dist.barrier()
    os._exit(0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--dim", type=int, default=4096)
    p.add_argument("--rows", type=int, default=512)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--chunks", type=int, default=4)
    p.add_argument("--priority", choices=("high", "normal"), default="high")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        init = "file://" + os.path.join(tmp, "rendezvous")
        mp.spawn(rank_main, args=(args.ranks, init, args, out), nprocs=args.ranks, join=True)
        with open(out) as f:
            print("BENCH " + f.read(), flush=True)


if __name__ == "__main__":
    main()
