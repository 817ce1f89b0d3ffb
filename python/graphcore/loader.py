"""Finding and loading libgraphcore.so, on first use.

``import graphcore`` never loads the library: the first call that needs it
does (``lib``, a stand-in for the loaded ctypes library, loads it on its
first attribute). Where it looks, in order (the first that loads wins):

1. ``$GRAPHCORE_LIB``, a path to the library; when set, nothing else is
   tried;
2. pkg-config's libdir for graphcore (``pkg-config --variable=libdir
   graphcore``: where ``make install`` put it, found through
   ``PKG_CONFIG_PATH`` for a custom prefix);
3. the package's own folder (a libgraphcore.so.MAJOR copied next to it);
4. when the package runs from the repository (python/graphcore): the
   repository's target/release, target/debug and stage/lib;
5. the system's dynamic loader (``libgraphcore.so.MAJOR`` through
   LD_LIBRARY_PATH and the ldconfig cache).

If none loads, ``LibraryNotFoundError`` lists only the places searched, and
why each failed (no pkg-config, no such file, the loader's message...).
Every C function is then declared from ``structs.PROTOTYPES`` and the
library's version checked against the binding's.
"""

import ctypes as C
import os
import shutil
import subprocess
import threading

from . import __version__
from .errors import LibraryNotFoundError, error_for
from .structs import _S, PROTOTYPES

__all__ = ["lib", "version", "status_name", "last_error"]

# The binding's version (__init__.py's literal, which tests/version.rs
# checks against Cargo.toml).
VERSION = tuple(int(p) for p in __version__.split("."))
SONAME = "libgraphcore.so.%d" % VERSION[0]
HERE = os.path.dirname(os.path.abspath(__file__))

# Functions returning an int that is not a gc_status.
_UNCHECKED = {"gc_last_cuda_result", "gc_status_name", "gc_last_error", "gc_version"}

_loaded = None  # (ctypes.CDLL, path) once loaded
_loading = threading.Lock()


def _pkg_config_libdir():
    """(libdir, None), or (None, why there is none)."""
    pkg_config = os.environ.get("PKG_CONFIG") or shutil.which("pkg-config")
    if not pkg_config:
        return None, "pkg-config is not installed"
    try:
        r = subprocess.run([pkg_config, "--variable=libdir", "graphcore"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "%s failed: %s" % (pkg_config, e)
    libdir = r.stdout.strip()
    if r.returncode != 0 or not libdir:
        return None, ("pkg-config does not know graphcore "
                      "(set PKG_CONFIG_PATH to <prefix>/lib/pkgconfig)")
    return libdir, None


def candidates():
    """The search, without $GRAPHCORE_LIB, in order: a list of (place, path,
    why), path None where the place gave none (then ``why`` says why)."""
    found = []
    libdir, why = _pkg_config_libdir()
    found.append(("pkg-config libdir", libdir and os.path.join(libdir, SONAME), why))
    found.append(("package folder", os.path.join(HERE, SONAME), None))
    repo = os.path.dirname(os.path.dirname(HERE))
    if os.path.isfile(os.path.join(repo, "ffi", "Cargo.toml")):
        for d in ("target/release", "target/debug", "stage/lib"):
            found.append(("repository", os.path.join(repo, d, "libgraphcore.so"), None))
    found.append(("system loader", SONAME, None))
    return found


def _declare(handle, path):
    for name, (restype, argtypes) in PROTOTYPES.items():
        try:
            fn = getattr(handle, name)
        except AttributeError:
            raise LibraryNotFoundError(
                "graphcore: %s lacks %s: it is older than this binding (%d.%d.%d)"
                % ((path, name) + VERSION)
            ) from None
        fn.restype = restype
        fn.argtypes = argtypes
        # gc_status results are checked; gc_last_cuda_result's int is a
        # CUresult, not a status (and checking it would recurse).
        if restype is _S and name not in _UNCHECKED:
            fn.errcheck = _errcheck
    v = handle.gc_version()
    if v // 10000 != VERSION[0] or v // 100 % 100 < VERSION[1]:
        raise LibraryNotFoundError(
            "graphcore: %s is version %d.%d.%d; this binding needs %d.%d or a newer %d.x"
            % (path, v // 10000, v // 100 % 100, v % 100, VERSION[0], VERSION[1], VERSION[0])
        )


def load():
    """Loads the library once (see the module's docstring); returns
    (ctypes.CDLL, path). Raises LibraryNotFoundError."""
    with _loading:
        if _loaded is None:
            _load()
    return _loaded


def _load():
    """One search; load() holds the lock."""
    global _loaded
    env = os.environ.get("GRAPHCORE_LIB")
    places = [("$GRAPHCORE_LIB", env, None)] if env else candidates()
    tried = []
    for place, path, why in places:
        if path is None:
            tried.append("%s: %s" % (place, why))
            continue
        if os.sep in path and not os.path.exists(path):
            tried.append("%s: %s (no such file)" % (place, path))
            continue
        try:
            handle = C.CDLL(path)
        except OSError as e:
            tried.append("%s: %s (%s)" % (place, path, e))
            continue
        _declare(handle, path)
        _loaded = (handle, path)
        return
    raise LibraryNotFoundError(
        "graphcore: cannot load libgraphcore; searched:\n  %s\n"
        "Build it (make lib), install it (make install; for a custom prefix set "
        "PKG_CONFIG_PATH=<prefix>/lib/pkgconfig), or set GRAPHCORE_LIB to its path."
        % "\n  ".join(tried)
    )


class _Library:
    """``graphcore.lib``: the library's C functions, declared (argtypes,
    restype; a failing gc_status raises). Loads the library on first use."""

    def __getattr__(self, name):
        return getattr(load()[0], name)

    def __repr__(self):
        return "<graphcore.lib %s>" % (_loaded[1] if _loaded else "(not loaded yet)")


lib = _Library()


_unchecked = {}


def unchecked(name):
    """C function ``name`` for hot paths: returning its gc_status
    unchecked (the caller tests it and calls raise_status), and declared
    without argtypes, so nothing is converted per call: the caller passes
    ctypes values of the C parameters' exact types (c_void_p for handles,
    c_size_t, c_uint32, pointers). A function object apart from ``lib``'s;
    made once per name."""
    f = _unchecked.get(name)
    if f is None:
        f = load()[0][name]
        f.restype = PROTOTYPES[name][0]
        _unchecked[name] = f
    return f


def raise_status(status):
    """Raises the error of a failed call's gc_status (as ``lib``'s checked
    functions do)."""
    raise error_for(status, _last_error(), lib.gc_last_cuda_result())


def _errcheck(result, func, args):
    if result != 0:
        raise error_for(result, _last_error(), lib.gc_last_cuda_result())
    return result


def _last_error():
    text = lib.gc_last_error()
    return text.decode("utf-8", "replace") if text else ""


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
