"""The binding's own control flow, with a stand-in for the C library (no
GPU): capture ends its capture on every path and destroys the graph of a
failed block; Runner.capture re-raises what its record function raised;
Exec keeps host callbacks alive after the Graph is gone."""
import ctypes as C

import pytest

import graphcore as gc


class FakeLib:
    def __init__(self, end_error=None, capture_status=None):
        self.calls = []
        self.end_error = end_error
        self.capture_status = capture_status

    def gc_capture_begin(self, stream, pool, mode):
        self.calls.append(("begin", stream, pool, mode))

    def gc_capture_end(self, stream, out):
        self.calls.append(("end", stream))
        if self.end_error:
            raise self.end_error
        out._obj.value = 0x6000

    def gc_graph_destroy(self, graph):
        self.calls.append(("destroy", graph))

    def gc_stream_destroy(self, stream):
        self.calls.append(("stream destroy", stream))

    def gc_runner_capture(self, runner, buckets, n, record, user, warmup):
        for i in range(n):
            status = record(0x7000, buckets[i], user)
            if status:
                raise gc.error_for(status, "gc_runner_capture: record failed")


@pytest.fixture
def fake(monkeypatch):
    f = FakeLib()
    monkeypatch.setattr(gc.objects, "lib", f)  # what the handle owners call
    return f


def stream():
    return gc.Stream._adopt(0x1000, None, owns=False)


def test_capture_gives_the_graph(fake):
    s, p = stream(), gc.Pool._adopt(0x2000, None, owns=False)
    with gc.capture(s, p, gc.CAPTURE_RELAXED) as cap:
        assert fake.calls == [("begin", 0x1000, 0x2000, gc.CAPTURE_RELAXED)]
    assert fake.calls[-1] == ("end", 0x1000)
    assert cap.graph.handle == 0x6000
    cap.graph._owns = False


def test_capture_failing_block_drops_the_graph(fake):
    with pytest.raises(RuntimeError, match="inside"):
        with gc.capture(stream()) as cap:
            raise RuntimeError("inside")
    assert fake.calls[1:] == [("end", 0x1000), ("destroy", 0x6000)]
    with pytest.raises(gc.InvalidStateError):
        cap.graph


def test_capture_end_failure(fake):
    fake.end_error = gc.CaptureError("gc_capture_end: invalidated by gc_stream_synchronize")
    with pytest.raises(gc.CaptureError, match="invalidated"):
        with gc.capture(stream()):
            pass
    # When the block failed too, its exception is the one raised.
    with pytest.raises(KeyError):
        with gc.capture(stream()):
            raise KeyError("first")


def test_capture_wraps_foreign_streams(fake, monkeypatch):
    wrapped = []

    def wrap(cls, context, s):
        wrapped.append((context, s))
        return gc.Stream._adopt(0x3000, context, owns=False)

    monkeypatch.setattr(gc.Stream, "wrap", classmethod(wrap))

    class TorchLike:
        cuda_stream = 0x42

    ctx = object()
    pool = gc.Pool._adopt(0x2000, ctx, owns=False)
    src = TorchLike()
    with gc.capture(src, pool) as cap:
        pass
    assert wrapped == [(ctx, src)] and cap.stream.handle == 0x3000
    cap.graph._owns = False


def test_runner_reraises_record_exceptions(fake):
    r = gc.Runner._adopt(0x4000, None, owns=False)
    seen = []
    r.capture([1, 4], lambda s, b: seen.append((s.handle, b)))
    assert seen == [(0x7000, 1), (0x7000, 4)]

    def broken(s, b):
        raise ValueError("record says no")

    with pytest.raises(ValueError, match="record says no") as info:
        r.capture([2], broken)
    assert isinstance(info.value.__cause__, gc.InvalidStateError)

    def graphcore_failure(s, b):
        raise gc.NoBucketError("from record")

    with pytest.raises(gc.NoBucketError, match="from record"):
        r.capture([2], graphcore_failure)
    with pytest.raises(gc.InvalidArgumentError, match="no buckets"):
        r.capture([], broken)
    with pytest.raises(gc.InvalidArgumentError, match="positive"):
        r.capture([0], broken)


def test_exec_keeps_graph_callbacks(monkeypatch):
    class Lib(FakeLib):
        def gc_graph_add_host(self, graph, callback, user, deps, n, node):
            self.callback = callback
            node._obj.index = 0

        def gc_graph_instantiate(self, graph, flags, out):
            out._obj.value = 0x8000

        def gc_exec_destroy(self, h):
            pass

    fake = Lib()
    monkeypatch.setattr(gc.objects, "lib", fake)
    g = gc.Graph._adopt(0x5000, None, owns=False)
    hits = []
    g.add_host(lambda: hits.append(1))
    e = g.instantiate()
    del g
    assert fake.callback in e._keep
    C.cast(fake.callback, C.CFUNCTYPE(None, C.c_void_p))(None)  # as the driver calls it
    assert hits == [1]


class _Tensor:
    """A stand-in for a torch tensor: .data_ptr() and .nbytes."""

    def __init__(self, ptr, nbytes):
        self.ptr, self.nbytes = ptr, nbytes

    def data_ptr(self):
        return self.ptr


def test_launch_binds_arguments_by_name(monkeypatch):
    class Lib(FakeLib):
        def gc_graph_declare_arg(self, graph, ptr, nbytes, flags, out):
            self.calls.append(("declare", ptr, nbytes, flags))
            out._obj.value = len([c for c in self.calls if c[0] == "declare"]) - 1

        def gc_graph_instantiate(self, graph, flags, out):
            out._obj.value = 0x8000

        def gc_exec_launch(self, e, s):
            self.calls.append(("launch", e, s))

        def gc_exec_launch_with(self, e, s, array, n):
            self.calls.append(("with", [(array[i].index, array[i].ptr, array[i].bytes)
                                        for i in range(n)]))

        def gc_exec_destroy(self, h):
            pass

    fake = Lib()
    monkeypatch.setattr(gc.objects, "lib", fake)
    # The hot path's C functions take ctypes values; the fake gets them plain.
    monkeypatch.setattr(gc.objects, "unchecked", lambda name: lambda *a: getattr(fake, name)(
        *(getattr(v, "value", v) for v in a)))
    g = gc.Graph._adopt(0x5000, None, owns=False)
    assert g.declare_arg(_Tensor(0x10000, 64), name="x") == 0
    assert g.declare_arg(0x20000, nbytes=32, exact=True) == 1
    assert fake.calls == [("declare", 0x10000, 64, 0), ("declare", 0x20000, 32, gc.ARG_EXACT)]
    with pytest.raises(TypeError, match="nbytes"):
        g.declare_arg(0x30000)
    e = g.instantiate()
    s = stream()
    e.launch(s)
    assert fake.calls[-1] == ("launch", 0x8000, 0x1000)
    e.launch(s, x=_Tensor(0x40000, 128), arg1=0x50000)
    assert fake.calls[-1] == ("with", [(0, 0x40000, 128), (1, 0x50000, 0)])
    with pytest.raises(gc.InvalidArgumentError, match="no argument named 'y'"):
        e.launch(s, y=0x1)
