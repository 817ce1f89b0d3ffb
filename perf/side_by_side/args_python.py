"""Graph arguments from Python: the cost of ``exec.launch(stream, x=t, y=t)``
(two torch tensors, rebound every call) over the raw C call
(gc_exec_launch_with through ctypes with a prebuilt gc_binding array), and
of ``runner.replay(rows, stream, x=..., y=...)`` over gc_runner_replay_with.
CPU time per call, enqueue only (the stream is drained between batches).
Prints a table and writes $OUT/args_python.json."""

import ctypes
import json
import os
import statistics
import time

import torch

import graphcore as gc

BATCH, REPS, N = 100, 41, 1024


def per_call(stream, body):
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter_ns()
        for i in range(BATCH):
            body(i)
        times.append((time.perf_counter_ns() - t0) / BATCH)
        stream.synchronize()
    return statistics.median(times)


def main():
    ctx = gc.Context(0)
    s = gc.Stream(ctx)
    pool = gc.Pool(ctx)
    xs = [torch.randn(N, device="cuda") for _ in range(2)]
    ys = [torch.zeros(N, device="cuda") for _ in range(2)]
    torch.cuda.synchronize()
    with gc.capture(s, pool) as cap:
        gc.op_scale(s, ys[0], xs[0], N, 2.0)
    g = cap.graph
    g.declare_arg(xs[0], name="x")
    g.declare_arg(ys[0], name="y")
    e = gc.Exec(g)
    lib = gc.loader.lib
    raw = lib.gc_exec_launch_with
    arrays = []
    for i in range(2):
        a = (gc.Binding * 2)()
        a[0].index, a[0].ptr, a[0].bytes = 0, xs[i].data_ptr(), 0
        a[1].index, a[1].ptr, a[1].bytes = 1, ys[i].data_ptr(), 0
        arrays.append(a)
    eh, sh = e.handle, s.handle
    c_call = per_call(s, lambda i: raw(eh, sh, arrays[i & 1], 2))
    py_call = per_call(s, lambda i: e.launch(s, x=xs[i & 1], y=ys[i & 1]))
    plain = per_call(s, lambda i: e.launch(s))
    # Correctness: the last launch was bound to set 1.
    e.launch(s, x=xs[1], y=ys[1])
    s.synchronize()
    assert torch.equal(ys[1], xs[1] * 2), "exec.launch with bindings computed the wrong result"

    def record(stream, batch):
        n = batch * N
        stream.capture_arg(rx[0][:n], name="x")
        stream.capture_arg(ry[0][:n], name="y")
        gc.op_scale(stream, ry[0], rx[0], n, 2.0)

    rx = [torch.randn(4 * N, device="cuda") for _ in range(2)]
    ry = [torch.zeros(4 * N, device="cuda") for _ in range(2)]
    torch.cuda.synchronize()
    r = gc.Runner(ctx, pool)
    r.capture([1, 4], record, warmup_runs=1)
    raw_r = lib.gc_runner_replay_with
    out = ctypes.c_uint32()
    rarrays = []
    for i in range(2):
        a = (gc.Binding * 2)()
        a[0].index, a[0].ptr, a[0].bytes = 0, rx[i].data_ptr(), 0
        a[1].index, a[1].ptr, a[1].bytes = 1, ry[i].data_ptr(), 0
        rarrays.append(a)
    rh = r.handle
    c_replay = per_call(s, lambda i: raw_r(rh, 3, sh, rarrays[i & 1], 2, ctypes.byref(out)))
    py_replay = per_call(s, lambda i: r.replay(3, s, x=rx[i & 1], y=ry[i & 1]))
    r.replay(4, s, x=rx[1], y=ry[1])
    s.synchronize()
    assert torch.equal(ry[1], rx[1] * 2), "runner.replay with bindings computed the wrong result"

    print("Python cost per call (ns, median of %d batches of %d), two tensors rebound each call:" % (REPS, BATCH))
    print("  exec.launch(s, x=, y=)        %8.0f   raw gc_exec_launch_with %8.0f   over raw %6.0f" % (
        py_call, c_call, py_call - c_call))
    print("  runner.replay(3, s, x=, y=)   %8.0f   raw gc_runner_replay_with %6.0f   over raw %6.0f" % (
        py_replay, c_replay, py_replay - c_replay))
    print("  exec.launch(s) (no bindings)  %8.0f" % plain)
    res = {"benchmark": "args_python", "gpu": torch.cuda.get_device_name(0),
           "launch_ns": {"python": py_call, "raw": c_call, "plain": plain},
           "replay_ns": {"python": py_replay, "raw": c_replay}}
    with open(os.path.join(os.environ.get("OUT", "."), "args_python.json"), "w") as f:
        json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
