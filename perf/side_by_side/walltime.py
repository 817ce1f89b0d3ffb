"""The side-by-side scripts' wall-clock timer (imported from their folder)."""
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
