"""The objects that own graphcore's handles: Context, Stream, Event, Pool,
HostBuffer, Module, Function, Graph, Exec, Runner, and ``capture``.

Ownership (as in graphcore.h): each object owns its handle and destroys it
on ``close()``, at the end of a ``with`` block, or when collected; a
borrowed handle (``Stream.wrap``, ``Event.wrap``, ``Graph.wrap``, the
stream ``Runner.capture`` passes to ``record``) is only dropped, never
destroyed. Objects keep what they depend
on alive (a Graph its host callbacks and kernels' modules, an Exec its
graph's). Close dependents before what they came from: graphs and execs
before their pool, everything before its Context.

Thread safety (as in graphcore.h): Context, Pool, Stream, Event, Module and
Function may be used from several threads at once, and so may
``Exec.launch`` and ``Runner.replay``; ``close()`` must not race with other
calls on the same object; ``Exec.update`` and ``Exec.set_kernel_args`` must
not race with a launch of the same Exec; build each Graph from one thread;
a thread-local capture begins and ends on one thread. Graphs sharing a Pool
must not run concurrently. Imports errors, structs, loader and args.
"""

import ctypes as C
import os
import struct
import threading

from .args import _addr, _dim3, _fail, _int, _kernel_args, _name, _nodes, _out, _scalar_value
from .errors import (
    Error, InvalidArgumentError, InvalidHandleError, InvalidStateError, NoBucketError,
)
from .loader import lib, raise_status, unchecked
from .structs import (
    ARG_EXACT, CAPTURE_THREAD_LOCAL, COND_IF_ELSE, COND_RESET_ON_LAUNCH, COND_SWITCH,
    ARG_ROWS, EVENT_DISABLE_TIMING, EVENT_EXTERNAL, GRAPH_WRAP_ADOPT, GRAPH_WRAP_BORROW, HOST_FN, RECORD_FN,
    RECORD_ROWS_FN,
    ArgUse, Binding, CondHandle, DeviceInfo, ExecStatistics, Node, PoolOptions, PoolStatistics,
    RunnerStatistics,
)

__all__ = [
    "device_count", "raw_stream", "Context", "HostBuffer", "Stream", "Event", "Pool", "Module",
    "Function", "Graph", "Exec", "capture", "begin_capture", "begin_capture_into", "end_capture",
    "Runner",
]

# Graph arguments: names given on the Python side, by declaration order.
# A capture's names are kept per stream handle until the capture ends.
_capture_names = {}


def _arg_bytes(buffer, nbytes, where):
    """The bytes of an argument: ``nbytes``, else the buffer's ``nbytes``."""
    if nbytes is None:
        nbytes = getattr(buffer, "nbytes", None)
        if not isinstance(nbytes, int):
            raise TypeError("%s: pass nbytes= (the buffer has no int .nbytes)" % where)
    return _int(nbytes, where, "nbytes", 64, positive=True)


def _add_name(names, name, index, where):
    name = "arg%d" % index if name is None else name
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError("%s: name must be an identifier (a keyword of launch())" % where)
    if name in names:
        raise _fail(where, "argument name %r is declared twice" % name)
    names[name] = index


# Writers of n gc_binding triples (size_t each) into a _Slot's array, and
# the counts as the C calls take them.
_PACK = [struct.Struct("@%dN" % (3 * n)).pack_into for n in range(17)]
_SIZE = [C.c_size_t(n) for n in range(17)]


class _Slot:
    """One preallocated gc_binding array (a flat array of size_t triples:
    index, ptr, bytes, passed as a gc_binding pointer made once), its count
    (a c_size_t), and an out-parameter for the bucket a replay ran."""

    __slots__ = ("flat", "array", "n", "out", "out_ref")

    def __init__(self, n):
        self.flat = (C.c_size_t * (3 * n))()
        self.array = C.cast(self.flat, C.POINTER(Binding))
        self.n = _SIZE[0]
        self.out = C.c_uint32()
        self.out_ref = C.byref(self.out)


class _Bindings:
    """The keyword bindings of an Exec's launches or a Runner's replays:
    the argument names (name -> index, made once) and reusable _Slots, one
    per caller at a time (launches may run from several threads)."""

    __slots__ = ("names", "where", "size", "free")

    def __init__(self, names, where):
        self.names = dict(names)
        self.where = where
        self.size = max(1, len(names))
        self.free = []

    def take(self, kw):
        """A _Slot filled with ``kw`` (name=buffer); give it back with
        ``self.free.append(slot)`` after the call. The fast path reads a
        tensor's ``data_ptr()`` and ``nbytes``; anything else (or a bad
        name) goes the checked way, which raises naming the binding."""
        try:
            slot = self.free.pop()
        except IndexError:
            slot = _Slot(self.size)
        names = self.names
        values = []
        try:
            for name, buf in kw.items():
                values.append(names[name])
                values.append(buf.data_ptr())
                values.append(buf.nbytes)
            # One call writes them all (size_t each; a negative or non-int
            # value, or more than the array holds, raises).
            _PACK[len(kw)](slot.flat, 0, *values)
            slot.n = _SIZE[len(kw)]
        except Exception:  # noqa: BLE001 - redone the checked way, which raises clearly
            try:
                slot.n = C.c_size_t(self._fill_checked(kw, slot.flat))
            except BaseException:
                self.free.append(slot)
                raise
        return slot

    def _fill_checked(self, kw, flat):
        names = self.names
        if len(kw) > len(names):
            raise _fail(self.where, "%d bindings for %d arguments" % (len(kw), len(names)))
        values = []
        for name, buf in kw.items():
            index = names.get(name)
            if index is None:
                raise _fail(self.where, "no argument named %r (declared: %s)"
                            % (name, ", ".join(names) or "none"))
            try:
                ptr = buf.data_ptr()
            except AttributeError:
                ptr = _addr(buf, self.where, name) or 0
            if not isinstance(ptr, int) or ptr < 0:
                ptr = _addr(ptr, self.where, name) or 0
            nb = getattr(buf, "nbytes", 0)
            values += (index, ptr, nb if type(nb) is int and nb >= 0 else 0)
        flat[:len(values)] = values
        return len(kw)


# Statuses of a launch or replay with bindings that leave every binding as
# it was (the call refused them, or found no exec or bucket).
_UNBOUND = frozenset((InvalidArgumentError.code, InvalidHandleError.code, NoBucketError.code))


