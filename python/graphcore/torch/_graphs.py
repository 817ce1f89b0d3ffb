"""graphcore.torch's graphs: capture (PyTorch's, into a graphcore pool),
wrap, arguments, buckets, calls. See the package's docstring."""

import bisect
import ctypes as C
import os
import threading
import time
import traceback
import warnings

import torch

from .. import errors as _errors
from .. import loader as _loader
from .. import objects as _objects
from ..args import _int, ptr
from ..structs import CMP_GE, COND_WHILE, INSTANTIATE_UPLOAD

__all__ = ["graph", "step", "loop", "Graphed", "Step", "Loop", "BucketStats"]

# A bound input must be aligned as the static input it replaces: PyTorch
# picks kernels (vectorized loads, cuBLASLt algorithms) by the pointer's
# alignment, up to 256 bytes, when it captures. Less-aligned requests are
# copied into the static input instead.
BIND_ALIGN = 256

# The current stream's raw handle (PyTorch's fast accessor where it has it),
# and one call copying several tensors (PyTorch >= 2.1; else one copy_ each).
_raw_stream = (getattr(torch._C, "_cuda_getCurrentRawStream", None)
               or (lambda d: torch.cuda.current_stream(d).cuda_stream))
_foreach_copy = getattr(torch, "_foreach_copy_", None)

_lock = threading.RLock()  # captures, and the per-process tables below
_contexts = {}  # device index -> graphcore.Context
_streams = {}  # raw cudaStream_t -> graphcore.Stream (borrowed)
_allocator = None  # the CUDAPluggableAllocator over libgraphcore's exports


class BucketStats:
    """One bucket's figures: ``rows``; ``pool_bytes`` (the graphcore pool's
    allocated bytes this bucket's capture added: its static inputs, its
    outputs and whatever its capture could not reuse from the buckets
    captured before it); ``capture_s`` (warm-up, capture, wrap and
    instantiate, seconds); ``mode`` ("bind": requests of the bucket's rows
    are bound, no copy; "copy": a binding could not be verified, every
    request is copied into the static input); ``reason`` (why a bucket
    copies: an output that is a view of an input, an input a copy node of
    the graph reads or writes, a binding the check or CUDA refused; None
    when it binds); ``arg_uses`` (uses graphcore found of each input in the
    graph); ``calls`` and ``padded_calls`` (calls served, and those copied
    into the static input)."""

    __slots__ = ("rows", "pool_bytes", "capture_s", "mode", "reason", "arg_uses", "calls",
                 "padded_calls")

    def __init__(self, rows):
        self.rows = rows
        self.pool_bytes = 0
        self.capture_s = 0.0
        self.mode = "bind"
        self.reason = None
        self.arg_uses = []
        self.calls = 0
        self.padded_calls = 0

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        return "BucketStats(%s)" % ", ".join("%s=%r" % kv for kv in self.as_dict().items())


_COPY_KINDS = ("memcpy_src", "memcpy_dst")


def _copy_node_inputs(exec_, names):
    """The inputs (names) that are an endpoint of a copy node of the graph
    (gc_exec_arg_uses). CUDA refuses to rebind a copy node's endpoint from
    memory of one kind to another (graphcore's pool to cudaMalloc memory,
    which a caller's tensor from PyTorch's caching allocator is), and
    graphcore refuses such a binding up front: such a bucket copies its
    requests in. [] where the library cannot list uses (a launch refused
    later switches the bucket to copying then)."""
    out = []
    for n in names:
        try:
            uses = exec_.arg_use_list(n)
        except (AttributeError, _errors.NotSupportedError):  # an older library
            return []
        if any(u["kind"] in _COPY_KINDS for u in uses):
            out.append(n)
    return out


def _where(kind):
    return "graphcore.torch.%s" % kind


def _context(device):
    ctx = _contexts.get(device)
    if ctx is None:
        ctx = _contexts[device] = _objects.Context(device)
    return ctx


def _gc_stream(ctx, raw):
    s = _streams.get(raw)
    if s is None:
        s = _streams[raw] = _objects.Stream.wrap(ctx, raw)
    return s


def _pluggable_allocator():
    """The process's CUDAPluggableAllocator over libgraphcore's
    gc_torch_alloc / gc_torch_free (made once)."""
    global _allocator
    if _allocator is None:
        handle, path = _loader.load()
        for name in ("gc_torch_alloc", "gc_torch_free", "gc_allocator_set_pool"):
            if not hasattr(handle, name):
                raise _errors.NotSupportedError(
                    "graphcore.torch: %s lacks %s (a libgraphcore older than the PyTorch "
                    "allocator exports); rebuild it (make lib)" % (path, name))
        _allocator = torch.cuda.memory.CUDAPluggableAllocator(path, "gc_torch_alloc",
                                                              "gc_torch_free")
    return _allocator


