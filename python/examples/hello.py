"""hello.py: a first CUDA graph with graphcore from Python (ctypes; no
PyTorch needed). Captures x = 2x + 1 (two built-in kernels) into a graph,
replays it three times and checks that every element went 1 -> 3 -> 7 -> 15.

    pip install ./python && python3 python/examples/hello.py
    # or, from a checkout: PYTHONPATH=python python3 python/examples/hello.py

On a machine without a CUDA driver or GPU it prints "no CUDA GPU: skipping"
and exits 0; any other failure raises graphcore.Error (status and message).
"""
import sys

import graphcore as gc

N = 1024

try:
    ctx = gc.Context(0)
except (gc.NoDriverError, gc.NoDeviceError) as e:
    print("no CUDA GPU: skipping (%s)" % e.status)
    sys.exit(0)
stream, pool = gc.Stream(ctx), gc.Pool(ctx)
x = pool.alloc(N * 4)  # a device address (an int)
gc.op_fill(stream, x, N, 1.0)

# Record, don't run: everything enqueued on the stream goes into a graph.
with gc.capture(stream, pool) as cap:
    gc.op_scale(stream, x, x, N, 2.0)  # x = 2x
    gc.op_add_scalar(stream, x, x, N, 1.0)  # x = x + 1
exec_ = cap.graph.instantiate(gc.INSTANTIATE_UPLOAD)

for _ in range(3):
    exec_.launch(stream)
host = ctx.host_alloc(N * 4)  # pinned host memory
gc.memcpy_async(stream, host, x, N * 4)
stream.synchronize()
good = sum(v == 15.0 for v in host.view("f"))
print("hello: %d of %d elements are 15 after 3 replays: %s"
      % (good, N, "ok" if good == N else "WRONG"))

host.free()
pool.free(x)
for obj in (exec_, cap.graph, pool, stream, ctx):
    obj.close()
sys.exit(0 if good == N else 1)
