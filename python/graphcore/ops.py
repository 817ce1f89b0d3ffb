"""Work enqueued on a stream: copies and sets, launches of any kernel, and
graphcore's typed built-in kernels (``op_scale``, ``op_linear``...,
``op_chain``). Each runs eagerly, or is recorded while the stream captures.
Any number of threads may enqueue on any streams (graphcore.h). Imports
structs, loader, args and objects.
"""

import ctypes as C

from .errors import NotSupportedError
from .args import _addr, _dim3, _fail, _float, _int, _kernel_args
from .loader import lib
from .objects import Function, _handle_of, _stream
from ._map_ops import MAP_OPS
from .structs import (_D, LINEAR_CUBLASLT, LINEAR_GRAPHCORE, MLP_FUSED, MLP_FUSED_ALWAYS, MLP_TF32, PROTOTYPES, REDUCTION_MEAN, REDUCTION_SUM, ChainOp,
                      CondHandle, MlpLayer)


def memcpy_async(stream, dst, src, nbytes):
    """gc_memcpy_async (any direction; host memory should be pinned)."""
    w = "memcpy_async"
    lib.gc_memcpy_async(_stream(stream, w), _addr(dst, w, "dst"), _addr(src, w, "src"),
                        _int(nbytes, w, "nbytes"))


def memset_async(stream, dst, value, nbytes):
    """gc_memset_async: sets nbytes bytes at dst to the byte value."""
    w = "memset_async"
    lib.gc_memset_async(_stream(stream, w), _addr(dst, w, "dst"),
                        _int(value, w, "value", 32, signed=True), _int(nbytes, w, "nbytes"))


def memset_async_elem(stream, dst, value, elem_size, count):
    """gc_memset_async_elem: sets count elements of elem_size bytes (1, 2 or
    4) at dst to value (dst aligned to elem_size)."""
    w = "memset_async_elem"
    lib.gc_memset_async_elem(_stream(stream, w), _addr(dst, w, "dst"), _int(value, w, "value", 32),
                             _int(elem_size, w, "elem_size", 32), _int(count, w, "count"))


def launch(function, stream, grid, block, args=(), shared_bytes=0):
    """gc_launch: runs (or, while the stream captures, records) ``function``.
    ``args``: one value per kernel parameter, typed (ctypes.c_float(2.0),
    ctypes.c_uint64(n), graphcore.ptr(x), or tensors / HostBuffers for
    pointers); the values are copied before this returns."""
    w = "launch"
    array, keep = _kernel_args(args, w)
    lib.gc_launch(_handle_of(function, Function, w, "function"), _stream(stream, w),
                  _dim3(grid, w, "grid"), _dim3(block, w, "block"),
                  _int(shared_bytes, w, "shared_bytes", 32), array)
    del keep


# Parameter names of the typed kernels after the stream (op_* functions).
_OP_PARAMS = {
    "gc_op_fill": "y n value",
    "gc_op_axpy": "y x n alpha",
    "gc_op_sgd": "w g n lr",
    "gc_op_bias_add": "y x b rows cols",
    "gc_op_linear": "y x w b m n k flags",
    "gc_op_linear_rows": "y x w b rows max_rows n k flags",
    "gc_op_linear_backward_input": "dx dy w m n k",
    "gc_op_linear_backward_weight": "dw dy x m n k",
    "gc_op_linear_weight_sgd": "w dy x m n k lr",
    "gc_op_bias_grad": "db dy rows cols",
    "gc_op_bias_sgd": "b dy rows cols lr",
    "gc_op_mse": "loss grad pred target n grad_scale workspace workspace_bytes",
    "gc_op_linear_mse_step": "w b x target loss rows inputs outputs grad_scale lr workspace workspace_bytes",
    "gc_op_mlp2_mse_step": "w1 b1 w2 b2 x target loss rows inputs hidden outputs grad_scale lr workspace "
                           "workspace_bytes",
    "gc_op_linear_mse_step_flags": "w b x target loss rows inputs outputs grad_scale lr workspace "
                                   "workspace_bytes flags",
    "gc_op_mlp2_mse_step_flags": "w1 b1 w2 b2 x target loss rows inputs hidden outputs grad_scale lr workspace "
                                 "workspace_bytes flags",
}
# The map and zip ops (op_copy, op_scale, op_relu, op_gelu, op_add, ...), from their
# declarations.
_OP_PARAMS.update((_cname, _params) for _cname, _params, _kinds in MAP_OPS)
# Pointer parameters that may be None (NULL).
_NULLABLE = {("gc_op_linear", "b"), ("gc_op_linear_rows", "b"), ("gc_op_mse", "grad"),
             ("gc_op_linear_mse_step", "b"), ("gc_op_mlp2_mse_step", "b1"), ("gc_op_mlp2_mse_step", "b2"),
             ("gc_op_linear_mse_step_flags", "b"), ("gc_op_mlp2_mse_step_flags", "b1"),
             ("gc_op_mlp2_mse_step_flags", "b2")}