def _set_pool(device, pool):
    """gc_allocator_set_pool(device, pool): where gc_torch_alloc allocates."""
    fn = _loader.load()[0]["gc_allocator_set_pool"]  # a function object of our own
    fn.restype = C.c_int
    fn.argtypes = [C.c_int, C.c_void_p]
    st = fn(device, pool.handle)
    if st:
        _loader.raise_status(st)


def _check_torch(where):
    if not torch.cuda.is_available():
        raise _errors.NoDeviceError("%s: PyTorch sees no CUDA device (torch %s, CUDA %s)"
                                    % (where, torch.__version__, torch.version.cuda))
    missing = [n for n, ok in (
        ("torch.cuda.MemPool", hasattr(torch.cuda, "MemPool")),
        ("torch.cuda.memory.CUDAPluggableAllocator",
         hasattr(torch.cuda.memory, "CUDAPluggableAllocator")),
        ("torch.cuda.CUDAGraph.raw_cuda_graph", hasattr(torch.cuda.CUDAGraph, "raw_cuda_graph")),
    ) if not ok]
    if missing:
        raise _errors.NotSupportedError("%s: PyTorch %s lacks %s (PyTorch 2.7 or later has them)"
                                        % (where, torch.__version__, ", ".join(missing)))


def _as_tuple(example_inputs, where):
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, (tuple, list)) and example_inputs:
        for i, t in enumerate(example_inputs):
            if not isinstance(t, torch.Tensor):
                raise TypeError("%s: example input %d is a %s, not a torch.Tensor"
                                % (where, i, type(t).__name__))
        return tuple(example_inputs)
    raise TypeError("%s: example_inputs must be a tensor or a non-empty tuple of tensors, not %s"
                    % (where, type(example_inputs).__name__))


def _reset_generators():
    """After a capture whose end raised, PyTorch's CUDA generators are still
    marked as capturing (CUDAGraph.capture_end raised before its epilogue),
    and every later random op fails ("Offset increment outside graph
    capture encountered unexpectedly"). An empty capture, begun and ended on
    the current stream, runs the prologue and the epilogue again and clears
    the mark."""
    g = torch.cuda.CUDAGraph(keep_graph=True)
    g.capture_begin(capture_error_mode="thread_local")
    g.capture_end()
    g.reset()


def _outputs(out, where):
    """(tuple of output tensors, single): what the model returned; single
    is None for None (a step that returns nothing)."""
    if out is None:
        return (), None
    if isinstance(out, torch.Tensor):
        return (out,), True
    if isinstance(out, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in out):
        return tuple(out), False
    raise TypeError("%s: the model must return a tensor, a tuple/list of tensors or None, not %s"
                    % (where, type(out).__name__))


def _describe(t):
    if not isinstance(t, torch.Tensor):
        return "a %s" % type(t).__name__
    return "a %s tensor of shape %s on %s%s" % (
        str(t.dtype).replace("torch.", ""), tuple(t.shape), t.device,
        "" if t.is_contiguous() else " (not contiguous, strides %s)" % (t.stride(),))


class _Spec:
    """What an input must be: dtype, device index, trailing shape."""

    __slots__ = ("dtype", "device", "tail")

    def __init__(self, t, where, i):
        if not t.is_cuda:
            raise _errors.InvalidArgumentError(
                "%s: example input %d must be a CUDA tensor, got %s" % (where, i, _describe(t)))
        if t.dim() < 1:
            raise _errors.InvalidArgumentError(
                "%s: example input %d must have a first (rows) dimension, got %s"
                % (where, i, _describe(t)))
        self.dtype = t.dtype
        self.device = t.get_device()
        self.tail = tuple(t.shape[1:])

    def expected(self, rows):
        return "a contiguous %s tensor of shape %s on cuda:%d" % (
            str(self.dtype).replace("torch.", ""), (rows,) + self.tail, self.device)


class _Bucket:
    """One bucket: its torch graph (kept alive: graphcore borrows its CUDA
    graph), graphcore graph and exec, static inputs and outputs."""

    __slots__ = ("rows", "tgraph", "graph", "exec_", "static", "outputs", "bind_static",
                 "views", "stats", "copy_mode")

    def __init__(self, rows):
        self.rows = rows
        self.tgraph = None
        self.graph = None
        self.exec_ = None
        self.static = ()
        self.outputs = ()
        self.bind_static = {}
        self.views = {}
        self.stats = BucketStats(rows)
        self.copy_mode = False

    def copy_requests(self, reason):
        """From now on every request of this bucket is copied into its
        static inputs (bound to the graph), for ``reason``."""
        self.copy_mode = True
        self.stats.mode = "copy"
        self.stats.reason = reason

    def close(self):
        for h in (self.exec_, self.graph):
            if h is not None:
                h.close()
        self.exec_ = self.graph = None
        if self.tgraph is not None:
            self.tgraph.reset()
            self.tgraph = None
        self.static = self.outputs = ()
        self.bind_static = {}
        self.views = {}


