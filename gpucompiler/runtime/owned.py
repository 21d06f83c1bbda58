"""NumPy arrays of what compiled code returns: its own memory handed over, or views of the arguments.

The CPython wrapper boxes a returned array as ``(owner, data, *shape,
*strides)`` (codegen/wrapper.py). ``owner`` is a capsule holding the array's
reference to an allocation of the compiled code (language/numpy/arraymem.py):
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
itself through NumPy's C API (runtime/pyentry.py finds the functions);
:func:`borrowed` is its helper for memory of an argument.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

from .. import types as T
from ..errors import TypeInferenceError


class _Interface:
    """What NumPy makes an array of (``__array_interface__``) and keeps as its ``base``."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, interface: dict, owner: Any):
        self.__array_interface__ = interface
        self.owner = owner


def converted(t: T.Type) -> bool:
    """Whether a boxed value of type ``t`` needs :func:`boxer` (it holds an array or a record)."""
    if isinstance(t, T.RecordType):
        return True
    if isinstance(t, T.TupleType):
        return any(converted(it) for it in t.items)
    return isinstance(t, T.ArrayType)


def boxer(t: T.Type, namespace: dict | None = None) -> Callable[[Any, tuple], Any]:
    """``box(value, args)``: the Python value of a boxed return ``value`` of type ``t`` (``args``: the
    call's arguments), converted through every tuple and record, however nested; what each array needs
    from NumPy (its dtype, type string) and each record's class are looked up once (``namespace``: the
    compiled function's globals, where a module no import finds defines its classes)."""
    import numpy as np

    def make(t):
        if isinstance(t, (T.TupleType, T.RecordType)):
            items = [make(it) for it in t.items]
            build = tuple if isinstance(t, T.TupleType) else record_builder(t, namespace)
            return lambda v, args: build(tuple(f(x, args) for f, x in zip(items, v)))
        if not isinstance(t, T.ArrayType):
            return lambda v, args: v
        dtype = np.dtype(t.dtype.name)
        typestr = dtype.str

        def array(v, args):
            return _array(np, dtype, typestr, v, args)
        return array

    return make(t)


def record_builder(t: T.RecordType, namespace: dict | None = None) -> Callable[[tuple], Any]:
    """``build(fields)``: the instance of ``t``'s class holding ``fields`` (the boxed record's tuple), found
    by module and name (in ``namespace`` for its own module's classes); one not found is a typed error."""
    first, *rest = t.qualname.split(".")
    module = sys.modules.get(t.module)
    if module is not None:
        cls: Any = getattr(module, first, None)
    else:
        cls = namespace.get(first) if namespace is not None and namespace.get("__name__") == t.module else None
    for part in rest:
        cls = getattr(cls, part, None)
    names = [n for n, _ in t.fields]
    if not (isinstance(cls, type) and set(names) <= _field_names(cls)):
        raise TypeInferenceError(f"compiled code returns an instance of {t.qualname}, which it cannot find as "
                                 f"{t.module}.{t.qualname}", (t,),
                                 hint="define the NamedTuple or dataclass at the top level of a module")
    if not dataclasses.is_dataclass(cls):
        return lambda fields: cls(*fields)
    init = {f.name for f in dataclasses.fields(cls) if f.init}

    def build(fields):
        obj = cls(**{n: v for n, v in zip(names, fields) if n in init})
        for n, v in zip(names, fields):
            if n not in init:
                object.__setattr__(obj, n, v)
        return obj
    return build


def _field_names(cls: type) -> set[str]:
    """The fields of a ``NamedTuple`` or dataclass class (none for another class)."""
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls)}
    fields = getattr(cls, "_fields", None) if issubclass(cls, tuple) else None
    return set(fields) if isinstance(fields, tuple) else set()


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


def borrowed(dtype: Any, v: tuple, args: tuple):
    """The array of ``dtype`` over memory borrowed from an argument (``v``'s owner is 0): the C-speed
    entry's helper."""
    import numpy as np

    return _array(np, dtype, dtype.str, v, args)


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
