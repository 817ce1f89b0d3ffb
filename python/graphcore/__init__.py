"""graphcore for Python: the C API of libgraphcore.so through ctypes.

No compiler is needed: this module loads the library, declares every C
function (``graphcore.lib``, argtypes and restype set; a failing call raises),
and wraps the handles in classes that own them::

    import graphcore as gc

    ctx = gc.Context(0)
    stream = gc.Stream(ctx)                   # or gc.Stream.wrap(ctx, torch_stream)
    pool = gc.Pool(ctx)
    x = pool.alloc(1024 * 4)                  # a device address (an int)
    with gc.capture(stream, pool) as cap:     # record, don't run
        gc.op_scale(stream, x, x, 1024, 2.0)  # graphcore's kernels, or any
        ...                                   # work on stream.raw (PyTorch, CuPy)
    exec_ = cap.graph.instantiate(gc.INSTANTIATE_UPLOAD)
    exec_.launch(stream)
    stream.synchronize()

Failures raise ``graphcore.Error`` (``.status``, the status constant's name;
``.code``; ``.message``, graphcore's text; ``.cuda_result``), or the subclass
for the status: ``NoDriverError``, ``InvalidArgumentError`` (also a
ValueError), ``CaptureError``... Handles are released by ``close()``, by
``with``, or when the object is collected.

Device pointers may be ints or objects with ``.data_ptr()`` (PyTorch
tensors), ``__cuda_array_interface__`` (CuPy, Numba) or ``.ptr``; streams may
be ``graphcore.Stream`` objects, or (through ``Stream.wrap`` or the
``context`` argument of ``capture``) ints or objects with ``.cuda_stream``
(PyTorch) or ``.ptr`` (CuPy).

The library is found through $GRAPHCORE_LIB (a path), else where ``make
install`` put it (the loader's search path, pkg-config's libdir,
/usr/local/lib), else the repository's target/release, target/debug or
stage/lib. ``graphcore.LIBRARY`` says which file was loaded.
"""

import ctypes as C
import os
import shutil
import subprocess
import sys

__version__ = "0.1.0"
_MAJOR, _MINOR, _PATCH = (int(p) for p in __version__.split("."))

# ------------------------------------------------------------------ constants
# (the header's macros; python/tests checks them against it)

INSTANTIATE_UPLOAD = 1
INSTANTIATE_AUTO_FREE_ON_LAUNCH = 2
INSTANTIATE_USE_NODE_PRIORITY = 4
INSTANTIATE_FUSE_ELEMENTWISE = 8
CAPTURE_THREAD_LOCAL = 0
CAPTURE_GLOBAL = 1
CAPTURE_RELAXED = 2
CHAIN_FILL = 1
CHAIN_MUL = 2
CHAIN_ADD = 3
CHAIN_RELU = 4
CHAIN_MAX = 5
CHAIN_MIN = 6
CHAIN_MAX_OPS = 8
RUNNER_MAX_BUCKETS = 16

SUCCESS = 0
STATUS_NAMES = {
    0: "GC_SUCCESS",
    1: "GC_ERROR_INVALID_ARGUMENT",
    2: "GC_ERROR_INVALID_HANDLE",
    3: "GC_ERROR_OUT_OF_MEMORY",
    4: "GC_ERROR_NO_DRIVER",
    5: "GC_ERROR_NO_DEVICE",
    6: "GC_ERROR_NOT_SUPPORTED",
    7: "GC_ERROR_CUDA",
    8: "GC_ERROR_CAPTURE",
    9: "GC_ERROR_INVALID_STATE",
    10: "GC_ERROR_NOT_FOUND",
    11: "GC_ERROR_UPDATE_MISMATCH",
    12: "GC_ERROR_NO_BUCKET",
    13: "GC_ERROR_DEVICE_FAULT",
    14: "GC_ERROR_PANIC",
}
STATUS_CODES = {name: code for code, name in STATUS_NAMES.items()}

# --------------------------------------------------------------------- errors


class Error(Exception):
    """A failed graphcore call.

    ``status`` is the status constant's name ("GC_ERROR_NO_DRIVER"), ``code``
    its value, ``message`` graphcore's text (gc_last_error(): the function,
    what was wrong, and for CUDA failures the CUDA error), ``cuda_result``
    the raw CUresult behind GC_ERROR_CUDA (else 0).
    """

    code = None  # set on each subclass

    def __init__(self, message, code=None, cuda_result=0):
        if code is None:
            code = type(self).code if type(self).code is not None else -1
        self.code = code
        self.status = STATUS_NAMES.get(code, "GC_UNKNOWN_STATUS")
        self.message = message
        self.cuda_result = cuda_result
        super().__init__("%s: %s" % (self.status, message))