def _make_op(cname):
    argtypes = PROTOTYPES[cname][1][1:]
    names = _OP_PARAMS[cname].split()
    pyname = cname[3:]

    def op(stream, *args, **kwargs):
        if len(args) > len(names):
            raise TypeError("%s takes %d arguments after the stream (%s)" % (
                pyname, len(names), ", ".join(names)))
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in values:
                raise TypeError("%s: unexpected or repeated argument %r" % (pyname, k))
            values[k] = v
        missing = [n for n in names if n not in values]
        if missing:
            raise TypeError("%s: missing %s" % (pyname, ", ".join(missing)))
        converted = []
        for name, t in zip(names, argtypes):
            v = values[name]
            if t is _D:
                converted.append(_addr(v, pyname, name, nullable=(cname, name) in _NULLABLE))
            elif t is C.POINTER(C.c_uint32):
                converted.append(_u32p(v, pyname, name, nullable=(cname, name) in _NULLABLE))
            elif t is C.c_float:
                converted.append(_float(v, pyname, name))
            elif t is C.c_int:
                converted.append(_int(v, pyname, name, 32, signed=True))
            else:
                converted.append(_int(v, pyname, name, 8 * C.sizeof(t)))
        getattr(lib, cname)(_stream(stream, pyname), *converted)

    op.__name__ = op.__qualname__ = pyname
    op.__doc__ = "%s(stream, %s): see graphcore.h." % (cname, ", ".join(names))
    return op


for _cname in _OP_PARAMS:
    globals()[_cname[3:]] = _make_op(_cname)
del _cname


def op_chain(stream, y, x, n, ops):
    """gc_op_chain: up to CHAIN_MAX_OPS operations, ``ops`` a list of
    (CHAIN_* opcode, constant) pairs or ChainOps, applied in one pass."""
    w = "op_chain"
    items = [o if isinstance(o, ChainOp) else ChainOp(_int(o[0], w, "opcode", 32),
                                                      _float(o[1], w, "value"))
             for o in ops]
    array = (ChainOp * max(len(items), 1))(*items)
    lib.gc_op_chain(_stream(stream, w), _addr(y, w, "y"), _addr(x, w, "x", nullable=True),
                    _int(n, w, "n"), array, len(items))


def op_linear_backend(stream, m, n, k, flags=0):
    """gc_op_linear_backend: which GEMM op_linear runs for these sizes and
    flags on the stream's device, LINEAR_BACKEND_GRAPHCORE or
    LINEAR_BACKEND_CUBLASLT (where cuBLASLt is chosen, its plan is made
    now, so a later capture makes none)."""
    w = "op_linear_backend"
    out = C.c_int()
    lib.gc_op_linear_backend(_stream(stream, w), _int(m, w, "m", 32), _int(n, w, "n", 32),
                             _int(k, w, "k", 32), _int(flags, w, "flags", 32, signed=True),
                             C.byref(out))
    return out.value


