"""NumPy's integer-array indexing beyond a 1-d read: ``a[rows, cols]`` of a 2-d array and the
assignments ``a[index] = v`` (1-d) and ``a[rows, cols] = v`` (2-d).

The index arrays are 1-d integer arrays of one length, or of length one
(broadcast, as NumPy broadcasts them); ``v`` is a number or a 1-d array of
the indexing result's length (or of length one). Each element goes through
plain indexing (``a[r, c]``), so negative indices count from the end and a
bad one is NumPy's ``IndexError``, and stores convert as any store does.
A repeated index is written in order: the last value stays, as in NumPy.
The loops are written in the language (as ``np.sort``'s are) and so are
differentiated as any loop is.
"""

from __future__ import annotations

import operator

from ... import types as T
from ...errors import TypeInferenceError
from ...frontend.intrinsics import check
from ...interpreter.lattice import const, widen
from ...interpreter.rules import CallResult
from .npintrinsics import element, new_array
from ..python.numbers import base
from .reductions import invoke_impl, returned
from .ufuncs import is_arraylike

_BROADCAST = "shape mismatch: indexing arrays could not be broadcast together"
_VALUES = "shape mismatch: value array could not be broadcast to indexing result"


def _length(n, m):
    check(n == m or n == 1 or m == 1, "IndexError", _BROADCAST)
    return max(n, m)


def taken2(x, rows, cols, dt):
    n, m = rows.shape[0], cols.shape[0]
    size = _length(n, m)
    out = new_array((size,), dt)
    for k in range(size):
        out[k] = x[rows[k if n > 1 else 0], cols[k if m > 1 else 0]]
    return out


def put1(x, index, v):
    for k in range(index.shape[0]):
        x[index[k]] = v


def put1_array(x, index, v):
    n, m = index.shape[0], v.shape[0]
    check(m == n or m == 1, "ValueError", _VALUES)
    for k in range(n):
        x[index[k]] = element(v, k if m > 1 else 0)


def put2(x, rows, cols, v):
    n, m = rows.shape[0], cols.shape[0]
    for k in range(_length(n, m)):
        x[rows[k if n > 1 else 0], cols[k if m > 1 else 0]] = v


def put2_array(x, rows, cols, v):
    n, m, w = rows.shape[0], cols.shape[0], v.shape[0]
    size = _length(n, m)
    check(w == size or w == 1, "ValueError", _VALUES)
    for k in range(size):
        x[rows[k if n > 1 else 0], cols[k if m > 1 else 0]] = element(v, k if w > 1 else 0)


def _int_vector(t) -> bool:
    t = widen(t)
    return isinstance(t, T.ArrayType) and t.ndim == 1 and t.dtype.is_integer and t.dtype != T.uint64


def _indices(x, index) -> list | None:
    """The index arrays of ``x[index]`` this module takes (one per axis of ``x``), else None."""
    xt, it = widen(x), widen(index)
    if not isinstance(xt, T.ArrayType) or xt.ndim not in (1, 2):
        return None
    parts = list(it.items) if isinstance(it, T.TupleType) else [it]
    if len(parts) != xt.ndim or not all(_int_vector(p) for p in parts):
        return None
    return parts


def _read(interp, x, index) -> CallResult:
    xt = widen(x)
    dt = const(xt.dtype)
    res = invoke_impl(interp, "a[rows, cols]", taken2, [xt, *widen(index).items, dt])

    def lower(cg, a, at, rt):
        rows, cols = (cg.b.extract_value(a[1], k) for k in (0, 1))
        value = cg.call_result(res, [a[0], rows, cols, None], [at[0], *widen(at[1]).items, dt], rt)
        return returned(cg, value, rt)
    return CallResult(res.restype, lower)


def _write(interp, x, index, parts, value) -> CallResult:
    vt = widen(value)
    if isinstance(vt, (T.ArrayType, T.ArrayExpr)) and vt.ndim == 1:  # an expression is read element by element
        impl = put1_array if len(parts) == 1 else put2_array
    elif isinstance(vt, T.Scalar):
        impl = put1 if len(parts) == 1 else put2
    else:
        raise TypeInferenceError(f"a[index arrays] = {vt!r}: the value is a number or a 1-d array", (vt,),
                                 hint="assign a number or a 1-d array of the index's length")
    res = invoke_impl(interp, "a[index] = v", impl, [widen(x), *parts, vt])

    def lower(cg, a, at, rt):
        idx = [a[1]] if len(parts) == 1 else [cg.b.extract_value(a[1], k) for k in (0, 1)]
        cg.call_result(res, [a[0], *idx, a[2]], [at[0], *parts, at[2]], res.restype)
    return CallResult(T.none, lower)


@base.handler
def _fancy(interp, fn, args):
    """``a[rows, cols]``, ``a[index] = v`` and ``a[rows, cols] = v`` with integer arrays."""
    if fn is operator.getitem and len(args) == 2 and is_arraylike(args[0]):
        parts = _indices(args[0], args[1])
        return _read(interp, args[0], args[1]) if parts is not None and len(parts) == 2 else None
    if fn is operator.setitem and len(args) == 3 and is_arraylike(args[0]):
        parts = _indices(args[0], args[1])
        return _write(interp, args[0], args[1], parts, args[2]) if parts is not None else None
    return None