class _Family:
    """The machinery graph() and step() share: the device, contexts, the
    graphcore pool and the MemPool over it, capture of one bucket."""

    def __init__(self, kind, fn, inputs, pool, warmup, grad):
        self.where = _where(kind)
        if not callable(fn):
            raise TypeError("%s: the model must be callable, not %s"
                            % (self.where, type(fn).__name__))
        self.fn = fn
        self.examples = _as_tuple(inputs, self.where)
        self.specs = [_Spec(t, self.where, i) for i, t in enumerate(self.examples)]
        rows0 = self.examples[0].shape[0]
        for i, t in enumerate(self.examples):
            if t.get_device() != self.specs[0].device:
                raise _errors.InvalidArgumentError(
                    "%s: example input %d is on %s; input 0 on cuda:%d (one device per graph)"
                    % (self.where, i, t.device, self.specs[0].device))
            if t.shape[0] != rows0:
                raise _errors.InvalidArgumentError(
                    "%s: example input %d has %d rows; input 0 has %d (inputs share rows)"
                    % (self.where, i, t.shape[0], rows0))
        self.example_rows = rows0
        self.names = tuple("x%d" % i for i in range(len(self.examples)))
        self.warmup = _int(warmup, self.where, "warmup", 32)
        self.grad = grad
        _check_torch(self.where)
        self.device = self.specs[0].device
        self.ctx = _context(self.device)
        if pool is None:
            pool = _objects.Pool(self.ctx)
        elif not isinstance(pool, _objects.Pool):
            raise TypeError("%s: pool must be a graphcore.Pool or None, not %s"
                            % (self.where, type(pool).__name__))
        self.pool = pool
        self.mempool = None
        self.buckets = []
        self.side = None
        self.single = True
        self.closed = False
        self.out_ranges = ()  # (start, end) of every bucket's outputs' storage

    # -- capture ---------------------------------------------------------

    def _static_inputs(self, rows):
        """Static inputs of ``rows`` rows in the pool, holding the example's
        rows (repeated when the bucket is larger)."""
        out = []
        with torch.cuda.use_mem_pool(self.mempool, device=self.device):
            for t, spec in zip(self.examples, self.specs):
                # One element more than the input: a scanned kernel's
                # address one past a declared range's end is rebound with
                # it (a (begin, end) pair), so no other tensor may start
                # there, and PyTorch packs its blocks end to end.
                shape = (rows,) + spec.tail
                numel = 1
                for d in shape:
                    numel *= d
                flat = torch.empty(numel + 1, dtype=spec.dtype, device=t.device)
                s = flat[:numel].view(shape)
                n = t.shape[0]
                for start in range(0, rows, n):
                    k = min(n, rows - start)
                    s[start:start + k].copy_(t[:k])
                out.append(s)
        return tuple(out)

    def _run(self, static, optimizer):
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
        with torch.set_grad_enabled(self.grad):
            return self.fn(*static)

    def capture(self, rows, optimizer=None):
        """Warm-up, capture, wrap and instantiate one bucket; appended to
        self.buckets. On failure raises (CaptureError for the model's own)
        and leaves what it made to close()."""
        b = _Bucket(rows)
        self.buckets.append(b)
        t0 = time.perf_counter()
        before = self.pool.stats().allocated_bytes
        dev = self.device
        with _lock:
            _set_pool(dev, self.pool)
            b.static = self._static_inputs(rows)
            current = torch.cuda.current_stream(dev)
            if self.side is None:
                self.side = torch.cuda.Stream(dev)
            side = self.side
            # Warm-up on a side stream, as PyTorch's recipe does.
            side.wait_stream(current)
            with torch.cuda.stream(side):
                for _ in range(self.warmup):  # the model's own errors, as they come
                    self._run(b.static, optimizer)
            current.wait_stream(side)
            torch.cuda.synchronize(dev)
            if optimizer is not None:
                optimizer.zero_grad(set_to_none=True)
            b.tgraph = torch.cuda.CUDAGraph(keep_graph=True)
            err = None
            with torch.cuda.stream(side):
                b.tgraph.capture_begin(pool=self.mempool.id, capture_error_mode="thread_local")
                try:
                    with torch.set_grad_enabled(self.grad):
                        out = self.fn(*b.static)
                except Exception as e:
                    err = e
                try:
                    b.tgraph.capture_end()
                except Exception as e:
                    err = err or e
                    # capture_end raised (the capture was invalidated) before
                    # telling the allocator, and reset() will not release
                    # the pool's use: do both, as use_mem_pool's exit does.
                    for undo in ("_cuda_endAllocateToPool", "_cuda_releasePool"):
                        try:
                            getattr(torch._C, undo)(dev, self.mempool.id)
                        except Exception:
                            pass
                    _reset_generators()
            if err is not None:
                out = None
                self._fail("capture of bucket %d" % rows, err)
            b.outputs, single = _outputs(out, self.where)
            del out
            self.single = single
            inputs_at = {s.untyped_storage().data_ptr() for s in b.static}
            if any(o.untyped_storage().data_ptr() in inputs_at for o in b.outputs):
                # An output is (a view of) an input: it must hold the
                # request, so every request is copied in.
                b.copy_requests("an output is a view of an input")
            raw = b.tgraph.raw_cuda_graph()
            b.graph = _objects.Graph.wrap(self.ctx, raw)  # borrowed: b.tgraph keeps it
            for name, s in zip(self.names, b.static):
                b.graph.declare_arg(s, nbytes=s.nbytes, name=name)
            b.exec_ = b.graph.instantiate(INSTANTIATE_UPLOAD)
            b.bind_static = dict(zip(self.names, b.static))
            b.stats.arg_uses = [b.exec_.arg_uses(n) for n in self.names]
            copied = _copy_node_inputs(b.exec_, self.names)
            if copied and not b.copy_mode:
                b.copy_requests(
                    "%s %s an endpoint of a copy node (a .clone(), a .copy_(), a "
                    "torch.cat PyTorch did with cudaMemcpyAsync): CUDA cannot rebind a copy "
                    "node from pool memory to PyTorch's own (cudaMalloc) memory"
                    % (", ".join(copied), "is" if len(copied) == 1 else "are"))
        b.stats.pool_bytes = self.pool.stats().allocated_bytes - before
        b.stats.capture_s = time.perf_counter() - t0
        return b

    def _fail(self, what, e):
        """Raises CaptureError for the model's exception ``e`` (chained),
        its traceback's frames cleared so that no tensor of the capture
        stays alive through it."""
        if isinstance(e, _errors.Error) and not isinstance(e, _errors.CaptureError):
            raise e
        at = ""
        try:  # the innermost line of the model's own code (not torch's, not ours)
            skip = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)))
            mine = [f for f in traceback.extract_tb(e.__traceback__)
                    if not f.filename.startswith(skip)]
            if mine:
                f = mine[-1]
                at = " at %s:%d in %s: %s" % (f.filename, f.lineno, f.name, (f.line or "").strip())
        except Exception:  # noqa: BLE001 - the location is a courtesy
            pass
        traceback.clear_frames(e.__traceback__)
        msg = str(e).strip().splitlines()
        raise _errors.CaptureError(
            "%s: %s failed%s: %s: %s (a model captured in a CUDA graph must not synchronize "
            "with the host - .item(), .cpu(), printing a CUDA tensor, data-dependent shapes "
            "- nor use operations CUDA graphs cannot capture)"
            % (self.where, what, at, type(e).__name__, msg[0] if msg else "")) from e

    def build(self, sizes, optimizer=None):
        """Captures every bucket (largest first: the smaller ones reuse its
        memory); on any failure closes everything made, then raises."""
        t0 = time.perf_counter()
        try:
            with torch.cuda.device(self.device):
                self.mempool = torch.cuda.MemPool(_pluggable_allocator().allocator())
                for rows in sorted(sizes, reverse=True):
                    self.capture(rows, optimizer)
        except BaseException:
            self.close()
            raise
        self.buckets.sort(key=lambda b: b.rows)
        # An input inside an output of the family (a token fed back) is
        # copied in, not bound: the graphs may use that memory before they
        # write their outputs (buckets share their temporaries).
        self.out_ranges = tuple(
            (o.untyped_storage().data_ptr(),
             o.untyped_storage().data_ptr() + o.untyped_storage().nbytes())
            for b in self.buckets for o in b.outputs if isinstance(o, torch.Tensor))
        self.capture_s = time.perf_counter() - t0

    def close(self):
        """Releases the graphs, then the MemPool (its memory returns to the
        graphcore pool). Idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            torch.cuda.synchronize(self.device)
        except Exception:
            pass
        for b in self.buckets:
            b.close()
        self.buckets = []
        mempool, self.mempool = self.mempool, None
        if mempool is not None:
            del mempool  # after every graph of it: its blocks go back
            torch.cuda.empty_cache()

    def family_stats(self):
        st = self.pool.stats()
        return {
            "buckets": {b.rows: b.stats.as_dict() for b in self.buckets},
            "pool_bytes": sum(b.stats.pool_bytes for b in self.buckets),
            "pool_allocated_bytes": st.allocated_bytes,
            "pool_reserved_bytes": st.reserved_bytes,
            "capture_s": getattr(self, "capture_s", 0.0),
        }

    # -- calls -------------------------------------------------------------

    def check(self, inputs, max_rows):
        """The slow path: raises naming the first bad input, or returns the
        rows."""
        w = self.where
        if len(inputs) != len(self.specs):
            raise TypeError("%s: %d inputs given; the graph takes %d" % (w, len(inputs),
                                                                           len(self.specs)))
        rows = None
        for i, (x, spec) in enumerate(zip(inputs, self.specs)):
            if not isinstance(x, torch.Tensor):
                raise TypeError("%s: input %d must be a torch.Tensor (%s), got %s"
                                % (w, i, spec.expected("rows"), _describe(x)))
            r = x.shape[0] if x.dim() >= 1 else None
            exp = spec.expected(r if r is not None else "rows")
            if not x.is_cuda:
                raise _errors.InvalidArgumentError(
                    "%s: input %d: expected %s, got %s" % (
                        w, i, exp, "a CPU tensor" if x.device.type == "cpu"
                        else "a tensor on %s" % x.device))
            if x.get_device() != spec.device:
                raise _errors.InvalidArgumentError("%s: input %d: expected %s, got one on %s"
                                                   % (w, i, exp, x.device))
            if x.dtype != spec.dtype:
                raise _errors.InvalidArgumentError("%s: input %d: expected %s, got dtype %s"
                                                   % (w, i, exp,
                                                      str(x.dtype).replace("torch.", "")))
            if r is None or tuple(x.shape[1:]) != spec.tail:
                raise _errors.InvalidArgumentError("%s: input %d: expected %s, got shape %s"
                                                   % (w, i, exp, tuple(x.shape)))
            if not x.is_contiguous():
                raise _errors.InvalidArgumentError(
                    "%s: input %d: expected %s, got strides %s (not contiguous; pass "
                    ".contiguous())" % (w, i, exp, x.stride()))
            if rows is None:
                rows = r
            elif r != rows:
                raise _errors.InvalidArgumentError(
                    "%s: input %d has %d rows, input 0 has %d (inputs share rows)"
                    % (w, i, r, rows))
        if rows == 0:
            raise _errors.InvalidArgumentError("%s: input 0 has 0 rows" % w)
        if rows > max_rows:
            raise _errors.NoBucketError(
                "%s: input 0 has %d rows; the largest bucket is %d (capture a larger bucket, "
                "or split the request)" % (w, rows, max_rows))
        return rows


class Graphed(_objects._Closing):
    """A model captured by graph(): call it as the model, ``g(x)`` (or
    ``g(x0, x1, ...)``). See the package's docstring for the inputs'
    rules and the outputs' lifetime. ``stats()`` gives the figures per
    bucket and for the family; ``close()`` releases the graphs and their
    pool memory (the outputs returned before are invalid then)."""

    def __init__(self, family):
        self._f = family
        self._sizes = [b.rows for b in family.buckets]
        self._by_rows = {}  # rows -> (bucket, shapes)
        self._max = self._sizes[-1]
        self._dtypes = [s.dtype for s in family.specs]
        self._device = family.device
        self._names = family.names
        self._n = len(family.specs)
        self._ctx = family.ctx
        self._single = family.single
        raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self._raw_stream = raw_stream or (
            lambda d: torch.cuda.current_stream(d).cuda_stream)

    @property
    def buckets(self):
        """The bucket sizes (rows), ascending."""
        return list(self._sizes)

    @property
    def pool(self):
        """The graphcore Pool the graphs' memory comes from."""
        return self._f.pool

    def _entry(self, rows):
        """(bucket, shapes) for requests of ``rows`` rows."""
        e = self._by_rows.get(rows)
        if e is None:
            if not 1 <= rows <= self._max:
                return None
            b = self._f.buckets[bisect.bisect_left(self._sizes, rows)]
            shapes = [torch.Size((rows,) + s.tail) for s in self._f.specs]
            e = self._by_rows[rows] = (b, shapes)
        return e

    def __call__(self, *inputs):
        f = self._f
        if f.closed:
            raise _errors.InvalidStateError("%s: the graph is closed" % f.where)
        try:
            rows = inputs[0].shape[0]
            b, shapes = self._entry(rows)
            d = self._device
            for x, shape, dt in zip(inputs, shapes, self._dtypes):
                if (x.shape != shape or x.dtype is not dt or x.get_device() != d
                        or not x.is_contiguous()):
                    raise ValueError
            if len(inputs) != self._n:
                raise ValueError
        except Exception:  # noqa: BLE001 - the checked way raises clearly
            rows = f.check(inputs, self._max)
            b, shapes = self._entry(rows)
        gs = _streams.get(self._raw_stream(self._device))
        if gs is None:
            gs = _gc_stream(self._ctx, self._raw_stream(self._device))
        st = b.stats
        st.calls += 1
        if rows == b.rows and not b.copy_mode:
            aligned = True
            for x in inputs:
                p = x.data_ptr()
                if p % BIND_ALIGN:
                    aligned = False
                for lo, hi in f.out_ranges:
                    if lo <= p < hi:  # a graph's own output: copied in
                        aligned = False
            if aligned:
                try:
                    b.exec_.launch(gs, **dict(zip(self._names, inputs)))
                except _errors.InvalidArgumentError as e:
                    # Refused before anything was launched (a binding of a
                    # kind the graph cannot take): copy, now and from now on.
                    b.copy_requests("a binding was refused: %s" % e)
                    warnings.warn("%s: bucket %d: %s; that bucket copies each request into "
                                  "its static input" % (f.where, b.rows, b.stats.reason),
                                  RuntimeWarning)
                else:
                    if self._single:
                        return b.outputs[0]
                    return None if self._single is None else b.outputs
        # Padded (or unaligned, or unverified bindings): copy into the
        # bucket's static inputs, on the current stream, and bind them.
        st.padded_calls += 1
        for x, s in zip(inputs, b.static):
            (s if rows == b.rows else s[:rows]).copy_(x)
        b.exec_.launch(gs, **b.bind_static)
        return self._trimmed(b, rows)

    def _trimmed(self, b, rows):
        v = b.views.get(rows)
        if v is None:
            v = tuple(o[:rows] if rows != b.rows and o.dim() >= 1 and o.shape[0] == b.rows
                      else o for o in b.outputs)
            b.views[rows] = v
        if self._single:
            return v[0]
        return None if self._single is None else v

    def stats(self):
        """A dict: ``buckets`` (rows -> BucketStats.as_dict()), ``pool_bytes``
        (what the family's captures added to the pool's allocated bytes),
        ``pool_allocated_bytes`` / ``pool_reserved_bytes`` (the pool's now),
        ``capture_s`` (the whole family, seconds)."""
        return self._f.family_stats()

    def close(self):
        """Releases the graphs and returns their memory to the pool."""
        self._f.close()

    def __repr__(self):
        return "<graphcore.torch.Graphed buckets=%s on cuda:%d%s>" % (
            self._sizes, self._device, " (closed)" if self._f.closed else "")


