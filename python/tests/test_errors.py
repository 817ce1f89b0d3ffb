"""Failures become exceptions: the status's subclass of graphcore.Error,
with the status name, code, graphcore's message and the CUDA result; and
the binding's own argument checks. No GPU needed."""
import ctypes as C

import pytest

import graphcore as gc
from conftest import HAVE_GPU

BOGUS = 0x7F00000100000001  # a handle value that was never issued (as in tests/c)


def test_error_classes():
    for code, cls in gc.ERRORS.items():
        e = gc.error_for(code, "what happened")
        assert type(e) is cls and isinstance(e, gc.Error)
        assert e.code == code and e.status == gc.STATUS_NAMES[code]
        assert e.message == "what happened"
        assert str(e) == "%s: what happened" % e.status
    assert issubclass(gc.InvalidArgumentError, ValueError)
    assert issubclass(gc.OutOfMemoryError, MemoryError)
    assert issubclass(gc.NotFoundError, LookupError)
    unknown = gc.error_for(77, "odd")
    assert type(unknown) is gc.Error and unknown.status == "GC_UNKNOWN_STATUS"


def test_raw_calls_raise_with_graphcore_message():
    with pytest.raises(gc.InvalidArgumentError) as info:
        gc.lib.gc_stream_synchronize(None)
    e = info.value
    assert e.status == "GC_ERROR_INVALID_ARGUMENT" and e.code == 1
    assert "gc_stream_synchronize" in e.message
    assert e.message == gc.last_error()
    assert e.cuda_result == 0
    with pytest.raises(gc.InvalidHandleError) as info:
        gc.lib.gc_pool_trim(BOGUS)
    assert "gc_pool" in info.value.message
    # Destroying NULL is a no-op, not an error.
    gc.lib.gc_context_destroy(None)


@pytest.mark.skipif(HAVE_GPU, reason="checks the no-driver path")
def test_no_driver():
    with pytest.raises(gc.NoDriverError) as info:
        gc.device_count()
    assert info.value.status == "GC_ERROR_NO_DRIVER"
    assert "no CUDA driver" in info.value.message
    with pytest.raises(gc.NoDriverError):
        gc.Context(0)


def test_python_side_argument_checks():
    with pytest.raises(TypeError, match="graphcore.Context"):
        gc.Stream("not a context")
    with pytest.raises(TypeError, match="graphcore.Context"):
        gc.Pool(None)
    with pytest.raises(gc.InvalidArgumentError, match="device"):
        gc.Context(1 << 40)
    with pytest.raises(TypeError, match="device must be an int"):
        gc.Context("0")
    with pytest.raises(TypeError, match="Function.builtin"):
        gc.Function()
    with pytest.raises(TypeError, match="graphcore.Stream"):
        gc.memcpy_async(0, 0, 0, 4)
    with pytest.raises(TypeError, match="graphcore.Stream"):
        gc.op_fill(object(), 0, 1, 1.0)


def test_kernel_arguments_must_say_their_type():
    array, keep = gc.args._kernel_args([C.c_uint64(7), C.c_float(2.0), gc.ptr(0x1000)], "t")
    assert len(keep) == 3
    assert C.c_uint64.from_address(array[0]).value == 7
    assert C.c_float.from_address(array[1]).value == 2.0
    assert C.c_void_p.from_address(array[2]).value == 0x1000
    assert gc.args._kernel_args([], "t")[0] is None
    for bad in (7, 2.0, True):
        with pytest.raises(TypeError, match="say its C type"):
            gc.args._kernel_args([bad], "t")
    with pytest.raises(TypeError, match="not an address"):
        gc.args._kernel_args([object()], "t")


class FakeTensor:  # PyTorch's shape of it
    def data_ptr(self):
        return 0xABC000


class FakeCupyArray:
    __cuda_array_interface__ = {"data": (0xDEF000, False), "shape": (4,), "typestr": "<f4"}


class FakeTorchStream:
    cuda_stream = 0x5000


class FakeCupyStream:
    ptr = 0x6000