def _keep_bound(obj, key, kw, st):
    """Keeps the objects of bindings ``kw`` (name -> object) alive in
    ``obj._bound`` for as long as their binding persists: under key
    ``key(index)``, each replaces the object bound to that argument before,
    after a call that returned ``st`` (0: bound). A refused call
    (``_UNBOUND``) bound nothing; after any other failure the new binding
    may or may not be in place, so both objects are kept. Called with
    ``obj._bind_lock`` held, so references follow the C calls' order."""
    if st in _UNBOUND:
        return
    bound = obj.__dict__.setdefault("_bound", {})
    names = obj._bindings.names
    for name, buf in kw.items():
        k = key(names[name])
        bound[k] = buf if st == 0 else (bound.get(k), buf)


def device_count():
    """gc_device_count. Without a driver: NoDriverError."""
    n = C.c_int()
    lib.gc_device_count(C.byref(n))
    return n.value


class _Closing:
    """Closed by ``with`` (on exit) and by collection: for a class whose
    close() releases what it owns and may be called again."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass  # at exit, or a handle destroyed behind our back


class _Handle(_Closing):
    """Owns one graphcore handle: close() (or ``with``, or collection)
    destroys it. ``handle`` is the C handle, for ``graphcore.lib`` calls."""

    _destroy = None  # the C destroy function's name

    def __init__(self, handle=None, owns=True):
        self._h = handle
        self._owns = owns

    @property
    def handle(self):
        """The C handle (an int). InvalidHandleError once closed."""
        if not self._h:
            raise InvalidHandleError("%s is closed" % type(self).__name__)
        return self._h

    @property
    def closed(self):
        return not self._h

    def close(self):
        """Destroys the handle (a borrowed one is only dropped). Idempotent."""
        h, self._h = self._h, None
        if h and self._owns:
            getattr(lib, self._destroy)(h)

    def __repr__(self):
        state = "closed" if self.closed else "0x%x" % self._h
        return "<graphcore.%s %s>" % (type(self).__name__, state)

    @classmethod
    def _adopt(cls, handle, context=None, owns=True):
        obj = cls.__new__(cls)
        _Handle.__init__(obj, handle, owns)
        obj.context = context
        return obj


class Context(_Handle):
    """gc_context_create(device): a device's primary context. Usable from
    several threads at once; close() it last (it must not race with other
    calls). Calls on its objects make it the calling thread's current CUDA
    context (cuCtxSetCurrent), except launches on a stream (Exec.launch,
    ops.launch, the kernels of the other ops) and captures (capture begin
    and end, not into a conditional body), which need none and leave the
    thread's as it was."""

    _destroy = "gc_context_destroy"

    def __init__(self, device=0):
        super().__init__()
        h = _out()
        lib.gc_context_create(_int(device, "Context", "device", 32, signed=True), C.byref(h))
        self._h = h.value
        self.context = self

    def info(self):
        """gc_context_info: a DeviceInfo."""
        info = DeviceInfo()
        info.struct_size = C.sizeof(DeviceInfo)
        lib.gc_context_info(self.handle, C.byref(info))
        return info

    def synchronize(self):
        lib.gc_context_synchronize(self.handle)

    def host_alloc(self, nbytes):
        """gc_host_alloc: pinned host memory, as a HostBuffer."""
        return HostBuffer(self, nbytes)

    def mse_workspace_bytes(self, n):
        """gc_op_mse_workspace_bytes: the workspace op_mse needs for n elements."""
        out = C.c_uint64()
        lib.gc_op_mse_workspace_bytes(self.handle, _int(n, "mse_workspace_bytes", "n"),
                                      C.byref(out))
        return out.value

    def linear_mse_step_workspace_bytes(self, rows, inputs, outputs):
        """gc_op_linear_mse_step_workspace_bytes: the workspace op_linear_mse_step
        needs for a rows x inputs batch through a layer of outputs outputs."""
        w = "linear_mse_step_workspace_bytes"
        out = C.c_uint64()
        lib.gc_op_linear_mse_step_workspace_bytes(self.handle, _int(rows, w, "rows", 32),
                                                  _int(inputs, w, "inputs", 32),
                                                  _int(outputs, w, "outputs", 32), C.byref(out))
        return out.value

    def mlp2_mse_step_workspace_bytes(self, rows, hidden, outputs):
        """gc_op_mlp2_mse_step_workspace_bytes: the workspace op_mlp2_mse_step
        needs for rows rows through hidden hidden units to outputs outputs."""
        w = "mlp2_mse_step_workspace_bytes"
        out = C.c_uint64()
        lib.gc_op_mlp2_mse_step_workspace_bytes(self.handle, _int(rows, w, "rows", 32),
                                                _int(hidden, w, "hidden", 32),
                                                _int(outputs, w, "outputs", 32), C.byref(out))
        return out.value


class HostBuffer(_Closing):
    """Pinned host memory from gc_host_alloc (what copies and memcpy nodes
    need). ``ptr`` is its address; ``view()`` a memoryview of it and
    ``as_array(ctype)`` a ctypes array over it (both keep the buffer alive;
    free() invalidates them). Freed by free(), ``with``, or collection; free
    it only once the copies using it have finished."""

    def __init__(self, context, nbytes):
        self.context = context
        self.ptr = 0
        self.nbytes = _int(nbytes, "Context.host_alloc", "nbytes", positive=True)
        p = C.c_void_p()
        lib.gc_host_alloc(context.handle, self.nbytes, C.byref(p))
        self.ptr = p.value

    def free(self):
        """gc_host_free. Idempotent."""
        p, self.ptr = self.ptr, 0
        if p:
            lib.gc_host_free(self.context.handle, p)

    close = free

    @property
    def closed(self):
        return not self.ptr

    def _check(self):
        if not self.ptr:
            raise InvalidHandleError("HostBuffer is freed")

    def as_array(self, ctype=C.c_ubyte, count=None):
        """A ctypes array of ``count`` ``ctype`` (default: as many as fit)."""
        self._check()
        size = C.sizeof(ctype)
        if count is None:
            count = self.nbytes // size
        if count * size > self.nbytes:
            raise _fail("HostBuffer.as_array", "%d x %d bytes do not fit in %d" % (
                count, size, self.nbytes))
        array = (ctype * count).from_address(self.ptr)
        array._graphcore_buffer = self  # keeps the memory alive
        return array

    def view(self, fmt="B"):
        """A writable memoryview of the buffer, cast to struct format ``fmt``."""
        return memoryview(self.as_array(C.c_ubyte)).cast("B").cast(fmt)

    def __len__(self):
        return self.nbytes

    def __repr__(self):
        return "<graphcore.HostBuffer %d bytes at 0x%x>" % (self.nbytes, self.ptr)


