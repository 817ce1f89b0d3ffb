"""The GEMM harnesses' cuBLAS timer (torch_ref.py, splitk_ref.py): f()
captured up to 20 times in a CUDA graph on a side stream, replayed in
batches, the median of 5 batches in microseconds per call."""


def time_fn(f):
    import torch

    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        f(); torch.cuda.synchronize()
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record(); f(); b.record(); b.synchronize()
        est = max(a.elapsed_time(b) * 1000, 1.0)
        per = int(min(20, max(1, 1000 / est)))
        reps = int(min(50, max(1, 5000 / (est * per))))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for _ in range(per): f()
        g.replay()
        ts = []
        for _ in range(5):
            a.record()
            for _ in range(reps): g.replay()
            b.record(); b.synchronize()
            ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[2] * 1000 / (reps * per)
