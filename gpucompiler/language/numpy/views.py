"""Views of arrays: basic slicing, ``.T``, ``.reshape``, ``.copy()``, ``.dtype``, and slice values.

A view is a new ``{data, shape, strides[, buffer]}`` over the same memory: a
managed array's view keeps its buffer (codegen counts the new reference),
so a returned view keeps its base alive. Indexing takes integers (an axis
dropped, negative ones wrapped, bounds checked) and slices (Python's
``slice.indices``: clamped bounds, any non-zero step) and leaves trailing
axes whole, as NumPy's basic indexing does; ``None`` (``np.newaxis``) in a
read adds an axis of extent 1. Anything else (index arrays, ``...``, ``None``
in an assignment's target) is a typed error.
"""

from __future__ import annotations

import operator
import sys

from llvmlite import ir

from ... import types as T
from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
from ...errors import ReadOnlyArrayError, TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, const, pyobj, widen
from ...interpreter.rules import Any_, Constant
from . import arraymem as mem
from .arrayloops import nested_loop
from ..python.containers import _has_value
from ..python.numbers import base

_A = T.ArrayType
_I64 = ir.IntType(64)


def method(name: str):
    """A signature pattern: the constant method name ``name`` of a ``call_method`` rule."""
    return lambda t: isinstance(t, Const) and t.value == name


# -- slice values -------------------------------------------------------------
def _slice_part(t) -> bool | None:
    """Whether a slice part is given (an integer), absent (``None``), or ``None`` for anything else."""
    if isinstance(t, Const) and t.value is None:
        return False
    w = widen(t)
    return True if isinstance(w, T.Scalar) and w.kind in "ib" else None


def _slice_type(start, stop, step):
    parts = [_slice_part(p) for p in (start, stop, step)]
    given = [p for p in parts if p is not None]
    if len(given) < 3:
        shown = ", ".join(repr(widen(p)) for p in (start, stop, step))
        raise TypeInferenceError(f"slice bounds must be integers or None, not ({shown})")
    t = T.SliceType(*given)
    if all(isinstance(p, Const) for p in (start, stop, step)):  # known: tuples can be sliced with it
        return Const(tuple(int(p.value) if p.value is not None else None for p in (start, stop, step)), t)
    return t


@base.define(K.build_slice, Any_, Any_, Any_, restype=_slice_type)
def _build_slice(cg, args, argtypes, rt):
    value = ir.Constant(cg.ll(rt), ir.Undefined)
    k = 0
    for v, t in zip(args, argtypes):
        if _slice_part(t):
            value = cg.b.insert_value(value, cg.cast(v, widen(t), T.int64), k)
            k += 1
    return value


def _tuple_slice_type(tup, index):
    if not (isinstance(index, Const) and isinstance(widen(index), T.SliceType)):
        return None
    return T.TupleType(widen(tup).items[slice(*index.value)])


@base.define(operator.getitem, T.TupleType, Any_, restype=_tuple_slice_type)
def _tuple_slice(cg, args, argtypes, rt):
    items = widen(argtypes[0]).items
    picked = [i for i in range(len(items))[slice(*argtypes[1].value)] if _has_value(items[i])]
    value = ir.Constant(cg.ll(rt), ir.Undefined)
    for k, i in enumerate(picked):  # fields: the items that have a value (None has no field)
        value = cg.b.insert_value(value, cg.b.extract_value(args[0], sum(map(_has_value, items[:i]))), k)
    return value


def _slice_parts(cg, value, t: T.SliceType) -> list:
    """``[start, stop, step]``: i64 values or None where absent."""
    out, k = [], 0
    for given in (t.has_start, t.has_stop, t.has_step):
        out.append(cg.b.extract_value(value, k) if given else None)
        k += given
    return out


