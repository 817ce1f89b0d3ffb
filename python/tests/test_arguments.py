"""Keyword bindings (Exec.launch(stream, x=...), Runner.replay(rows,
stream, x=...)) on the Python side: what reaches the C call, with the C
function replaced by a recorder. No GPU needed."""
import ctypes as C

import pytest

import graphcore as gc
from graphcore import objects


class FakeTensor:
    """What the fast path reads of a torch tensor."""

    def __init__(self, ptr, nbytes):
        self.ptr, self.nbytes = ptr, nbytes

    def data_ptr(self):
        return self.ptr

    def view(self, nbytes):
        return FakeTensor(self.ptr, nbytes)


class Recorder:
    """Stands in for gc_exec_launch_with / gc_runner_replay_with."""

    def __init__(self, status=0):
        self.calls, self.status = [], status

    def __call__(self, *args):
        # The C types exactly (the function has no argtypes to convert).
        if len(args) == 4:
            (e, s, array, n), rows = args, None
        else:
            e, rows, s, array, n, out = args
            assert type(rows) is C.c_uint32
            out._obj.value = 4  # the bucket, through the byref
        assert type(e) is C.c_void_p and type(s) is C.c_void_p and type(n) is C.c_size_t
        assert (e.value, s.value) == (0x1000, 0x1000)
        self.calls.append([(array[i].index, array[i].ptr, array[i].bytes)
                           for i in range(n.value)])
        return self.status


def fake(cls, **attrs):
    obj = object.__new__(cls)
    objects._Handle.__init__(obj, handle=0x1000, owns=False)
    obj._cv = C.c_void_p(0x1000)
    for k, v in attrs.items():
        setattr(obj, k, v)
    return obj


@pytest.fixture
def stream():
    s = fake(gc.Stream)
    del s._cv  # made on first use
    return s


def fake_exec(record):
    return fake(gc.Exec, _bindings=objects._Bindings({"x": 0, "y": 1}, "Exec.launch"),
                _launch_with=record)


def test_launch_passes_each_tensors_address_and_bytes(stream):
    rec = Recorder()
    e = fake_exec(rec)
    x, y = FakeTensor(0x10000, 4096), FakeTensor(0x20000, 4096)
    e.launch(stream, x=x, y=y)
    e.launch(stream, y=y, x=x.view(2048))  # a smaller view of the bound buffer
    assert rec.calls == [[(0, 0x10000, 4096), (1, 0x20000, 4096)],
                         [(1, 0x20000, 4096), (0, 0x10000, 2048)]]


def test_other_buffers_take_the_checked_way(stream):
    rec = Recorder()
    e = fake_exec(rec)
    e.launch(stream, x=0x30000)  # a plain address: its size unknown (0)
    assert rec.calls == [[(0, 0x30000, 0)]]


def test_a_scalar_binds_its_value_bytes_and_size(stream):
    rec = Recorder()
    e = fake_exec(rec)
    e.launch(stream, x=gc.Scalar(0.5, C.c_float), y=gc.Scalar(-1, C.c_int64))
    assert rec.calls == [[(0, 0x3F000000, 4), (1, 0xFFFFFFFFFFFFFFFF, 8)]]
    assert gc.Scalar(3, C.c_uint8).data_ptr() == 3
    assert gc.Scalar(3, C.c_uint8).nbytes == 1
    with pytest.raises(TypeError, match="ctype"):
        gc.Scalar(1.0, C.c_char_p)
    with pytest.raises(TypeError, match="ctype"):
        gc.Scalar(1, int)
    with pytest.raises(TypeError, match="c_int"):
        gc.Scalar("x", C.c_int)


def test_bad_names_and_counts_raise_naming_them_and_keep_the_arrays(stream):
    rec = Recorder()
    e = fake_exec(rec)
    t = FakeTensor(0x10000, 64)
    with pytest.raises(gc.InvalidArgumentError, match="no argument named 'z'.*x, y"):
        e.launch(stream, z=t)
    with pytest.raises(gc.InvalidArgumentError, match="3 bindings for 2 arguments"):
        e.launch(stream, x=t, y=t, z=t)
    with pytest.raises(TypeError, match="x"):
        e.launch(stream, x="not a buffer")
    with pytest.raises(TypeError, match="graphcore.Stream"):
        e.launch(object(), x=t)
    assert rec.calls == []
    assert len(e._bindings.free) == 1  # one array, reused after each failure