def test_addresses_and_streams_from_other_libraries():
    assert gc.address(0x1234) == 0x1234
    assert gc.address(FakeTensor()) == 0xABC000
    assert gc.address(FakeCupyArray()) == 0xDEF000
    assert gc.address(C.c_void_p(0x10)) == 0x10
    assert gc.address(C.c_void_p()) == 0
    with pytest.raises(TypeError):
        gc.address(True)
    with pytest.raises(TypeError):
        gc.address("0x10")
    with pytest.raises(gc.InvalidArgumentError):
        gc.address(-1)
    assert gc.raw_stream(FakeTorchStream()) == 0x5000
    assert gc.raw_stream(FakeCupyStream()) == 0x6000
    assert gc.raw_stream(0) == 0
    with pytest.raises(TypeError):
        gc.raw_stream(object())
    # A foreign stream needs a context to be wrapped for a capture.
    with pytest.raises(TypeError, match="context="):
        gc.capture(FakeTorchStream())


def test_shapes_and_sizes():
    assert tuple(getattr(gc.args._dim3(4, "t", "grid"), a) for a in "xyz") == (4, 1, 1)
    assert tuple(getattr(gc.args._dim3((2, 3), "t", "grid"), a) for a in "xyz") == (2, 3, 1)
    with pytest.raises(gc.InvalidArgumentError):
        gc.args._dim3((1, 1, 1, 1), "t", "grid")
    with pytest.raises(gc.InvalidArgumentError):
        gc.args._dim3(1 << 32, "t", "grid")
    with pytest.raises(gc.InvalidArgumentError, match="must be positive"):
        gc.args._int(0, "t", "nbytes", positive=True)
    with pytest.raises(gc.InvalidArgumentError, match="outside the range"):
        gc.args._int(-1, "t", "n")
    assert gc.args._nodes(None, "t") == (None, 0)
    nodes, n = gc.args._nodes([gc.Node(1, 0), gc.Node(1, 1)], "t")
    assert n == 2 and nodes[1].index == 1
    with pytest.raises(TypeError, match="Nodes"):
        gc.args._nodes([0], "t")


def test_typed_kernels_check_their_arguments():
    s = gc.Stream._adopt(BOGUS, None, owns=False)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        gc.op_scale(s, 0, 0, 1, 2.0, 5)
    with pytest.raises(TypeError, match="missing alpha"):
        gc.op_scale(s, 0x100, 0x100, 1)
    with pytest.raises(TypeError, match="alpha must be a number"):
        gc.op_scale(s, 0x100, 0x100, 1, "2")
    with pytest.raises(gc.InvalidArgumentError, match="x is None"):
        gc.op_scale(s, 0x100, None, 1, 2.0)
    # Well-formed arguments reach the library, which checks the handle.
    with pytest.raises(gc.InvalidHandleError):
        gc.op_scale(s, 0x100, FakeTensor(), n=1, alpha=2.0)
    with pytest.raises(gc.InvalidHandleError):
        gc.op_linear(s, 0x100, 0x200, 0x300, None, 1, 1, 1, 0)  # b may be NULL
    with pytest.raises(gc.InvalidHandleError):
        gc.op_chain(s, 0x100, None, 4, [(gc.CHAIN_FILL, 1.0), gc.ChainOp(gc.CHAIN_RELU, 0)])


def test_op_mse_reduction_checks_its_reduction():
    s = gc.Stream._adopt(BOGUS, None, owns=False)
    with pytest.raises(gc.InvalidArgumentError, match="reduction must be 'sum' or 'mean', not 'avg'"):
        gc.op_mse_reduction(s, 0x100, None, 0x200, 0x300, 4, "avg", 0x400, 64)
    with pytest.raises(TypeError, match="reduction"):
        gc.op_mse_reduction(s, 0x100, None, 0x200, 0x300, 4, 1.5, 0x400, 64)
    # Well-formed arguments reach the library, which checks the handle first.
    for reduction in ("sum", "mean", gc.REDUCTION_SUM, gc.REDUCTION_MEAN):
        with pytest.raises(gc.InvalidHandleError):
            gc.op_mse_reduction(s, 0x100, None, 0x200, 0x300, 4, reduction, 0x400, 64)
    assert (gc.REDUCTION_SUM, gc.REDUCTION_MEAN) == (0, 1)


