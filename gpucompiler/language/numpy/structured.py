"""Structured (record) arrays: NumPy arrays whose elements are records of named numeric fields.

A structured array is ``{data, shape, strides in bytes}`` like any array; its
dtype's fields keep the offsets and the itemsize NumPy gave them, so packed,
aligned and padded layouts are read where NumPy wrote them. A field's loads
and stores assume the alignment its offset has in an array NumPy flags as
aligned (a float64 at offset 8 of an ``align=True`` dtype: 8 bytes; any
field of a packed dtype, or of an unaligned array: none). What compiled
code does with one:

* ``a[i]`` (or ``a[i, j]``, every axis indexed) is the element: its address,
  so ``a[i].x = v``, ``p = a[i]; p.v += dv`` and ``p["m"] = 2`` write the
  caller's array; ``p.x``, ``p["x"]`` and ``p[k]`` (the k-th field) read it; a
  sub-array field (``("pos", np.float64, (3,))``) is a view ``p.pos``;
  ``a[i] = a[j]`` copies a whole element, ``a[i] = (x, v, m, n)`` assigns
  every field;
* ``a["x"]`` (and ``a.x``, as ``np.recarray`` and Numba read it) is the field
  as an ordinary strided array (a view: NumPy's functions and methods take
  it, ``a["x"][:] = 0.0`` writes the field);
* slices (``a[1:]``, ``a[::2]``) are structured arrays; ``len``, ``shape``,
  ``size``, ``ndim`` and ``for p in a`` work as in NumPy.

Elements and structured arrays are passed to other compiled functions; they
are not returned to Python, and attributes of anything else are not assigned
(typed errors at the line).
"""

from __future__ import annotations

import operator

import attrs
from llvmlite import ir

from ... import types as T
from ...errors import ReadOnlyArrayError, TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, const, widen
from ...interpreter.rules import Any_, Constant, Numeric
from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
from ..python.containers import _element_pointer
from ..python.numbers import base
from . import arraymem as mem
from .views import slice_indices

_SA, _SR = T.StructArrayType, T.StructRef
_I8, _I64 = ir.IntType(8), ir.IntType(64)
_WRITEABLE = ("pass a writeable array as an argument (a.copy(), or a.flags.writeable = True; a module-level "
              "array is frozen into the compiled code, read-only)")


# -- fields -------------------------------------------------------------------
def _field(dtype: T.StructDtype, key):
    """``(scalar, offset, shape)`` of the field named (or numbered) by the constant ``key``; else the error."""
    names = [n for n, _, _, _ in dtype.fields]
    k = key.value
    if type(k) is int and -len(names) <= k < len(names):
        k = names[k]
    found = dtype.field(k) if type(k) is str else None
    if found is None:
        raise TypeInferenceError(f"the record has no field {k!r}", (dtype,), hint="fields: " + ", ".join(names))
    return found


def _is_key(t) -> bool:
    return isinstance(t, Const) and type(t.value) in (str, int)


def _field_view_type(scalar: T.Scalar, ndim: int, readonly: bool) -> T.ArrayType:
    return T.ArrayType(scalar, ndim, "A", readonly)


def _address(cg, ptr, offset: int):
    return cg.b.gep(ptr, [ir.Constant(_I64, offset)], source_etype=_I8) if offset else ptr


def _alignment(t, scalar: T.Scalar, offset: int) -> int:
    """The alignment a field at ``offset`` has in elements of the array or element type ``t``: the
    largest power of two dividing the dtype's alignment and the offset, at most the field's own."""
    if not t.aligned:
        return 1
    own = scalar.itemsize // 2 if scalar.kind == "c" else scalar.itemsize
    return min(own, t.dtype.alignment & -t.dtype.alignment, (offset & -offset) if offset else own)


def _load(cg, ptr, t: T.Scalar, align: int):
    if t == T.boolean:
        return cg.b.icmp_unsigned("!=", cg.b.load(ptr, typ=_I8, align=1), ir.Constant(_I8, 0))
    return cg.b.load(ptr, typ=cg.ll(t), align=align)


