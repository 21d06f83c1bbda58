"""Consuming array expressions: elements, shapes, broadcasting, assignment into arrays.

The functions defined here are intrinsics of the NumPy implementations in
:mod:`.npimpl` (Python compiled by the frontend): each is a plain Python
function with the meaning its docstring gives, lowered by the rules below.
``out[...] = value`` with an array or expression value (or a slice index),
``x op= y`` on an array and the binding of an expression to a name
(:func:`~gpucompiler.frontend.intrinsics.materialize`) are handled here too.
"""

from __future__ import annotations

import operator

import attrs
from llvmlite import ir

from ... import types as T
from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
from ...errors import ReadOnlyArrayError, TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, const, widen
from ...interpreter.rules import Any_, CallResult, Number
from . import npimpl
from .arraymem import allocate, disown, managed_array
from ..python.containers import _dims, _strides
from .npintrinsics import broadcast_element, check_broadcast, element, exact, fmaximum, fminimum, overlaps, same_shape
from ..python.numbers import IntLike, base
from .ufuncs import evaluate, is_arraylike

_A, _E = T.ArrayType, T.ArrayExpr
_I64 = ir.IntType(64)


def _ndim(t) -> int:
    w = widen(t)
    return w.ndim if isinstance(w, (_A, _E)) else 0


def _leaves(cg, value, t):
    """``[(leaf type, leaf value)]`` of an array, expression or number."""
    w = widen(t)
    if isinstance(w, _E):
        return [(lt, cg.b.extract_value(value, k)) for k, lt in enumerate(w.leaves)]
    return [(w, value)]


def _leaf_element(cg, leaf, value, index, broadcast: bool):
    """The element of one leaf at ``index`` (right-aligned); ``broadcast``: axes of extent 1 repeat."""
    if isinstance(leaf, T.Scalar):
        return value
    index = index[len(index) - leaf.ndim:]
    shape, strides = _dims(cg, value, 1), _strides(cg, value, leaf)
    offset = ir.Constant(_I64, 0)
    for i, n, s in zip(index, shape, strides):
        if broadcast:
            s = cg.b.select(cg.b.icmp_signed("==", n, ir.Constant(_I64, 1)), ir.Constant(_I64, 0), s)
        offset = cg.b.add(offset, cg.b.mul(i, s))
    ptr = cg.b.gep(cg.b.extract_value(value, 0), [offset], source_etype=ir.IntType(8))
    return cg.load_scalar(ptr, leaf.dtype)


def _element_of(cg, value, t, index, broadcast: bool):
    w = widen(t)
    if isinstance(w, _E):
        vals = [_leaf_element(cg, lt, lv, index, not w.exact) for lt, lv in _leaves(cg, value, t)]
        return evaluate(cg, w, vals)
    return _leaf_element(cg, w, value, index, broadcast)


def _element_type(x, *index):
    if not all(isinstance(widen(i), T.Scalar) and widen(i).kind in "ib" for i in index):
        return None
    w = widen(x)
    if isinstance(w, T.Scalar):
        return w
    return w.dtype if isinstance(w, (_A, _E)) and len(index) >= w.ndim else None


def _int_indices(cg, args, argtypes):
    return [cg.cast(v, widen(t), T.int64) for v, t in zip(args, argtypes)]


@base.define(element, Any_, IntLike, varargs=True, restype=_element_type)
@base.define(element, Number, restype=_element_type)
def _element(cg, args, argtypes, rt):
    index = _int_indices(cg, args[1:], argtypes[1:])
    return _element_of(cg, args[0], argtypes[0], index, broadcast=False)


@base.define(broadcast_element, Any_, IntLike, varargs=True, restype=_element_type)
@base.define(broadcast_element, Number, restype=_element_type)
def _broadcast_element(cg, args, argtypes, rt):
    index = _int_indices(cg, args[1:], argtypes[1:])
    return _element_of(cg, args[0], argtypes[0], index, broadcast=True)


def _array_leaves(xs) -> list:
    out = []
    for x in xs:
        w = widen(x)
        out += [lt for lt in (w.leaves if isinstance(w, _E) else (w,)) if isinstance(lt, _A)]
    return out


def _same_shape_type(*xs):
    arrays = _array_leaves(xs)
    if len({a.ndim for a in arrays}) > 1:
        return Const(False, T.boolean)
    return Const(True, T.boolean) if len(arrays) <= 1 else T.boolean