def _verify(family, b, state=()):
    """Checks that binding each input reaches every use: the graph bound to
    other tensors must compute what it computes from its static inputs
    holding the same values. If not, the bucket copies every request
    (b.copy_mode) and a warning says so. ``state``: tensors the graph
    updates in place (a step's parameters, gradients, optimizer state),
    compared too, and put back as they were after each of the two runs."""
    with torch.no_grad():
        _verify_runs(family, b, list(state))


def _verify_runs(family, b, state):
    snapshot = [t.clone() for t in state]

    def restore():
        for t, saved in zip(state, snapshot):
            t.copy_(saved)
    gs = _gc_stream(family.ctx, torch.cuda.current_stream(family.device).cuda_stream)
    probes = []
    gen = torch.Generator(device=b.static[0].device)  # leaves torch's own RNG alone
    gen.manual_seed(0x6c)
    for s in b.static:
        if s.is_floating_point():
            probes.append(torch.randn(s.shape, dtype=s.dtype, device=s.device, generator=gen))
        else:
            probes.append(s.flip(0).contiguous())  # the example's own values, moved
    try:
        b.exec_.launch(gs, **dict(zip(family.names, probes)))
    except _errors.InvalidArgumentError as e:  # refused up front: nothing ran
        b.copy_requests("a binding was refused: %s" % e)
        return
    bound = [o.clone() for o in b.outputs + tuple(state)]
    restore()
    for s, p in zip(b.static, probes):
        s.copy_(p)
    b.exec_.launch(gs, **b.bind_static)
    ok = all(torch.equal(x, y) for x, y in zip(bound, b.outputs + tuple(state)))
    restore()
    torch.cuda.synchronize(family.device)
    if not ok:
        b.copy_requests("a bound input did not reach every use (the binding check)")
        warnings.warn("%s: bucket %d: a bound input did not reach every use in the graph (a "
                      "kernel reads its address from device memory?); that bucket copies each "
                      "request into its static input" % (family.where, b.rows), RuntimeWarning)


