"""graphcore for Python: the C API of libgraphcore.so through ctypes.

No compiler is needed: the package loads the library on first use, declares
every C function (``graphcore.lib``, argtypes and restype set; a failing call
raises), and wraps the handles in classes that own them::

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

Objects own their handles (``close()``, ``with``, or collection destroy
them); which calls may run concurrently is stated in ``graphcore.objects``,
as in graphcore.h.

``import graphcore`` always succeeds (``graphcore.__version__`` can be read
without the library); the first call that needs libgraphcore.so loads it
from, in order: $GRAPHCORE_LIB (alone, when set), pkg-config's libdir for
graphcore, this package's folder, the repository's target/release,
target/debug and stage/lib (when run from a checkout), the system's dynamic
loader. If none loads, ``LibraryNotFoundError`` lists each place searched
and why it failed. ``graphcore.LIBRARY`` is the file loaded.

Modules: ``errors`` (statuses, exceptions), ``structs`` (the header's
constants, structures, function prototypes), ``loader`` (finding the
library), ``args`` (argument checks), ``objects`` (the handle owners,
capture), ``ops`` (copies, launches, typed kernels).
"""

__version__ = "0.1.0"

from . import args, errors, loader, objects, ops, structs  # noqa: E402
from .args import *  # noqa: E402,F401,F403
from .errors import *  # noqa: E402,F401,F403
from .loader import *  # noqa: E402,F401,F403
from .objects import *  # noqa: E402,F401,F403
from .ops import *  # noqa: E402,F401,F403
from .structs import *  # noqa: E402,F401,F403

__all__ = (errors.__all__ + structs.__all__ + loader.__all__ + args.__all__ + objects.__all__
           + ops.__all__)


def __getattr__(name):
    """``graphcore.LIBRARY``: the path of the loaded library (loads it)."""
    if name == "LIBRARY":
        return loader.load()[1]
    raise AttributeError("module 'graphcore' has no attribute %r" % name)
