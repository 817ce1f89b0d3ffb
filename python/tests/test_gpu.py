"""The binding on a GPU: pools, pinned buffers, typed kernels, built and
captured graphs, exec updates, host nodes, runners, modules, and capture
around PyTorch work. Each test takes the `ctx` fixture: skipped without a
driver, a failure on the GPU machine (GC_GPU=1) if there is none."""
import ctypes as C
import pytest

import graphcore as gc

N = 1024


def upload(ctx, stream, dst, values):
    with ctx.host_alloc(4 * len(values)) as h:
        h.as_array(C.c_float)[:] = values
        gc.memcpy_async(stream, dst, h, 4 * len(values))
        stream.synchronize()


def download(ctx, stream, src, n):
    with ctx.host_alloc(4 * n) as h:
        gc.memcpy_async(stream, h, src, 4 * n)
        stream.synchronize()
        return list(h.view("f"))


def test_context_info(ctx):
    info = ctx.info()
    assert info.name and info.sm_count > 0 and info.total_bytes > 0
    assert info.driver_version >= 12000
    assert gc.device_count() >= 1
    ctx.synchronize()


def test_stream_priorities(ctx):
    least, greatest = gc.Stream.priority_range(ctx)
    assert greatest <= least
    with gc.Stream(ctx, priority=greatest) as high, gc.Stream(ctx, priority=least) as low:
        high.synchronize()
        low.synchronize()
    with pytest.raises(gc.InvalidArgumentError, match="outside"):
        gc.Stream(ctx, priority=greatest - 1)


def test_pool(ctx):
    with gc.Pool(ctx, initial_bytes=4 << 20, max_bytes=8 << 20) as pool:
        a = pool.alloc(1000)
        assert a % 256 == 0
        st = pool.stats()
        assert st.allocated_bytes >= 1000 and st.reserved_bytes >= 4 << 20
        assert st.alloc_count == 1 and st.as_dict()["alloc_count"] == 1
        with pytest.raises(gc.OutOfMemoryError):
            pool.alloc(64 << 20)
        pool.free(a)
        with pytest.raises(gc.InvalidArgumentError, match="gc_pool_free"):
            pool.free(a)
        pool.trim()
        assert pool.stats().allocated_bytes == 0
    with pytest.raises(gc.InvalidArgumentError):
        gc.Pool(ctx, initial_bytes=8 << 20, max_bytes=4 << 20)


def test_pool_peer_access(ctx, pool):
    # The pool's own device always has access: a clear refusal.
    with pytest.raises(gc.InvalidArgumentError, match="own device"):
        pool.enable_peer_access(ctx)
    if gc.device_count() < 2:
        return  # granting another device access needs two (tests/gpu/multi.rs)
    with gc.Context(1) as other:
        try:
            pool.enable_peer_access(other)
        except gc.NotSupportedError:
            pass  # no peer path between the two devices


def test_host_buffer_and_typed_kernels(ctx, stream, pool):
    x, y = pool.alloc(4 * N), pool.alloc(4 * N)
    upload(ctx, stream, x, [float(i) for i in range(N)])
    gc.op_scale(stream, y, x, N, 2.0)
    gc.op_add_scalar(stream, y, y, N, 1.0)
    gc.op_chain(stream, y, y, N, [(gc.CHAIN_MUL, 0.5), (gc.CHAIN_MIN, 100.0)])
    out = download(ctx, stream, y, N)
    assert out == [min((2.0 * i + 1.0) * 0.5, 100.0) for i in range(N)]
    ws = pool.alloc(ctx.mse_workspace_bytes(N))
    loss = pool.alloc(4)
    gc.memset_async(stream, ws, 0, ctx.mse_workspace_bytes(N))
    gc.op_mse(stream, loss, None, x, x, N, 1.0, ws, ctx.mse_workspace_bytes(N))
    assert download(ctx, stream, loss, 1) == [0.0]


def test_mse_reduction_mean_and_sum(ctx, stream, pool):
    import struct
    n = 1000
    p = [0.01 * ((i * 37) % 101 - 50) for i in range(n)]
    t = [0.02 * ((i * 11) % 53 - 26) for i in range(n)]
    pd, td, gd, loss = pool.alloc(4 * n), pool.alloc(4 * n), pool.alloc(4 * n), pool.alloc(4)
    upload(ctx, stream, pd, p)
    upload(ctx, stream, td, t)
    p, t = download(ctx, stream, pd, n), download(ctx, stream, td, n)  # as floats
    nbytes = ctx.mse_workspace_bytes(n)
    ws = pool.alloc(nbytes)
    gc.memset_async(stream, ws, 0, nbytes)

    def f32(v):
        return struct.unpack("f", struct.pack("f", v))[0]

    gc.op_mse_reduction(stream, loss, gd, pd, td, n, "sum", ws, nbytes)
    total = download(ctx, stream, loss, 1)[0]
    assert download(ctx, stream, gd, n) == [f32(f32(a - b) * 2.0) for a, b in zip(p, t)]
    gc.op_mse_reduction(stream, loss, gd, pd, td, n, "mean", ws, nbytes)
    mean = download(ctx, stream, loss, 1)[0]
    s = f32(1.0 / n)
    assert mean == f32(total * s)  # the sum times the float reciprocal, as PyTorch's CUDA mean
    ref = sum((a - b) ** 2 for a, b in zip(p, t)) / n  # float64
    assert abs(mean - ref) <= 1e-5 * ref
    assert download(ctx, stream, gd, n) == [f32(f32(a - b) * f32(2.0 * s)) for a, b in zip(p, t)]
    with pytest.raises(gc.InvalidArgumentError, match="reduction 2"):
        gc.op_mse_reduction(stream, loss, gd, pd, td, n, 2, ws, nbytes)


def _linear_mse_step_against_float64(ctx, stream, pool, rows, inputs, outputs, scale, lr,
                                     w0, b0, x, t):
    """One gc_op_linear_mse_step (the loss's gradient scaled by ``scale``) of
    the host lists w0, b0, x and t, its loss, W and b checked against
    float64: (w, b, x, t, loss, workspace, its bytes) on the device."""
    bufs = [pool.alloc(4 * len(v)) for v in (w0, b0, x, t)]
    for d, v in zip(bufs, (w0, b0, x, t)):
        upload(ctx, stream, d, v)
    w, b, xd, td = bufs
    loss = pool.alloc(4)
    nbytes = ctx.linear_mse_step_workspace_bytes(rows, inputs, outputs)
    ws = pool.alloc(nbytes)
    gc.memset_async(stream, ws, 0, nbytes)
    gc.op_linear_mse_step(stream, w, b, xd, td, loss, rows, inputs, outputs, scale, lr, ws, nbytes)
    pred = [[b0[j] + sum(x[i * inputs + r] * w0[j * inputs + r] for r in range(inputs)) for j in range(outputs)]
            for i in range(rows)]
    dy = [[2.0 * scale * (pred[i][j] - t[i * outputs + j]) for j in range(outputs)] for i in range(rows)]
    want_loss = sum((pred[i][j] - t[i * outputs + j]) ** 2 for i in range(rows) for j in range(outputs))
    want_w = [w0[j * inputs + r] - lr * sum(dy[i][j] * x[i * inputs + r] for i in range(rows))
              for j in range(outputs) for r in range(inputs)]
    want_b = [b0[j] - lr * sum(dy[i][j] for i in range(rows)) for j in range(outputs)]
    assert download(ctx, stream, loss, 1)[0] == pytest.approx(want_loss, rel=1e-5)
    assert download(ctx, stream, w, outputs * inputs) == pytest.approx(want_w, rel=1e-5, abs=1e-6)
    assert download(ctx, stream, b, outputs) == pytest.approx(want_b, rel=1e-5, abs=1e-6)
    return w, b, xd, td, loss, ws, nbytes