def _store(cg, value, ptr, t: T.Scalar, align: int) -> None:
    cg.b.store(cg.b.zext(value, _I8) if t == T.boolean else value, ptr, align=align)


def _sub_view(cg, ptr, scalar: T.Scalar, shape: tuple, rt: T.ArrayType, outer=((), ())):
    """The array of a sub-array field at ``ptr`` (after the ``outer`` axes' extents and strides)."""
    inner = mem.c_strides(cg, [ir.Constant(_I64, n) for n in shape], scalar.itemsize)
    return mem.build_array(cg, rt, ptr, [*outer[0], *(ir.Constant(_I64, n) for n in shape)], [*outer[1], *inner])


# -- elements -----------------------------------------------------------------
def _member_type(r, key):
    rec = widen(r)
    scalar, _, shape = _field(rec.dtype, key)
    return _field_view_type(scalar, len(shape), rec.readonly) if shape else scalar


def _member(cg, args, argtypes, rt):
    rec = widen(argtypes[0])
    scalar, offset, shape = _field(rec.dtype, argtypes[1])
    ptr = _address(cg, args[0], offset)
    return _sub_view(cg, ptr, scalar, shape, rt) if shape else _load(cg, ptr, scalar, _alignment(rec, scalar, offset))


base.define(builtins.getattr, _SR, Constant, restype=_member_type, pure=False)(_member)
base.define(operator.getitem, _SR, _is_key, restype=_member_type, pure=False)(_member)


def _assign_member_type(r, key, value):
    rec = widen(r)
    if not isinstance(rec, _SR):
        raise TypeInferenceError(f"assignment to attribute {key.value!r} of {rec!r}", (rec,),
                                 hint="compiled code assigns the fields of structured arrays' elements "
                                      "(a[i].x = v); build a new value instead (p = Point(x, p.y))")
    scalar, _, shape = _field(rec.dtype, key)
    v = widen(value)
    if shape:
        raise TypeInferenceError(f"assignment to the sub-array field {key.value!r}", (rec,),
                                 hint=f"assign its items (p.{key.value}[k] = v) or all of them "
                                      f"(p.{key.value}[:] = v)")
    if not isinstance(v, T.Scalar) or (v.kind == "c" and scalar.kind != "c"):
        raise TypeInferenceError(f"cannot assign {v!r} to the {scalar!r} field {key.value!r}", (rec, v),
                                 hint="assign a real number (NumPy would drop a complex number's imaginary part)")
    if rec.readonly:
        raise ReadOnlyArrayError("assignment destination is read-only", (rec,), hint=_WRITEABLE)
    return T.none


def _assign_member(cg, args, argtypes, rt):
    rec = widen(argtypes[0])
    scalar, offset, _ = _field(rec.dtype, argtypes[1])
    _store(cg, cg.cast(args[2], widen(argtypes[2]), scalar), _address(cg, args[0], offset), scalar,
           _alignment(rec, scalar, offset))


base.define(builtins.setattr, Any_, Constant, Any_, restype=_assign_member_type, pure=False)(_assign_member)
base.define(operator.setitem, _SR, _is_key, Numeric, restype=_assign_member_type, pure=False)(_assign_member)


# -- arrays -------------------------------------------------------------------
def _index_items(index):
    w = widen(index)
    items = list(w.items) if isinstance(w, T.TupleType) else [w]
    mem.refuse_bool_index(items)
    ok = all(isinstance(it, T.SliceType) or (isinstance(it, T.Scalar) and it.kind in "iu") for it in items)
    return items if ok else None


def _getitem_type(a, index):
    at = widen(a)
    if isinstance(index, Const) and type(index.value) is str:  # a["x"]: the field, a strided array
        scalar, _, shape = _field(at.dtype, index)
        return _field_view_type(scalar, at.ndim + len(shape), at.readonly)
    items = _index_items(index)
    if items is None:
        return None
    if len(items) > at.ndim:
        raise TypeInferenceError(f"too many indices for an array of {at.ndim} dimensions: {len(items)}", (at,))
    ndim = at.ndim - sum(1 for it in items if isinstance(it, T.Scalar))
    if ndim == 0:
        return _SR(at.dtype, at.readonly, at.aligned)
    whole = all(isinstance(it, T.Scalar) for it in items) and at.layout == "C"  # rows of a C array
    return _SA(at.dtype, ndim, "C" if whole else "A", at.readonly, at.aligned)


