"""Checking and converting Python arguments to what the C calls take.

Integers are checked against their C type's range, addresses and kernel
arguments converted (ints, tensors, HostBuffers, ctypes values), dims and
dependency lists built; a bad value raises TypeError or
InvalidArgumentError naming the call and the argument. Imports errors and
structs only.
"""

import ctypes as C

from .errors import InvalidArgumentError
from .structs import Dim3, Node

__all__ = ["address", "ptr", "Scalar"]


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


def _name(name, where, nullable=False):
    if name is None and nullable:
        return None
    if not isinstance(name, str):
        raise TypeError("%s: name must be a str, not %s" % (where, type(name).__name__))
    return name.encode()


def _out():
    """An out-parameter for a handle."""
    return C.c_void_p()


def _scalar_value(value, ctype, where):
    """``value`` as a ctypes scalar of ``ctype`` (1 to 8 bytes)."""
    if not (isinstance(ctype, type) and issubclass(ctype, C._SimpleCData)
            and 1 <= C.sizeof(ctype) <= 8 and ctype not in (C.c_char_p, C.c_wchar_p, C.c_void_p)):
        raise TypeError("%s: ctype must be a ctypes scalar type of 1 to 8 bytes (c_float, "
                        "c_int32, c_uint64, ...), not %r" % (where, ctype))
    try:
        return ctype(value)
    except TypeError:
        raise TypeError("%s: %r is not a %s" % (where, value, ctype.__name__))


class Scalar:
    """A scalar argument's value for ``launch(stream, name=Scalar(v,
    ctype))`` and ``replay``: the gc_binding of a scalar argument
    (``data_ptr()`` gives the value's bytes as an int, little-endian,
    zero above its size; ``nbytes`` its size). Declare the argument with
    ``Stream.capture_scalar_arg`` or ``Graph.declare_scalar_arg``."""

    __slots__ = ("value", "ctype", "bits", "nbytes")

    def __init__(self, value, ctype=C.c_float):
        v = _scalar_value(value, ctype, "Scalar")
        self.value = v.value
        self.ctype = ctype
        self.nbytes = C.sizeof(ctype)
        self.bits = int.from_bytes(bytes(v), "little")

    def data_ptr(self):
        """The value's bytes as gc_binding's ``ptr`` wants them."""
        return self.bits

    def __repr__(self):
        return "Scalar(%r, %s)" % (self.value, self.ctype.__name__)
