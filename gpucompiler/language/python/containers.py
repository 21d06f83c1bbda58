"""Base rules for tuples, arrays, ``len``, ``getattr`` and module attributes.

An array value is ``{ptr data, [n x i64] shape, [n x i64] strides}`` with
strides in bytes; indexing wraps negative indices like Python, then checks
every index against its axis when the module has bounds checks on
(``cg.check_index``: NumPy's ``IndexError`` message).
"""

from __future__ import annotations

from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
import operator

from llvmlite import ir

from ... import types as T
from ...errors import ReadOnlyArrayError, TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, const, pyobj, widen
from ...interpreter.rules import Any_, CallResult, Constant, Int, Numeric, RuleSet, register
from ..numpy import arraymem as mem
from ..numpy.arraymem import returns_view
from .numbers import base

_A = T.ArrayType
_Tup = T.TupleType


@base.handler
def _module_attribute(interp, fn, args):
    """``mod.name`` on a compile-time object: a constant, recorded for invalidation."""
    if fn is builtins.getattr and len(args) == 2 and isinstance(args[0], Const) and args[0].type == pyobj:
        return CallResult(interp.read(args[0].value, args[1].value), lambda *a: None)
    return None


# -- tuples ------------------------------------------------------------------
@base.define(K.build_tuple, Any_, varargs=True, restype=lambda *ts: _Tup(widen(t) for t in ts))
@base.define(K.build_tuple, restype=_Tup(()))
def _build_tuple(cg, args, argtypes, rt):
    value = ir.Constant(cg.ll(rt), ir.Undefined)
    for i, v in enumerate(a for a, t in zip(args, widen(rt).items) if _has_value(t)):  # None has no field
        value = cg.b.insert_value(value, v, i)
    return value


def _has_value(t) -> bool:
    """Whether a tuple item of type ``t`` is a field of the tuple's struct (None and objects known at
    compile time are not: codegen/lltypes.has_value)."""
    w = widen(t)
    return isinstance(w, T.Type) and w not in (T.none, pyobj)


def _tuple_index(tup, index):
    n = len(widen(tup).items)
    i = index.value
    if not -n <= i < n:
        raise TypeInferenceError(f"tuple index {i} out of range for {widen(tup)!r}", (widen(tup),))
    return i % n


@base.define(operator.getitem, _Tup, lambda t: isinstance(t, Const) and type(t.value) is int,
             restype=lambda t, i: widen(t).items[_tuple_index(t, i)])
@returns_view
def _tuple_getitem(cg, args, argtypes, rt):
    items = widen(argtypes[0]).items
    i = _tuple_index(*argtypes)
    if not _has_value(items[i]):
        return None
    return cg.b.extract_value(args[0], sum(map(_has_value, items[:i])))


def _uniform_item(tup, index):
    """The item type of a tuple indexed by a run-time integer: every item has to have it."""
    items = {widen(i) for i in widen(tup).items}
    w = widen(index)
    if isinstance(index, Const) or not (isinstance(w, T.Scalar) and w.kind in "iub"):
        return None
    if len(items) != 1:
        raise TypeInferenceError(f"indexing {widen(tup)!r} with a run-time index (or iterating over it) needs "
                                 "items of one type", (widen(tup),),
                                 hint="make the items one type (float(x)...) or index with constants")
    return items.pop()


def _tuple_select(cg, args, argtypes, rt, checked):
    """``tup[i]``: a chain of selects on ``i`` (Python's IndexError when ``checked`` and out of range)."""
    tup, index = args
    n = len(widen(argtypes[0]).items)
    i = cg.cast(index, widen(argtypes[1]), T.int64)
    if checked:
        i = cg.b.select(cg.b.icmp_signed("<", i, i.type(0)), cg.b.add(i, i.type(n)), i)
        cg.check(cg.b.icmp_unsigned("<", i, i.type(n)), "IndexError", "tuple index out of range")
    value = cg.b.extract_value(tup, n - 1)
    for k in range(n - 2, -1, -1):
        value = cg.b.select(cg.b.icmp_signed("==", i, i.type(k)), cg.b.extract_value(tup, k), value)
    return value


base.define(operator.getitem, _Tup, Any_, restype=_uniform_item)(
    lambda cg, args, argtypes, rt: _tuple_select(cg, args, argtypes, rt, True))
