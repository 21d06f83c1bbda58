"""The lattice of abstract values: Bottom < Const(value) < type.

``Const`` carries a compile-time value (a literal, a folded result, a
function or module reached through a global). Joining two different
constants widens to their type; numbers of different types join to their
promoted type (the documented Numba rule); anything else that differs, tuples
of different item types included, is a union, which is an error.
"""

from __future__ import annotations

from types import MethodType
from typing import Any

import attrs

from .. import types as T


class _Bottom:
    """No value yet (code not reached, or a recursive call still being inferred)."""

    def __repr__(self) -> str:
        return "⊥"


BOTTOM = _Bottom()

MISSING = object()
"""The value recorded for a global read that found no binding (a builtin's module global, a name
defined later): a dependency that holds while the name stays unbound."""


@attrs.frozen(repr=False)
class PyObj(T.Type):
    """The type of a compile-time-only Python object (function, module, string)."""

    def __repr__(self) -> str:
        return "pyobject"


pyobj = PyObj()


@attrs.frozen(repr=False, eq=False)
class Const:
    """A known value of type ``type``."""

    value: Any
    type: T.Type

    def __eq__(self, other) -> bool:
        return (isinstance(other, Const) and type(self.value) is type(other.value)
                and self.type == other.type and _same(self.value, other.value))

    def __hash__(self) -> int:
        if isinstance(self.value, MethodType):  # made anew by every attribute read: equal, not identical
            return hash((self.type, id(self.value.__self__), self.value.__func__))
        frozen = self.type == pyobj or isinstance(self.type, T.ArrayType) or _holds_array(self.type)
        return hash((self.type, id(self.value) if frozen else self.value))

    def __repr__(self) -> str:
        if self.type == pyobj:
            return f"Const({getattr(self.value, '__qualname__', repr(self.value))})"
        return f"Const({self.value!r}::{self.type!r})"


AbstractValue = T.Type | Const | _Bottom
"""What the interpreter knows of a value: its type, a constant of a type, or ⊥ (not reached yet)."""


def _same(a, b) -> bool:
    if isinstance(a, (float, complex)):
        return (a == b and str(a) == str(b)) or (a != a and b != b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(type(x) is type(y) and _same(x, y) for x, y in zip(a, b))
    return a is b or (type(a) in (int, bool, str, type(None), MethodType) and a == b)


INT64_RANGE = range(-(2**63), 2**63)


def _holds_array(t) -> bool:
    return isinstance(t, T.TupleType) and any(isinstance(i, T.ArrayType) or _holds_array(i) for i in t.items)


def const_type(value) -> T.Type:
    """The type of the constant ``value`` (``pyobj`` for compile-time-only objects).

    A NumPy array (a module global, say) is frozen: a read-only C-contiguous array
    of its dtype, its elements compiled in (see ``FunctionCodegen.const``).
    """
    if isinstance(value, bool):
        return T.boolean
    if isinstance(value, int):
        return T.int64 if value in INT64_RANGE else pyobj
    if isinstance(value, float):
        return T.float64
    if isinstance(value, complex):
        return T.complex128
    if value is None:
        return T.none
    if isinstance(value, tuple):
        items = tuple(const_type(v) for v in value)
        return pyobj if pyobj in items else T.TupleType(items)
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) is not None:
        t = T.typeof(value)
        if isinstance(t, T.ArrayType):
            return attrs.evolve(t, layout="C", readonly=True)
        if isinstance(t, T.StructArrayType):  # frozen 16-byte aligned, which every dtype's alignment divides
            return attrs.evolve(t, layout="C", readonly=True, aligned=True)
    return pyobj


_NUMBERS = (int, float, bool)


def computed(fn, args) -> Const | None:
    """``fn(*args)`` computed by Python when every argument is a constant Python number: CPython's value
    as a constant (an integer outside int64 too: see :func:`big_int`); None where Python raises (the
    compiled code raises at run time) or gives something other than a number."""
    if not all(isinstance(a, Const) and type(a.value) in _NUMBERS for a in args):
        return None
    try:
        value = fn(*[a.value for a in args])
    except (ArithmeticError, ValueError):
        return None
    return const(value) if type(value) in _NUMBERS else None