@base.define(same_shape, Any_, varargs=True, restype=_same_shape_type, pure=False)
def _same_shape(cg, args, argtypes, rt):
    shapes = [_dims(cg, lv, 1) for v, t in zip(args, argtypes) for lt, lv in _leaves(cg, v, t) if isinstance(lt, _A)]
    ok = ir.Constant(ir.IntType(1), 1)
    for other in shapes[1:]:
        for n, m in zip(shapes[0], other):
            ok = cg.b.and_(ok, cg.b.icmp_signed("==", n, m))
    return ok


@base.define(exact, Any_, restype=lambda x: attrs.evolve(widen(x), exact=True) if isinstance(widen(x), _E) else x,
             pure=False)
def _exact(cg, args, argtypes, rt):
    return args[0]


def _extremum(name: str, sym: str):
    def lower(cg, args, argtypes, rt):
        a, b = (cg.cast(v, widen(t), rt) for v, t in zip(args, argtypes))
        if rt.kind == "f":
            return cg.call_intrinsic(name, rt, [a, b])
        compare = cg.b.icmp_unsigned if rt.kind in "ub" else cg.b.icmp_signed  # bools: True > False
        return cg.b.select(compare(sym, a, b), a, b)
    return lower


def _extremum_type(a, b):
    if widen(a) == widen(b) == T.boolean:
        return T.boolean  # NumPy's minimum/maximum of bools are bools
    t = T.promote(widen(a), widen(b))
    return t if t.kind != "c" else None  # complex numbers have no order


for _fn, _name, _sym in ((fmaximum, "llvm.maximum", ">="), (fminimum, "llvm.minimum", "<=")):
    base.define(_fn, Number, Number, restype=_extremum_type)(_extremum(_name, _sym))


@base.handler
def _scalar_type_call(interp, fn, args):
    """``dt(x)`` where ``dt`` is a scalar type (the implementations' typed constants: ``dt(0)``)."""
    if not (isinstance(fn, T.Scalar) and len(args) == 1 and isinstance(widen(args[0]), T.Scalar)):
        return None
    return CallResult(fn, lambda cg, a, at, rt: cg.cast(a[0], widen(at[0]), rt))


def _extent(cg, arr, t: T.ArrayType):
    """``(lowest, highest)`` byte address an array reaches (an empty one: an empty range)."""
    lo = hi = cg.b.ptrtoint(cg.b.extract_value(arr, 0), _I64)
    zero = ir.Constant(_I64, 0)
    for n, s in zip(_dims(cg, arr, 1), _strides(cg, arr, t)):
        step = cg.b.mul(cg.b.sub(n, ir.Constant(_I64, 1)), s)
        lo = cg.b.add(lo, cg.b.select(cg.b.icmp_signed("<", step, zero), step, zero))
        hi = cg.b.add(hi, cg.b.select(cg.b.icmp_signed(">", step, zero), step, zero))
    return lo, cg.b.add(hi, ir.Constant(_I64, t.dtype.itemsize))


@base.define(overlaps, _A, Any_, restype=T.boolean, pure=False)
def _overlaps(cg, args, argtypes, rt):
    out, ot = args[0], widen(argtypes[0])
    lo, hi = _extent(cg, out, ot)
    any_ = ir.Constant(ir.IntType(1), 0)
    for lt, lv in _leaves(cg, args[1], argtypes[1]):
        if not isinstance(lt, _A):
            continue
        llo, lhi = _extent(cg, lv, lt)
        meet = cg.b.and_(cg.b.icmp_unsigned("<", llo, hi), cg.b.icmp_unsigned("<", lo, lhi))
        same = cg.b.icmp_unsigned("==", cg.b.extract_value(lv, 0), cg.b.extract_value(out, 0))
        if lt.ndim == ot.ndim:
            for a, b in zip(_strides(cg, lv, lt), _strides(cg, out, ot)):
                same = cg.b.and_(same, cg.b.icmp_signed("==", a, b))
        else:
            same = ir.Constant(ir.IntType(1), 0)
        any_ = cg.b.or_(any_, cg.b.and_(meet, cg.b.not_(same)))
    return any_


def expr_shape(cg, value, t) -> list:
    """The broadcast shape of an expression's leaves; ValueError where they do not broadcast."""
    w = widen(t)
    one = ir.Constant(_I64, 1)
    ok = ir.Constant(ir.IntType(1), 1)
    shape = []
    leaves = _leaves(cg, value, t)
    for axis in range(w.ndim):  # numbered from the right
        extent = one
        for lt, lv in leaves:
            if isinstance(lt, _A) and axis < lt.ndim:
                n = cg.b.extract_value(lv, [1, lt.ndim - 1 - axis])
                fits = cg.b.or_(cg.b.icmp_signed("==", n, extent),
                                cg.b.or_(cg.b.icmp_signed("==", n, one), cg.b.icmp_signed("==", extent, one)))
                ok = cg.b.and_(ok, fits)
                extent = cg.b.select(cg.b.icmp_signed("==", n, one), extent, n)
        shape.insert(0, extent)
    cg.check_value(ok, "operands could not be broadcast together")
    return shape