def cublaslt_version():
    """gc_cublaslt_version: the loaded cuBLASLt's version (loading it on first
    call from GRAPHCORE_CUBLASLT or the loader's path), or None where it
    does not load (then op_linear runs graphcore's own kernels)."""
    out = C.c_size_t()
    try:
        lib.gc_cublaslt_version(C.byref(out))
    except NotSupportedError:
        return None
    return out.value


def _cond(handle, w):
    if not isinstance(handle, CondHandle):
        raise TypeError("%s: handle must be a CondHandle (Graph.conditional_handle)" % w)
    return handle


def _u32p(v, w, name, nullable=False):
    """A device address as the uint32_t * the setters take."""
    return C.cast(C.c_void_p(_addr(v, w, name, nullable=nullable)), C.POINTER(C.c_uint32))


def op_cond_set_u32(stream, handle, value):
    """gc_op_cond_set_u32: sets ``handle`` to the uint32 at ``value``."""
    w = "op_cond_set_u32"
    lib.gc_op_cond_set_u32(_stream(stream, w), _cond(handle, w), _u32p(value, w, "value"))


def op_cond_count(stream, handle, counter, limit):
    """gc_op_cond_count: *counter += 1; handle = (*counter < limit)."""
    w = "op_cond_count"
    lib.gc_op_cond_count(_stream(stream, w), _cond(handle, w), _u32p(counter, w, "counter"),
                         _int(limit, w, "limit", 32))


def op_cond_set_f32(stream, handle, x, threshold, cmp, counter=None, limit=0):
    """gc_op_cond_set_f32: handle = (*x cmp threshold), CMP_*; with a
    counter, also capped at ``limit`` iterations."""
    w = "op_cond_set_f32"
    lib.gc_op_cond_set_f32(_stream(stream, w), _cond(handle, w), _addr(x, w, "x"),
                           _float(threshold, w, "threshold"), _int(cmp, w, "cmp", 32),
                           _u32p(counter, w, "counter", nullable=True),
                           _int(limit, w, "limit", 32))


def _mlp_layers(layers, w):
    """MlpLayer items from MlpLayers or (w, b, inputs, outputs, relu) tuples
    (w and b: addresses or tensors; b may be None)."""
    items = []
    for item in layers:
        if isinstance(item, MlpLayer):
            items.append(item)
            continue
        wt, b, inputs, outputs, relu = item
        items.append(MlpLayer(_addr(wt, w, "w"), _addr(b, w, "b", nullable=True) or None,
                              _int(inputs, w, "inputs", 32), _int(outputs, w, "outputs", 32),
                              1 if relu else 0))
    return (MlpLayer * max(len(items), 1))(*items), len(items)


def mlp_workspace_bytes(rows, layers):
    """gc_op_mlp_workspace_bytes: the workspace op_mlp needs for ``rows`` rows
    through ``layers`` (as op_mlp takes them)."""
    w = "mlp_workspace_bytes"
    array, count = _mlp_layers(layers, w)
    out = C.c_uint64()
    lib.gc_op_mlp_workspace_bytes(_int(rows, w, "rows", 32), array, count, C.byref(out))
    return out.value


_BACKENDS = {None: 0, "graphcore": LINEAR_GRAPHCORE, "cublaslt": LINEAR_CUBLASLT}