def slice_indices(cg, value, t: T.SliceType, length):
    """Python's ``slice(...).indices(length)`` as ``(start, step, count)`` i64 values; step 0 is a ValueError."""
    b = cg.b
    start, stop, step = _slice_parts(cg, value, t)
    zero, one, minus = ir.Constant(_I64, 0), ir.Constant(_I64, 1), ir.Constant(_I64, -1)
    if step is None:
        step = one
    else:
        cg.check_value(b.icmp_signed("!=", step, zero), "slice step cannot be zero")
    up = b.icmp_signed(">", step, zero)
    lower, upper = b.select(up, zero, minus), b.select(up, length, b.sub(length, one))

    def clamp(v, default):
        if v is None:
            return default
        v = b.select(b.icmp_signed("<", v, zero), b.add(v, length), v)
        v = b.select(b.icmp_signed("<", v, lower), lower, v)
        return b.select(b.icmp_signed(">", v, upper), upper, v)
    start = clamp(start, b.select(up, zero, upper))
    stop = clamp(stop, b.select(up, length, lower))
    span = b.select(up, b.sub(stop, start), b.sub(start, stop))
    mag = b.select(up, step, b.neg(step))
    count = b.sdiv(b.add(span, b.sub(mag, one)), mag)
    count = b.select(b.icmp_signed(">", span, zero), count, zero)
    return start, step, count


# -- basic indexing -----------------------------------------------------------
def _index_items(index, newaxis: bool = False):
    """The index's item types: slices and integers (and ``None``, NumPy's ``newaxis``, where ``newaxis``)."""
    w = widen(index)
    items = list(w.items) if isinstance(w, T.TupleType) else [w]
    mem.refuse_bool_index(items)
    for it in items:
        if not (isinstance(it, T.SliceType) or (isinstance(it, T.Scalar) and it.kind in "iu")
                or (newaxis and it == T.none)):
            return None
    return items


def _view_type(a, index):
    a = widen(a)
    items = _index_items(index, newaxis=True)
    if items is None or not any(isinstance(it, T.SliceType) or it == T.none for it in items):
        return None  # integers only: the element rule (containers.py)
    added = items.count(T.none)
    if len(items) - added > a.ndim:
        raise TypeInferenceError(f"too many indices for an array of {a.ndim} dimensions: {len(items) - added}",
                                 (a,))
    ndim = a.ndim + added - sum(1 for it in items if isinstance(it, T.Scalar))
    if ndim == 0:
        return a.dtype
    return _A(a.dtype, ndim, "A", a.readonly, a.managed)


def _dims(cg, arr, field, ndim):
    return [cg.b.extract_value(arr, [field, k]) for k in range(ndim)]


def _strides(cg, arr, t: _A):
    if t.layout == "C":
        return mem.c_strides(cg, _dims(cg, arr, 1, t.ndim), t.dtype.itemsize)
    return _dims(cg, arr, 2, t.ndim)


def _with_buffer(cg, rt, src, srct, data, shape, strides):
    buffer = cg.b.extract_value(src, 3) if srct.managed else None
    return mem.build_array(cg, rt, data, shape, strides, buffer)


def _indexed(cg, arr, index, argtypes):
    """``(array type, index item types, index item values, shape, strides)`` of ``arr[index]``."""
    at = widen(argtypes[0])
    iw = widen(argtypes[1])
    items = list(iw.items) if isinstance(iw, T.TupleType) else [iw]
    if isinstance(iw, T.TupleType):  # a None (np.newaxis) has no field in the tuple's value
        fields = iter(range(len(items)))
        values = [None if it == T.none else cg.b.extract_value(index, next(fields)) for it in items]
    else:
        values = [None if iw == T.none else index]
    return at, items, values, _dims(cg, arr, 1, at.ndim), _strides(cg, arr, at)


@base.define(operator.getitem, _A, Any_, restype=_view_type)
@mem.returns_view
def _view(cg, args, argtypes, rt):
    arr, index = args
    at, items, values, shape, strides = _indexed(cg, arr, index, argtypes)
    offset = ir.Constant(_I64, 0)
    out_shape, out_strides = [], []
    k = 0  # the axis of arr the next item indexes
    for it, v in zip(items, values):
        if it == T.none:  # np.newaxis: a new axis of extent 1 (stride 0, as NumPy's)
            out_shape.append(ir.Constant(_I64, 1))
            out_strides.append(ir.Constant(_I64, 0))
            continue
        if isinstance(it, T.SliceType):
            start, step, count = slice_indices(cg, v, it, shape[k])
            offset = cg.b.add(offset, cg.b.mul(start, strides[k]))
            out_shape.append(count)
            out_strides.append(cg.b.mul(step, strides[k]))
        else:
            original = cg.cast(v, it, T.int64)
            i = cg.b.select(cg.b.icmp_signed("<", original, offset.type(0)), cg.b.add(original, shape[k]), original)
            cg.check_index(i, shape[k], k, original)
            offset = cg.b.add(offset, cg.b.mul(i, strides[k]))
        k += 1
    out_shape += shape[k:]
    out_strides += strides[k:]
    data = cg.b.gep(cg.b.extract_value(arr, 0), [offset], source_etype=ir.IntType(8))
    if isinstance(rt, T.Scalar):
        return cg.load_scalar(data, rt)
    return _with_buffer(cg, rt, arr, at, data, out_shape, out_strides)