class InvalidArgumentError(Error, ValueError):
    """GC_ERROR_INVALID_ARGUMENT: an argument was NULL, zero, too large..."""

    code = 1


class InvalidHandleError(Error):
    """GC_ERROR_INVALID_HANDLE: a destroyed (closed) handle, or another kind."""

    code = 2


class OutOfMemoryError(Error, MemoryError):
    """GC_ERROR_OUT_OF_MEMORY: device or pinned memory, or a pool's max_bytes."""

    code = 3


class NoDriverError(Error):
    """GC_ERROR_NO_DRIVER: no CUDA driver (libcuda.so) on this machine."""

    code = 4


class NoDeviceError(Error):
    """GC_ERROR_NO_DEVICE: a driver but no usable device (or no such one)."""

    code = 5


class NotSupportedError(Error):
    """GC_ERROR_NOT_SUPPORTED: the driver or device lacks a feature."""

    code = 6


class CudaError(Error):
    """GC_ERROR_CUDA: a CUDA call failed (``cuda_result`` is its CUresult)."""

    code = 7


class CaptureError(Error):
    """GC_ERROR_CAPTURE: a capture was invalidated, left unjoined, misused."""

    code = 8


class InvalidStateError(Error):
    """GC_ERROR_INVALID_STATE: not valid in the object's current state."""

    code = 9


class NotFoundError(Error, LookupError):
    """GC_ERROR_NOT_FOUND: no built-in kernel or module function by that name."""

    code = 10


class UpdateMismatchError(Error):
    """GC_ERROR_UPDATE_MISMATCH: Exec.update with a graph of another topology."""

    code = 11


class NoBucketError(Error):
    """GC_ERROR_NO_BUCKET: more rows than a runner's largest bucket."""

    code = 12


class DeviceFaultError(Error):
    """GC_ERROR_DEVICE_FAULT: a kernel faulted; the context is unusable."""

    code = 13


class PanicError(Error):
    """GC_ERROR_PANIC: a panic inside graphcore was caught."""

    code = 14


ERRORS = {
    cls.code: cls
    for cls in (
        InvalidArgumentError, InvalidHandleError, OutOfMemoryError, NoDriverError,
        NoDeviceError, NotSupportedError, CudaError, CaptureError, InvalidStateError,
        NotFoundError, UpdateMismatchError, NoBucketError, DeviceFaultError, PanicError,
    )
}


def error_for(code, message, cuda_result=0):
    """The exception (an Error subclass) for status ``code``."""
    return ERRORS.get(code, Error)(message, code=code, cuda_result=cuda_result)


# ------------------------------------------------------------- C structures


class Dim3(C.Structure):
    """gc_dim3: a grid or block shape."""

    _fields_ = [("x", C.c_uint32), ("y", C.c_uint32), ("z", C.c_uint32)]

    def __repr__(self):
        return "Dim3(%d, %d, %d)" % (self.x, self.y, self.z)


class Node(C.Structure):
    """gc_node: a node of a graph (its graph's id and its index)."""

    _fields_ = [("graph", C.c_uint64), ("index", C.c_uint32)]

    def __eq__(self, other):
        return isinstance(other, Node) and (self.graph, self.index) == (other.graph, other.index)

    def __hash__(self):
        return hash((self.graph, self.index))

    def __repr__(self):
        return "Node(graph=%d, index=%d)" % (self.graph, self.index)


class DeviceInfo(C.Structure):
    """gc_device_info (Context.info())."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("name", C.c_char * 256),
        ("ordinal", C.c_int),
        ("cc_major", C.c_int),
        ("cc_minor", C.c_int),
        ("sm_count", C.c_int),
        ("total_bytes", C.c_uint64),
        ("free_bytes", C.c_uint64),
        ("driver_version", C.c_int),
    ]


class ChainOp(C.Structure):
    """gc_chain_op: one operation of op_chain (CHAIN_* opcode, constant)."""

    _fields_ = [("op", C.c_uint32), ("value", C.c_float)]


class PoolOptions(C.Structure):
    """gc_pool_options (Pool(ctx, initial_bytes=..., max_bytes=...))."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("initial_bytes", C.c_uint64),
        ("max_bytes", C.c_uint64),
    ]


