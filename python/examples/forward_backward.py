"""The CUDA C++ forward/backward sample (shared/reference) from Python, as
c_examples/forward_backward.c runs it: 1024 floats, forward (x2) and
backward (/2) kernels, a copy in and a copy out, in pinned host buffers
(gc_host_alloc):

  1. eagerly, as the original does it (a synchronize after each kernel);
  2. as a graph built node by node: memcpy in -> forward -> backward ->
     memcpy out, instantiated once and launched;
  3. as the same work captured from a stream (with graphcore.capture).

Each run checks that the data comes back equal to the input. Without a CUDA
driver it prints graphcore's message and exits with status 2, as the C
example does.

    python3 python/examples/forward_backward.py
(finds libgraphcore as the binding does: $GRAPHCORE_LIB, installed, or the
repository's target/).
"""
import ctypes
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphcore as gc  # noqa: E402

N = 1024
NBYTES = N * 4


def main():
    ctx = gc.Context(0)
    stream = gc.Stream(ctx)
    pool = gc.Pool(ctx)
    info = ctx.info()
    print("device: %s (%d SMs), CUDA driver %d.%d" % (
        info.name.decode(), info.sm_count, info.driver_version // 1000,
        info.driver_version % 1000 // 10))

    # The forward and backward kernels: the built-in scale kernel,
    # gc_scale_f32(y, x, n, alpha), with alpha 2 and 0.5.
    scale = gc.Function.builtin(ctx, "gc_scale_f32")
    grid, block = 4, 256
    data = pool.alloc(NBYTES)
    fwd = [gc.ptr(data), gc.ptr(data), ctypes.c_uint64(N), ctypes.c_float(2.0)]
    bwd = [gc.ptr(data), gc.ptr(data), ctypes.c_uint64(N), ctypes.c_float(0.5)]

    h_in, h_out = ctx.host_alloc(NBYTES), ctx.host_alloc(NBYTES)
    values = h_in.view("f")
    for i in range(N):
        values[i] = (i % 97) * 0.37 - 11.0
    expected = bytes(h_in.view())

    def clear_out():
        h_out.view()[:] = bytes(NBYTES)

    def check(label, extra=""):
        ok = bytes(h_out.view()) == expected
        print("%-9s data %s%s" % (label + ":", "comes back equal" if ok else "DIFFERS", extra))
        return ok

    # 1. Eagerly, as the original: copy in, forward, sync, backward, sync,
    #    copy out.
    clear_out()
    gc.memcpy_async(stream, data, h_in, NBYTES)
    gc.launch(scale, stream, grid, block, fwd)
    stream.synchronize()
    gc.launch(scale, stream, grid, block, bwd)
    stream.synchronize()
    gc.memcpy_async(stream, h_out, data, NBYTES)
    stream.synchronize()
    ok = check("eager")

    # 2. Explicit nodes: memcpy in -> forward -> backward -> memcpy out.
    graph = gc.Graph(ctx)
    copy_in = graph.add_memcpy(data, h_in, NBYTES)
    f = graph.add_kernel(scale, grid, block, fwd, deps=[copy_in])
    b = graph.add_kernel(scale, grid, block, bwd, deps=[f])
    graph.add_memcpy(h_out, data, NBYTES, deps=[b])
    built = graph.instantiate(gc.INSTANTIATE_UPLOAD)
    clear_out()
    built.launch(stream)
    stream.synchronize()
    ok &= check("built", " (%d nodes: memcpy in -> forward -> backward -> memcpy out)"
                % graph.node_count)

    # 3. The same work captured from the stream.
    with gc.capture(stream, pool) as cap:
        gc.memcpy_async(stream, data, h_in, NBYTES)
        gc.launch(scale, stream, grid, block, fwd)
        gc.launch(scale, stream, grid, block, bwd)
        gc.memcpy_async(stream, h_out, data, NBYTES)
    captured = cap.graph.instantiate(gc.INSTANTIATE_UPLOAD)
    clear_out()
    captured.launch(stream)
    stream.synchronize()
    ok &= check("captured", " (%d nodes)" % cap.graph.node_count)

    # Spot check of the values themselves, not just equality.
    first = struct.unpack("<f", bytes(h_out.view()[:4]))[0]
    ok &= abs(first - (-11.0)) < 1e-6

    # Release in order (collection would do it too).
    for obj in (captured, cap.graph, built, graph, h_in, h_out):
        obj.close()
    pool.free(data)
    for obj in (scale, pool, stream, ctx):
        obj.close()
    print("forward_backward.py: %s" % ("all runs correct" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except gc.Error as e:
        print("forward_backward.py: %s\n  %s" % (e.status, e.message), file=sys.stderr)
        sys.exit(2)
