"""The side-by-side scripts' timers (imported from their folder): wall
clock per call, and GPU time per call from a captured graph."""
import statistics
import time

import torch


def median_us(fn, iters=1000, reps=7):
    """Median wall time per call, in microseconds, of `iters` back-to-back
    calls of fn(), synchronized at the end (as the PyTorch notes time
    requests and steps), over `reps` repetitions."""
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e6 / iters)
    return statistics.median(times)


def gpu_us(fn, inner=20, reps=15):
    """Median GPU microseconds of one fn() call: `inner` calls captured in a
    CUDA graph, replayed `reps` times, timed with events."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # warm-up outside the capture (cuBLAS workspaces, JIT, planning)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / inner)
    return statistics.median(times)