def big_int(v) -> bool:
    """Whether ``v`` is a constant Python integer outside int64 (a literal, or folded from constants):
    a compile-time value only, refused where it would run."""
    return isinstance(v, Const) and type(v.value) is int and v.type == pyobj


def const(value) -> Const:
    """The constant ``value``; a list (of numbers, tuples, lists) is frozen as a tuple."""
    if type(value) in (list, tuple):
        value = _frozen(value)
    return Const(value, const_type(value))


def _frozen(value) -> Any:
    if type(value) in (list, tuple):
        return tuple(_frozen(v) for v in value)
    return value


def widen(x: object) -> Any:
    """The type of an abstract value (a ``types.Type``; typed ``Any`` because a rule's
    signature, which a type checker does not see, says which kind of type it is)."""
    return x.type if isinstance(x, Const) else x


def _join_items(xs, ys) -> list:
    """Item by item: arrays, tuples and records join (views, layouts); scalars must agree (None)."""
    return [join(x, y) if isinstance(x, (T.ArrayType, T.TupleType, T.RecordType)) else (x if x == y else None)
            for x, y in zip(xs, ys)]


def join(a, b):
    """Least upper bound of ``a`` and ``b``; ``None`` when they do not fit (a union)."""
    if a is BOTTOM or a == b:
        return b
    if b is BOTTOM:
        return a
    ta, tb = widen(a), widen(b)
    if ta == tb:
        return None if ta == pyobj else ta
    if isinstance(ta, T.Scalar) and isinstance(tb, T.Scalar):
        return T.promote(ta, tb)
    if isinstance(ta, T.TupleType) and isinstance(tb, T.TupleType) and len(ta.items) == len(tb.items):
        items = _join_items(ta.items, tb.items)
        return None if None in items else T.TupleType(items)
    if (isinstance(ta, T.RecordType) and isinstance(tb, T.RecordType)
            and (ta.module, ta.qualname, [n for n, _ in ta.fields]) == (tb.module, tb.qualname, [n for n, _ in tb.fields])):
        items = _join_items(ta.items, tb.items)  # a record of new arrays on one path, of arguments on another
        return None if None in items else T.RecordType(ta.module, ta.qualname, zip((n for n, _ in ta.fields), items),
                                                       ta.indexable)
    if isinstance(ta, T.ArrayType) and isinstance(tb, T.ArrayType) and (ta.dtype, ta.ndim) == (tb.dtype, tb.ndim):
        return T.ArrayType(ta.dtype, ta.ndim, ta.layout if ta.layout == tb.layout else "A",
                           ta.readonly or tb.readonly, ta.managed or tb.managed)
    if isinstance(ta, T.StructArrayType) and isinstance(tb, T.StructArrayType) and ta.dtype == tb.dtype \
            and ta.ndim == tb.ndim:  # a structured array and a view of it (layouts, flags) join as arrays do
        return T.StructArrayType(ta.dtype, ta.ndim, ta.layout if ta.layout == tb.layout else "A",
                                 ta.readonly or tb.readonly, ta.aligned and tb.aligned)
    if isinstance(ta, T.StructRef) and isinstance(tb, T.StructRef) and ta.dtype == tb.dtype:
        return T.StructRef(ta.dtype, ta.readonly or tb.readonly, ta.aligned and tb.aligned)
    if isinstance(ta, T.ListType) and isinstance(tb, T.ListType) and (ta.item is None or tb.item is None):
        # an empty list not typed yet (made at a site, typed by an append) joins a typed one
        return None if ta.item is None and tb.item is None else (tb if ta.item is None else ta)
    if isinstance(ta, T.DictType) and isinstance(tb, T.DictType) and (ta.key is None or tb.key is None):
        return None if ta.key is None and tb.key is None else (tb if ta.key is None else ta)  # as lists
    return None  # tuples of different item types too: Python would keep each item's type
