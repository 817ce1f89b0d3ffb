"""c_examples/train_until.c from Python: a training step (Linear 1024 ->
1024, batch 64, summed squared loss, SGD lr 1e-3) as the body of a WHILE
node that runs on the GPU until the loss falls below eps or 1000 steps have
run (one launch; the step count and loss are read once), then a SWITCH that
picks a bucket on the device from a row count in device memory.

Needs CUDA 12.3 (WHILE) and 12.8 (SWITCH), and libcudadevrt.a (the CUDA
toolkit) for graphcore's setter kernels. A WHILE whose condition never
clears hangs the GPU: the setter here caps the loop at 1000 steps.

    python3 python/examples/train_until.py
"""
import ctypes
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphcore as gc  # noqa: E402

N, D, LR, MAX_STEPS = 64, 1024, 1e-3, 1000


def upload(ctx, stream, dst, data):
    buf = gc.HostBuffer(ctx, len(data))
    ctypes.memmove(buf.ptr, data, len(data))
    gc.memcpy_async(stream, dst, buf.ptr, len(data))
    stream.synchronize()


def download(ctx, stream, src, nbytes):
    buf = gc.HostBuffer(ctx, nbytes)
    gc.memcpy_async(stream, buf.ptr, src, nbytes)
    stream.synchronize()
    return ctypes.string_at(buf.ptr, nbytes)


def uniform(n, scale, state):
    out = []
    for _ in range(n):
        state[0] = (state[0] + 0x9E3779B97F4A7C15) & (2**64 - 1)
        z = state[0]
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
        z ^= z >> 31
        out.append(((z >> 40) / float(1 << 24) * 2.0 - 1.0) * scale)
    return struct.pack("%df" % n, *out)


def main():
    ctx = gc.Context(0)
    s = gc.Stream(ctx)
    pool = gc.Pool(ctx)
    state = [7]
    sizes = [D * D, D, N * D, N * D]
    scales = [D ** -0.5, D ** -0.5, 0.1, 1.0]
    w, b, x, y = [pool.alloc(4 * n) for n in sizes]
    for dst, n, sc in zip((w, b, x, y), sizes, scales):
        upload(ctx, s, dst, uniform(n, sc, state))
    ws_bytes = ctx.mse_workspace_bytes(N * D)
    pred, grad, loss = pool.alloc(4 * N * D), pool.alloc(4 * N * D), pool.alloc(4)
    ws, steps = pool.alloc(ws_bytes), pool.alloc(4)
    gc.memset_async(s, ws, 0, ws_bytes)

    def step(st):
        gc.op_linear(st, pred, x, w, b, N, D, D, 0)
        gc.op_mse(st, loss, grad, pred, y, N * D, 1.0, ws, ws_bytes)
        gc.op_linear_weight_sgd(st, w, grad, x, N, D, D, LR)
        gc.op_bias_sgd(st, b, grad, N, D, LR)

    step(s)
    first = struct.unpack("f", download(ctx, s, loss, 4))[0]
    eps = 0.9 * first

    g = gc.Graph(ctx)
    h = g.conditional_handle(default_value=1)
    zero = g.add_memset(steps, 0, 4)
    _, (body,) = g.add_conditional(gc.COND_WHILE, h, deps=[zero])
    gc.begin_capture_into(s, body, pool)
    step(s)
    gc.op_cond_set_f32(s, h, loss, eps, gc.CMP_GE, steps, MAX_STEPS)
    gc.end_capture(s).close()
    exec_ = g.instantiate()
    exec_.launch(s)
    s.synchronize()
    last = struct.unpack("f", download(ctx, s, loss, 4))[0]
    ran = struct.unpack("I", download(ctx, s, steps, 4))[0]
    print("loss %.6g -> %.6g (eps %.6g) after %d steps in one launch" % (first, last, eps, ran))
    ok = 0 < ran < MAX_STEPS and last < eps

    # SWITCH: the bucket for a row count held in device memory.
    buckets = [8, 16, 32, 64]
    rows, table, chosen = pool.alloc(4), pool.alloc(16), pool.alloc(4)
    upload(ctx, s, table, struct.pack("4I", *buckets))
    sw = gc.Graph(ctx)
    hs = sw.conditional_handle()
    setter = gc.Function.builtin(ctx, "gc_cond_set_bucket")
    node = sw.add_kernel(setter, 1, 1, [ctypes.c_uint64(hs.raw), gc.ptr(rows), gc.ptr(table),
                                        ctypes.c_uint32(4)])
    _, cases = sw.add_conditional(gc.COND_SWITCH, hs, cases=4, deps=[node])
    for i, case in enumerate(cases):
        gc.begin_capture_into(s, case)
        gc.op_fill(s, chosen, 1, float(buckets[i]))
        gc.end_capture(s).close()
    swe = sw.instantiate()
    for r in range(1, 65):
        upload(ctx, s, rows, struct.pack("I", r))
        swe.launch(s)
        got = struct.unpack("f", download(ctx, s, chosen, 4))[0]
        want = next(bk for bk in buckets if bk >= r)
        ok = ok and got == want
    print("SWITCH chose the bucket on the device for rows 1..64")
    print("train_until.py: %s" % ("stopped below eps on the device" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except gc.NoDriverError as e:
        print("train_until.py: %s" % e)
        sys.exit(2)