def graph(model_or_fn, example_inputs, buckets=None, pool=None, warmup=3, verify=True):
    """Captures ``model_or_fn(*inputs)`` (an nn.Module or any function of
    tensors returning a tensor or a tuple of tensors) into graphcore graphs,
    one per bucket, and returns a ``Graphed`` callable.

    ``example_inputs``: a CUDA tensor or a tuple of them (rows first); they
    fix each input's dtype, device and trailing shape, and fill the static
    inputs for the warm-up and the capture. ``buckets``: the row counts to
    capture (default: the example's rows); a call runs the smallest bucket
    of at least its rows. ``pool``: the graphcore.Pool the graphs' memory
    comes from (default: a new one; several families may share one, and
    must then not run concurrently). ``warmup``: eager runs per bucket on a
    side stream before its capture. ``verify``: after each capture, check
    that a bound input reaches every use (two launches; a bucket that fails
    copies every request instead, with a warning).

    Runs under ``torch.no_grad()`` (inference); for training use step().
    Raises CaptureError (the model failed while captured), or the errors of
    bad example inputs; the pool's allocated bytes are then as they were."""
    fam = _Family("graph", model_or_fn, example_inputs, pool, warmup, grad=False)
    if buckets is None:
        sizes = [fam.example_rows]
    else:
        try:
            sizes = sorted({_int(b, fam.where, "bucket", 32, positive=True)
                            for b in buckets})
        except TypeError:
            raise TypeError("%s: buckets must be an iterable of ints" % fam.where) from None
        if not sizes:
            raise _errors.InvalidArgumentError("%s: buckets is empty" % fam.where)
    fam.build(sizes)
    if verify:
        try:
            for b in fam.buckets:
                if not b.copy_mode:
                    _verify(fam, b)
        except BaseException:
            fam.close()
            raise
    return Graphed(fam)