def test_linear_mse_step(ctx, stream, pool):
    rows, inputs, outputs, lr = 3, 5, 4, 0.01
    w0 = [0.1 * ((i * 7) % 11 - 5) for i in range(outputs * inputs)]
    b0 = [0.05 * (j - 1) for j in range(outputs)]
    x = [0.2 * ((i * 3) % 7 - 3) for i in range(rows * inputs)]
    t = [0.3 * ((i * 5) % 9 - 4) for i in range(rows * outputs)]
    w, b, xd, td, loss, ws, bytes_ = _linear_mse_step_against_float64(
        ctx, stream, pool, rows, inputs, outputs, 1.0, lr, w0, b0, x, t)
    with pytest.raises(gc.InvalidArgumentError, match="gc_op_linear_mse_step"):
        gc.op_linear_mse_step(stream, w, b, xd, td, loss, rows, inputs, outputs, 1.0, lr, ws, bytes_ - 1)

def test_mlp2_mse_step(ctx, stream, pool):
    rows, k0, k1, k2, lr = 3, 5, 6, 2, 0.01
    w1 = [0.3 * ((i * 7) % 11 - 5) / 5 for i in range(k1 * k0)]
    b1 = [0.1 * (j % 3) for j in range(k1)]
    w2 = [0.2 * ((i * 5) % 9 - 4) / 4 for i in range(k2 * k1)]
    b2 = [0.05 * j for j in range(k2)]
    x = [0.2 * ((i * 3) % 7 - 3) for i in range(rows * k0)]
    t = [0.3 * ((i * 5) % 9 - 4) for i in range(rows * k2)]
    bufs = [pool.alloc(4 * len(v)) for v in (w1, b1, w2, b2, x, t)]
    for d, v in zip(bufs, (w1, b1, w2, b2, x, t)):
        upload(ctx, stream, d, v)
    loss = pool.alloc(4)
    bytes_ = ctx.mlp2_mse_step_workspace_bytes(rows, k1, k2)
    ws = pool.alloc(bytes_)
    gc.memset_async(stream, ws, 0, bytes_)
    gc.op_mlp2_mse_step(stream, *bufs, loss, rows, k0, k1, k2, 1.0, lr, ws, bytes_)
    h = [[max(0.0, b1[j] + sum(x[i * k0 + r] * w1[j * k0 + r] for r in range(k0))) for j in range(k1)]
         for i in range(rows)]
    p = [[b2[j] + sum(h[i][r] * w2[j * k1 + r] for r in range(k1)) for j in range(k2)] for i in range(rows)]
    dp = [[2.0 * (p[i][j] - t[i * k2 + j]) for j in range(k2)] for i in range(rows)]
    dh = [[sum(dp[i][j] * w2[j * k1 + r] for j in range(k2)) if h[i][r] > 0 else 0.0 for r in range(k1)]
          for i in range(rows)]
    want_loss = sum((p[i][j] - t[i * k2 + j]) ** 2 for i in range(rows) for j in range(k2))
    want_w2 = [w2[j * k1 + r] - lr * sum(dp[i][j] * h[i][r] for i in range(rows)) for j in range(k2) for r in range(k1)]
    want_w1 = [w1[j * k0 + r] - lr * sum(dh[i][j] * x[i * k0 + r] for i in range(rows))
               for j in range(k1) for r in range(k0)]
    assert download(ctx, stream, loss, 1)[0] == pytest.approx(want_loss, rel=1e-5)
    assert download(ctx, stream, bufs[2], k2 * k1) == pytest.approx(want_w2, rel=1e-5, abs=1e-6)
    assert download(ctx, stream, bufs[0], k1 * k0) == pytest.approx(want_w1, rel=1e-5, abs=1e-6)
    with pytest.raises(gc.InvalidArgumentError, match="gc_op_mlp2_mse_step"):
        gc.op_mlp2_mse_step(stream, *bufs, loss, rows, k0, k1, k2, 1.0, lr, ws, bytes_ - 1)

def scale_args(ptr, alpha, n=N):
    return [gc.ptr(ptr), gc.ptr(ptr), C.c_uint64(n), C.c_float(alpha)]


def test_built_graph_update_and_kernel_args(ctx, stream, pool):
    d = pool.alloc(4 * N)
    fill = gc.Function.builtin(ctx, "gc_fill_f32")
    scale = gc.Function.builtin(ctx, "gc_scale_f32")

    def build(alpha, extra=False):
        g = gc.Graph(ctx)
        clear = g.add_memset(d, 0, 4 * N)
        f = g.add_kernel(fill, 4, 256, [gc.ptr(d), C.c_uint64(N), C.c_float(3.0)], deps=clear)
        s = g.add_kernel(scale, 4, 256, scale_args(d, alpha), deps=[f])
        if extra:
            g.add_empty(deps=[s])
        return g, s

    g, s = build(2.0)
    assert len(g) == 3
    e = g.instantiate(gc.INSTANTIATE_UPLOAD)
    e.launch(stream)
    assert download(ctx, stream, d, 4) == [6.0] * 4
    e.set_kernel_args(s, scale_args(d, 4.0))
    e.launch(stream)
    assert download(ctx, stream, d, 4) == [12.0] * 4
    g2, _ = build(0.5)
    e.update(g2)
    e.launch(stream)
    assert download(ctx, stream, d, 4) == [1.5] * 4
    g3, _ = build(1.0, extra=True)
    with pytest.raises(gc.UpdateMismatchError):
        e.update(g3)
    e.launch(stream)  # unchanged, still usable
    assert download(ctx, stream, d, 4) == [1.5] * 4
    with pytest.raises(gc.InvalidArgumentError):
        g.add_dependency(s, s)
    assert e.raw and g.raw
    for obj in (e, g, g2, g3):
        obj.close()


def test_capture(ctx, stream, pool):
    d = pool.alloc(4 * N)
    with gc.capture(stream, pool) as cap:
        assert stream.is_capturing
        gc.op_fill(stream, d, N, 1.0)
        tmp = pool.alloc(4 * N)  # belongs to the capture
        gc.op_scale(stream, tmp, d, N, 3.0)
        gc.op_copy(stream, d, tmp, N)
        pool.free(tmp)
    assert not stream.is_capturing
    graph = cap.graph
    assert graph.node_count == 3 and graph.pool_bytes == 0
    e = graph.instantiate()
    e.upload(stream)
    e.launch(stream)
    assert download(ctx, stream, d, 2) == [3.0, 3.0]
    # A broken capture: the error names the call; the stream works after.
    with pytest.raises(gc.CaptureError):
        with gc.capture(stream, pool):
            gc.op_fill(stream, d, N, 5.0)
            stream.synchronize()
    assert not stream.is_capturing
    gc.op_fill(stream, d, N, 7.0)
    assert download(ctx, stream, d, 1) == [7.0]
    # An exception inside the block propagates; the capture is ended.
    with pytest.raises(KeyError):
        with gc.capture(stream) as cap2:
            gc.op_fill(stream, d, N, 9.0)
            raise KeyError("inside")
    assert not stream.is_capturing
    with pytest.raises(gc.InvalidStateError):
        cap2.graph
    # Fork/join across streams, and begin/end without `with`.
    with gc.Stream(ctx) as side:
        gc.begin_capture(stream, pool)
        side.wait_stream(stream)
        gc.op_fill(side, d, N, 2.0)
        stream.wait_stream(side)
        g = gc.end_capture(stream)
        assert g.node_count >= 1
        g.instantiate().launch(stream)
        assert download(ctx, stream, d, 1) == [2.0]


def test_host_node(ctx, stream):
    calls = []
    g = gc.Graph(ctx)
    a = g.add_host(lambda: calls.append("a"))
    g.add_host(lambda: calls.append("b"), deps=[a])
    e = g.instantiate()
    del g  # the exec keeps the callbacks alive
    e.launch(stream)
    e.launch(stream)
    stream.synchronize()
    assert calls == ["a", "b", "a", "b"]


def test_child_graph(ctx, stream, pool):
    d = pool.alloc(4 * N)
    child = gc.Graph(ctx)
    child.add_memset(d, 0, 4 * N)
    parent = gc.Graph(ctx)
    c = parent.add_child(child)
    parent.add_kernel(gc.Function.builtin(ctx, "gc_add_scalar_f32"), 4, 256,
                      [gc.ptr(d), gc.ptr(d), C.c_uint64(N), C.c_float(1.25)], deps=[c])
    parent.instantiate().launch(stream)
    assert download(ctx, stream, d, 1) == [1.25]