# -- attributes and methods ---------------------------------------------------
def _transpose_type(a):
    return _A(a.dtype, a.ndim, "C" if a.ndim == 1 and a.layout == "C" else "A", a.readonly, a.managed)


def _transpose(cg, arr, at, rt):
    shape, strides = _dims(cg, arr, 1, at.ndim), _strides(cg, arr, at)
    return _with_buffer(cg, rt, arr, at, cg.b.extract_value(arr, 0), shape[::-1], strides[::-1])


def _dtype_object(a):
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None
    return const(numpy.dtype(a.dtype.name))


_VIEW_ATTRS = {"T": _transpose_type, "dtype": _dtype_object}


@base.define(builtins.getattr, _A, Constant, restype=lambda a, n: _VIEW_ATTRS[n.value](widen(a))
             if n.value in _VIEW_ATTRS else None)
@mem.returns_view
def _view_attr(cg, args, argtypes, rt):
    if argtypes[1].value == "T":
        return _transpose(cg, args[0], widen(argtypes[0]), widen(rt))
    return None


@base.define(K.call_method, _A, method("transpose"), restype=lambda a, n: _transpose_type(widen(a)))
@mem.returns_view
def _transpose_method(cg, args, argtypes, rt):
    return _transpose(cg, args[0], widen(argtypes[0]), widen(rt))


def _reshape_type(a, name, *dims):
    a = widen(a)
    if len(dims) == 1 and isinstance(widen(dims[0]), T.TupleType):
        dims = widen(dims[0]).items
    if not dims or not all(isinstance(widen(d), T.Scalar) and widen(d).kind in "ib" for d in dims):
        raise TypeInferenceError("reshape takes integers or a tuple of integers", (a,))
    if a.layout != "C":
        raise TypeInferenceError(f"reshape of an array that may not be C-contiguous ({a!r}) is not supported",
                                 (a,), hint="reshape a.copy() (C-contiguous) instead")
    return _A(a.dtype, len(dims), "C", a.readonly, a.managed)


@base.define(K.call_method, _A, method("reshape"), Any_, varargs=True, restype=_reshape_type)
@mem.returns_view
def _reshape(cg, args, argtypes, rt):
    b = cg.b
    arr, at = args[0], widen(argtypes[0])
    dims = args[2:]
    dtypes = [widen(t) for t in argtypes[2:]]
    if len(dims) == 1 and isinstance(dtypes[0], T.TupleType):
        tt = dtypes[0]
        dims, dtypes = [b.extract_value(dims[0], k) for k in range(len(tt.items))], list(tt.items)
    shape = [cg.cast(d, t, T.int64) for d, t in zip(dims, dtypes)]
    size = ir.Constant(_I64, 1)
    for s in _dims(cg, arr, 1, at.ndim):
        size = b.mul(size, s)
    # one extent may be -1: the rest of the size
    known, unknown = ir.Constant(_I64, 1), ir.Constant(_I64, 0)
    minus = ir.Constant(_I64, -1)
    for s in shape:
        is_unknown = b.icmp_signed("==", s, minus)
        known = b.mul(known, b.select(is_unknown, ir.Constant(_I64, 1), s))
        unknown = b.add(unknown, b.zext(is_unknown, _I64))
    fill = b.sdiv(size, b.select(b.icmp_signed("==", known, ir.Constant(_I64, 0)), ir.Constant(_I64, 1), known))
    shape = [b.select(b.icmp_signed("==", s, minus), fill, s) for s in shape]
    total = ir.Constant(_I64, 1)
    ok = b.icmp_unsigned("<=", unknown, ir.Constant(_I64, 1))
    for s in shape:
        total = b.mul(total, s)
        ok = b.and_(ok, b.icmp_signed(">=", s, ir.Constant(_I64, 0)))
    ok = b.and_(ok, b.icmp_signed("==", total, size))
    cg.check_value(ok, "cannot reshape array of size %lld into the requested shape", size)
    strides = mem.c_strides(cg, shape, at.dtype.itemsize)
    return _with_buffer(cg, widen(rt), arr, at, b.extract_value(arr, 0), shape, strides)


