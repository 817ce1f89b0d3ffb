"""Handle ownership: close() destroys once, `with` closes, collection closes
quietly, a closed handle is InvalidHandleError, borrowed handles are never
destroyed, and objects whose constructor failed clean up nothing. No GPU
needed."""
import ctypes as C
import gc as collector

import pytest

import graphcore as gc
from conftest import HAVE_GPU

BOGUS = 0x7F00000100000001


def test_closed_handles_raise():
    p = gc.Pool._adopt(BOGUS, None, owns=False)
    assert not p.closed and p.handle == BOGUS
    p.close()
    assert p.closed
    with pytest.raises(gc.InvalidHandleError, match="Pool is closed"):
        p.alloc(256)
    with pytest.raises(gc.InvalidHandleError):
        p.handle
    p.close()  # idempotent
    assert "closed" in repr(p)


def test_owned_handle_is_destroyed_once():
    # The library refuses to destroy a never-issued handle: the first
    # close() reports it, the second has nothing left to do.
    s = gc.Stream._adopt(BOGUS, None)
    with pytest.raises(gc.InvalidHandleError):
        s.close()
    s.close()


def test_with_closes_and_collection_is_quiet():
    with gc.Graph._adopt(BOGUS, None, owns=False) as g:
        assert not g.closed
    assert g.closed
    # Collected while holding a handle the library refuses: no exception
    # escapes __del__.
    x = gc.Exec._adopt(BOGUS, None)
    del x
    collector.collect()


@pytest.mark.skipif(HAVE_GPU, reason="checks the no-driver path")
def test_failed_constructors_leave_nothing():
    for make in (lambda: gc.Context(0),):
        with pytest.raises(gc.NoDriverError):
            make()
    collector.collect()


def test_borrowed_stream_keeps_its_source():
    class Source:
        cuda_stream = 0

    # Without a driver gc_stream_wrap fails; the source is not kept then.
    if not HAVE_GPU:
        with pytest.raises(TypeError):
            gc.Stream.wrap(None, Source())
        return
    ctx = gc.Context(0)
    src = Source()
    s = gc.Stream.wrap(ctx, src)
    assert s.borrowed is src and s.raw == 0
    s.close()


def test_host_buffer_views_keep_it_alive():
    backing = (C.c_ubyte * 16)()
    hb = gc.HostBuffer.__new__(gc.HostBuffer)  # no driver needed: fake the memory
    hb.context, hb.ptr, hb.nbytes = None, C.addressof(backing), 16
    floats = hb.as_array(C.c_float)
    assert len(floats) == 4 and floats._graphcore_buffer is hb
    view = hb.view("f")
    view[1] = 2.5
    assert floats[1] == 2.5 and len(hb) == 16
    with pytest.raises(gc.InvalidArgumentError, match="do not fit"):
        hb.as_array(C.c_float, 5)
    hb.ptr = 0  # not ours to free
    with pytest.raises(gc.InvalidHandleError):
        hb.view()