class Step(_objects._Closing):
    """A training step captured by step(): ``s(*inputs)`` binds the inputs
    (the example's shapes exactly), replays forward, backward and the
    optimizer's update (parameters, gradients and optimizer state change in
    place), and returns what ``fn`` returned (tensors over the pool, valid
    until the next call). ``stats()``, ``close()`` as Graphed's."""

    def __init__(self, family):
        self._g = Graphed(family)
        self._f = family

    def __call__(self, *inputs):
        f = self._f
        rows = f.buckets[0].rows
        for i, x in enumerate(inputs):
            if isinstance(x, torch.Tensor) and x.dim() >= 1 and x.shape[0] != rows:
                raise _errors.InvalidArgumentError(
                    "%s: input %d: expected %s, got shape %s (a training step takes the "
                    "example's rows exactly)" % (f.where, i, f.specs[i].expected(rows)
                                                if i < len(f.specs) else "no input",
                                                tuple(x.shape)))
        return self._g(*inputs)

    def stats(self):
        return self._f.family_stats()

    def close(self):
        self._f.close()


def _step_state(optimizer, state):
    """The CUDA tensors a step updates in place that verification restores:
    the optimizer's parameters, their gradients and its state, and
    ``state``."""
    out, seen = [], set()

    def add(t):
        if isinstance(t, torch.Tensor) and t.is_cuda and id(t) not in seen:
            seen.add(id(t))
            out.append(t.detach())
    if optimizer is not None:
        for group in optimizer.param_groups:
            for p in group["params"]:
                add(p)
                add(p.grad)
        for st in optimizer.state.values():
            for v in st.values():
                add(v)
    for t in state or ():
        add(t)
    return out