def copy_into(cg, src, src_type: _A, dst, dst_type: _A) -> None:
    """Copy every element of ``src`` into ``dst`` (same shape; any layouts; converted to ``dst``'s dtype)."""
    shape = _dims(cg, src, 1, src_type.ndim)
    s_strides, d_strides = _strides(cg, src, src_type), _strides(cg, dst, dst_type)

    def body(idx):
        def at(value, strides):
            offset = ir.Constant(_I64, 0)
            for i, s in zip(idx, strides):
                offset = cg.b.add(offset, cg.b.mul(i, s))
            return cg.b.gep(cg.b.extract_value(value, 0), [offset], source_etype=ir.IntType(8))
        v = cg.load_scalar(at(src, s_strides), src_type.dtype)
        cg.store_scalar(cg.cast(v, src_type.dtype, dst_type.dtype), at(dst, d_strides), dst_type.dtype)
    nested_loop(cg, shape, body)


@base.define(K.call_method, _A, method("copy"), restype=lambda a, n: mem.managed_array(widen(a).dtype, widen(a).ndim))
def _copy(cg, args, argtypes, rt):
    return copied(cg, args[0], widen(argtypes[0]))


def copied(cg, value, t: _A):
    """A new C-ordered array holding the elements of ``value`` (``a.copy()``, ``np.copy(a)``)."""
    out = mem.allocate(cg, t.dtype, _dims(cg, value, 1, t.ndim))
    copy_into(cg, value, t, out, mem.managed_array(t.dtype, t.ndim))
    return out


def _flat(cg, value, t: _A):
    """The 1-D C-ordered array of ``value``'s elements: a view of a C-contiguous array, else a copy."""
    source = value if t.layout == "C" else copied(cg, value, t)
    size = ir.Constant(_I64, 1)
    for s in _dims(cg, value, 1, t.ndim):
        size = cg.b.mul(size, s)
    out_t = mem.managed_array(t.dtype, 1) if t.layout != "C" or t.managed else _A(t.dtype, 1, "C", t.readonly)
    buffer = cg.b.extract_value(source, 3) if out_t.managed and (t.layout != "C" or t.managed) else None
    return mem.build_array(cg, out_t, cg.b.extract_value(source, 0), [size],
                           [ir.Constant(_I64, t.dtype.itemsize)], buffer)


def _ravel_type(a, n):
    a = widen(a)
    return mem.managed_array(a.dtype, 1) if a.layout != "C" or a.managed else _A(a.dtype, 1, "C", a.readonly)


@base.define(K.call_method, _A, method("ravel"), restype=_ravel_type)
def _ravel(cg, args, argtypes, rt):
    return _flat(cg, args[0], widen(argtypes[0]))


@base.define(K.call_method, _A, method("flatten"), restype=lambda a, n: mem.managed_array(widen(a).dtype, 1))
def _flatten(cg, args, argtypes, rt):
    at = widen(argtypes[0])
    return _flat(cg, copied(cg, args[0], at), mem.managed_array(at.dtype, at.ndim))


def _compare_constants(op):
    def restype(a, b):
        if not (isinstance(a, Const) and isinstance(b, Const) and pyobj in (a.type, b.type)):
            return None
        try:
            result = op(a.value, b.value)
        except Exception:
            return None
        return const(result) if isinstance(result, bool) else None
    return restype


for _op in (operator.eq, operator.ne):  # a.dtype == np.float32: decided when compiling
    base.define(_op, Constant, Constant, restype=_compare_constants(_op), pure=False)(lambda cg, *a: None)


# -- assignment into views -------------------------------------------------------
def _target_type(a, index):
    """The array ``a[index]`` names when it is a view (slices, or fewer integers than axes)."""
    a = widen(a)
    items = _index_items(index)
    if items is None:
        return None
    if any(isinstance(it, T.SliceType) for it in items):
        t = _view_type(a, index)
        return t if isinstance(t, _A) else None
    return _A(a.dtype, a.ndim - len(items), "A", a.readonly, a.managed) if len(items) < a.ndim else None