def test_a_refused_call_raises_its_status(stream):
    e = fake_exec(Recorder(status=gc.InvalidArgumentError.code))
    with pytest.raises(gc.InvalidArgumentError):
        e.launch(stream, x=FakeTensor(0x10000, 64))


def test_closed_objects_raise_before_the_call(stream):
    rec = Recorder()
    e = fake_exec(rec)
    e._h = None
    with pytest.raises(gc.InvalidHandleError, match="Exec is closed"):
        e.launch(stream, x=FakeTensor(0x10000, 64))
    assert rec.calls == []


def test_replay_passes_the_bindings_and_returns_the_bucket(stream):
    rec = Recorder()
    r = fake(gc.Runner, _bindings=objects._Bindings({"x": 0, "y": 1}, "Runner.replay"),
             _replay_with=rec)
    x = FakeTensor(0x10000, 4096)
    assert r.replay(3, stream, x=x.view(1024)) == 4
    assert rec.calls == [[(0, 0x10000, 1024)]]
    with pytest.raises(gc.InvalidArgumentError, match="rows"):
        r.replay(-1, stream, x=x)


def test_exact_replay_passes_the_bindings_and_returns_the_bucket(stream):
    rec = Recorder()
    r = fake(gc.Runner, _bindings=objects._Bindings({"x": 0, "y": 1}, "Runner.replay"),
             _replay_exact_fn=rec)
    x = FakeTensor(0x10000, 4096)
    assert r.replay(3, stream, exact=True, x=x.view(1024)) == 4
    assert rec.calls == [[(0, 0x10000, 1024)]]
    with pytest.raises(gc.InvalidArgumentError, match="rows"):
        r.replay(-1, stream, exact=True, x=x)


def test_bound_objects_are_kept_until_rebound(stream):
    """Bindings persist, so the Exec keeps each bound object alive until
    its argument is bound to another; a refused call keeps what was bound
    before and not the refused object; after another failure both are kept
    (the binding may or may not have changed)."""
    import gc as pygc
    import weakref

    rec = Recorder()
    e = fake_exec(rec)
    x, y = FakeTensor(0x10000, 4096), FakeTensor(0x20000, 4096)
    wx, wy = weakref.ref(x), weakref.ref(y)
    e.launch(stream, x=x, y=y)
    del x, y
    pygc.collect()
    assert wx() is not None and wy() is not None, "bound objects are kept"
    x2 = FakeTensor(0x30000, 4096)
    wx2 = weakref.ref(x2)
    e.launch(stream, x=x2)  # x rebound: the first x goes, y stays
    del x2
    pygc.collect()
    assert wx() is None and wy() is not None and wx2() is not None
    rec.status = gc.InvalidArgumentError.code  # refused: nothing changed
    refused = FakeTensor(0x40000, 4096)
    wr = weakref.ref(refused)
    with pytest.raises(gc.InvalidArgumentError):
        e.launch(stream, x=refused)
    del refused
    pygc.collect()
    assert wr() is None and wx2() is not None
    rec.status = gc.CudaError.code  # may or may not be bound: both kept
    maybe = FakeTensor(0x50000, 4096)
    wm = weakref.ref(maybe)
    with pytest.raises(gc.CudaError):
        e.launch(stream, x=maybe)
    del maybe
    pygc.collect()
    assert wm() is not None and wx2() is not None


def test_runner_keeps_bound_objects_per_bucket(stream):
    import gc as pygc
    import weakref

    rec = Recorder()
    r = fake(gc.Runner, _bindings=objects._Bindings({"x": 0, "y": 1}, "Runner.replay"),
             _replay_with=rec)
    x = FakeTensor(0x10000, 4096)
    wx = weakref.ref(x)
    assert r.replay(3, stream, x=x) == 4
    del x
    pygc.collect()
    assert wx() is not None, "kept while bound in bucket 4"
    assert r.replay(3, stream, x=FakeTensor(0x20000, 4096)) == 4
    pygc.collect()
    assert wx() is None, "released once bucket 4's x was rebound"