def step(fn, example_inputs, optimizer=None, pool=None, warmup=3, verify=None, state=()):
    """Captures a whole training step, ``fn(*inputs)``: the forward pass,
    ``loss.backward()`` and ``optimizer.step()`` (returning the loss, or any
    tensors), as PyTorch's whole-network capture recipe does: ``warmup``
    eager steps on a side stream (they update the parameters, as the
    recipe's do), ``optimizer.zero_grad(set_to_none=True)`` before each and
    before the capture when ``optimizer`` is given (the captured backward
    then allocates the gradients in the pool, and every replay overwrites
    them), then one capture. Returns a ``Step``; each call binds the
    inputs (the example's shapes exactly: no buckets, no padding, which
    would change the gradients). Optimizers that keep state on the host
    must be capturable (e.g. ``Adam(capturable=True)``); PyTorch's message
    otherwise comes back as a CaptureError.

    ``verify`` (default: when ``optimizer`` is given): after the capture,
    two checking steps (bound to other tensors, then on the static inputs
    holding the same values) must agree bit for bit, outputs, parameters,
    gradients and optimizer state alike, else every call copies its inputs
    (with a warning); the parameters, gradients, optimizer state and the
    tensors of ``state`` are put back as they were after each. Other state
    the step changes in place (batch norm's running statistics: pass
    ``state=model.buffers()``) would advance by the two checking steps."""
    fam = _Family("step", fn, example_inputs, pool, warmup, grad=True)
    fam.build([fam.example_rows], optimizer=optimizer)
    b = fam.buckets[0]
    if not all(b.stats.arg_uses) and not b.copy_mode:
        # No use found for an input: bind nothing, copy every request.
        b.copy_requests("no use found of input %d in the graph" % b.stats.arg_uses.index(0))
    if verify is None:
        verify = optimizer is not None
    if verify and not b.copy_mode:
        try:
            _verify(fam, b, _step_state(optimizer, state))
        except BaseException:
            fam.close()
            raise
    return Step(fam)