def _dims(cg, arr, at):
    """Extents and strides: the strides as the value holds them, also of a C-contiguous array (its
    constant itemsize stride made LLVM gather the fields of several elements into vectors, several
    times slower than loading them one by one on x86)."""
    return ([cg.b.extract_value(arr, [1, k]) for k in range(at.ndim)],
            [cg.b.extract_value(arr, [2, k]) for k in range(at.ndim)])


def _field_view(cg, arr, at, name, rt):
    scalar, offset, shape = _field(at.dtype, name)
    outer = _dims(cg, arr, at)
    data = _address(cg, cg.b.extract_value(arr, 0), offset)
    if shape:
        return _sub_view(cg, data, scalar, shape, rt, outer)
    return mem.build_array(cg, rt, data, *outer)


def _getitem(cg, args, argtypes, rt, checked=True):
    arr, index = args
    at, it = widen(argtypes[0]), widen(argtypes[1])
    if isinstance(argtypes[1], Const) and type(argtypes[1].value) is str:
        return _field_view(cg, arr, at, argtypes[1], rt)
    items = list(it.items) if isinstance(it, T.TupleType) else [it]
    values = [cg.b.extract_value(index, k) for k in range(len(items))] if isinstance(it, T.TupleType) else [index]
    if all(isinstance(t, T.Scalar) for t in items) and isinstance(rt, _SR):
        return _element_pointer(cg, arr, values, items, attrs.evolve(at, layout="A"), checked)
    shape, strides = _dims(cg, arr, at)
    offset = ir.Constant(_I64, 0)
    out_shape, out_strides = [], []
    for k, (t, v) in enumerate(zip(items, values)):
        if isinstance(t, T.SliceType):
            start, step, count = slice_indices(cg, v, t, shape[k])
            offset = cg.b.add(offset, cg.b.mul(start, strides[k]))
            out_shape.append(count)
            out_strides.append(cg.b.mul(step, strides[k]))
        else:
            original = cg.cast(v, t, T.int64)
            unsigned = t.kind == "u"  # never negative: a uint64 past int64's range stays out of bounds
            i = original if unsigned else cg.b.select(cg.b.icmp_signed("<", original, offset.type(0)),
                                                      cg.b.add(original, shape[k]), original)
            if checked:
                cg.check_index(i, shape[k], k, original, unsigned)
            offset = cg.b.add(offset, cg.b.mul(i, strides[k]))
    value = ir.Constant(cg.ll(rt), ir.Undefined)
    value = cg.b.insert_value(value, cg.b.gep(cg.b.extract_value(arr, 0), [offset], source_etype=_I8), 0)
    n = len(items)
    for k, (extent, stride) in enumerate(zip(out_shape + shape[n:], out_strides + strides[n:])):
        value = cg.b.insert_value(cg.b.insert_value(value, extent, [1, k]), stride, [2, k])
    return value


base.define(operator.getitem, _SA, Any_, restype=_getitem_type, pure=False)(_getitem)
base.define(K.getitem_unchecked, _SA, Any_, restype=_getitem_type, pure=False)(
    lambda cg, args, argtypes, rt: _getitem(cg, args, argtypes, rt, checked=False))