def extents(cg, value, t) -> list:
    """The shape of an array or expression, as i64 values."""
    if isinstance(widen(t), _E):
        return expr_shape(cg, value, t)
    return [cg.b.extract_value(value, [1, k]) for k in range(widen(t).ndim)]


def _check_broadcast_type(x, shape):
    w, s = widen(x), widen(shape)
    if not isinstance(s, T.TupleType):
        return None
    if _ndim(w) > len(s.items):
        raise TypeInferenceError(f"cannot broadcast a {_ndim(w)}-d value into a {len(s.items)}-d array", (w,))
    return T.none


@base.define(check_broadcast, Any_, Any_, restype=_check_broadcast_type, pure=False)
def _check_broadcast(cg, args, argtypes, rt):
    value, target = args
    nt = len(widen(argtypes[1]).items)
    ok = ir.Constant(ir.IntType(1), 1)
    one = ir.Constant(_I64, 1)
    for lt, lv in _leaves(cg, value, argtypes[0]):
        if not isinstance(lt, _A):
            continue
        for k in range(lt.ndim):
            n = cg.b.extract_value(lv, [1, k])
            want = cg.b.extract_value(target, nt - lt.ndim + k)
            ok = cg.b.and_(ok, cg.b.or_(cg.b.icmp_signed("==", n, want), cg.b.icmp_signed("==", n, one)))
    cg.check_value(ok, "could not broadcast the value into the shape of the destination array")


_EXPR_ATTRS = {"shape": lambda e: T.TupleType([T.int64] * e.ndim), "ndim": lambda e: Const(e.ndim, T.int64),
               "size": lambda e: T.int64}


@base.define(builtins.getattr, _E, lambda n: isinstance(n, Const) and n.value in _EXPR_ATTRS,
             restype=lambda e, n: _EXPR_ATTRS[n.value](widen(e)), pure=False)
def _expr_attr(cg, args, argtypes, rt):
    shape = expr_shape(cg, args[0], argtypes[0])
    if argtypes[1].value == "size":
        size = ir.Constant(_I64, 1)
        for n in shape:
            size = cg.b.mul(size, n)
        return size
    value = ir.Constant(cg.ll(rt), ir.Undefined)
    for k, n in enumerate(shape):
        value = cg.b.insert_value(value, n, k)
    return value


# -- slices ------------------------------------------------------------------
def _whole(index) -> bool:
    """Whether ``index`` selects a whole array: ``:``, ``...`` or a tuple of ``:``."""
    w = widen(index)
    return all(_is_full(i) for i in w.items) if isinstance(w, T.TupleType) else _is_full(index)


def _is_full(i) -> bool:
    if isinstance(i, Const) and i.value is Ellipsis:
        return True
    w = widen(i)
    return isinstance(w, T.SliceType) and not (w.has_start or w.has_stop or w.has_step)


# -- assignment into arrays, in-place operators, names bound to expressions --------
def _writeable(arr):
    if widen(arr).readonly:
        raise ReadOnlyArrayError("assignment destination is read-only", (widen(arr),),
                                 hint="pass a writeable array (a.copy(), or a.flags.writeable = True)")


def _assigner(interp, dest, value):
    """``emit(cg, dest, value, dest type, value type)`` of ``dest[...] = value`` (inferred now)."""
    _writeable(dest)
    if _ndim(value) > widen(dest).ndim:
        raise TypeInferenceError(f"cannot assign a {_ndim(value)}-d value into a {widen(dest).ndim}-d array",
                                 (widen(dest),))
    impl = npimpl.assign(widen(dest).ndim)
    if impl is None:
        raise TypeInferenceError(f"assigning an array into a {widen(dest).ndim}-d array is not supported in compiled "
                                 "code", (widen(dest),), hint="assign 1-d to 3-d arrays, or write the loops")
    loop = const(impl)
    if interp.target.is_gpu:  # no arrays to copy through
        res, extra = interp.invoke(npimpl.versioned_assign, [loop, widen(dest), value]), []
    else:
        extra = [const(widen(dest).dtype)]
        res = interp.invoke(npimpl.copied_assign, [loop, widen(dest), value, *extra])

    def emit(cg, d, v, dt, vt):  # the destination it returns is held by the caller already
        disown(cg, cg.call_result(res, [None, d, v, *[None] * len(extra)], [loop, dt, vt, *extra],
                                  widen(res.restype)), widen(res.restype))
    return emit