base.define(K.getitem_unchecked, _Tup, Any_, restype=_uniform_item)(
    lambda cg, args, argtypes, rt: _tuple_select(cg, args, argtypes, rt, False))


def _unpack_type(t, n):
    if len(widen(t).items) != n.value:
        raise TypeInferenceError(f"cannot unpack {widen(t)!r} into {n.value} names", (widen(t),))
    return t


@base.define(K.unpack, _Tup, Constant, restype=_unpack_type)
@returns_view
def _unpack(cg, args, argtypes, rt):
    return args[0]


@base.define(builtins.len, _Tup, restype=lambda t: const(len(widen(t).items)), pure=False)
def _len_tuple(cg, args, argtypes, rt):
    return None


@base.define(bool, _Tup, restype=lambda t: const(bool(widen(t).items)), pure=False)
def _bool_tuple(cg, args, argtypes, rt):
    return None


# -- arrays ------------------------------------------------------------------
def _dims(cg, arr, field):
    return [cg.b.extract_value(arr, [field, k]) for k in range(arr.type.elements[1].count)]


def _strides(cg, arr, atype):
    """Byte strides; for C-contiguous arrays derived from the shape (known to LLVM,
    so the innermost stride is the constant itemsize and loops vectorise)."""
    if atype.layout != "C":
        return _dims(cg, arr, 2)
    shape = _dims(cg, arr, 1)
    acc = ir.Constant(cg.ll(T.int64), atype.dtype.itemsize)
    strides = []
    for extent in reversed(shape):
        strides.insert(0, acc)
        acc = cg.b.mul(acc, extent)
    return strides


def _element_pointer(cg, arr, indices, argtypes, atype, checked=True):
    shape, strides = _dims(cg, arr, 1), _strides(cg, arr, atype)
    offset = ir.Constant(cg.ll(T.int64), 0)
    for k, (idx, t) in enumerate(zip(indices, argtypes)):
        original = cg.cast(idx, widen(t), T.int64)
        if widen(t).kind == "u":  # never negative: a uint64 past int64's range stays out of bounds
            i = original
        else:
            i = cg.b.select(cg.b.icmp_signed("<", original, offset.type(0)), cg.b.add(original, shape[k]),
                            original)
        if checked:
            cg.check_index(i, shape[k], k, original, widen(t).kind == "u")
        offset = cg.b.add(offset, cg.b.mul(i, strides[k]))
    return cg.b.gep(cg.b.extract_value(arr, 0), [offset], source_etype=ir.IntType(8))


def _index_types(index):
    w = widen(index)
    items = w.items if isinstance(w, _Tup) else (w,)
    mem.refuse_bool_index(items)
    return items if all(isinstance(t, T.Scalar) and t.kind in "iu" for t in items) else None


def _getitem_type(a, index):
    a = widen(a)  # a frozen array is a constant
    items = _index_types(index)
    if items is None or len(items) > a.ndim:
        return None
    rest = a.ndim - len(items)
    return a.dtype if rest == 0 else _A(a.dtype, rest, "A" if len(items) else a.layout, a.readonly, a.managed)


def _indices(cg, index, itype):
    w = widen(itype)
    if isinstance(w, _Tup):
        return [cg.b.extract_value(index, k) for k in range(len(w.items))], w.items
    return [index], (w,)


@base.define(operator.getitem, _A, Any_, restype=_getitem_type)
@returns_view
def _array_getitem(cg, args, argtypes, rt, checked=True):
    arr, index = args
    idx, itypes = _indices(cg, index, argtypes[1])
    ptr = _element_pointer(cg, arr, idx, itypes, widen(argtypes[0]), checked)
    if isinstance(rt, T.Scalar):
        return cg.load_scalar(ptr, rt)
    view = ir.Constant(cg.ll(rt), ir.Undefined)
    view = cg.b.insert_value(view, ptr, 0)
    for k in range(rt.ndim):
        for field in (1, 2):
            view = cg.b.insert_value(view, cg.b.extract_value(arr, [field, k + len(idx)]), [field, k])
    if rt.managed:  # the row keeps the allocation alive (codegen counts the reference)
        view = cg.b.insert_value(view, cg.b.extract_value(arr, 3), 3)
    return view


