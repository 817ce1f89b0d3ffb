"""pytest setup for graphcore's Python binding.

The binding under test is python/graphcore (put first on sys.path); the
library is $GRAPHCORE_LIB, else the binding's own search (the suite sets
GRAPHCORE_LIB to the library it tests). Tests that need a GPU take the `ctx`
fixture: without a CUDA driver they are skipped (reported as skipped), and
with GC_GPU=1 (the GPU machine) a missing driver or device is a failure.
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

import graphcore as gc  # noqa: E402

GPU_REQUIRED = bool(os.environ.get("GC_GPU"))


def _driver():
    try:
        return gc.device_count() > 0, None
    except gc.Error as e:
        return False, e


HAVE_GPU, NO_GPU_REASON = _driver()


def pytest_report_header(config):
    return "graphcore %s from %s; GPU: %s" % (
        ".".join(map(str, gc.version())), gc.LIBRARY,
        "yes" if HAVE_GPU else "no (%s)" % NO_GPU_REASON)


def require_gpu():
    if HAVE_GPU:
        return
    if GPU_REQUIRED:
        pytest.fail("GC_GPU is set but there is no usable GPU: %s" % NO_GPU_REASON)
    pytest.skip("needs a CUDA GPU (%s)" % (NO_GPU_REASON.status if NO_GPU_REASON else "none"))


@pytest.fixture
def ctx():
    require_gpu()
    with gc.Context(0) as c:
        yield c


@pytest.fixture
def stream(ctx):
    with gc.Stream(ctx) as s:
        yield s


@pytest.fixture
def pool(ctx):
    with gc.Pool(ctx) as p:
        yield p


@pytest.fixture
def torch():
    """PyTorch with CUDA (on the GPU machine it must be there)."""
    require_gpu()
    try:
        import torch as t
    except ImportError:
        if GPU_REQUIRED:
            pytest.fail("GC_GPU is set but PyTorch is not importable")
        pytest.skip("needs PyTorch")
    if not t.cuda.is_available():
        pytest.fail("a CUDA driver is present but torch.cuda is not available")
    return t
