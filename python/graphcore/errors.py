"""graphcore's statuses and the exceptions failed calls raise.

Each gc_status other than GC_SUCCESS has an ``Error`` subclass; a checked C
call that fails raises ``error_for(status, gc_last_error())``. Imports
nothing else of the package.
"""

__all__ = [
    "SUCCESS", "STATUS_NAMES", "STATUS_CODES", "Error", "InvalidArgumentError",
    "InvalidHandleError", "OutOfMemoryError", "NoDriverError", "NoDeviceError",
    "NotSupportedError", "CudaError", "CaptureError", "InvalidStateError", "NotFoundError",
    "UpdateMismatchError", "NoBucketError", "DeviceFaultError", "PanicError", "ERRORS",
    "error_for", "LibraryNotFoundError",
]

# BEGIN generated statuses: from core/src/error.rs's one status list, by
# tests/header.rs (`make header`); do not edit.
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
# END generated statuses
STATUS_CODES = {name: code for code, name in STATUS_NAMES.items()}


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
    """GC_ERROR_NO_DEVICE: a driver but no CUDA device (a bad ordinal is invalid)."""

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



class LibraryNotFoundError(OSError):
    """libgraphcore.so could not be loaded (or is too old): raised by the
    first call that needs the library, never by ``import graphcore``. The
    message lists each place searched and why it failed."""