class Stream(_Handle):
    """gc_stream_create(ctx): a stream graphcore owns; Stream(ctx, priority)
    is gc_stream_create_with_priority (lower numbers are higher priorities,
    within Stream.priority_range(ctx)); Stream.wrap(ctx, s) borrows one you
    own (a torch.cuda.Stream, a CuPy stream, a raw CUstream as an int;
    closing the wrapper leaves it alive). Several threads may enqueue on one
    Stream; close() must not race with them."""

    _destroy = "gc_stream_destroy"

    def __init__(self, context, priority=None):
        super().__init__()
        h = _out()
        ctx = _handle_of(context, Context, "Stream", "context")
        if priority is None:
            lib.gc_stream_create(ctx, C.byref(h))
        else:
            lib.gc_stream_create_with_priority(ctx, int(priority), C.byref(h))
        self._h = h.value
        self.context = context
        self.borrowed = None
        self._host_fns = []

    @classmethod
    def _adopt(cls, handle, context=None, owns=True):
        obj = super()._adopt(handle, context, owns)
        obj.borrowed = None
        obj._host_fns = []
        return obj

    @staticmethod
    def priority_range(context):
        """gc_stream_priority_range: ``(least, greatest)`` stream priorities
        of the context's device, e.g. ``(0, -5)``."""
        least, greatest = C.c_int(), C.c_int()
        lib.gc_stream_priority_range(_handle_of(context, Context, "Stream.priority_range", "context"),
                                     C.byref(least), C.byref(greatest))
        return least.value, greatest.value

    @classmethod
    def wrap(cls, context, stream):
        """gc_stream_wrap: borrows ``stream`` (kept referenced by the result,
        never destroyed by graphcore). 0 is the legacy default stream."""
        raw = raw_stream(stream)
        h = _out()
        lib.gc_stream_wrap(_handle_of(context, Context, "Stream.wrap", "context"), raw or None,
                           C.byref(h))
        obj = cls._adopt(h.value, context)
        obj.borrowed = stream
        return obj

    def capture_arg(self, buffer, nbytes=None, name=None, exact=False, rows=False):
        """gc_capture_arg: declares ``buffer`` (``nbytes`` bytes, default
        its ``.nbytes``) an argument of the graph this stream captures, named
        ``name`` (default ``arg<index>``) for launch(stream, name=...);
        returns its index. ``rows=True`` (GC_ARG_ROWS): the buffer holds the
        bucket's rows of a Runner's exact-size capture, so that
        ``Runner.replay(n, stream, exact=True, ...)`` may bind n rows of it.
        In a Runner's record function, the warm-up runs are eager: there it
        declares nothing and returns None."""
        w = "Stream.capture_arg"
        if getattr(self, "_record", False):
            capturing = C.c_int()
            lib.gc_stream_is_capturing(self.handle, C.byref(capturing))
            if not capturing.value:
                return None
        out = C.c_size_t()
        lib.gc_capture_arg(self.handle, _addr(buffer, w, "buffer"), _arg_bytes(buffer, nbytes, w),
                           (ARG_EXACT if exact else 0) | (ARG_ROWS if rows else 0), C.byref(out))
        _add_name(_capture_names.setdefault(self.handle, {}), name, out.value, w)
        return out.value

    def capture_scalar_arg(self, marker, ctype=C.c_float, name=None):
        """gc_capture_scalar_arg: declares a scalar argument of the graph
        this stream captures, marked by ``marker`` as a ``ctype`` (1 to 8
        bytes): the kernel parameters of that size captured holding exactly
        those bytes. Launch them with the marker as the value, then bind
        ``launch(stream, name=Scalar(v, ctype))``. Returns its index (None
        in a Runner's eager warm-ups, as capture_arg)."""
        w = "Stream.capture_scalar_arg"
        if getattr(self, "_record", False):
            capturing = C.c_int()
            lib.gc_stream_is_capturing(self.handle, C.byref(capturing))
            if not capturing.value:
                return None
        v = _scalar_value(marker, ctype, w)
        out = C.c_size_t()
        lib.gc_capture_scalar_arg(self.handle, C.byref(v), C.sizeof(v), C.byref(out))
        _add_name(_capture_names.setdefault(self.handle, {}), name, out.value, w)
        return out.value

    @property
    def raw(self):
        """gc_stream_raw: the CUstream (a cudaStream_t) as an int, e.g. for
        torch.cuda.ExternalStream(s.raw) or cupy.cuda.ExternalStream(s.raw)."""
        out = C.c_void_p()
        lib.gc_stream_raw(self.handle, C.byref(out))
        return out.value or 0

    def wait_stream(self, other):
        """gc_stream_wait_stream: this stream waits for other's work so far."""
        lib.gc_stream_wait_stream(self.handle, _handle_of(other, Stream, "wait_stream", "other"))

    def wait_event(self, event, external=False):
        """gc_stream_wait_event: this stream waits for the work ``event``'s
        latest record stands for. ``external``: while capturing, make an
        event wait node (each replay waits for the event)."""
        lib.gc_stream_wait_event(self.handle, _handle_of(event, Event, "wait_event", "event"),
                                 EVENT_EXTERNAL if external else 0)

    def launch_host_func(self, fn):
        """gc_launch_host_func: calls fn() on a driver thread once the work
        enqueued before it is done (it must not call CUDA or graphcore);
        recorded as a host node while the stream captures. Exceptions are
        printed. The callback is kept until the next synchronize(); one
        launched while the stream captures is kept for the life of the
        process (the graph's execs may replay it after every Python object
        of the capture is gone)."""
        if not callable(fn):
            raise TypeError("Stream.launch_host_func: fn must be callable")
        callback = HOST_FN(lambda _user: fn())
        capturing = self.is_capturing
        lib.gc_launch_host_func(self.handle, callback, None)
        (_CAPTURED_HOST_FNS if capturing else self._host_fns).append(callback)

    def synchronize(self):
        lib.gc_stream_synchronize(self.handle)
        self._host_fns.clear()  # every host function enqueued so far has run

    @property
    def is_capturing(self):
        out = C.c_int()
        lib.gc_stream_is_capturing(self.handle, C.byref(out))
        return bool(out.value)


