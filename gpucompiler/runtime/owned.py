"""NumPy arrays of what compiled code returns: its own memory handed over, or views of the arguments.

The CPython wrapper boxes a returned array as ``(buffer, data, *shape,
*strides)`` (codegen/wrapper.py). A non-zero ``buffer`` is a block the
compiled code allocated (the header of interpreter/builtins/arraymem.py) whose reference
moved to the caller: a :class:`Block` takes it and frees it with ``free``
when NumPy drops the last array viewing it (the array's ``base`` chain holds
it). A zero ``buffer`` is memory borrowed from an argument: the argument
itself when the array is the argument unchanged (``return a``), else a view
whose base is that argument, as NumPy's own slicing would give.
"""

from __future__ import annotations

import ctypes
from typing import Any

from .. import types as T

_LIBC = ctypes.CDLL(None)
_free = _LIBC.free
_free.argtypes = [ctypes.c_void_p]
_free.restype = None


class Block:
    """One allocation of compiled code (its header's address); its elements and header are ``free``d
    when the last array viewing it is gone."""

    __slots__ = ("address", "__weakref__")

    def __init__(self, address: int):
        self.address = address

    def __del__(self):
        _free(ctypes.c_void_p.from_address(self.address + 8).value)
        _free(self.address)


class _Interface:
    """What NumPy makes an array of (``__array_interface__``) and keeps as its ``base``."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, interface: dict, owner: Any):
        self.__array_interface__ = interface
        self.owner = owner


def box(value: Any, t: T.Type, args: tuple, blocks: dict | None = None) -> Any:
    """The Python value of a boxed return ``value`` of type ``t``; ``args`` are the call's arguments."""
    blocks = {} if blocks is None else blocks  # one Block per buffer, shared by the arrays viewing it
    if isinstance(t, T.TupleType):
        return tuple(box(v, it, args, blocks) for v, it in zip(value, t.items))
    if not isinstance(t, T.ArrayType):
        return value
    import numpy as np

    buffer, data = value[0], value[1]
    shape, strides = value[2:2 + t.ndim], value[2 + t.ndim:]
    dtype = np.dtype(t.dtype.name)
    if buffer:
        owner = blocks.get(buffer)
        if owner is None:
            owner = blocks[buffer] = Block(buffer)
        readonly = False
    else:
        owner = _argument_holding(data, args, np)
        if owner is None:  # no argument holds it: refuse rather than view memory nobody keeps alive
            raise RuntimeError("compiled code returned an array of memory it does not own")
        if (owner.ctypes.data, owner.shape, owner.strides, owner.dtype) == (data, shape, strides, dtype):
            return owner
        readonly = not owner.flags.writeable
    interface = {"version": 3, "shape": shape, "typestr": dtype.str, "strides": strides,
                 "data": (data or _EMPTY, readonly)}
    return np.asarray(_Interface(interface, owner))


_EMPTY = 16
"""an address NumPy accepts for an array of no elements whose data pointer is null"""


def _argument_holding(data: int, args: tuple, np: Any):
    """The argument array whose memory holds address ``data``."""
    for a in args:
        if not isinstance(a, np.ndarray):
            continue
        low = high = a.ctypes.data
        for n, s in zip(a.shape, a.strides):
            low += min(0, (n - 1) * s)
            high += max(0, (n - 1) * s)
        if low <= data <= high + a.itemsize:
            return a
    return None