def _copy_type(a, index, value):
    at, v = widen(a), widen(value)
    if isinstance(index, Const) and type(index.value) is str:
        raise TypeInferenceError(f"assignment to the whole field a[{index.value!r}]", (at,),
                                 hint=f"assign through its view: a[{index.value!r}][:] = v")
    if not isinstance(_getitem_type(a, index), _SR):
        raise TypeInferenceError(f"assignment of {v!r} to a part of a structured array", (at, v),
                                 hint="assign one element from another (a[i] = a[j]) or the fields of an element "
                                      "(a[i].x = v)")
    if not (isinstance(v, _SR) and v.dtype == at.dtype) and not _fits_fields(v, at.dtype):
        raise TypeInferenceError(f"assignment of {v!r} to an element of {at!r}", (at, v),
                                 hint="assign an element of an array of the same dtype (a[i] = b[j]), a tuple of "
                                      "one real number per field (a[i] = (x, v, m, n)), or the fields one by one "
                                      "(a[i].x = v)")
    if at.readonly:
        raise ReadOnlyArrayError("assignment destination is read-only", (at,), hint=_WRITEABLE)
    return T.none


def _fits_fields(v, dtype: T.StructDtype) -> bool:
    """Whether ``v`` is a tuple of one number per field (NumPy's ``a[i] = (x, v, m, n)``), none a sub-array and
    none a complex number for a real field."""
    return isinstance(v, T.TupleType) and len(v.items) == len(dtype.fields) and all(
        isinstance(t, T.Scalar) and not shape and (t.kind != "c" or scalar.kind == "c")
        for t, (_, scalar, _, shape) in zip(v.items, dtype.fields))


def _copy(cg, args, argtypes, rt, checked=True):
    at = widen(argtypes[0])
    it = widen(argtypes[1])
    items = list(it.items) if isinstance(it, T.TupleType) else [it]
    values = [cg.b.extract_value(args[1], k) for k in range(len(items))] if isinstance(it, T.TupleType) else [args[1]]
    dst = _element_pointer(cg, args[0], values, items, attrs.evolve(at, layout="A"), checked)
    source = widen(argtypes[2])
    if isinstance(source, T.TupleType):  # one number per field, each cast to the field's type
        for k, (t, (_, scalar, offset, _)) in enumerate(zip(source.items, at.dtype.fields)):
            value = cg.cast(cg.b.extract_value(args[2], k), t, scalar)
            _store(cg, value, _address(cg, dst, offset), scalar, _alignment(at, scalar, offset))
        return
    cg.b.call(cg.mod.declare("llvm.memmove.p0.p0.i64", ir.VoidType(), [dst.type, dst.type, _I64, ir.IntType(1)]),
              [dst, args[2], ir.Constant(_I64, at.dtype.itemsize), ir.Constant(ir.IntType(1), 0)])


base.define(operator.setitem, _SA, Any_, Any_, restype=_copy_type, pure=False)(_copy)
base.define(K.setitem_unchecked, _SA, Any_, Any_, restype=_copy_type, pure=False)(
    lambda cg, args, argtypes, rt: _copy(cg, args, argtypes, rt, checked=False))


_ATTRS = {"shape": lambda a: T.TupleType([T.int64] * a.ndim), "ndim": lambda a: const(a.ndim),
          "size": lambda a: T.int64}


def _attribute_type(a, name):
    at = widen(a)
    if name.value in _ATTRS:
        return _ATTRS[name.value](at)
    return _getitem_type(a, name) if at.dtype.field(name.value) is not None else None


@base.define(builtins.getattr, _SA, Constant, restype=_attribute_type, pure=False)
def _attribute(cg, args, argtypes, rt):
    name = argtypes[1].value
    if name == "ndim":
        return None
    if name not in _ATTRS:  # a.x: the field (NumPy's recarray, Numba)
        return _field_view(cg, args[0], widen(argtypes[0]), argtypes[1], rt)
    shape = [cg.b.extract_value(args[0], [1, k]) for k in range(widen(argtypes[0]).ndim)]
    if name == "size":
        size = ir.Constant(_I64, 1)
        for s in shape:
            size = cg.b.mul(size, s)
        return size
    value = ir.Constant(cg.ll(rt), ir.Undefined)
    for k, s in enumerate(shape):
        value = cg.b.insert_value(value, s, k)
    return value


@base.define(builtins.len, _SA, restype=T.int64, pure=False)
def _len(cg, args, argtypes, rt):
    return cg.b.extract_value(args[0], [1, 0])


__all__ = ["base"]