def op_mlp(stream, y, x, rows, layers, workspace, workspace_bytes, fused=False, tf32=False, backend=None):
    """gc_op_mlp: an MLP forward, one launch per layer; with ``fused=True``
    (GC_MLP_FUSED) fused where that pays (never where graphcore launches
    with programmatic dependent launch), with ``fused="always"``
    (GC_MLP_FUSED_ALWAYS) wherever the fused kernel takes the layers.
    ``tf32=True`` (GC_MLP_TF32): every layer as op_linear with LINEAR_TF32
    (per-layer form only); ``backend`` "graphcore" or "cublaslt"
    (GC_LINEAR_GRAPHCORE / GC_LINEAR_CUBLASLT) forces every layer's GEMM.
    ``layers``: MlpLayers or (w, b, inputs, outputs, relu) tuples; the
    workspace's first 4 bytes zero before its first use."""
    w = "op_mlp"
    if fused not in (False, True, "always"):
        raise ValueError(f"{w}: fused must be False, True or 'always', not {fused!r}")
    if backend not in _BACKENDS:
        raise ValueError(f"{w}: backend must be None, 'graphcore' or 'cublaslt', not {backend!r}")
    flags = MLP_FUSED_ALWAYS if fused == "always" else MLP_FUSED if fused else 0
    flags |= (MLP_TF32 if tf32 else 0) | _BACKENDS[backend]
    array, count = _mlp_layers(layers, w)
    lib.gc_op_mlp(_stream(stream, w), _addr(y, w, "y"), _addr(x, w, "x"), _int(rows, w, "rows", 32),
                  array, count, _addr(workspace, w, "workspace"),
                  _int(workspace_bytes, w, "workspace_bytes"), flags)


def op_mlp_rows(stream, y, x, rows, max_rows, layers, workspace, workspace_bytes):
    """gc_op_mlp_rows: op_mlp with its row count read from device memory
    when the kernels run: ``rows`` is the device address of a uint32 (in a
    Runner's exact-size capture, the ``rows`` its record function gets), and
    min(*rows, max_rows) rows of x go through the layers into y, which may
    hold exactly that many rows. One launch per layer; up to 256 rows; the
    workspace is mlp_workspace_bytes(max_rows, layers)."""
    w = "op_mlp_rows"
    array, count = _mlp_layers(layers, w)
    lib.gc_op_mlp_rows(_stream(stream, w), _addr(y, w, "y"), _addr(x, w, "x"), _u32p(rows, w, "rows"),
                       _int(max_rows, w, "max_rows", 32), array, count, _addr(workspace, w, "workspace"),
                       _int(workspace_bytes, w, "workspace_bytes"), 0)


_REDUCTIONS = {"sum": REDUCTION_SUM, "mean": REDUCTION_MEAN}


def op_mse_reduction(stream, loss, grad, pred, target, n, reduction, workspace, workspace_bytes):
    """gc_op_mse_reduction: nn.MSELoss(reduction=...) and its gradient in one
    launch (the C order of arguments). ``reduction``: "mean" (nn.MSELoss()'s
    default), "sum", or REDUCTION_MEAN / REDUCTION_SUM (any other int: the
    library refuses it).
    ``grad`` (or None) receives the gradient of loss[0]; the workspace holds
    mse_workspace_bytes(n) bytes, zeroed before its first use."""
    w = "op_mse_reduction"
    if isinstance(reduction, str):
        if reduction not in _REDUCTIONS:
            raise _fail(w, "reduction must be 'sum' or 'mean', not %r" % reduction)
        reduction = _REDUCTIONS[reduction]
    lib.gc_op_mse_reduction(_stream(stream, w), _addr(loss, w, "loss"), _addr(grad, w, "grad", nullable=True),
                            _addr(pred, w, "pred"), _addr(target, w, "target"), _int(n, w, "n"),
                            _int(reduction, w, "reduction", 32), _addr(workspace, w, "workspace"),
                            _int(workspace_bytes, w, "workspace_bytes"))


__all__ = ["memcpy_async", "memset_async", "memset_async_elem", "launch", "op_chain",
           "op_cond_set_u32", "op_cond_count", "op_cond_set_f32", "mlp_workspace_bytes",
           "op_mlp", "op_mlp_rows", "op_mse_reduction", "op_linear_backend", "cublaslt_version"] + [c[3:] for c in _OP_PARAMS]