class Event(_Handle):
    """gc_event_create(ctx): an event graphcore owns (``timing=False``: no
    timing, cheaper); Event.wrap(ctx, raw) borrows a cudaEvent_t you own
    (closing the wrapper leaves it alive). Record it on a stream, make
    streams wait on it, wait for it here, or time between two records."""

    _destroy = "gc_event_destroy"

    def __init__(self, context, timing=True):
        super().__init__()
        h = _out()
        lib.gc_event_create(_handle_of(context, Context, "Event", "context"),
                            0 if timing else EVENT_DISABLE_TIMING, C.byref(h))
        self._h = h.value
        self.context = context

    @classmethod
    def wrap(cls, context, event):
        """gc_event_wrap: borrows ``event`` (kept referenced by the result,
        never destroyed by graphcore): a CUevent / cudaEvent_t as an int, or
        an object with an int ``.cuda_event`` (PyTorch) or ``.ptr`` (CuPy)."""
        raw = event
        if not isinstance(event, int):
            for attr in ("cuda_event", "ptr"):
                value = getattr(event, attr, None)
                if isinstance(value, int) and not isinstance(value, bool):
                    raw = value
                    break
        h = _out()
        lib.gc_event_wrap(_handle_of(context, Context, "Event.wrap", "context"),
                          _int(raw, "Event.wrap", "event") or None, C.byref(h))
        obj = cls._adopt(h.value, context)
        obj.borrowed = event
        return obj

    @property
    def raw(self):
        """gc_event_raw: the CUevent (a cudaEvent_t) as an int."""
        out = C.c_void_p()
        lib.gc_event_raw(self.handle, C.byref(out))
        return out.value or 0

    def record(self, stream, external=False):
        """gc_event_record: the event stands for stream's work so far.
        ``external``: while capturing, make an event record node (each
        replay records the event)."""
        lib.gc_event_record(self.handle, _stream(stream, "Event.record"),
                            EVENT_EXTERNAL if external else 0)

    def synchronize(self):
        """gc_event_synchronize: blocks until the recorded work is done."""
        lib.gc_event_synchronize(self.handle)

    @property
    def done(self):
        """gc_event_query: True when the recorded work is done (never blocks)."""
        out = C.c_int()
        lib.gc_event_query(self.handle, C.byref(out))
        return bool(out.value)

    def elapsed_ms(self, end):
        """gc_event_elapsed_ms: milliseconds from this event's record to
        ``end``'s (both with timing, both done)."""
        out = C.c_float()
        lib.gc_event_elapsed_ms(self.handle, _handle_of(end, Event, "elapsed_ms", "end"),
                                C.byref(out))
        return out.value


# Host functions launched on capturing streams: replays may call them as
# long as the process runs.
_CAPTURED_HOST_FNS = []