def _assign_type(a, index, value):
    target = _target_type(a, index)
    if target is None:
        return None
    v = widen(value)
    if isinstance(v, _A):
        if v.ndim != target.ndim:
            raise TypeInferenceError(f"assigning an array of {v.ndim} dimensions to a view of {target.ndim}", (v,),
                                     hint="assign arrays of the same shape, or a number")
    elif not isinstance(v, T.Scalar):
        return None
    if widen(a).readonly:
        raise ReadOnlyArrayError("assignment destination is read-only", (widen(a),),
                                 hint="pass a writeable array (a.copy(), or a.flags.writeable = True)")
    return T.none


def _extent(cg, value, t: _A):
    """``[low, high)``: the bytes array ``value`` may touch."""
    b = cg.b
    low = high = b.ptrtoint(b.extract_value(value, 0), _I64)
    zero = ir.Constant(_I64, 0)
    for n, s in zip(_dims(cg, value, 1, t.ndim), _strides(cg, value, t)):
        reach = b.mul(b.sub(n, ir.Constant(_I64, 1)), s)
        low = b.add(low, b.select(b.icmp_signed("<", reach, zero), reach, zero))
        high = b.add(high, b.select(b.icmp_signed(">", reach, zero), reach, zero))
    return low, b.add(high, ir.Constant(_I64, t.dtype.itemsize))


@base.define(operator.setitem, _A, Any_, Any_, restype=_assign_type, pure=False)
def _assign(cg, args, argtypes, rt):
    arr, index, value = args
    target_t = _target_type(argtypes[0], argtypes[1])
    assert target_t is not None
    view = _view(cg, [arr, index], argtypes[:2], target_t) if any(
        isinstance(it, T.SliceType) for it in (_index_items(argtypes[1]) or ())) else \
        _row(cg, arr, index, argtypes, target_t)
    vt = widen(argtypes[2])
    b = cg.b
    if isinstance(vt, T.Scalar):
        v = cg.cast(value, vt, target_t.dtype)
        shape = _dims(cg, view, 1, target_t.ndim)
        strides = _strides(cg, view, target_t)

        def store(idx):
            offset = ir.Constant(_I64, 0)
            for i, s in zip(idx, strides):
                offset = b.add(offset, b.mul(i, s))
            cg.store_scalar(v, b.gep(b.extract_value(view, 0), [offset], source_etype=ir.IntType(8)), target_t.dtype)
        nested_loop(cg, shape, store)
        return None
    same = ir.Constant(ir.IntType(1), 1)
    for k in range(vt.ndim):
        same = b.and_(same, b.icmp_signed("==", b.extract_value(value, [1, k]), b.extract_value(view, [1, k])))
    cg.check_value(same, "could not broadcast the assigned array to the shape of the view")
    lo1, hi1 = _extent(cg, view, target_t)
    lo2, hi2 = _extent(cg, value, vt)
    overlap = b.and_(b.icmp_unsigned("<", lo1, hi2), b.icmp_unsigned("<", lo2, hi1))
    with b.if_else(overlap, likely=False) as (through_copy, direct):
        with through_copy:  # NumPy's result when both share memory: as if the source were copied first
            tmp = mem.allocate(cg, vt.dtype, _dims(cg, value, 1, vt.ndim))
            tmp_t = mem.managed_array(vt.dtype, vt.ndim)
            copy_into(cg, value, vt, tmp, tmp_t)
            copy_into(cg, tmp, tmp_t, view, target_t)
            mem.free_now(cg, tmp)
        with direct:
            copy_into(cg, value, vt, view, target_t)
    return None


def _row(cg, arr, index, argtypes, rt):
    """``a[i]`` / ``a[i, j]`` with fewer integers than axes: the view of the remaining axes."""
    at, items, values, shape, strides = _indexed(cg, arr, index, argtypes)
    offset = ir.Constant(_I64, 0)
    for k, (it, v) in enumerate(zip(items, values)):
        original = cg.cast(v, it, T.int64)
        i = cg.b.select(cg.b.icmp_signed("<", original, offset.type(0)), cg.b.add(original, shape[k]), original)
        cg.check_index(i, shape[k], k, original)
        offset = cg.b.add(offset, cg.b.mul(i, strides[k]))
    data = cg.b.gep(cg.b.extract_value(arr, 0), [offset], source_etype=ir.IntType(8))
    return _with_buffer(cg, rt, arr, at, data, shape[len(items):], strides[len(items):])
