"""NumPy arrays of what compiled code returns: its own memory handed over, or views of the arguments.

The CPython wrapper boxes a returned array as ``(owner, data, *shape,
*strides)`` (codegen/wrapper.py). ``owner`` is a capsule holding the array's
reference to an allocation of the compiled code (interpreter/builtins/arraymem.py):
the NumPy array keeps it in its ``base`` chain, and its destructor gives the
reference back (the allocation is freed with the last). A zero ``owner`` is
memory borrowed from an argument: the argument
itself when the array is the argument unchanged (``return a``), else a view
whose base is that argument, as NumPy's own slicing would give.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import types as T


class _Interface:
    """What NumPy makes an array of (``__array_interface__``) and keeps as its ``base``."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, interface: dict, owner: Any):
        self.__array_interface__ = interface
        self.owner = owner


def boxer(t: T.Type) -> Callable[[Any, tuple], Any]:
    """``box(value, args)``: the Python value of a boxed return ``value`` of type ``t`` (``args``: the
    call's arguments); what each array needs from NumPy (its dtype, type string) is looked up once."""
    import numpy as np

    def make(t):
        if isinstance(t, T.TupleType):
            items = [make(it) for it in t.items]
            return lambda v, args: tuple(f(x, args) for f, x in zip(items, v))
        if not isinstance(t, T.ArrayType):
            return lambda v, args: v
        dtype, ndim = np.dtype(t.dtype.name), t.ndim
        typestr = dtype.str

        def array(v, args):
            owner, data = v[0], v[1]
            shape, strides = v[2:2 + ndim], v[2 + ndim:]
            if owner:  # a capsule holding this array's reference to its allocation
                readonly = False
            else:
                owner = _argument_holding(data, args, np)
                if owner is None:  # no argument holds it: refuse rather than view memory nobody keeps alive
                    raise RuntimeError("compiled code returned an array of memory it does not own")
                same = (owner.__array_interface__["data"][0], owner.shape, owner.strides, owner.dtype)
                if same == (data, shape, strides, dtype):
                    return owner
                readonly = not owner.flags.writeable
            interface = {"version": 3, "shape": shape, "typestr": typestr, "strides": strides,
                         "data": (data or _EMPTY, readonly)}
            return np.asarray(_Interface(interface, owner))
        return array

    return make(t)


_EMPTY = 16
"""an address NumPy accepts for an array of no elements whose data pointer is null"""


def _argument_holding(data: int, args: tuple, np: Any):
    """The argument array whose memory holds address ``data``."""
    for a in args:
        if not isinstance(a, np.ndarray):
            continue
        low = high = a.__array_interface__["data"][0]
        for n, s in zip(a.shape, a.strides):
            low += min(0, (n - 1) * s)
            high += max(0, (n - 1) * s)
        if low <= data <= high + a.itemsize:
            return a
    return None