def _setitem_type(arr, index, value):
    a = widen(arr)
    if _getitem_type(a, index) != a.dtype or (widen(value).kind == "c" and a.dtype.kind != "c"):
        return None  # NumPy would drop the imaginary part (ComplexWarning)
    if isinstance(arr, Const):
        raise ReadOnlyArrayError("assignment destination is read-only: a global array is frozen into the "
                                 "compiled code", (a,), hint="pass the array as an argument to write it")
    if a.readonly:
        raise ReadOnlyArrayError("assignment destination is read-only", (a,),
                                 hint="pass a writeable array (a.copy(), or a.flags.writeable = True)")
    return T.none


@base.define(operator.setitem, _A, Any_, Numeric, restype=_setitem_type, pure=False)
def _array_setitem(cg, args, argtypes, rt, checked=True):
    arr, index, value = args
    idx, itypes = _indices(cg, index, argtypes[1])
    dtype = widen(argtypes[0]).dtype
    ptr = _element_pointer(cg, arr, idx, itypes, widen(argtypes[0]), checked)
    cg.store_scalar(cg.cast(value, widen(argtypes[2]), dtype), ptr, dtype)


# -- loop versioning (frontend/versioning.py): accesses a range test proved in bounds
@base.define(K.getitem_unchecked, _A, Any_, restype=_getitem_type)
@returns_view
def _array_getitem_unchecked(cg, args, argtypes, rt):
    return _array_getitem(cg, args, argtypes, rt, checked=False)


@base.define(K.setitem_unchecked, _A, Any_, Numeric, restype=_setitem_type, pure=False)
def _array_setitem_unchecked(cg, args, argtypes, rt):
    _array_setitem(cg, args, argtypes, rt, checked=False)


def _in_bounds_type(*quads):
    """bool when every quad is ``(array, axis within it, int, int)``; else the constant False."""
    if len(quads) % 4:
        return None
    for k in range(0, len(quads), 4):
        a, axis, lo, hi = quads[k:k + 4]
        ok = (isinstance(widen(a), _A) and isinstance(axis, Const) and 0 <= axis.value < widen(a).ndim
              and all(isinstance(widen(t), T.Scalar) and widen(t).kind in "ib" for t in (lo, hi)))
        if not ok:
            return const(False)
    return T.boolean


@base.define(K.all_in_bounds, Any_, varargs=True, restype=_in_bounds_type, pure=False)
def _all_in_bounds(cg, args, argtypes, rt):
    true = ir.Constant(ir.IntType(1), 1)
    if not cg.mod.boundscheck:
        return true  # nothing to prove: LLVM keeps the first loop copy only
    ok = true
    for k in range(0, len(args), 4):
        arr, lo, hi = args[k], *(cg.cast(v, widen(t), T.int64) for v, t in
                                 zip(args[k + 2:k + 4], argtypes[k + 2:k + 4]))
        size = cg.b.extract_value(arr, [1, argtypes[k + 1].value])
        inside = cg.b.and_(cg.b.icmp_signed(">=", lo, lo.type(0)), cg.b.icmp_signed("<", hi, size))
        ok = cg.b.and_(ok, inside)
    return ok


_ATTRS = {"shape": lambda a: _Tup([T.int64] * a.ndim), "ndim": lambda a: const(a.ndim),
          "size": lambda a: T.int64}


@base.define(builtins.getattr, _A, Constant,
             restype=lambda a, n: _ATTRS[n.value](widen(a)) if n.value in _ATTRS else None,
             pure=False)
def _array_attr(cg, args, argtypes, rt):
    name = argtypes[1].value
    if name == "ndim":
        return None
    shape = _dims(cg, args[0], 1)
    if name == "size":
        size = ir.Constant(cg.ll(T.int64), 1)
        for s in shape:
            size = cg.b.mul(size, s)
        return size
    return _build_tuple(cg, shape, None, rt)


@base.define(builtins.len, _A, restype=lambda a: T.int64 if widen(a).ndim else None)  # len() of a 0-d array: TypeError
def _len_array(cg, args, argtypes, rt):
    return cg.b.extract_value(args[0], [1, 0])


__all__ = ["base", "builtins", "Int", "RuleSet", "register"]