class PoolStatistics(C.Structure):
    """gc_pool_statistics (Pool.stats()), named as PyTorch names them."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("allocated_bytes", C.c_uint64),
        ("reserved_bytes", C.c_uint64),
        ("peak_allocated_bytes", C.c_uint64),
        ("peak_reserved_bytes", C.c_uint64),
        ("segment_count", C.c_uint64),
        ("block_count", C.c_uint64),
        ("free_block_count", C.c_uint64),
        ("alloc_count", C.c_uint64),
        ("free_count", C.c_uint64),
    ]

    def as_dict(self):
        return {name: getattr(self, name) for name, _ in self._fields_[1:]}


class ExecStatistics(C.Structure):
    """gc_exec_statistics (Exec.stats()): node counts before and after fusion."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("graph_nodes", C.c_uint64),
        ("fused_away", C.c_uint64),
        ("instantiated_nodes", C.c_uint64),
        ("chains", C.c_uint64),
    ]

    def as_dict(self):
        return {name: getattr(self, name) for name, _ in self._fields_[1:]}


class RunnerBucket(C.Structure):
    """gc_runner_bucket: one bucket of RunnerStatistics."""

    _fields_ = [
        ("batch", C.c_uint32),
        ("node_count", C.c_uint32),
        ("capture_us", C.c_double),
        ("pool_bytes", C.c_uint64),
    ]