def test_runner(ctx, stream, pool):
    x, y = pool.alloc(64 * 4), pool.alloc(64 * 4)
    upload(ctx, stream, x, [float(i) for i in range(64)])
    seen = []

    def record(s, batch):
        assert isinstance(s, gc.Stream)
        seen.append(batch)
        gc.op_scale(s, y, x, batch, 2.0)

    with gc.Runner(ctx, pool) as r:
        r.capture([1, 4, 16], record, warmup_runs=1)
        assert sorted(set(seen)) == [1, 4, 16]
        assert r.replay(3, stream) == 4
        assert download(ctx, stream, y, 4) == [0.0, 2.0, 4.0, 6.0]
        with pytest.raises(gc.NoBucketError):
            r.replay(17, stream)
        st = r.stats()
        assert st.bucket_count == 3 and [st.buckets[i].batch for i in range(3)] == [1, 4, 16]

    def broken(s, batch):
        raise ValueError("record failed for %d" % batch)

    with gc.Runner(ctx, pool) as r:
        with pytest.raises(ValueError, match="record failed"):
            r.capture([2], broken)
        assert r.stats().bucket_count == 0


PTX = (".version 7.0\n.target sm_75\n.address_size 64\n"
       ".visible .entry noop()\n{\n ret;\n}\n")