def raw_stream(obj):
    """The CUstream / cudaStream_t ``obj`` stands for: a graphcore Stream, an
    int, or anything with ``.cuda_stream`` (PyTorch) or an int ``.ptr`` (CuPy)."""
    if isinstance(obj, Stream):
        return obj.raw
    if isinstance(obj, bool):
        raise TypeError("a stream cannot be a bool")
    if isinstance(obj, int):
        return obj
    for attr in ("cuda_stream", "ptr"):
        value = getattr(obj, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    raise TypeError(
        "%s is not a stream: pass a graphcore.Stream, an int, or an object with "
        ".cuda_stream (PyTorch) or .ptr (CuPy)" % type(obj).__name__
    )


def _handle_of(obj, cls, where, name, nullable=False):
    if obj is None and nullable:
        return None
    if not isinstance(obj, cls):
        raise TypeError("%s: %s must be a graphcore.%s, not %s" % (
            where, name, cls.__name__, type(obj).__name__))
    return obj.handle


def _cv(obj):
    """An open handle object's handle as a c_void_p, made once per object."""
    try:
        return obj._cv
    except AttributeError:
        obj._cv = C.c_void_p(obj._h)
        return obj._cv


def _stream(obj, where):
    if isinstance(obj, Stream):
        return obj.handle
    raise TypeError(
        "%s: the stream must be a graphcore.Stream (Stream.wrap(ctx, s) borrows a PyTorch or "
        "CuPy stream), not %s" % (where, type(obj).__name__)
    )


class Pool(_Handle):
    """gc_pool_create: a device memory pool (stable addresses, shared by
    graphs, PyTorch-style statistics). Usable from several threads at once;
    close() must not race with other calls. Graphs sharing a pool must not
    run concurrently (they may share scratch memory)."""

    _destroy = "gc_pool_destroy"

    def __init__(self, context, initial_bytes=0, max_bytes=0):
        super().__init__()
        opts = PoolOptions(C.sizeof(PoolOptions), _int(initial_bytes, "Pool", "initial_bytes"),
                           _int(max_bytes, "Pool", "max_bytes"))
        h = _out()
        lib.gc_pool_create(_handle_of(context, Context, "Pool", "context"), C.byref(opts),
                           C.byref(h))
        self._h = h.value
        self.context = context

    def alloc(self, nbytes):
        """gc_pool_alloc: a device address (an int), 256-byte aligned."""
        out = C.c_void_p()
        lib.gc_pool_alloc(self.handle, _int(nbytes, "Pool.alloc", "nbytes", positive=True),
                          C.byref(out))
        return out.value

    def free(self, address_):
        """gc_pool_free."""
        lib.gc_pool_free(self.handle, _addr(address_, "Pool.free", "address"))

    def stats(self):
        """gc_pool_stats: a PoolStatistics (allocated_bytes, reserved_bytes,
        peak_allocated_bytes, peak_reserved_bytes, ...)."""
        st = PoolStatistics()
        st.struct_size = C.sizeof(PoolStatistics)
        lib.gc_pool_stats(self.handle, C.byref(st))
        return st

    def trim(self):
        """gc_pool_trim: returns unused memory to the driver."""
        lib.gc_pool_trim(self.handle)

    def enable_peer_access(self, peer):
        """gc_pool_enable_peer_access: the device of Context `peer` may use
        the pool's memory (copies, sets, copy nodes), now and as it grows."""
        lib.gc_pool_enable_peer_access(
            self.handle, _handle_of(peer, Context, "Pool.enable_peer_access", "peer"))


class Module(_Handle):
    """gc_module_load: a PTX (str or bytes), cubin or fatbin (bytes) image.
    Usable from several threads at once; close() must not race with them."""

    _destroy = "gc_module_destroy"

    def __init__(self, context, image):
        super().__init__()
        if isinstance(image, str):
            image = image.encode()
        if not isinstance(image, (bytes, bytearray)):
            raise TypeError("Module: image must be bytes or str, not %s" % type(image).__name__)
        image = bytes(image)
        h = _out()
        lib.gc_module_load(_handle_of(context, Context, "Module", "context"), image, len(image),
                           C.byref(h))
        self._h = h.value
        self.context = context

    def function(self, name):
        """gc_module_function: the extern "C" kernel ``name``."""
        h = _out()
        lib.gc_module_function(self.handle, _name(name, "Module.function"), C.byref(h))
        return Function._adopt(h.value, self.context)


class Function(_Handle):
    """A kernel: Module.function, Function.builtin or Function.wrap. Usable
    from several threads at once; close() must not race with them."""

    _destroy = "gc_function_destroy"

    def __init__(self, *args, **kwargs):
        raise TypeError("use Function.builtin(ctx, name), Function.wrap(ctx, raw) or "
                        "Module.function(name)")

    @classmethod
    def builtin(cls, context, name):
        """gc_kernel_builtin: a built-in kernel ("gc_scale_f32", ...; the list
        and each kernel's parameters are at the end of graphcore_ops.h)."""
        h = _out()
        lib.gc_kernel_builtin(_handle_of(context, Context, "Function.builtin", "context"),
                              _name(name, "Function.builtin"), C.byref(h))
        return cls._adopt(h.value, context)

    @classmethod
    def wrap(cls, context, raw, name=None):
        """gc_function_wrap: a CUfunction / cudaFunction_t (an int) that you
        keep loaded."""
        h = _out()
        lib.gc_function_wrap(_handle_of(context, Context, "Function.wrap", "context"),
                             _addr(raw, "Function.wrap", "raw"),
                             _name(name, "Function.wrap", nullable=True), C.byref(h))
        return cls._adopt(h.value, context)

    @property
    def raw(self):
        """gc_function_raw: the CUfunction as an int."""
        out = C.c_void_p()
        lib.gc_function_raw(self.handle, C.byref(out))
        return out.value or 0


class Graph(_Handle):
    """gc_graph_create(ctx): a graph to add nodes to (capture also gives
    Graphs). Node-adding methods take ``deps``, Nodes (or one Node) that the
    new node runs after, and return the new Node. Build each graph from one
    thread; different graphs may be built concurrently."""

    _destroy = "gc_graph_destroy"

    def __init__(self, context):
        super().__init__()
        h = _out()
        lib.gc_graph_create(_handle_of(context, Context, "Graph", "context"), C.byref(h))
        self._h = h.value
        self.context = context
        self._keep = []
        self._arg_names = {}

    @classmethod
    def _adopt(cls, handle, context=None, owns=True):
        obj = super()._adopt(handle, context, owns)
        obj._keep = []
        obj._arg_names = {}
        return obj

    def declare_arg(self, buffer, nbytes=None, name=None, exact=False):
        """gc_graph_declare_arg: declares ``buffer`` (``nbytes`` bytes,
        default its ``.nbytes``) an argument named ``name`` (default
        ``arg<index>``); execs made later bind it with
        ``launch(stream, name=new_buffer)``. Returns its index."""
        w = "Graph.declare_arg"
        out = C.c_size_t()
        lib.gc_graph_declare_arg(self.handle, _addr(buffer, w, "buffer"),
                                 _arg_bytes(buffer, nbytes, w), ARG_EXACT if exact else 0,
                                 C.byref(out))
        _add_name(self._arg_names, name, out.value, w)
        return out.value

    def declare_scalar_arg(self, marker, ctype=C.c_float, name=None):
        """gc_graph_declare_scalar_arg: declares a scalar argument marked by
        ``marker`` as a ``ctype`` (1 to 8 bytes): the kernel parameters of
        that size holding exactly those bytes. Execs made later bind it with
        ``launch(stream, name=Scalar(v, ctype))``. Returns its index."""
        w = "Graph.declare_scalar_arg"
        v = _scalar_value(marker, ctype, w)
        out = C.c_size_t()
        lib.gc_graph_declare_scalar_arg(self.handle, C.byref(v), C.sizeof(v), C.byref(out))
        _add_name(self._arg_names, name, out.value, w)
        return out.value

    def add_kernel(self, function, grid, block, args=(), deps=(), shared_bytes=0):
        """gc_graph_add_kernel (args as for launch(); copied now)."""
        w = "Graph.add_kernel"
        array, keep = _kernel_args(args, w)
        nodes, n = _nodes(deps, w)
        node = Node()
        lib.gc_graph_add_kernel(self.handle, _handle_of(function, Function, w, "function"),
                                _dim3(grid, w, "grid"), _dim3(block, w, "block"),
                                _int(shared_bytes, w, "shared_bytes", 32), array, nodes, n,
                                C.byref(node))
        del keep
        self._keep.append(function)  # keeps its module loaded
        return node

    def add_memcpy(self, dst, src, nbytes, deps=()):
        """gc_graph_add_memcpy (host memory must be pinned: a HostBuffer)."""
        w = "Graph.add_memcpy"
        nodes, n = _nodes(deps, w)
        node = Node()
        lib.gc_graph_add_memcpy(self.handle, _addr(dst, w, "dst"), _addr(src, w, "src"),
                                _int(nbytes, w, "nbytes"), nodes, n, C.byref(node))
        for buf in (dst, src):
            if isinstance(buf, HostBuffer):
                self._keep.append(buf)
        return node

    def add_memset(self, dst, value, nbytes, deps=()):
        """gc_graph_add_memset: nbytes bytes at dst set to the byte value."""
        w = "Graph.add_memset"
        nodes, n = _nodes(deps, w)
        node = Node()
        lib.gc_graph_add_memset(self.handle, _addr(dst, w, "dst"),
                                _int(value, w, "value", 32, signed=True),
                                _int(nbytes, w, "nbytes"), nodes, n, C.byref(node))
        return node

    def add_memset_elem(self, dst, value, elem_size, count, deps=()):
        """gc_graph_add_memset_elem: count elements of elem_size bytes (1, 2
        or 4) at dst, each set to value."""
        w = "Graph.add_memset_elem"
        nodes, n = _nodes(deps, w)
        node = Node()
        lib.gc_graph_add_memset_elem(self.handle, _addr(dst, w, "dst"), _int(value, w, "value", 32),
                                     _int(elem_size, w, "elem_size", 32), _int(count, w, "count"),
                                     nodes, n, C.byref(node))
        return node

    def add_host(self, fn, deps=()):
        """gc_graph_add_host: calls fn() when the node runs, on a driver thread
        (it must not call CUDA or graphcore). Exceptions are printed."""
        w = "Graph.add_host"
        if not callable(fn):
            raise TypeError("%s: fn must be callable" % w)
        nodes, n = _nodes(deps, w)
        callback = HOST_FN(lambda _user: fn())
        node = Node()
        lib.gc_graph_add_host(self.handle, callback, None, nodes, n, C.byref(node))
        self._keep.append(callback)  # alive while this graph or its execs are
        return node

    def add_child(self, child, deps=()):
        """gc_graph_add_child: a node running a copy of ``child``."""
        w = "Graph.add_child"
        nodes, n = _nodes(deps, w)
        node = Node()
        lib.gc_graph_add_child(self.handle, _handle_of(child, Graph, w, "child"), nodes, n,
                               C.byref(node))
        self._keep.extend(child._keep)
        return node

    def add_empty(self, deps=()):
        """gc_graph_add_empty: a join point."""
        nodes, n = _nodes(deps, "Graph.add_empty")
        node = Node()
        lib.gc_graph_add_empty(self.handle, nodes, n, C.byref(node))
        return node

    def conditional_handle(self, default_value=0, reset_on_launch=True):
        """gc_graph_conditional_handle_create: a CondHandle for this graph's
        conditional nodes (CUDA 12.3)."""
        w = "Graph.conditional_handle"
        out = CondHandle()
        lib.gc_graph_conditional_handle_create(
            self.handle, _int(default_value, w, "default_value", 32),
            COND_RESET_ON_LAUNCH if reset_on_launch else 0, C.byref(out))
        return out

    def add_conditional(self, type_, handle, cases=0, deps=()):
        """gc_graph_add_conditional: a COND_IF / COND_IF_ELSE / COND_WHILE /
        COND_SWITCH node steered by ``handle``; returns (Node, [body Graphs]).
        A WHILE whose condition never clears hangs the GPU: cap it
        (op_cond_count, or op_cond_set_f32 with a counter)."""
        w = "Graph.add_conditional"
        if not isinstance(handle, CondHandle):
            raise TypeError("%s: handle must be a CondHandle" % w)
        n_bodies = {COND_IF_ELSE: 2, COND_SWITCH: cases}.get(type_, 1)
        nodes, n = _nodes(deps, w)
        node = Node()
        bodies = (C.c_void_p * max(n_bodies, 1))()
        lib.gc_graph_add_conditional(self.handle, _int(type_, w, "type", 32), handle,
                                     _int(cases, w, "cases", 32), nodes, n, C.byref(node),
                                     bodies, max(n_bodies, 1))
        made = [Graph._adopt(b, self.context) for b in bodies[:n_bodies]]
        return node, made

    def add_dependency(self, from_, to):
        """gc_graph_add_dependency: ``to`` runs after ``from_``."""
        for x in (from_, to):
            if not isinstance(x, Node):
                raise TypeError("Graph.add_dependency: nodes must be Nodes")
        lib.gc_graph_add_dependency(self.handle, from_, to)

    def add_programmatic_dependency(self, from_, to):
        """gc_graph_add_programmatic_dependency: kernel ``to`` may launch
        once kernel ``from_`` triggers; ``to`` must wait on the grid
        dependency before it reads ``from_``'s results (graphcore's
        built-in kernels do). Below compute capability 9.0 or CUDA 12.3
        the edge is a full one."""
        for x in (from_, to):
            if not isinstance(x, Node):
                raise TypeError("Graph.add_programmatic_dependency: nodes must be Nodes")
        lib.gc_graph_add_programmatic_dependency(self.handle, from_, to)

    @property
    def node_count(self):
        out = C.c_size_t()
        lib.gc_graph_node_count(self.handle, C.byref(out))
        return out.value

    def __len__(self):
        return self.node_count

    @property
    def pool_bytes(self):
        """gc_graph_pool_bytes: pool memory the graph holds."""
        out = C.c_uint64()
        lib.gc_graph_pool_bytes(self.handle, C.byref(out))
        return out.value

    @property
    def raw(self):
        """gc_graph_raw: the CUgraph as an int (still graphcore's)."""
        out = C.c_void_p()
        lib.gc_graph_raw(self.handle, C.byref(out))
        return out.value or 0

    def clone(self):
        """gc_graph_clone: a new Graph with the same nodes (numbered alike)."""
        h = _out()
        lib.gc_graph_clone(self.handle, C.byref(h))
        obj = Graph._adopt(h.value, self.context)
        obj._keep = list(self._keep)
        return obj

    @classmethod
    def wrap(cls, context, raw, adopt=False):
        """gc_graph_wrap: a Graph of the CUgraph / cudaGraph_t ``raw`` (an
        int) built or captured outside graphcore. ``adopt``: graphcore
        destroys it; otherwise it stays yours (keep it alive while the Graph
        and its Execs are used)."""
        h = _out()
        lib.gc_graph_wrap(_handle_of(context, Context, "Graph.wrap", "context"),
                          _int(raw, "Graph.wrap", "raw") or None,
                          GRAPH_WRAP_ADOPT if adopt else GRAPH_WRAP_BORROW, C.byref(h))
        return cls._adopt(h.value, context)

    def write_dot(self, path):
        """gc_graph_write_dot: the graph in Graphviz DOT."""
        lib.gc_graph_write_dot(self.handle, os.fsencode(path))

    def instantiate(self, flags=0):
        """gc_graph_instantiate (flags: INSTANTIATE_*): an Exec."""
        return Exec(self, flags)


class Exec(_Handle):
    """gc_graph_instantiate(graph, flags): a launchable graph. launch() may
    run from several threads at once; update() and set_kernel_args() must not
    race with a launch of this Exec, nor close() with any call.

    Bindings persist, and so do their objects: after ``launch(stream,
    x=t)``, a plain ``launch(stream)`` still runs on ``t``'s memory, so the
    Exec keeps ``t`` alive until ``x`` is bound to something else (or the
    Exec is collected). Dropping your reference to a bound tensor therefore
    never lets a later launch write into memory handed to someone else. (The
    buffers the graph was captured or declared on stay yours to keep.)"""

    _destroy = "gc_exec_destroy"
    _bindings = _Bindings({}, "Exec.launch")  # a graph without arguments
    # Orders launches with bindings and the references kept for them (one
    # per Exec from __init__; this one serves objects made without it).
    _bind_lock = threading.Lock()

    def __init__(self, graph, flags=0):
        super().__init__()
        h = _out()
        lib.gc_graph_instantiate(_handle_of(graph, Graph, "Exec", "graph"),
                                 _int(flags, "Exec", "flags", 32), C.byref(h))
        self._h = h.value
        self.context = graph.context
        self._keep = list(graph._keep)
        self._bindings = _Bindings(graph._arg_names, "Exec.launch")
        self._bound = {}  # argument index -> the object bound to it now
        self._bind_lock = threading.Lock()
        self._launch_with = unchecked("gc_exec_launch_with")
        self._cv = C.c_void_p(self._h)

    def upload(self, stream):
        lib.gc_exec_upload(self.handle, _stream(stream, "Exec.upload"))

    def launch(self, stream, **bindings):
        """gc_exec_launch: replays the graph on ``stream``. With keyword
        bindings (``x=tensor``: a declared argument's name and its new
        buffer), gc_exec_launch_with: the arguments are rebound first, and
        stay bound for later launches; the Exec keeps each bound object
        alive until its argument is bound to another."""
        if not bindings:
            lib.gc_exec_launch(self.handle, _stream(stream, "Exec.launch"))
            return
        bs = self._bindings
        slot = bs.take(bindings)
        try:
            with self._bind_lock:
                if type(stream) is Stream and stream._h and self._h:
                    st = self._launch_with(self._cv, _cv(stream), slot.array, slot.n)
                else:
                    st = self._launch_with(C.c_void_p(self.handle),
                                           C.c_void_p(_stream(stream, "Exec.launch")),
                                           slot.array, slot.n)
                _keep_bound(self, int, bindings, st)
        finally:
            bs.free.append(slot)
        if st:
            raise_status(st)

    def arg_uses(self, name):
        """gc_exec_arg_info: the uses found of argument ``name`` (or index)."""
        index = name if isinstance(name, int) else self._bindings.names.get(name)
        if index is None:
            raise _fail("Exec.arg_uses", "no argument named %r" % (name,))
        out = C.c_size_t()
        lib.gc_exec_arg_info(self.handle, index, C.byref(out))
        return out.value

    def arg_use_list(self, name):
        """gc_exec_arg_uses: each use of argument ``name`` (or index) as a dict
        (node index, kind "kernel"/"memcpy_dst"/"memcpy_src"/"memset",
        nested, kernel name, parameter offset, delta from the argument's start)."""
        index = name if isinstance(name, int) else self._bindings.names.get(name)
        if index is None:
            raise _fail("Exec.arg_use_list", "no argument named %r" % (name,))
        n = C.c_size_t()
        lib.gc_exec_arg_uses(self.handle, index, None, 0, C.byref(n))
        uses = (ArgUse * max(n.value, 1))()
        lib.gc_exec_arg_uses(self.handle, index, uses, n.value, C.byref(n))
        kinds = ("kernel", "memcpy_dst", "memcpy_src", "memset")
        return [{"node": u.node, "kind": kinds[u.kind] if u.kind < 4 else u.kind,
                 "nested": bool(u.nested), "kernel": u.kernel.decode(errors="replace") or None,
                 "offset": u.offset, "delta": u.delta} for u in uses[:n.value]]

    replay = launch

    def update(self, graph):
        """gc_exec_update: the parameters of ``graph`` (same topology)."""
        lib.gc_exec_update(self.handle, _handle_of(graph, Graph, "Exec.update", "graph"))
        self._keep.extend(graph._keep)

    def set_kernel_args(self, node, args):
        """gc_exec_set_kernel_args: new arguments for kernel node ``node``."""
        w = "Exec.set_kernel_args"
        if not isinstance(node, Node):
            raise TypeError("%s: node must be a Node" % w)
        array, keep = _kernel_args(args, w)
        lib.gc_exec_set_kernel_args(self.handle, node, array)
        del keep

    @property
    def raw(self):
        """gc_exec_raw: the CUgraphExec as an int (still graphcore's)."""
        out = C.c_void_p()
        lib.gc_exec_raw(self.handle, C.byref(out))
        return out.value or 0

    def stats(self):
        """gc_exec_stats: node counts before and after fusion, as a dict."""
        st = ExecStatistics()
        st.struct_size = C.sizeof(st)
        lib.gc_exec_stats(self.handle, C.byref(st))
        return st.as_dict()

    def write_dot(self, path):
        """gc_exec_write_dot: the instantiated (possibly fused) graph as DOT."""
        lib.gc_exec_write_dot(self.handle, os.fsencode(path))


class capture:
    """Captures the work enqueued on ``stream`` while the ``with`` block runs
    (gc_capture_begin / gc_capture_end)::

        with graphcore.capture(stream, pool) as cap:
            ...            # graphcore ops, or PyTorch / CuPy work on the stream
        graph = cap.graph

    ``stream``: a graphcore.Stream, or (with ``context``, or a ``pool`` to take
    it from) a PyTorch / CuPy stream or raw CUstream, borrowed for the capture.
    ``pool``: allocations from it on this thread belong to the capture.
    If the block raises, the capture is ended and its graph dropped (the
    stream is usable again) and the exception propagates."""

    def __init__(self, stream, pool=None, mode=CAPTURE_THREAD_LOCAL, context=None):
        if pool is not None and not isinstance(pool, Pool):
            raise TypeError("capture: pool must be a graphcore.Pool or None")
        if not isinstance(stream, Stream):
            context = context if context is not None else getattr(pool, "context", None)
            if context is None:
                raise TypeError(
                    "capture: to capture a %s, pass context= (or a pool), or a graphcore.Stream"
                    % type(stream).__name__
                )
            stream = Stream.wrap(context, stream)
        self.stream = stream
        self.pool = pool
        self.mode = _int(mode, "capture", "mode", 32)
        self._graph = None
        self._open = False

    def __enter__(self):
        lib.gc_capture_begin(self.stream.handle, self.pool.handle if self.pool else None,
                             self.mode)
        _capture_names.pop(self.stream.handle, None)
        self._open = True
        return self

    def __exit__(self, exc_type, exc, tb):
        self._open = False
        h = _out()
        try:
            lib.gc_capture_end(self.stream.handle, C.byref(h))
        except Error:
            if exc_type is None:
                raise
            return False  # the block's own exception is the one to see
        graph = Graph._adopt(h.value, self.stream.context)
        graph._arg_names = _capture_names.pop(self.stream.handle, {})
        if exc_type is not None:
            graph.close()
            return False
        self._graph = graph
        return False

    @property
    def graph(self):
        """The captured Graph, once the ``with`` block has ended."""
        if self._graph is None:
            raise InvalidStateError("capture.graph: the capture has not ended (or failed)")
        return self._graph


class Runner(_Handle):
    """gc_runner_create: graphs per batch size ("buckets") in one pool.
    replay() may run from several threads at once; capture() excludes
    replays while it runs; close() must not race with other calls.

    Bindings persist per bucket, and so do their objects: the Runner keeps
    each object bound in a bucket alive until that bucket's argument is
    bound to another (or the Runner is collected), so a plain replay never
    writes into memory freed since (see Exec)."""

    _destroy = "gc_runner_destroy"
    _bindings = _Bindings({}, "Runner.replay")  # until a capture declares arguments
    _bind_lock = threading.Lock()  # as Exec's

    def __init__(self, context, pool=None):
        super().__init__()
        h = _out()
        lib.gc_runner_create(_handle_of(context, Context, "Runner", "context"),
                             _handle_of(pool, Pool, "Runner", "pool", nullable=True), C.byref(h))
        self._h = h.value
        self.context = context
        self.pool = pool
        self._replay_with = unchecked("gc_runner_replay_with")
        self._cv = C.c_void_p(self._h)
        self._bound = {}  # (bucket, argument index) -> the object bound there now
        self._bind_lock = threading.Lock()

    def capture(self, buckets, record, warmup_runs=3, exact=False):
        """gc_runner_capture: ``record(stream, batch)`` enqueues one bucket's
        work on ``stream`` (a borrowed graphcore.Stream); it runs warmup_runs
        times per bucket eagerly, then once under capture. An exception in
        ``record`` aborts the call and is re-raised here.

        ``exact=True``: gc_runner_capture_exact, for exact-size replays
        (``replay(n, stream, exact=True, ...)``): ``record(stream, batch,
        rows)`` also gets ``rows``, the device address (an int) of the
        uint32 row count its ops read (op_linear_rows, op_mlp_rows), and
        declares the buffers whose rows they read or write with
        ``stream.capture_arg(buf, name=..., rows=True)``. ``stats()``'s
        ``exact_buckets`` tells which buckets take exact-size replays."""
        w = "Runner.capture"
        if not callable(record):
            raise TypeError("%s: record must be callable" % w)
        sizes = [_int(b, w, "bucket", 32, positive=True) for b in buckets]
        if not sizes:
            raise _fail(w, "no buckets")
        pending = []

        names = []

        def trampoline(stream_h, batch, *more):
            try:
                stream = Stream._adopt(stream_h, self.context, owns=False)
                stream._record = True
                _capture_names.pop(stream_h, None)
                if exact:
                    record(stream, batch, more[0] or 0)
                else:
                    record(stream, batch)
                declared = _capture_names.pop(stream_h, None)
                if declared is not None:
                    names.append((batch, declared))
                return 0
            except Error as e:
                pending.append(e)
                return e.code
            except BaseException as e:  # noqa: B902 - re-raised after the call
                pending.append(e)
                return InvalidStateError.code

        callback = (RECORD_ROWS_FN if exact else RECORD_FN)(trampoline)
        array = (C.c_uint32 * len(sizes))(*sizes)
        try:
            (lib.gc_runner_capture_exact if exact else lib.gc_runner_capture)(
                self.handle, array, len(sizes), callback, None, _int(warmup_runs, w, "warmup_runs", 32))
        except Error as e:
            if pending:
                raise pending[0] from e
            raise
        known = self._bindings.names
        for batch, declared in names:
            if known and declared != known:
                raise _fail(w, "bucket %d declared arguments %s; other buckets %s"
                            % (batch, sorted(declared), sorted(known)))
            known = declared
        if known is not self._bindings.names:
            self._bindings = _Bindings(known, "Runner.replay")

    def replay(self, rows, stream, exact=False, **bindings):
        """gc_runner_replay: replays the smallest bucket of at least ``rows``
        rows; returns its size. NoBucketError above the largest. With
        keyword bindings (``x=tensor``, names the record function gave
        Stream.capture_arg), gc_runner_replay_with; the bound objects are
        kept alive while bound (see the class).

        ``exact=True``: gc_runner_replay_exact, an exact-size request: the
        bucket's row count is bound to ``rows``, and buffers declared with
        ``rows=True`` may be tensors of exactly ``rows`` rows (no padding,
        nothing copied; outputs of exactly ``rows`` rows). The bucket must
        come from ``capture(..., exact=True)`` (else InvalidStateError)."""
        w = "Runner.replay"
        if exact:
            return self._replay_exact(rows, stream, bindings)
        if not bindings:
            out = C.c_uint32()
            lib.gc_runner_replay(self.handle, _int(rows, w, "rows", 32), _stream(stream, w),
                                 C.byref(out))
            return out.value
        return self._replay_bound(rows, stream, bindings, False)

    def _replay_exact(self, rows, stream, bindings):
        w = "Runner.replay"
        rows = _int(rows, w, "rows", 32)
        if not bindings:
            out = C.c_uint32()
            lib.gc_runner_replay_exact(self.handle, rows, _stream(stream, w), None, 0, C.byref(out))
            return out.value
        return self._replay_bound(rows, stream, bindings, True)

    def _replay_bound(self, rows, stream, bindings, exact):
        """gc_runner_replay_with, or gc_runner_replay_exact when ``exact``,
        with keyword ``bindings``: the bound objects kept under the bucket
        reported; returns its size."""
        w = "Runner.replay"
        bs = self._bindings
        slot = bs.take(bindings)
        try:
            if not (type(rows) is int and 0 <= rows <= 0xFFFFFFFF):
                rows = _int(rows, w, "rows", 32)
            with self._bind_lock:
                fn = self._replay_exact_c if exact else self._replay_with
                if type(stream) is Stream and stream._h and self._h:
                    st = fn(self._cv, C.c_uint32(rows), _cv(stream), slot.array, slot.n,
                            slot.out_ref)
                else:
                    st = fn(C.c_void_p(self.handle), C.c_uint32(rows),
                            C.c_void_p(_stream(stream, w)), slot.array, slot.n, slot.out_ref)
                bucket = slot.out.value
                # On failure no bucket is reported: the objects then go
                # under None, kept with any kept there before.
                _keep_bound(self, lambda i: (bucket if st == 0 else None, i), bindings, st)
        finally:
            bs.free.append(slot)
        if st:
            raise_status(st)
        return bucket

    @property
    def _replay_exact_c(self):
        f = self.__dict__.get("_replay_exact_fn")
        if f is None:
            f = self.__dict__["_replay_exact_fn"] = unchecked("gc_runner_replay_exact")
        return f

    def stats(self):
        """gc_runner_stats: a RunnerStatistics."""
        st = RunnerStatistics()
        st.struct_size = C.sizeof(RunnerStatistics)
        lib.gc_runner_stats(self.handle, C.byref(st))
        return st


def begin_capture(stream, pool=None, mode=CAPTURE_THREAD_LOCAL):
    """gc_capture_begin, for captures that do not fit a ``with`` block."""
    _capture_names.pop(getattr(stream, "handle", None), None)
    lib.gc_capture_begin(_stream(stream, "begin_capture"),
                         _handle_of(pool, Pool, "begin_capture", "pool", nullable=True),
                         _int(mode, "begin_capture", "mode", 32))


def begin_capture_into(stream, body, pool=None, mode=CAPTURE_THREAD_LOCAL):
    """gc_capture_begin_into: capture ``stream`` into an empty conditional
    body; end_capture(stream) returns the body, filled."""
    w = "begin_capture_into"
    lib.gc_capture_begin_into(_stream(stream, w), _handle_of(body, Graph, w, "body"),
                              _handle_of(pool, Pool, w, "pool", nullable=True),
                              _int(mode, w, "mode", 32))


def end_capture(stream):
    """gc_capture_end: the captured Graph."""
    h = _out()
    lib.gc_capture_end(_stream(stream, "end_capture"), C.byref(h))
    graph = Graph._adopt(h.value, stream.context)
    graph._arg_names = _capture_names.pop(stream.handle, {})
    return graph