class RunnerStatistics(C.Structure):
    """gc_runner_statistics (Runner.stats())."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("bucket_count", C.c_uint32),
        ("buckets", RunnerBucket * RUNNER_MAX_BUCKETS),
        ("pool", PoolStatistics),
    ]


HOST_FN = C.CFUNCTYPE(None, C.c_void_p)
RECORD_FN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint32, C.c_void_p)

# ------------------------------------------------------------ the C functions

_S = C.c_int  # gc_status (checked: a failure raises)
_H = C.c_void_p  # a handle (gc_context *, gc_stream *, ...)
_D = C.c_void_p  # an address (void *, float *)
_P = C.POINTER

# Every function of include/graphcore.h: name -> (restype, argtypes).
# python/tests/test_binding.py checks this table against the header.
PROTOTYPES = {
    "gc_status_name": (C.c_char_p, [C.c_int]),
    "gc_last_error": (C.c_char_p, []),
    "gc_last_cuda_result": (C.c_int, []),
    "gc_version": (C.c_uint32, []),
    # devices
    "gc_device_count": (_S, [_P(C.c_int)]),
    "gc_context_create": (_S, [C.c_int, _P(_H)]),
    "gc_context_info": (_S, [_H, _P(DeviceInfo)]),
    "gc_context_synchronize": (_S, [_H]),
    "gc_context_destroy": (_S, [_H]),
    # streams
    "gc_stream_create": (_S, [_H, _P(_H)]),
    "gc_stream_wrap": (_S, [_H, _D, _P(_H)]),
    "gc_stream_raw": (_S, [_H, _P(_D)]),
    "gc_stream_wait_stream": (_S, [_H, _H]),
    "gc_stream_synchronize": (_S, [_H]),
    "gc_stream_is_capturing": (_S, [_H, _P(C.c_int)]),
    "gc_stream_destroy": (_S, [_H]),
    # memory
    "gc_pool_create": (_S, [_H, _P(PoolOptions), _P(_H)]),
    "gc_pool_alloc": (_S, [_H, C.c_size_t, _P(_D)]),
    "gc_pool_free": (_S, [_H, _D]),
    "gc_pool_stats": (_S, [_H, _P(PoolStatistics)]),
    "gc_pool_trim": (_S, [_H]),
    "gc_pool_destroy": (_S, [_H]),
    "gc_host_alloc": (_S, [_H, C.c_size_t, _P(_D)]),
    "gc_host_free": (_S, [_H, _D]),
    "gc_memcpy_async": (_S, [_H, _D, _D, C.c_size_t]),
    "gc_memset_async": (_S, [_H, _D, C.c_int, C.c_size_t]),
    # kernels
    "gc_module_load": (_S, [_H, _D, C.c_size_t, _P(_H)]),
    "gc_module_function": (_S, [_H, C.c_char_p, _P(_H)]),
    "gc_function_wrap": (_S, [_H, _D, C.c_char_p, _P(_H)]),
    "gc_kernel_builtin": (_S, [_H, C.c_char_p, _P(_H)]),
    "gc_launch": (_S, [_H, _H, Dim3, Dim3, C.c_uint32, _P(_D)]),
    "gc_function_raw": (_S, [_H, _P(_D)]),
    "gc_function_destroy": (_S, [_H]),
    "gc_module_destroy": (_S, [_H]),
    # capture
    "gc_capture_begin": (_S, [_H, _H, C.c_uint32]),
    "gc_capture_end": (_S, [_H, _P(_H)]),
    # building
    "gc_graph_create": (_S, [_H, _P(_H)]),
    "gc_graph_add_kernel": (
        _S, [_H, _H, Dim3, Dim3, C.c_uint32, _P(_D), _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_memcpy": (_S, [_H, _D, _D, C.c_size_t, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_memset": (_S, [_H, _D, C.c_int, C.c_size_t, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_host": (_S, [_H, HOST_FN, _D, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_child": (_S, [_H, _H, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_empty": (_S, [_H, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_dependency": (_S, [_H, Node, Node]),
    "gc_graph_node_count": (_S, [_H, _P(C.c_size_t)]),
    "gc_graph_raw": (_S, [_H, _P(_D)]),
    "gc_graph_pool_bytes": (_S, [_H, _P(C.c_uint64)]),
    "gc_graph_write_dot": (_S, [_H, C.c_char_p]),
    "gc_graph_destroy": (_S, [_H]),
    # replay
    "gc_graph_instantiate": (_S, [_H, C.c_uint32, _P(_H)]),
    "gc_exec_upload": (_S, [_H, _H]),
    "gc_exec_launch": (_S, [_H, _H]),
    "gc_exec_update": (_S, [_H, _H]),
    "gc_exec_set_kernel_args": (_S, [_H, Node, _P(_D)]),
    "gc_exec_raw": (_S, [_H, _P(_D)]),
    "gc_exec_stats": (_S, [_H, _P(ExecStatistics)]),
    "gc_exec_write_dot": (_S, [_H, C.c_char_p]),
    "gc_exec_destroy": (_S, [_H]),
    # bucketed graphs
    "gc_runner_create": (_S, [_H, _H, _P(_H)]),
    "gc_runner_capture": (_S, [_H, _P(C.c_uint32), C.c_size_t, RECORD_FN, _D, C.c_uint32]),
    "gc_runner_replay": (_S, [_H, C.c_uint32, _H, _P(C.c_uint32)]),
    "gc_runner_stats": (_S, [_H, _P(RunnerStatistics)]),
    "gc_runner_destroy": (_S, [_H]),
    # built-in kernels, typed
    "gc_op_chain": (_S, [_H, _D, _D, C.c_uint64, _P(ChainOp), C.c_uint32]),
    "gc_op_mse_workspace_bytes": (_S, [_H, C.c_uint64, _P(C.c_uint64)]),
    "gc_op_fill": (_S, [_H, _D, C.c_uint64, C.c_float]),
    "gc_op_copy": (_S, [_H, _D, _D, C.c_uint64]),
    "gc_op_scale": (_S, [_H, _D, _D, C.c_uint64, C.c_float]),
    "gc_op_add_scalar": (_S, [_H, _D, _D, C.c_uint64, C.c_float]),
    "gc_op_axpy": (_S, [_H, _D, _D, C.c_uint64, C.c_float]),
    "gc_op_add": (_S, [_H, _D, _D, _D, C.c_uint64]),
    "gc_op_mul": (_S, [_H, _D, _D, _D, C.c_uint64]),
    "gc_op_relu": (_S, [_H, _D, _D, C.c_uint64]),
    "gc_op_relu_backward": (_S, [_H, _D, _D, _D, C.c_uint64]),
    "gc_op_sgd": (_S, [_H, _D, _D, C.c_uint64, C.c_float]),
    "gc_op_bias_add": (_S, [_H, _D, _D, _D, C.c_uint32, C.c_uint32]),
    "gc_op_linear": (_S, [_H, _D, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32, C.c_int]),
    "gc_op_linear_backward_input": (_S, [_H, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32]),
    "gc_op_linear_backward_weight": (_S, [_H, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32]),
    "gc_op_linear_weight_sgd": (
        _S, [_H, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32, C.c_float]),
    "gc_op_bias_grad": (_S, [_H, _D, _D, C.c_uint32, C.c_uint32]),
    "gc_op_bias_sgd": (_S, [_H, _D, _D, C.c_uint32, C.c_uint32, C.c_float]),
    "gc_op_mse": (_S, [_H, _D, _D, _D, _D, C.c_uint64, C.c_float, _D, C.c_uint64]),
}

# Parameter names of the typed kernels after the stream (op_* functions).
_OP_PARAMS = {
    "gc_op_fill": "y n value",
    "gc_op_copy": "y x n",
    "gc_op_scale": "y x n alpha",
    "gc_op_add_scalar": "y x n c",
    "gc_op_axpy": "y x n alpha",
    "gc_op_add": "z x y n",
    "gc_op_mul": "z x y n",
    "gc_op_relu": "y x n",
    "gc_op_relu_backward": "dx dy x n",
    "gc_op_sgd": "w g n lr",
    "gc_op_bias_add": "y x b rows cols",
    "gc_op_linear": "y x w b m n k relu",
    "gc_op_linear_backward_input": "dx dy w m n k",
    "gc_op_linear_backward_weight": "dw dy x m n k",
    "gc_op_linear_weight_sgd": "w dy x m n k lr",
    "gc_op_bias_grad": "db dy rows cols",
    "gc_op_bias_sgd": "b dy rows cols lr",
    "gc_op_mse": "loss grad pred target n grad_scale workspace workspace_bytes",
}
# Pointer parameters that may be None (NULL).
_NULLABLE = {("gc_op_linear", "b"), ("gc_op_mse", "grad")}

# -------------------------------------------------------------------- loading


def _candidates():
    """Where to look for the library, in order (see the module's docstring)."""
    soname = "libgraphcore.so.%d" % _MAJOR
    found = [soname]  # the dynamic loader's search: LD_LIBRARY_PATH, ld.so.cache
    pkg_config = os.environ.get("PKG_CONFIG") or shutil.which("pkg-config")
    if pkg_config:
        try:
            libdir = subprocess.run(
                [pkg_config, "--variable=libdir", "graphcore"],
                capture_output=True, text=True, timeout=10,
            ).stdout.strip()
            if libdir:
                found.append(os.path.join(libdir, soname))
        except (OSError, subprocess.SubprocessError):
            pass
    for d in (os.path.join(sys.prefix, "lib"), "/usr/local/lib"):
        found.append(os.path.join(d, soname))
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for d in ("target/release", "target/debug", "stage/lib"):
        found.append(os.path.join(repo, d, "libgraphcore.so"))
    return found


def _load():
    env = os.environ.get("GRAPHCORE_LIB")
    tried = []
    for path in [env] if env else _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (no such file)" % path)
            continue
        try:
            handle = C.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        return handle, path
    where = "$GRAPHCORE_LIB" if env else "the installed locations or the repository"
    raise ImportError(
        "graphcore: cannot load libgraphcore from %s; tried:\n  %s\n"
        "Build it (make lib), install it (make install), or set GRAPHCORE_LIB to its path."
        % (where, "\n  ".join(tried))
    )


def _errcheck(result, func, args):
    if result != 0:
        raise error_for(result, _last_error(), lib.gc_last_cuda_result())
    return result


# Functions returning an int that is not a gc_status.
_UNCHECKED = {"gc_last_cuda_result", "gc_status_name", "gc_last_error", "gc_version"}


def _declare(handle):
    for name, (restype, argtypes) in PROTOTYPES.items():
        try:
            fn = getattr(handle, name)
        except AttributeError:
            raise ImportError(
                "graphcore: %s lacks %s: it is older than this binding (%s)"
                % (LIBRARY, name, __version__)
            ) from None
        fn.restype = restype
        fn.argtypes = argtypes
        # gc_status results are checked; gc_last_cuda_result's int is a
        # CUresult, not a status (and checking it would recurse).
        if restype is _S and name not in _UNCHECKED:
            fn.errcheck = _errcheck


lib, LIBRARY = _load()
_declare(lib)
_lib_version = lib.gc_version()
if _lib_version // 10000 != _MAJOR or _lib_version // 100 % 100 < _MINOR:
    raise ImportError(
        "graphcore: %s is version %d.%d.%d; this binding needs %d.%d or a newer %d.x"
        % (LIBRARY, _lib_version // 10000, _lib_version // 100 % 100, _lib_version % 100,
           _MAJOR, _MINOR, _MAJOR)
    )


def _last_error():
    text = lib.gc_last_error()
    return text.decode("utf-8", "replace") if text else ""


# ------------------------------------------------------------------ helpers


def version():
    """The library's version as (major, minor, patch)."""
    v = lib.gc_version()
    return (v // 10000, v // 100 % 100, v % 100)


def status_name(code):
    """gc_status_name: the constant's name, or "GC_UNKNOWN_STATUS"."""
    return lib.gc_status_name(int(code)).decode()


def last_error():
    """gc_last_error: this thread's message for its last failed call."""
    return _last_error()


def device_count():
    """gc_device_count. Without a driver: NoDriverError."""
    n = C.c_int()
    lib.gc_device_count(C.byref(n))
    return n.value


def _fail(where, message):
    return InvalidArgumentError("%s: %s" % (where, message))


def _int(value, where, name, bits=64, signed=False, positive=False):
    """An integer argument, checked against its C type's range."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = value.__index__()
        except (AttributeError, TypeError):
            raise TypeError("%s: %s must be an int, not %s" % (where, name, type(value).__name__))
    lo = -(1 << (bits - 1)) if signed else 0
    hi = (1 << (bits - 1)) if signed else (1 << bits)
    if positive and value == 0:
        raise _fail(where, "%s is 0; it must be positive" % name)
    if not lo <= value < hi:
        raise _fail(where, "%s is %d, outside the range of its C type [%d, %d]" % (
            name, value, lo, hi - 1))
    return value


def _float(value, where, name):
    if isinstance(value, bool) or not hasattr(value, "__float__") or isinstance(value, str):
        raise TypeError("%s: %s must be a number, not %s" % (where, name, type(value).__name__))
    return float(value)


def address(obj):
    """The address ``obj`` stands for: an int; a HostBuffer; anything with
    ``.data_ptr()`` (PyTorch), ``__cuda_array_interface__`` (CuPy, Numba) or an
    int ``.ptr``; a ctypes c_void_p. Raises TypeError otherwise."""
    if isinstance(obj, bool):
        raise TypeError("an address cannot be a bool")
    if isinstance(obj, int):
        if obj < 0:
            raise InvalidArgumentError("address %d is negative" % obj)
        return obj
    if isinstance(obj, HostBuffer):
        return obj.ptr
    if isinstance(obj, C.c_void_p):
        return obj.value or 0
    data_ptr = getattr(obj, "data_ptr", None)
    if callable(data_ptr):
        return int(data_ptr())
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    ptr = getattr(obj, "ptr", None)
    if isinstance(ptr, int) and not isinstance(ptr, bool):
        return ptr
    raise TypeError(
        "%s is not an address: pass an int, a HostBuffer, or an object with .data_ptr(), "
        "__cuda_array_interface__ or .ptr" % type(obj).__name__
    )


def _addr(obj, where, name, nullable=False):
    if obj is None:
        if nullable:
            return None
        raise _fail(where, "%s is None (NULL)" % name)
    try:
        return address(obj) or None
    except TypeError as e:
        raise TypeError("%s: %s: %s" % (where, name, e)) from None


def ptr(obj):
    """A kernel argument holding the address of ``obj`` (see address())."""
    return C.c_void_p(address(obj))


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


def _dim3(value, where, name):
    if isinstance(value, Dim3):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    try:
        parts = list(value)
    except TypeError:
        raise TypeError("%s: %s must be an int, a tuple of up to 3 ints or a Dim3" % (where, name))
    if not 1 <= len(parts) <= 3:
        raise _fail(where, "%s has %d dimensions, 1 to 3 expected" % (name, len(parts)))
    parts += [1] * (3 - len(parts))
    return Dim3(*(_int(p, where, name, bits=32) for p in parts))


def _nodes(deps, where):
    if deps is None:
        deps = ()
    if isinstance(deps, Node):
        deps = (deps,)
    deps = list(deps)
    for d in deps:
        if not isinstance(d, Node):
            raise TypeError("%s: dependencies must be Nodes, not %s" % (where, type(d).__name__))
    if not deps:
        return None, 0
    return (Node * len(deps))(*deps), len(deps)


def _kernel_args(args, where):
    """args for gc_launch: an array of pointers to the values (kept alive by
    the returned list). Values must say their C type: ctypes instances
    (c_float, c_uint64, c_void_p, structures...), or objects with an
    address (tensors, HostBuffers), passed as a pointer."""
    values = []
    for i, a in enumerate(args or ()):
        if isinstance(a, (C._SimpleCData, C.Structure, C.Union, C.Array)):
            values.append(a)
        elif isinstance(a, (bool, int, float)):
            raise TypeError(
                "%s: kernel argument %d is a plain Python %s: say its C type, e.g. "
                "ctypes.c_uint64(%r), ctypes.c_float(...), or graphcore.ptr(address)"
                % (where, i, type(a).__name__, a)
            )
        else:
            try:
                values.append(C.c_void_p(address(a)))
            except TypeError as e:
                raise TypeError("%s: kernel argument %d: %s" % (where, i, e)) from None
    if not values:
        return None, values
    array = (C.c_void_p * len(values))(*(C.addressof(v) for v in values))
    return array, values


# -------------------------------------------------------------------- handles


class _Handle:
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

    def __repr__(self):
        state = "closed" if self.closed else "0x%x" % self._h
        return "<graphcore.%s %s>" % (type(self).__name__, state)

    @classmethod
    def _adopt(cls, handle, context=None, owns=True):
        obj = cls.__new__(cls)
        _Handle.__init__(obj, handle, owns)
        obj.context = context
        return obj


def _out():
    return C.c_void_p()


class Context(_Handle):
    """gc_context_create(device): a device's primary context."""

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


class HostBuffer:
    """Pinned host memory from gc_host_alloc (what copies and memcpy nodes
    need). ``ptr`` is its address; ``view()`` a memoryview of it and
    ``as_array(ctype)`` a ctypes array over it (both keep the buffer alive;
    free() invalidates them). Freed by free(), ``with``, or collection."""

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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()
        return False

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def __repr__(self):
        return "<graphcore.HostBuffer %d bytes at 0x%x>" % (self.nbytes, self.ptr)


class Stream(_Handle):
    """gc_stream_create(ctx): a stream graphcore owns; Stream.wrap(ctx, s)
    borrows one you own (a torch.cuda.Stream, a CuPy stream, a raw
    CUstream as an int)."""

    _destroy = "gc_stream_destroy"

    def __init__(self, context):
        super().__init__()
        h = _out()
        lib.gc_stream_create(_handle_of(context, Context, "Stream", "context"), C.byref(h))
        self._h = h.value
        self.context = context
        self.borrowed = None

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

    def synchronize(self):
        lib.gc_stream_synchronize(self.handle)

    @property
    def is_capturing(self):
        out = C.c_int()
        lib.gc_stream_is_capturing(self.handle, C.byref(out))
        return bool(out.value)


def _handle_of(obj, cls, where, name, nullable=False):
    if obj is None and nullable:
        return None
    if not isinstance(obj, cls):
        raise TypeError("%s: %s must be a graphcore.%s, not %s" % (
            where, name, cls.__name__, type(obj).__name__))
    return obj.handle


def _stream(obj, where):
    if isinstance(obj, Stream):
        return obj.handle
    raise TypeError(
        "%s: the stream must be a graphcore.Stream (Stream.wrap(ctx, s) borrows a PyTorch or "
        "CuPy stream), not %s" % (where, type(obj).__name__)
    )


class Pool(_Handle):
    """gc_pool_create: a device memory pool (stable addresses, shared by
    graphs, PyTorch-style statistics)."""

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


class Module(_Handle):
    """gc_module_load: a PTX (str or bytes), cubin or fatbin (bytes) image."""

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


def _name(name, where, nullable=False):
    if name is None and nullable:
        return None
    if not isinstance(name, str):
        raise TypeError("%s: name must be a str, not %s" % (where, type(name).__name__))
    return name.encode()


class Function(_Handle):
    """A kernel: Module.function, Function.builtin or Function.wrap."""

    _destroy = "gc_function_destroy"

    def __init__(self, *args, **kwargs):
        raise TypeError("use Function.builtin(ctx, name), Function.wrap(ctx, raw) or "
                        "Module.function(name)")

    @classmethod
    def builtin(cls, context, name):
        """gc_kernel_builtin: a built-in kernel ("gc_scale_f32", ...; the list
        and each kernel's parameters are at the end of graphcore.h)."""
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


class Graph(_Handle):
    """gc_graph_create(ctx): a graph to add nodes to (capture also gives
    Graphs). Node-adding methods take ``deps``, Nodes (or one Node) that the
    new node runs after, and return the new Node."""

    _destroy = "gc_graph_destroy"

    def __init__(self, context):
        super().__init__()
        h = _out()
        lib.gc_graph_create(_handle_of(context, Context, "Graph", "context"), C.byref(h))
        self._h = h.value
        self.context = context
        self._keep = []

    @classmethod
    def _adopt(cls, handle, context=None, owns=True):
        obj = super()._adopt(handle, context, owns)
        obj._keep = []
        return obj

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

    def add_dependency(self, from_, to):
        """gc_graph_add_dependency: ``to`` runs after ``from_``."""
        for x in (from_, to):
            if not isinstance(x, Node):
                raise TypeError("Graph.add_dependency: nodes must be Nodes")
        lib.gc_graph_add_dependency(self.handle, from_, to)

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

    def write_dot(self, path):
        """gc_graph_write_dot: the graph in Graphviz DOT."""
        lib.gc_graph_write_dot(self.handle, os.fsencode(path))

    def instantiate(self, flags=0):
        """gc_graph_instantiate (flags: INSTANTIATE_*): an Exec."""
        return Exec(self, flags)


class Exec(_Handle):
    """gc_graph_instantiate(graph, flags): a launchable graph."""

    _destroy = "gc_exec_destroy"

    def __init__(self, graph, flags=0):
        super().__init__()
        h = _out()
        lib.gc_graph_instantiate(_handle_of(graph, Graph, "Exec", "graph"),
                                 _int(flags, "Exec", "flags", 32), C.byref(h))
        self._h = h.value
        self.context = graph.context
        self._keep = list(graph._keep)

    def upload(self, stream):
        lib.gc_exec_upload(self.handle, _stream(stream, "Exec.upload"))

    def launch(self, stream):
        """gc_exec_launch: replays the graph on ``stream``."""
        lib.gc_exec_launch(self.handle, _stream(stream, "Exec.launch"))

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
    """gc_runner_create: graphs per batch size ("buckets") in one pool."""

    _destroy = "gc_runner_destroy"

    def __init__(self, context, pool=None):
        super().__init__()
        h = _out()
        lib.gc_runner_create(_handle_of(context, Context, "Runner", "context"),
                             _handle_of(pool, Pool, "Runner", "pool", nullable=True), C.byref(h))
        self._h = h.value
        self.context = context
        self.pool = pool

    def capture(self, buckets, record, warmup_runs=3):
        """gc_runner_capture: ``record(stream, batch)`` enqueues one bucket's
        work on ``stream`` (a borrowed graphcore.Stream); it runs warmup_runs
        times per bucket eagerly, then once under capture. An exception in
        ``record`` aborts the call and is re-raised here."""
        w = "Runner.capture"
        if not callable(record):
            raise TypeError("%s: record must be callable" % w)
        sizes = [_int(b, w, "bucket", 32, positive=True) for b in buckets]
        if not sizes:
            raise _fail(w, "no buckets")
        pending = []

        def trampoline(stream_h, batch, _user):
            try:
                record(Stream._adopt(stream_h, self.context, owns=False), batch)
                return 0
            except Error as e:
                pending.append(e)
                return e.code
            except BaseException as e:  # noqa: B902 - re-raised after the call
                pending.append(e)
                return InvalidStateError.code

        callback = RECORD_FN(trampoline)
        array = (C.c_uint32 * len(sizes))(*sizes)
        try:
            lib.gc_runner_capture(self.handle, array, len(sizes), callback, None,
                                  _int(warmup_runs, w, "warmup_runs", 32))
        except Error as e:
            if pending:
                raise pending[0] from e
            raise

    def replay(self, rows, stream):
        """gc_runner_replay: replays the smallest bucket of at least ``rows``
        rows; returns its size. NoBucketError above the largest."""
        w = "Runner.replay"
        out = C.c_uint32()
        lib.gc_runner_replay(self.handle, _int(rows, w, "rows", 32), _stream(stream, w),
                             C.byref(out))
        return out.value

    def stats(self):
        """gc_runner_stats: a RunnerStatistics."""
        st = RunnerStatistics()
        st.struct_size = C.sizeof(RunnerStatistics)
        lib.gc_runner_stats(self.handle, C.byref(st))
        return st


# --------------------------------------------------------- typed kernels


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


def begin_capture(stream, pool=None, mode=CAPTURE_THREAD_LOCAL):
    """gc_capture_begin, for captures that do not fit a ``with`` block."""
    lib.gc_capture_begin(_stream(stream, "begin_capture"),
                         _handle_of(pool, Pool, "begin_capture", "pool", nullable=True),
                         _int(mode, "begin_capture", "mode", 32))


def end_capture(stream):
    """gc_capture_end: the captured Graph."""
    h = _out()
    lib.gc_capture_end(_stream(stream, "end_capture"), C.byref(h))
    return Graph._adopt(h.value, stream.context)


__all__ = [
    name for name in dir() if not name.startswith("_") and name not in (
        "C", "os", "shutil", "subprocess", "sys")
]