class Loop(_objects._Closing):
    """A body captured by loop(), run on the device inside a WHILE node:
    ``lp(*inputs)`` copies the inputs into the body's static inputs (the
    loop's state: the body may update them in place), launches once on
    PyTorch's current stream, and returns the static inputs (valid until
    the next call). ``outputs()``: the body's outputs after the last
    iteration (the flag first); ``iterations()``: how many times the body
    ran in the last call (reads it back: synchronizes); ``run_body()``: one
    iteration alone, launched from Python. ``stats()``, ``close()`` as
    Graphed's."""

    def __init__(self, family, exec_, counter, keep):
        self._f = family
        self._exec = exec_
        self._counter = counter
        self._keep = keep

    def __call__(self, *inputs):
        f = self._f
        if f.closed:
            raise _errors.InvalidStateError("%s: the loop is closed" % f.where)
        b = f.buckets[0]
        static = b.static
        try:  # the fast check: each input as its static input is
            if len(inputs) != len(static):
                raise ValueError
            for x, s in zip(inputs, static):
                if (x.shape != s.shape or x.dtype is not s.dtype
                        or x.get_device() != f.device or not x.is_contiguous()):
                    raise ValueError
        except Exception:  # noqa: BLE001 - the checked way raises clearly
            rows = f.check(inputs, b.rows)
            if rows != b.rows:
                raise _errors.InvalidArgumentError(
                    "%s: input 0: expected %s, got shape %s (a loop takes the example's rows "
                    "exactly)" % (f.where, f.specs[0].expected(b.rows),
                                  tuple(inputs[0].shape))) from None
        dst, src = [], []
        for x, s in zip(inputs, static):
            if x.data_ptr() != s.data_ptr():
                dst.append(s)
                src.append(x)
        if len(dst) > 1 and _foreach_copy is not None:
            _foreach_copy(dst, src)  # one call (and launch) for every input
        else:
            for s, x in zip(dst, src):
                s.copy_(x)
        gs = _streams.get(_raw_stream(f.device))
        if gs is None:
            gs = _gc_stream(f.ctx, _raw_stream(f.device))
        self._exec.launch(gs)
        b.stats.calls += 1
        return static

    @property
    def state(self):
        """The static inputs (the loop's state after the last call)."""
        return self._f.buckets[0].static

    def run_body(self):
        """Runs the body once on the loop's state (one launch of the
        captured body alone, no WHILE node: the state updated in place), on
        PyTorch's current stream, and returns the body's outputs (the flag
        first; valid until the next launch): one iteration, for a loop
        driven from Python (to compare with, or to check a call step by
        step). Set the state first through ``state`` if it must start
        elsewhere."""
        f = self._f
        if f.closed:
            raise _errors.InvalidStateError("%s: the loop is closed" % f.where)
        b = f.buckets[0]
        raw = torch.cuda.current_stream(f.device).cuda_stream
        b.exec_.launch(_gc_stream(f.ctx, raw))
        return b.outputs

    def outputs(self):
        """The body's outputs after the last iteration (the flag first)."""
        return self._f.buckets[0].outputs

    def iterations(self):
        """How many times the body ran in the last call (synchronizes)."""
        return int(self._counter.item())

    def stats(self):
        return self._f.family_stats()

    def close(self):
        e, self._exec = self._exec, None
        if e is not None:
            e.close()
        self._keep = ()
        self._counter = None  # a pool block: freed before the pool goes
        self._f.close()


def loop(body, example_inputs, max_iters, grad=False, optimizer=None, pool=None, warmup=1):
    """Captures ``body(*inputs)`` once (as step() captures: PyTorch's
    capture into the pool; ``grad``: autograd on, for a training body) and
    returns a ``Loop`` that runs it on the device, in one launch, while its
    first output (a CUDA float32 tensor of one element, e.g. ``(loss >=
    eps).float()`` or ``(tokens != end).any().float()``) is at least 0.5,
    and at most ``max_iters`` times (graphcore's gc_cond_set_f32 with an
    iteration counter: a WHILE node that cannot hang). The body runs at
    least once. It keeps its state in its inputs, updating them in place
    (``tokens.copy_(next)``, ``pos.add_(1)``): each call copies the caller's
    inputs into them first (no bindings: a loop is one launch for many
    iterations). ``warmup`` eager runs of the body precede the capture and
    update the model's state as they would eagerly; ``optimizer``: as for
    step() (zero_grad(set_to_none=True) before each warm-up run and the
    capture). Needs CUDA 12.3 (WHILE)
    and libcudadevrt for graphcore's setter kernel (see the header's
    Conditional nodes)."""
    iters = _int(max_iters, _where("loop"), "max_iters", 32, positive=True)
    fam = _Family("loop", body, example_inputs, pool, warmup, grad=grad)
    fam.build([fam.example_rows], optimizer=optimizer)
    try:
        b = fam.buckets[0]
        flag = b.outputs[0] if b.outputs else None
        if (flag is None or flag.dtype != torch.float32 or flag.numel() != 1):
            raise TypeError("%s: the body's first output must be a float32 tensor of one "
                            "element (the loop goes on while it is >= 0.5), got %s"
                            % (fam.where, _describe(flag)))
        with torch.cuda.use_mem_pool(fam.mempool, device=fam.device):
            counter = torch.zeros(1, dtype=torch.int32, device=flag.device)
        ctx = fam.ctx
        g = _objects.Graph(ctx)
        h = g.conditional_handle(default_value=1)
        zero = g.add_memset(counter, 0, 4)
        _node, (body_graph,) = g.add_conditional(COND_WHILE, h, deps=[zero])
        child = body_graph.add_child(b.graph)
        setter = _objects.Function.builtin(ctx, "gc_cond_set_f32")
        body_graph.add_kernel(setter, 1, 1, [C.c_uint64(h.raw), ptr(flag), C.c_float(0.5),
                                             C.c_uint32(CMP_GE), ptr(counter),
                                             C.c_uint32(iters)], deps=[child])
        exec_ = g.instantiate(INSTANTIATE_UPLOAD)
        b.copy_requests("a loop copies the caller's inputs into its state")
    except BaseException:
        fam.close()
        raise
    return Loop(fam, exec_, counter, (g, body_graph, setter))
