"""NumPy arrays of what compiled code returns: its own memory handed over, or views of the arguments.

The CPython wrapper boxes a returned array as ``(owner, data, *shape,
*strides)`` (codegen/wrapper.py). ``owner`` is a capsule holding the array's
reference to an allocation of the compiled code (interpreter/builtins/arraymem.py):
the NumPy array keeps it in its ``base`` chain, and its destructor gives the
reference back (the allocation is freed with the last). A zero ``owner`` is
memory borrowed from an argument (an array, or one in a tuple or record argument):
the argument itself when the array is the argument unchanged
(``return a``), else a view whose base is that argument, as NumPy's own
slicing would give. Memory no argument holds is a module-level array frozen
into the compiled code (docs/user_guide.md): a read-only view of that
constant, which lives as long as the process (loaded code is never
unloaded), as Numba returns it.

The C-speed entry (codegen/pyresult.py) makes the arrays of owned memory
itself through NumPy's C API: :func:`numpy_words` are the addresses of the
functions it calls, read from NumPy's ``_ARRAY_API`` table (their slots are
NumPy's ABI, the same in NumPy 1 and 2) and checked by making an array
with them; :func:`borrowed` is its helper for memory of an argument.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from .. import types as T
from ..codegen.pyresult import NUMPY_FUNCTIONS, NUMPY_TYPE_NUMS

#: the slots of NumPy's C API table (``__multiarray_api.h``): the ``ndarray`` type and each of
#: :data:`~gpucompiler.codegen.pyresult.NUMPY_FUNCTIONS`
_API_SLOTS = {"PyArray_Type": 2, "PyArray_NewFromDescr": 94, "PyArray_SetBaseObject": 282,
              "PyArray_DescrFromType": 45}


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
        dtype = np.dtype(t.dtype.name)
        typestr = dtype.str

        def array(v, args):
            return _array(np, dtype, typestr, v, args)
        return array

    return make(t)


def _array(np: Any, dtype: Any, typestr: str, v: tuple, args: tuple):
    """The array of the boxed ``v = (owner, data, *shape, *strides)`` (see :func:`boxer`)."""
    owner, data = v[0], v[1]
    ndim = (len(v) - 2) // 2
    shape, strides = v[2:2 + ndim], v[2 + ndim:]
    if owner:  # a capsule holding this array's reference to its allocation
        readonly = False
    else:
        owner = _argument_holding(data, args, np)
        if owner is None:  # a frozen global's constant
            readonly = True
        else:
            same = (owner.__array_interface__["data"][0], owner.shape, owner.strides, owner.dtype)
            if same == (data, shape, strides, dtype):
                return owner
            readonly = not owner.flags.writeable
    interface = {"version": 3, "shape": shape, "typestr": typestr, "strides": strides,
                 "data": (data or _EMPTY, readonly)}
    return np.asarray(_Interface(interface, owner))


def borrowed(num: int, v: tuple, args: tuple):
    """The array of NumPy type number ``num`` of memory borrowed from an argument (``v``'s owner is 0):
    the C-speed entry's helper."""
    import numpy as np

    dtype = _dtype_of_num(num)
    return _array(np, dtype, dtype.str, v, args)


@functools.cache
def _dtype_of_num(num: int) -> Any:
    import numpy as np

    return next(np.dtype(t.name) for t, n in NUMPY_TYPE_NUMS.items() if n == num)


@functools.cache
def numpy_words() -> ctypes.Array | None:
    """The addresses of :data:`~gpucompiler.codegen.pyresult.NUMPY_FUNCTIONS` in NumPy's C API, after
    making an array with them; None where the table does not hold what its slots should."""
    import numpy as np

    core: Any = getattr(np, "_core", None) or np.core
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    try:
        table = get(core._multiarray_umath._ARRAY_API, None)
    except (AttributeError, ValueError):
        return None
    slot = lambda name: ctypes.c_void_p.from_address(table + 8 * _API_SLOTS[name]).value  # noqa: E731
    if slot("PyArray_Type") != id(np.ndarray):
        return None
    words = (ctypes.c_uint64 * len(NUMPY_FUNCTIONS))(*(slot(name) for name in NUMPY_FUNCTIONS))
    return words if _makes_arrays(np, words) else None


def _makes_arrays(np: Any, words: ctypes.Array) -> bool:
    """Whether the three functions make a (2, 3) int32 view with a base, as the entry calls them."""
    new_from_descr = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.c_void_p, ctypes.c_int,
                                       ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                       ctypes.c_void_p)(words[0])
    set_base = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.py_object)(words[1])
    descr_from_type = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_int)(words[2])
    owner = np.arange(6, dtype=np.int32)
    extents = (ctypes.c_int64 * 4)(2, 3, 12, 4)
    descr = descr_from_type(5)
    if descr != id(np.dtype(np.int32)):
        return False
    a = new_from_descr(np.ndarray, descr, 2, ctypes.addressof(extents), ctypes.addressof(extents) + 16,
                       owner.ctypes.data, 0x0400, None)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(owner))  # the base takes a reference
    ok = set_base(a, owner) == 0
    return ok and a.base is owner and a.flags.writeable and np.array_equal(a, owner.reshape(2, 3))


_EMPTY = 16
"""an address NumPy accepts for an array of no elements whose data pointer is null"""


def _argument_holding(data: int, args, np: Any) -> Any:
    """The argument array (or array in a tuple or record argument) whose memory holds address ``data``."""
    for a in args:
        if isinstance(a, tuple):
            found = _argument_holding(data, a, np)
        elif dataclasses.is_dataclass(a) and not isinstance(a, type):
            found = _argument_holding(data, [getattr(a, f.name) for f in dataclasses.fields(a)], np)
        else:
            found = a if isinstance(a, np.ndarray) and _holds(a, data) else None
        if found is not None:
            return found
    return None


def _holds(a: Any, data: int) -> bool:
    """Whether the memory of array ``a`` holds address ``data`` (one past its end included)."""
    low = high = a.__array_interface__["data"][0]
    for n, s in zip(a.shape, a.strides):
        low += min(0, (n - 1) * s)
        high += max(0, (n - 1) * s)
    return low <= data <= high + a.itemsize