PDL_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry pdl_write(.param .u64 y)
{
  .reg .b32 %r<2>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [y];
  mov.u32 %r1, %tid.x;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd2, %rd2, %rd3;
  cvt.rn.f32.u32 %f1, %r1;
  st.global.f32 [%rd2], %f1;
  griddepcontrol.launch_dependents;
  ret;
}
.visible .entry pdl_read(.param .u64 z, .param .u64 y)
{
  .reg .b32 %r<2>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<6>;
  griddepcontrol.wait;
  ld.param.u64 %rd1, [z];
  ld.param.u64 %rd4, [y];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  cvta.to.global.u64 %rd2, %rd4;
  add.s64 %rd2, %rd2, %rd3;
  ld.global.f32 %f1, [%rd2];
  add.f32 %f2, %f1, 0f3F800000;
  cvta.to.global.u64 %rd5, %rd1;
  add.s64 %rd5, %rd5, %rd3;
  st.global.f32 [%rd5], %f2;
  ret;
}
"""


def test_programmatic_dependency(ctx, stream, pool):
    y, z = pool.alloc(4 * 256), pool.alloc(4 * 256)
    with gc.Module(ctx, PDL_PTX) as m:
        write, read = m.function("pdl_write"), m.function("pdl_read")
    g = gc.Graph(ctx)
    w = g.add_kernel(write, 1, 256, [gc.ptr(y)])
    r = g.add_kernel(read, 1, 256, [gc.ptr(z), gc.ptr(y)])
    try:
        g.add_programmatic_dependency(w, r)
    except gc.NotSupportedError as e:
        pytest.skip(str(e))
    with pytest.raises(gc.InvalidArgumentError, match="already"):
        g.add_programmatic_dependency(w, r)
    with pytest.raises(TypeError):
        g.add_programmatic_dependency(w, 1)
    g.instantiate().launch(stream)
    assert download(ctx, stream, z, 256) == [i + 1.0 for i in range(256)]


def test_module(ctx, stream):
    with gc.Module(ctx, PTX) as m:
        f = m.function("noop")
        with pytest.raises(gc.NotFoundError):
            m.function("missing")
    gc.launch(f, stream, 1, 1)  # the function keeps the module loaded
    stream.synchronize()
    wrapped = gc.Function.wrap(ctx, f.raw, "noop again")
    gc.launch(wrapped, stream, (1, 1), (32,))
    stream.synchronize()
    with pytest.raises(gc.CudaError) as info:
        gc.Module(ctx, PTX.replace("ret;", "bogus;"))
    assert info.value.cuda_result != 0 and "JIT log" in info.value.message


def test_capture_around_pytorch(ctx, pool, torch):
    """graphcore captures PyTorch work on a torch stream (static tensors,
    in-place and out= ops so nothing allocates during the capture) together
    with its own kernels; replays see new input values."""
    n = 4096
    ts = torch.cuda.Stream()
    x = torch.randn(n, device="cuda")
    y = torch.empty(n, device="cuda")
    with torch.cuda.stream(ts):  # warm up on the side stream, as the notes do
        torch.mul(x, 2.0, out=y)
        y.relu_()
    ts.synchronize()
    with gc.capture(ts, pool) as cap, torch.cuda.stream(ts):
        torch.mul(x, 2.0, out=y)          # PyTorch's kernel
        gc.op_add_scalar(cap.stream, y, y, n, 1.0)  # graphcore's, on the same stream
        y.relu_()
    exec_ = cap.graph.instantiate(gc.INSTANTIATE_UPLOAD)
    for _ in range(2):
        x.copy_(torch.randn(n, device="cuda"))  # new data in the static input
        torch.cuda.synchronize()
        exec_.launch(cap.stream)
        cap.stream.synchronize()
        assert torch.equal(y, torch.relu(x * 2.0 + 1.0))
    # And the other way round: PyTorch on graphcore's stream.
    with gc.Stream(ctx) as gs:
        with torch.cuda.stream(torch.cuda.ExternalStream(gs.raw)):
            y.zero_()
        gc.op_add_scalar(gs, y, y, n, 3.0)
        gs.synchronize()
        assert bool((y == 3.0).all())


def test_events_time_and_order_work(ctx, stream, pool):
    other = gc.Stream(ctx)
    d = pool.alloc(4 * N)
    start, end = gc.Event(ctx), gc.Event(ctx)
    start.record(stream)
    gc.op_fill(stream, d, N, 3.0)
    end.record(stream)
    other.wait_event(end)  # other runs after the fill
    gc.op_scale(other, d, d, N, 2.0)
    other.synchronize()
    assert end.done
    assert 0.0 <= start.elapsed_ms(end) < 10_000.0
    assert download(ctx, stream, d, 1) == [6.0]
    with pytest.raises(gc.InvalidArgumentError):
        start.elapsed_ms(gc.Event(ctx, timing=False))
    borrowed = gc.Event.wrap(ctx, end.raw)
    borrowed.close()  # the wrapped event stays alive
    end.synchronize()


def test_host_func_eager_and_captured(ctx, stream):
    calls = []
    stream.launch_host_func(lambda: calls.append("eager"))
    stream.synchronize()
    assert calls == ["eager"]
    with gc.capture(stream) as cap:
        stream.launch_host_func(lambda: calls.append("replay"))
    e = cap.graph.instantiate()
    e.launch(stream)
    e.launch(stream)
    stream.synchronize()
    assert calls == ["eager", "replay", "replay"]


def test_clone_and_wrap(ctx, stream, pool):
    d = pool.alloc(4 * N)
    g = gc.Graph(ctx)
    g.add_memset_elem(d, 0x3F800000, 4, N)  # 1.0f in every element
    c = g.clone()
    assert len(c) == 1
    gc.memset_async(stream, d, 0, 4 * N)
    c.instantiate().launch(stream)
    assert download(ctx, stream, d, N) == [1.0] * N
    w = gc.Graph.wrap(ctx, g.raw)  # borrowed: g keeps the CUgraph
    assert len(w) == 1
    gc.memset_async(stream, d, 0, 4 * N)
    w.instantiate().launch(stream)
    assert download(ctx, stream, d, 2) == [1.0, 1.0]


def test_memset_elem_eager(ctx, stream, pool):
    d = pool.alloc(4 * N)
    gc.memset_async_elem(stream, d, 0x4000, 2, 2 * N)  # 0x40004000 per float
    got = download(ctx, stream, d, 1)[0]
    assert got == C.c_float.from_buffer_copy((0x40004000).to_bytes(4, "little")).value
    with pytest.raises(gc.InvalidArgumentError):
        gc.memset_async_elem(stream, d + 2, 0, 4, 4)


def test_graph_arguments(ctx, stream, pool):
    """Arguments declared during a capture (by name) and on a graph, bound
    at launch and at replay; bad bindings raise and change nothing."""
    x, y, x2, y2 = (pool.alloc(4 * N) for _ in range(4))
    upload(ctx, stream, x, [float(i) for i in range(N)])
    upload(ctx, stream, x2, [10.0 * i for i in range(N)])
    for b in (y, y2):
        gc.memset_async(stream, b, 0, 4 * N)
    with gc.capture(stream, pool) as cap:
        assert stream.capture_arg(x, 4 * N, name="x") == 0
        assert stream.capture_arg(y, 4 * N, name="y") == 1
        gc.op_scale(stream, y, x, N, 2.0)
    e = cap.graph.instantiate()
    assert e.arg_uses("x") == 1 and e.arg_uses("y") == 1
    (ux,), (uy,) = e.arg_use_list("x"), e.arg_use_list(1)
    for u in (ux, uy):
        assert (u["node"], u["kind"], u["nested"], u["delta"]) == (0, "kernel", False, 0), u
        assert "scale" in u["kernel"], u
    assert ux["offset"] != uy["offset"] and {ux["offset"], uy["offset"]} <= {0, 8, 16}
    e.launch(stream, x=x2, y=y2)
    assert download(ctx, stream, y2, 3) == [0.0, 20.0, 40.0]
    assert download(ctx, stream, y, 3) == [0.0, 0.0, 0.0]
    with ctx.host_alloc(4 * N) as h:
        with pytest.raises(gc.InvalidArgumentError, match="binding 0"):
            e.launch(stream, x=h)
    with pytest.raises(gc.InvalidArgumentError, match="no argument named"):
        e.launch(stream, z=x)
    gc.memset_async(stream, y2, 0, 4 * N)
    e.launch(stream)  # keeps the last bindings
    assert download(ctx, stream, y2, 2) == [0.0, 20.0]

    def record(s, batch):
        s.capture_arg(x, 4 * batch, name="x")
        s.capture_arg(y, 4 * batch, name="y")
        gc.op_scale(s, y, x, batch, 3.0)

    with gc.Runner(ctx, pool) as r:
        r.capture([1, 4], record, warmup_runs=1)
        assert r.replay(3, stream, x=x2, y=y2) == 4
        assert download(ctx, stream, y2, 4) == [0.0, 30.0, 60.0, 90.0]


class PoolBuffer:
    """A buffer object owning a pool block, freed when collected (as a
    tensor's memory goes back to its allocator)."""

    def __init__(self, pool, nbytes):
        self.pool, self.nbytes, self.ptr = pool, nbytes, pool.alloc(nbytes)

    def data_ptr(self):
        return self.ptr

    def __del__(self):
        self.pool.free(self.ptr)


def test_bound_objects_stay_alive_while_bound(ctx, stream, pool):
    """Bindings persist, so the objects bound do too: an Exec (and a
    Runner, per bucket) keeps what it was bound to alive until that
    argument is bound to something else, so a plain launch after the
    caller dropped its reference writes into the same, still owned,
    memory, never into a block freed and handed out again."""
    import gc as pygc
    import weakref

    x, y = pool.alloc(4 * N), pool.alloc(4 * N)
    upload(ctx, stream, x, [float(i) for i in range(N)])
    with gc.capture(stream, pool) as cap:
        stream.capture_arg(x, 4 * N, name="x")
        stream.capture_arg(y, 4 * N, name="y")
        gc.op_scale(stream, y, x, N, 2.0)
    e = cap.graph.instantiate()
    out = PoolBuffer(pool, 4 * N)
    kept = weakref.ref(out)
    e.launch(stream, y=out)
    del out
    pygc.collect()
    assert kept() is not None, "the Exec keeps the object bound to y"
    allocated = pool.stats().allocated_bytes
    gc.memset_async(stream, kept().ptr, 0, 4 * N)
    e.launch(stream)  # plain: still bound to the kept object
    assert download(ctx, stream, kept().ptr, 3) == [0.0, 2.0, 4.0]
    e.launch(stream, y=y)  # bound elsewhere: the object goes
    stream.synchronize()
    pygc.collect()
    assert kept() is None, "rebinding y released the object"
    assert pool.stats().allocated_bytes == allocated - 4 * N

    def record(s, batch):
        s.capture_arg(x, 4 * batch, name="x")
        s.capture_arg(y, 4 * batch, name="y")
        gc.op_scale(s, y, x, batch, 3.0)

    with gc.Runner(ctx, pool) as r:
        r.capture([4], record, warmup_runs=1)
        out = PoolBuffer(pool, 4 * 4)
        kept = weakref.ref(out)
        assert r.replay(4, stream, y=out) == 4
        del out
        pygc.collect()
        assert kept() is not None, "the Runner keeps the object bound in bucket 4"
        gc.memset_async(stream, kept().ptr, 0, 16)
        r.replay(4, stream)
        assert download(ctx, stream, kept().ptr, 4) == [0.0, 3.0, 6.0, 9.0]
        r.replay(4, stream, y=y)
        stream.synchronize()
        pygc.collect()
        assert kept() is None, "rebinding the bucket's y released the object"


def test_scalar_arguments_with_torch(ctx, pool, torch):
    """A captured op_scale's alpha declared as a scalar argument by a
    marker and bound per launch with gc.Scalar."""
    import ctypes
    n = 4096
    x = torch.randn(n, device="cuda")
    y = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    marker = 1234.5
    with gc.Stream(ctx) as s:
        with gc.capture(s, pool) as cap:
            s.capture_scalar_arg(marker, ctypes.c_float, name="alpha")
            gc.op_scale(s, y, x, n, marker)
        e = cap.graph.instantiate()
        assert e.arg_uses("alpha") == 1
        for alpha in (0.5, -3.0, 0.001):
            e.launch(s, alpha=gc.Scalar(alpha, ctypes.c_float))
            s.synchronize()
            assert torch.equal(y, x * torch.tensor(alpha, dtype=torch.float32, device="cuda"))
        # A tensor for a 4-byte scalar: its size is refused first.
        with pytest.raises(gc.InvalidArgumentError, match="scalar of 4 bytes"):
            e.launch(s, alpha=y)


def test_graph_arguments_with_torch(ctx, pool, torch):
    """exec.launch(stream, x=tensor, y=tensor) with torch tensors."""
    n = 4096
    xs = [torch.randn(n, device="cuda") for _ in range(2)]
    ys = [torch.zeros(n, device="cuda") for _ in range(2)]
    torch.cuda.synchronize()
    with gc.Stream(ctx) as s:
        with gc.capture(s, pool) as cap:
            gc.op_scale(s, ys[0], xs[0], n, 2.0)
        g = cap.graph
        g.declare_arg(xs[0], name="x")
        g.declare_arg(ys[0], name="y")
        e = g.instantiate()
        e.launch(s, x=xs[1], y=ys[1])
        s.synchronize()
        assert torch.equal(ys[1], xs[1] * 2.0)
        assert bool((ys[0] == 0).all())
        with pytest.raises(gc.InvalidArgumentError, match="declared"):
            e.launch(s, x=xs[1][: n // 2])  # a smaller range than declared


def _linear_ref(x, w, b, m, n, k, relu):
    y = []
    for i in range(m):
        for j in range(n):
            s = sum(x[i * k + l] * w[j * k + l] for l in range(k)) + b[j]
            y.append(max(s, 0.0) if relu else s)
    return y


def test_op_linear_dispatch_is_reported_and_both_paths_agree(ctx, stream, pool):
    """gc_op_linear_backend says which GEMM runs; forced graphcore, forced
    cuBLASLt (where it loads) and the table's choice agree within f32
    rounding of a float64 reference, ReLU and bias fused."""
    import random
    m, n, k = 640, 72, 40
    rnd = random.Random(53)
    x = [rnd.uniform(-1, 1) for _ in range(m * k)]
    w = [rnd.uniform(-1, 1) for _ in range(n * k)]
    b = [rnd.uniform(-1, 1) for _ in range(n)]
    xd, wd, bd = pool.alloc(4 * m * k), pool.alloc(4 * n * k), pool.alloc(4 * n)
    upload(ctx, stream, xd, x)
    upload(ctx, stream, wd, w)
    upload(ctx, stream, bd, b)
    want = _linear_ref(x, w, b, m, n, k, True)
    version = gc.cublaslt_version()
    assert gc.op_linear_backend(stream, 1, n, k, gc.LINEAR_RELU) == gc.LINEAR_BACKEND_GRAPHCORE
    assert gc.op_linear_backend(stream, m, n, k, gc.LINEAR_GRAPHCORE) == gc.LINEAR_BACKEND_GRAPHCORE
    chosen = gc.op_linear_backend(stream, m, n, k, gc.LINEAR_RELU)
    if version is None:
        assert chosen == gc.LINEAR_BACKEND_GRAPHCORE
    flag_sets = [gc.LINEAR_GRAPHCORE, 0] + ([gc.LINEAR_CUBLASLT] if version else [])
    for flags in flag_sets:
        y = pool.alloc(4 * m * n)
        gc.op_linear(stream, y, xd, wd, bd, m, n, k, gc.LINEAR_RELU | flags)
        got = download(ctx, stream, y, m * n)
        worst = max(abs(g - r) / (1 + abs(r)) for g, r in zip(got, want))
        assert worst < 1e-4, (flags, worst)
    if version is not None:
        assert gc.op_linear_backend(stream, m, n, k, gc.LINEAR_CUBLASLT) == gc.LINEAR_BACKEND_CUBLASLT


def test_op_linear_falls_back_without_cublaslt(ctx):
    """With GRAPHCORE_CUBLASLT=/nonexistent (a fresh process: the outcome is
    kept per process), cuBLASLt is absent: gc_cublaslt_version is
    GC_ERROR_NOT_SUPPORTED naming the path, the backend query reports
    graphcore's kernels at every size, forcing cuBLASLt is
    GC_ERROR_NOT_SUPPORTED with nothing launched (y keeps its poison), and
    the default call runs graphcore's kernel."""
    import os
    import subprocess
    import sys
    child = r'''
import ctypes as C, math, graphcore as gc
with gc.Context(0) as ctx, gc.Stream(ctx) as s, gc.Pool(ctx) as p:
    assert gc.cublaslt_version() is None
    out = C.c_size_t()
    try:
        gc.lib.gc_cublaslt_version(C.byref(out))
        raise SystemExit("gc_cublaslt_version succeeded")
    except gc.NotSupportedError as e:
        assert "/nonexistent" in str(e), str(e)
    for m in (1, 512, 4096):
        assert gc.op_linear_backend(s, m, 256, 256) == gc.LINEAR_BACKEND_GRAPHCORE
        assert gc.op_linear_backend(s, m, 256, 256, gc.LINEAR_TF32) == gc.LINEAR_BACKEND_GRAPHCORE
    m, n, k = 1024, 64, 64
    x, w, y = p.alloc(4 * m * k), p.alloc(4 * n * k), p.alloc(4 * m * n)
    gc.memset_async(s, x, 0, 4 * m * k)
    gc.memset_async(s, w, 0, 4 * n * k)
    gc.memset_async(s, y, 0xff, 4 * m * n)
    try:
        gc.op_linear(s, y, x, w, None, m, n, k, gc.LINEAR_CUBLASLT)
        raise SystemExit("forced cuBLASLt ran without cuBLASLt")
    except gc.NotSupportedError:
        pass
    with ctx.host_alloc(4 * m * n) as h:
        gc.memcpy_async(s, h, y, 4 * m * n)
        s.synchronize()
        assert all(math.isnan(v) for v in h.view("f")), "something was launched"
        gc.op_linear(s, y, x, w, None, m, n, k, 0)
        gc.memcpy_async(s, h, y, 4 * m * n)
        s.synchronize()
        assert all(v == 0.0 for v in h.view("f"))
print("fallback ok")
'''
    env = dict(os.environ, GRAPHCORE_CUBLASLT="/nonexistent/libcublasLt.so.12",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(gc.__file__))]
                                          + [os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "fallback ok" in r.stdout, r.stdout + r.stderr


class _Rows:
    """A view of the first rows of a device buffer: its address and bytes,
    as a binding reads them (data_ptr(), nbytes)."""

    def __init__(self, ptr, nbytes):
        self.ptr, self.nbytes = ptr, nbytes

    def data_ptr(self):
        return self.ptr


def test_runner_exact_size_replay_of_an_mlp(ctx, stream, pool):
    """Runner.replay(n, exact=True): buckets captured once with op_mlp_rows
    serve every n = 1..8 with input and output buffers of exactly n rows:
    the outputs are op_mlp's n-row eager result (within float rounding) and
    bitwise the padded bucket's first n rows, and nothing is written past
    row n of the output. A bucket of capture() (no row count) refuses."""
    import math
    import random
    import struct

    rng = random.Random(53)
    widths = [64, 32, 16, 10]
    layers = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        w, bias = pool.alloc(4 * a * b), pool.alloc(4 * b)
        upload(ctx, stream, w, [rng.uniform(-1, 1) / math.sqrt(a) for _ in range(a * b)])
        upload(ctx, stream, bias, [rng.uniform(-1, 1) for _ in range(b)])
        layers.append((w, bias, a, b, i + 2 < len(widths)))
    most, xin, xout = 8, widths[0], widths[-1]
    xb, yb = pool.alloc(4 * most * xin), pool.alloc(4 * most * xout)
    wsb = gc.mlp_workspace_bytes(most, layers)
    ws = pool.alloc(wsb)

    def record(s, batch, rows):
        s.capture_arg(xb, 4 * batch * xin, name="x", rows=True)
        s.capture_arg(yb, 4 * batch * xout, name="y", rows=True)
        gc.op_mlp_rows(s, yb, xb, rows, batch, layers, ws, wsb)

    bits = lambda v: struct.unpack("I", struct.pack("f", v))[0]  # noqa: E731
    with gc.Runner(ctx, pool) as r:
        r.capture([2, 8], record, warmup_runs=1, exact=True)
        assert r.stats().exact_buckets == 0b11
        x_pad, y_pad = pool.alloc(4 * most * xin), pool.alloc(4 * most * xout)
        y_eager, ws_eager = pool.alloc(4 * most * xout), pool.alloc(wsb)
        for n in range(1, most + 1):
            values = [rng.uniform(-1, 1) for _ in range(n * xin)]
            x = pool.alloc(4 * n * xin)
            y = pool.alloc(4 * most * xout)
            upload(ctx, stream, x, values)
            gc.memset_async(stream, y, 0xFF, 4 * most * xout)
            bucket = r.replay(n, stream, exact=True, x=_Rows(x, 4 * n * xin), y=_Rows(y, 4 * n * xout))
            assert bucket == (2 if n <= 2 else 8)
            got = download(ctx, stream, y, most * xout)
            assert all(bits(v) == 0xFFFFFFFF for v in got[n * xout:]), "n=%d: a row past n written" % n
            # The eager n-row forward pass.
            gc.memset_async(stream, ws_eager, 0, wsb)
            gc.op_mlp(stream, y_eager, x, n, layers, ws_eager, wsb)
            want = download(ctx, stream, y_eager, n * xout)
            err = max(abs(a - b) for a, b in zip(got, want)) / max(max(abs(b) for b in want), 1e-30)
            assert err <= 1e-5, "n=%d: %g from the eager result" % (n, err)
            # The padded bucket: the same rows, zeros after them, bound whole.
            upload(ctx, stream, x_pad, values + [0.0] * ((bucket - n) * xin))
            if n < bucket:
                with pytest.raises(gc.InvalidArgumentError, match="bind it again"):
                    r.replay(n, stream)  # its rows arguments hold n rows
            r.replay(n, stream, x=_Rows(x_pad, 4 * bucket * xin), y=_Rows(y_pad, 4 * bucket * xout))
            padded = download(ctx, stream, y_pad, n * xout)
            assert [bits(v) for v in got[:n * xout]] == [bits(v) for v in padded], "n=%d" % n
            pool.free(x)
            pool.free(y)

    def plain(s, batch):
        s.capture_arg(xb, 4 * batch * xin, name="x")
        s.capture_arg(yb, 4 * batch * xout, name="y")
        gc.op_mlp(s, yb, xb, batch, layers, ws, wsb)

    with gc.Runner(ctx, pool) as r:
        r.capture([4], plain, warmup_runs=1)
        assert r.stats().exact_buckets == 0
        with pytest.raises(gc.InvalidStateError, match="exact-size"):
            r.replay(3, stream, exact=True)


def test_op_mlp_layers_take_the_gemm_dispatch(ctx, stream, pool):
    """gc_op_mlp's per-layer form runs each layer through gc_op_linear's
    dispatch (cuBLASLt from 512 rows until the table is measured, where it
    loads): 640 rows through 96 -> 128 -> 40 agree with the chain of
    op_linear calls forced onto graphcore's kernels within f32 rounding."""
    import random
    rows, dims = 640, [96, 128, 40]
    rnd = random.Random(531)
    x = [rnd.uniform(-1, 1) for _ in range(rows * dims[0])]
    xd = pool.alloc(4 * rows * dims[0])
    upload(ctx, stream, xd, x)
    layers, _ = _mlp_layers(ctx, stream, pool, rnd, dims, 0.2)
    nbytes = gc.mlp_workspace_bytes(rows, layers)
    work = pool.alloc(nbytes)
    gc.memset_async(stream, work, 0, nbytes)
    y = pool.alloc(4 * rows * dims[2])
    gc.op_mlp(stream, y, xd, rows, layers, work, nbytes)
    got = download(ctx, stream, y, rows * dims[2])
    h = pool.alloc(4 * rows * dims[1])
    y2 = pool.alloc(4 * rows * dims[2])
    gc.op_linear(stream, h, xd, layers[0][0], layers[0][1], rows, dims[1], dims[0],
                 gc.LINEAR_RELU | gc.LINEAR_GRAPHCORE)
    gc.op_linear(stream, y2, h, layers[1][0], layers[1][1], rows, dims[2], dims[1], gc.LINEAR_GRAPHCORE)
    want = download(ctx, stream, y2, rows * dims[2])
    worst = max(abs(g - r) / (1 + abs(r)) for g, r in zip(got, want))
    assert worst < 1e-4, worst
    expected = gc.LINEAR_BACKEND_CUBLASLT if gc.cublaslt_version() else gc.LINEAR_BACKEND_GRAPHCORE
    assert gc.op_linear_backend(stream, rows, dims[1], dims[0], gc.LINEAR_RELU) == expected


def _mlp_layers(ctx, stream, pool, rnd, dims, w_range):
    """Two layers dims[0] -> dims[1] (ReLU) -> dims[2] drawn from ``rnd``
    (W uniform in +-w_range, b in +-1), uploaded to pool blocks: gc.op_mlp's
    layers and the host (w, b) lists."""
    layers, host = [], []
    for i in range(2):
        w = [rnd.uniform(-w_range, w_range) for _ in range(dims[i] * dims[i + 1])]
        b = [rnd.uniform(-1, 1) for _ in range(dims[i + 1])]
        wd, bd = pool.alloc(4 * len(w)), pool.alloc(4 * len(b))
        upload(ctx, stream, wd, w)
        upload(ctx, stream, bd, b)
        layers.append((wd, bd, dims[i], dims[i + 1], i == 0))
        host.append((w, b))
    return layers, host


def _mlp_ref(x, layers_host, rows, dims):
    h = x
    for i, (w, b) in enumerate(layers_host):
        h = _linear_ref(h, w, b, rows, dims[i + 1], dims[i], i + 1 < len(layers_host))
    return h


def test_op_mlp_tf32_matches_float64_and_replays_rebound(ctx, stream, pool):
    """gc_op_mlp with GC_MLP_TF32 (every layer as gc_op_linear with
    GC_LINEAR_TF32: cuBLASLt's FAST_TF32 where it loads, else graphcore's
    TF32 kernel), the table's choice and each backend forced, within TF32
    rounding of float64; captured with x and y declared arguments, a replay
    bound to other buffers computes on those and leaves the captured ones
    alone."""
    import random
    rows, dims = 96, [64, 96, 24]
    rnd = random.Random(5311)
    xs = [[rnd.uniform(-1, 1) for _ in range(rows * dims[0])] for _ in range(2)]
    layers, host = _mlp_layers(ctx, stream, pool, rnd, dims, 0.3)
    wants = [_mlp_ref(x, host, rows, dims) for x in xs]
    xd = [pool.alloc(4 * rows * dims[0]) for _ in range(2)]
    yd = [pool.alloc(4 * rows * dims[2]) for _ in range(2)]
    for d, x in zip(xd, xs):
        upload(ctx, stream, d, x)
    nbytes = gc.mlp_workspace_bytes(rows, layers)
    work = pool.alloc(nbytes)
    gc.memset_async(stream, work, 0, nbytes)

    def worst(got, want):
        return max(abs(g - r) / (1 + abs(r)) for g, r in zip(got, want))

    version = gc.cublaslt_version()
    for backend in [None, "graphcore"] + (["cublaslt"] if version else []):
        gc.op_mlp(stream, yd[0], xd[0], rows, layers, work, nbytes, tf32=True, backend=backend)
        assert worst(download(ctx, stream, yd[0], rows * dims[2]), wants[0]) < 5e-3, backend
    with pytest.raises(gc.InvalidArgumentError, match="per-layer"):
        gc.op_mlp(stream, yd[0], xd[0], rows, layers, work, nbytes, fused=True, tf32=True)
    with gc.Stream(ctx) as s:
        with gc.capture(s, pool) as cap:
            gc.op_mlp(s, yd[0], xd[0], rows, layers, work, nbytes, tf32=True)
        g = cap.graph
        g.declare_arg(xd[0], 4 * rows * dims[0], name="x")
        g.declare_arg(yd[0], 4 * rows * dims[2], name="y")
        e = g.instantiate()
        gc.memset_async(s, yd[0], 0, 4 * rows * dims[2])
        e.launch(s, x=xd[1], y=yd[1])
        s.synchronize()
        assert worst(download(ctx, s, yd[1], rows * dims[2]), wants[1]) < 5e-3
        assert all(v == 0 for v in download(ctx, s, yd[0], rows * dims[2]))
        e.launch(s, x=xd[0], y=yd[0])
        s.synchronize()
        assert worst(download(ctx, s, yd[0], rows * dims[2]), wants[0]) < 5e-3


def test_linear_mse_step_takes_the_gemm_dispatch(ctx, stream, pool):
    """Past the small-batch sizes, gc_op_linear_mse_step's forward and
    weight update take gc_op_linear's dispatch (cuBLASLt from 512 rows until
    the table is measured, where it loads): 640 rows of a 24 -> 12 layer
    against float64 (loss, W, b), with the mean's gradient scale."""
    import random
    rows, inputs, outputs, lr = 640, 24, 12, 0.02
    rnd = random.Random(5310)
    w0 = [rnd.uniform(-0.3, 0.3) for _ in range(outputs * inputs)]
    b0 = [rnd.uniform(-0.5, 0.5) for _ in range(outputs)]
    x = [rnd.uniform(-1, 1) for _ in range(rows * inputs)]
    t = [rnd.uniform(-1, 1) for _ in range(rows * outputs)]
    _linear_mse_step_against_float64(ctx, stream, pool, rows, inputs, outputs,
                                     1.0 / (rows * outputs), lr, w0, b0, x, t)
    expected = gc.LINEAR_BACKEND_CUBLASLT if gc.cublaslt_version() else gc.LINEAR_BACKEND_GRAPHCORE
    assert gc.op_linear_backend(stream, rows, outputs, inputs) == expected


def _mlp2_step_buffers(ctx, torch, seed, m, k0, k1, k2):
    """A 2-layer MLP step's buffers for m rows of k0 -> k1 -> k2, drawn from
    a generator seeded ``seed``: x, t, w1, b1, w2, b2, the parameters'
    float64 copies, loss, the workspace's size and the workspace."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    dev = dict(device="cuda", dtype=torch.float32)
    x = torch.rand(m, k0, generator=g, **dev) * 2 - 1
    t = torch.rand(m, k2, generator=g, **dev) * 2 - 1
    w1 = (torch.rand(k1, k0, generator=g, **dev) * 2 - 1) / k0 ** 0.5
    b1 = torch.rand(k1, generator=g, **dev) * 2 - 1
    w2 = (torch.rand(k2, k1, generator=g, **dev) * 2 - 1) / k1 ** 0.5
    b2 = torch.rand(k2, generator=g, **dev) * 2 - 1
    start = [v.clone().double() for v in (w1, b1, w2, b2)]
    loss = torch.zeros(1, **dev)
    nbytes = ctx.mlp2_mse_step_workspace_bytes(m, k1, k2)
    ws = torch.zeros(nbytes // 4 + 1, **dev)
    torch.cuda.synchronize()
    return x, t, w1, b1, w2, b2, start, loss, nbytes, ws


def _mlp2_step_ref(torch, start, x, t, lr):
    """One 2-layer MLP step (ReLU hidden layer, summed squared error, SGD)
    in float64 from the parameters ``start`` (w1, b1, w2, b2): the loss, the
    parameters after it, and the hidden units whose pre-activation in some
    row is within f32 rounding of zero (1e-6 of the sum of its terms'
    magnitudes; an f32 GEMM of these draws at k = 1024 errs by at most
    about 1.3e-7 of that sum, by a median 8e-9, in a numpy simulation):
    there the f32 ReLU may fall on the other side than float64's, which
    moves that unit's w1 row and b1 entry by a whole term of dh, so those
    units' layer-1 updates cannot be compared (about 0.5% of the units at
    1024 rows in that simulation)."""
    W1, B1, W2, B2 = start
    X, T = x.double(), t.double()
    pre = X @ W1.T + B1
    h = torch.relu(pre)
    p = h @ W2.T + B2
    dp = 2.0 * (p - T)
    dh = (dp @ W2) * (h > 0)
    want = [W1 - lr * dh.T @ X, B1 - lr * dh.sum(0), W2 - lr * dp.T @ h, B2 - lr * dp.sum(0)]
    terms = X.abs() @ W1.abs().T + B1.abs()
    ambiguous = (pre.abs() <= 1e-6 * terms).any(0)
    return float(((p - T) ** 2).sum()), want, ambiguous


def _layer1_rows(name, got, ref, before, ambiguous):
    """w1 and b1 without the ``ambiguous`` hidden units (_mlp2_step_ref),
    at most 3% of them; w2 and b2 whole (h is continuous at the ReLU)."""
    if name not in ("w1", "b1"):
        return got, ref, before
    assert int(ambiguous.sum()) <= ambiguous.numel() * 3 // 100, int(ambiguous.sum())
    keep = ~ambiguous
    return got[keep], ref[keep], before[keep]


def test_mlp2_mse_step_takes_the_gemm_dispatch(ctx, stream, pool, torch):
    """gc_op_mlp2_mse_step's per-layer form (2^31 multiply-adds and more)
    runs each layer's GEMMs through gc_op_linear's dispatch (cuBLASLt from
    512 rows until the table is measured, where it loads): 1024 rows of
    1024 -> 1024 -> 512 against float64 (loss, both layers' updates)."""
    m, k0, k1, k2, lr = 1024, 1024, 1024, 512, 1e-4
    x, t, w1, b1, w2, b2, start, loss, nbytes, ws = _mlp2_step_buffers(ctx, torch, 532, m, k0, k1, k2)
    gc.op_mlp2_mse_step(stream, w1.data_ptr(), b1.data_ptr(), w2.data_ptr(), b2.data_ptr(), x.data_ptr(),
                        t.data_ptr(), loss.data_ptr(), m, k0, k1, k2, 1.0, lr, ws.data_ptr(), nbytes)
    stream.synchronize()
    ref_loss, want, ambiguous = _mlp2_step_ref(torch, start, x, t, lr)
    assert abs(loss.item() - ref_loss) <= 1e-4 * ref_loss
    for name, got, ref, before in zip(("w1", "b1", "w2", "b2"), (w1, b1, w2, b2), want, start):
        got, ref, before = _layer1_rows(name, got, ref, before, ambiguous.to(got.device))
        err = float((got.double() - ref).abs().max())
        step = float((ref - before).abs().max())
        assert err <= 1e-3 * step, (name, err, step)
    expected = gc.LINEAR_BACKEND_CUBLASLT if gc.cublaslt_version() else gc.LINEAR_BACKEND_GRAPHCORE
    assert gc.op_linear_backend(stream, m, k1, k0, gc.LINEAR_RELU) == expected


def _linear_step_ref(torch, w, b, x, t, lr, scale=1.0):
    """One linear MSE step in float64: (loss, W, b) after it."""
    W, B, X, T = (v.double() for v in (w, b, x, t))
    p = X @ W.T + B
    dy = 2.0 * scale * (p - T)
    return float(((p - T) ** 2).sum()), W - lr * dy.T @ X, B - lr * dy.sum(0)


def _close_to_step(got, ref, before, rel):
    """|got - ref| within ``rel`` of the update's size (max |ref - before|)."""
    err = float((got.double() - ref).abs().max())
    step = float((ref - before.double()).abs().max())
    return err <= rel * step, (err, step)


def test_linear_mse_step_flags_tf32_matches_float64_and_replays_rebound(ctx, stream, pool, torch):
    """gc_op_linear_mse_step_flags with GC_LINEAR_TF32 past the small-batch
    sizes (640 rows): forward and weight update on cuBLASLt's FAST_TF32,
    loss, W and b within TF32 rounding of float64; captured with every
    pointer a declared argument, a replay bound to a second set of buffers
    steps that set and leaves the first alone. Without cuBLASLt:
    GC_ERROR_NOT_SUPPORTED naming the flag, nothing changed."""
    m, k, n, lr = 640, 256, 128, 1e-3
    g = torch.Generator(device="cuda").manual_seed(5312)
    dev = dict(device="cuda", dtype=torch.float32)

    def one_set():
        return [(torch.rand(n, k, generator=g, **dev) * 2 - 1) / k ** 0.5,
                torch.rand(n, generator=g, **dev) * 2 - 1,
                torch.rand(m, k, generator=g, **dev) * 2 - 1,
                torch.rand(m, n, generator=g, **dev) * 2 - 1,
                torch.zeros(1, **dev)]

    sets = [one_set(), one_set()]
    nbytes = ctx.linear_mse_step_workspace_bytes(m, k, n)
    ws = torch.zeros(nbytes // 4 + 1, **dev)
    torch.cuda.synchronize()

    def step(s, st):
        w, b, x, t, loss = st
        gc.op_linear_mse_step_flags(s, w.data_ptr(), b.data_ptr(), x.data_ptr(), t.data_ptr(), loss.data_ptr(),
                                    m, k, n, 1.0, lr, ws.data_ptr(), nbytes, gc.LINEAR_TF32)

    if gc.cublaslt_version() is None:
        before = sets[0][0].clone()
        with pytest.raises(gc.NotSupportedError, match="GC_LINEAR_TF32"):
            step(stream, sets[0])
        torch.cuda.synchronize()
        assert torch.equal(sets[0][0], before)
        return

    def check(st, start):
        want_loss, want_w, want_b = _linear_step_ref(torch, *start, st[2], st[3], lr)
        assert abs(st[4].item() - want_loss) <= 1e-2 * want_loss
        for got, ref, before in ((st[0], want_w, start[0]), (st[1], want_b, start[1])):
            ok, why = _close_to_step(got, ref, before, 2e-2)
            assert ok, why

    start0 = [v.clone() for v in sets[0][:2]]
    step(stream, sets[0])
    stream.synchronize()
    check(sets[0], start0)
    start0 = [v.clone() for v in sets[0][:2]]
    start1 = [v.clone() for v in sets[1][:2]]
    with gc.Stream(ctx) as s:
        with gc.capture(s, pool) as cap:
            step(s, sets[0])
        graph = cap.graph
        for name, v in zip(("w", "b", "x", "t", "loss"), sets[0]):
            graph.declare_arg(v.data_ptr(), 4 * v.numel(), name=name)
        e = graph.instantiate()
        e.launch(s, **{name: v.data_ptr() for name, v in zip(("w", "b", "x", "t", "loss"), sets[1])})
        s.synchronize()
    check(sets[1], start1)
    assert torch.equal(sets[0][0], start0[0]) and torch.equal(sets[0][1], start0[1])


def test_mlp2_mse_step_flags_tf32_matches_float64(ctx, stream, pool, torch):
    """gc_op_mlp2_mse_step_flags with GC_LINEAR_TF32 in its seven-launch
    form (1024 rows of 1024 -> 1024 -> 512): every GEMM on cuBLASLt's
    FAST_TF32, loss and both layers' updates within TF32 rounding of
    float64; forced graphcore with TF32 is GC_ERROR_NOT_SUPPORTED (graphcore
    has no TF32 step); without cuBLASLt TF32 is GC_ERROR_NOT_SUPPORTED."""
    m, k0, k1, k2, lr = 1024, 1024, 1024, 512, 1e-4
    x, t, w1, b1, w2, b2, start, loss, nbytes, ws = _mlp2_step_buffers(ctx, torch, 5313, m, k0, k1, k2)

    def step(flags):
        gc.op_mlp2_mse_step_flags(stream, w1.data_ptr(), b1.data_ptr(), w2.data_ptr(), b2.data_ptr(),
                                  x.data_ptr(), t.data_ptr(), loss.data_ptr(), m, k0, k1, k2, 1.0, lr,
                                  ws.data_ptr(), nbytes, flags)

    with pytest.raises(gc.NotSupportedError, match="GC_LINEAR_TF32"):
        step(gc.LINEAR_TF32 | gc.LINEAR_GRAPHCORE)
    if gc.cublaslt_version() is None:
        with pytest.raises(gc.NotSupportedError, match="GC_LINEAR_TF32"):
            step(gc.LINEAR_TF32)
        return
    step(gc.LINEAR_TF32)
    stream.synchronize()
    ref_loss, want, _ambiguous = _mlp2_step_ref(torch, start, x, t, lr)
    assert abs(loss.item() - ref_loss) <= 1e-2 * ref_loss
    # Layer 1's bound is looser: an h within TF32 rounding of 0 may take the
    # other side of the ReLU than float64's, moving one row's term of dH.
    for name, got, ref, before, rel in zip(("w1", "b1", "w2", "b2"), (w1, b1, w2, b2), want, start,
                                           (1e-1, 1e-1, 2e-2, 2e-2)):
        ok, why = _close_to_step(got, ref, before, rel)
        assert ok, (name, why)


def test_linear_backward_ops_take_the_gemm_dispatch(ctx, stream, pool, torch):
    """gc_op_linear_backward_input, gc_op_linear_backward_weight and
    gc_op_linear_weight_sgd called directly follow the dispatch table's
    entry for the forward shape (cuBLASLt from 512 rows until the table is
    measured, where it loads; else graphcore's kernels): 640 rows of a
    200 -> 96 layer against float64 within f32 rounding; dX captured with
    its buffers declared arguments and replayed bound to a second set."""
    m, n, k, lr = 640, 96, 200, 0.05
    g = torch.Generator(device="cuda").manual_seed(5314)
    dev = dict(device="cuda", dtype=torch.float32)
    dy = torch.rand(m, n, generator=g, **dev) * 2 - 1
    x = torch.rand(m, k, generator=g, **dev) * 2 - 1
    w = torch.rand(n, k, generator=g, **dev) * 2 - 1
    dx = torch.full((m, k), float("nan"), **dev)
    dw = torch.full((n, k), float("nan"), **dev)
    w0 = w.clone()
    torch.cuda.synchronize()
    DY, X, W = dy.double(), x.double(), w.double()

    def close(got, want, scale):
        return float(((got.double() - want).abs() / scale.clamp(min=1e-30)).max())

    gc.op_linear_backward_input(stream, dx.data_ptr(), dy.data_ptr(), w.data_ptr(), m, n, k)
    gc.op_linear_backward_weight(stream, dw.data_ptr(), dy.data_ptr(), x.data_ptr(), m, n, k)
    stream.synchronize()
    assert close(dx, DY @ W, DY.abs() @ W.abs()) <= 1e-5
    assert close(dw, DY.T @ X, DY.abs().T @ X.abs()) <= 1e-5
    gc.op_linear_weight_sgd(stream, w.data_ptr(), dy.data_ptr(), x.data_ptr(), m, n, k, lr)
    stream.synchronize()
    assert close(w, W - lr * DY.T @ X, W.abs() + lr * DY.abs().T @ X.abs()) <= 1e-5
    expected = gc.LINEAR_BACKEND_CUBLASLT if gc.cublaslt_version() else gc.LINEAR_BACKEND_GRAPHCORE
    assert gc.op_linear_backend(stream, m, n, k) == expected
    # Captured with dy, w and dx declared, replayed bound to a second set.
    dy2 = torch.rand(m, n, generator=g, **dev) * 2 - 1
    w2 = torch.rand(n, k, generator=g, **dev) * 2 - 1
    dx2 = torch.full((m, k), float("nan"), **dev)
    dx.fill_(float("nan"))
    torch.cuda.synchronize()
    with gc.Stream(ctx) as s:
        with gc.capture(s, pool) as cap:
            gc.op_linear_backward_input(s, dx.data_ptr(), dy.data_ptr(), w0.data_ptr(), m, n, k)
        graph = cap.graph
        graph.declare_arg(dy.data_ptr(), 4 * m * n, name="dy")
        graph.declare_arg(w0.data_ptr(), 4 * n * k, name="w")
        graph.declare_arg(dx.data_ptr(), 4 * m * k, name="dx")
        e = graph.instantiate()
        e.launch(s, dy=dy2.data_ptr(), w=w2.data_ptr(), dx=dx2.data_ptr())
        s.synchronize()
    DY2, W2 = dy2.double(), w2.double()
    assert close(dx2, DY2 @ W2, DY2.abs() @ W2.abs()) <= 1e-5
    assert bool(dx.isnan().all())


def test_first_cublaslt_call_inside_a_capture(ctx):
    """In a fresh process, the first gc_op_linear that the dispatch gives to
    cuBLASLt runs inside a graphcore capture: opening the library, making
    the device's handle and the plan happen there (in relaxed capture mode)
    without breaking the capture, and the replay computes (x all 1, W all
    0.5, no bias: every output k / 2, exact)."""
    import os
    import subprocess
    import sys
    child = r'''
import ctypes as C, graphcore as gc
m, n, k = 1024, 96, 64
with gc.Context(0) as ctx, gc.Stream(ctx) as s, gc.Pool(ctx) as p:
    x, w, y = p.alloc(4 * m * k), p.alloc(4 * n * k), p.alloc(4 * m * n)
    gc.memset_async_elem(s, x, 0x3F800000, 4, m * k)
    gc.memset_async_elem(s, w, 0x3F000000, 4, n * k)
    gc.memset_async(s, y, 0, 4 * m * n)
    s.synchronize()
    gc.begin_capture(s)
    gc.op_linear(s, y, x, w, None, m, n, k, gc.LINEAR_RELU)
    g = gc.end_capture(s)
    e = g.instantiate()
    e.launch(s)
    with ctx.host_alloc(4 * m * n) as h:
        gc.memcpy_async(s, h, y, 4 * m * n)
        s.synchronize()
        assert all(v == k / 2 for v in h.view("f")), "wrong result"
    print("backend", gc.op_linear_backend(s, m, n, k, gc.LINEAR_RELU), "version", gc.cublaslt_version())
print("capture ok")
'''
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(gc.__file__))]
                                                      + [os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "capture ok" in r.stdout, r.stdout + r.stderr
    if gc.cublaslt_version():
        assert "backend 1" in r.stdout, r.stdout