def test_op_linear_rows_binding():
    s = gc.Stream._adopt(BOGUS, None, owns=False)
    with pytest.raises(TypeError, match="missing flags"):
        gc.op_linear_rows(s, 0x100, 0x200, 0x300, None, 0x400, 4, 8, 8)
    with pytest.raises(gc.InvalidArgumentError, match="rows is None"):
        gc.op_linear_rows(s, 0x100, 0x200, 0x300, None, None, 4, 8, 8, 0)
    # b may be None; well-formed arguments reach the library, which checks the handle.
    with pytest.raises(gc.InvalidHandleError):
        gc.op_linear_rows(s, 0x100, 0x200, 0x300, None, 0x400, 4, 8, 8, gc.LINEAR_RELU)


def test_op_linear_backend_binding():
    s = gc.Stream._adopt(BOGUS, None, owns=False)
    # Contradictory backend flags are refused before the stream is looked at.
    with pytest.raises(gc.InvalidArgumentError, match="exclude each other"):
        gc.op_linear_backend(s, 4, 8, 8, gc.LINEAR_GRAPHCORE | gc.LINEAR_CUBLASLT)
    with pytest.raises(gc.InvalidArgumentError, match="non-zero"):
        gc.op_linear_backend(s, 0, 8, 8)
    with pytest.raises(gc.InvalidHandleError):
        gc.op_linear_backend(s, 4, 8, 8)
    with pytest.raises(gc.InvalidArgumentError, match="exclude each other"):
        gc.op_linear(s, 0x100, 0x200, 0x300, None, 4, 8, 8, gc.LINEAR_GRAPHCORE | gc.LINEAR_CUBLASLT)
    assert gc.LINEAR_BACKEND_GRAPHCORE == 0 and gc.LINEAR_BACKEND_CUBLASLT == 1
    # Where cuBLASLt is missing, the version is None (not an error).
    v = gc.cublaslt_version()
    assert v is None or v > 0


def test_op_mlp_rows_and_exact_runner_binding():
    s = gc.Stream._adopt(BOGUS, None, owns=False)
    layers = [(0x1000, None, 4, 4, True), (0x2000, None, 4, 2, False)]
    with pytest.raises(gc.InvalidArgumentError, match="rows is None"):
        gc.op_mlp_rows(s, 0x100, 0x200, None, 4, layers, 0x300, 4096)
    # Well-formed arguments reach the library, which checks the handle.
    with pytest.raises(gc.InvalidHandleError):
        gc.op_mlp_rows(s, 0x100, 0x200, 0x400, 4, layers, 0x300, 4096)
    assert gc.ARG_ROWS == 2
    assert dict(gc.RunnerStatistics._fields_)["exact_buckets"] is C.c_uint32


def test_cublaslt_loader_honours_its_environment_variable():
    """No GPU needed: GRAPHCORE_CUBLASLT names the only library tried (a
    missing one is GC_ERROR_NOT_SUPPORTED naming it), `0` turns cuBLASLt
    off; either way cublaslt_version() is None (fresh processes: the
    outcome is kept per process)."""
    import os
    import subprocess
    import sys
    child = r'''
import ctypes as C, sys, graphcore as gc
out = C.c_size_t(7)
try:
    gc.lib.gc_cublaslt_version(C.byref(out))
    raise SystemExit("loaded")
except gc.NotSupportedError as e:
    assert sys.argv[1] in str(e), str(e)
assert out.value == 7 and gc.cublaslt_version() is None
print("ok")
'''
    pkg = os.path.dirname(os.path.dirname(gc.__file__))
    for value, needle in (("/nonexistent/libcublasLt.so.12", "/nonexistent/libcublasLt.so.12"),
                          ("0", "turned off"), ("off", "turned off")):
        env = dict(os.environ, GRAPHCORE_CUBLASLT=value,
                   PYTHONPATH=os.pathsep.join([pkg, os.environ.get("PYTHONPATH", "")]))
        r = subprocess.run([sys.executable, "-c", child, needle], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0 and "ok" in r.stdout, (value, r.stdout + r.stderr)