@base.handler
def _setitem(interp, fn, args):
    """``a[index] = value`` where ``value`` is an array or expression, or ``index`` holds slices."""
    if fn is not operator.setitem or len(args) != 3 or not isinstance(widen(args[0]), _A):
        return None
    arr, index, value = args
    if widen(arr).ndim == 0 and not is_arraylike(value):
        return None  # a 0-d array's element
    if _whole(index):
        assign = _assigner(interp, arr, value)
        return CallResult(T.none, lambda cg, a, at, rt: assign(cg, a[0], a[2], at[0], at[2]))
    if is_arraylike(index) and widen(index).dtype == T.boolean:
        return _mask_assign(interp, arr, index, value)
    parts = widen(index).items if isinstance(widen(index), T.TupleType) else (widen(index),)
    if any(is_arraylike(p) and widen(p).dtype.kind in "iu" for p in parts):
        return None  # integer-array indices select elements, not a view: fancy.py's assignment
    if not isinstance(widen(value), _E) and (interp.target.is_gpu or not isinstance(widen(value), _A)):
        return None  # numbers (and arrays in kernels) into views: the views' own rule (overlap read as NumPy reads it)
    view = interp.abstract_call(operator.getitem, [arr, index])
    if view is None or not isinstance(widen(view.restype), _A):
        raise TypeInferenceError(f"cannot assign to {widen(arr)!r}[{widen(index)!r}]",
                                 (widen(arr), widen(index)), hint="assign elements one at a time")
    vt = _readonly_like(widen(view.restype), widen(arr).readonly)
    assign = _assigner(interp, vt, value)

    def lower(cg, a, at, rt):
        dest = cg.call_result(view, [a[0], a[1]], [at[0], at[1]], vt)
        assign(cg, dest, a[2], vt, at[2])
    return CallResult(T.none, lower)


def _mask_assign(interp, arr, mask, value) -> CallResult:
    """``a[mask] = number``; a mask of another shape is NumPy's IndexError."""
    impl = npimpl.MASK_ASSIGN.get(widen(arr).ndim)
    if impl is None or widen(mask).ndim != widen(arr).ndim or not isinstance(widen(value), T.Scalar):
        raise TypeInferenceError(f"{widen(arr)!r}[boolean mask] = {widen(value)!r} is not supported in compiled "
                                 "code", (widen(arr), widen(value)),
                                 hint="assign a number into a 1-d or 2-d array, or np.where(mask, value, a)")
    _writeable(arr)
    loop = const(impl)
    res = interp.invoke(npimpl.checked_mask, [loop, widen(arr), widen(mask), widen(value)])
    return CallResult(T.none, lambda cg, a, at, rt: cg.call_result(res, [None, *a], [loop, *at], widen(res.restype)))


def _readonly_like(t: T.ArrayType, readonly: bool) -> T.ArrayType:
    return T.ArrayType(t.dtype, t.ndim, t.layout, readonly or t.readonly)


@base.handler
def _inplace(interp, fn, args):
    """``x op= y``: an array is overwritten with ``x op y``; anything else is rebound."""
    if fn is not K.inplace:
        return None
    old, new = args
    if isinstance(widen(old), T.ListType):  # extended in place: python/lists.py
        return None
    if isinstance(widen(old), _A) and is_arraylike(new):
        assign = _assigner(interp, old, new)

        def update(cg, a, at, rt):
            assign(cg, a[0], a[1], at[0], at[1])
            return a[0]
        return CallResult(widen(old), update)
    return CallResult(new, lambda cg, a, at, rt: a[1])


@base.handler
def _materialize(interp, fn, args):
    """A value bound to a name: an expression becomes a new array (NumPy's ``c = a + b``)."""
    if fn is not K.materialize:
        return None
    (value,) = args
    expr = widen(value)
    if not isinstance(expr, _E):
        return CallResult(value, lambda cg, a, at, rt: a[0])
    result = managed_array(expr.dtype, expr.ndim)
    assign = _assigner(interp, result, value)

    def lower(cg, a, at, rt):
        out = allocate(cg, expr.dtype, expr_shape(cg, a[0], at[0]))  # C order, the broadcast shape
        assign(cg, out, a[0], result, at[0])
        return out
    return CallResult(result, lower)


__all__ = ["expr_shape", "extents"]
