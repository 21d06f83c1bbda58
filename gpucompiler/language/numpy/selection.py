"""``a[mask]`` and ``a[index]`` as values: NumPy's boolean-mask and integer-array indexing.

A boolean mask of the array's shape (an array or a fused expression such as
``a > 0``) selects elements in C order; a 1-d integer array picks elements of
a 1-d array. Both make a new 1-d array (:mod:`.npaxes` has the loops), so
``np.sum(a[a > 0])`` works as in NumPy. NumPy's IndexErrors (a mask of
another shape, an index out of bounds) are raised at the user's line.
"""

from __future__ import annotations

import operator

from llvmlite import ir

from ... import types as T
from ...errors import TypeInferenceError
from ...interpreter.lattice import const, widen
from ...interpreter.rules import CallResult
from . import npaxes as X, npimpl as I
from ..python.numbers import base
from .arrayexpr import extents
from .reductions import invoke_impl, returned
from .ufuncs import is_arraylike

_I64 = ir.IntType(64)
_MASKED = {1: X.masked1, 2: X.masked2}


def _mask_matches(cg, x, xt, mask, mt) -> None:
    """NumPy's IndexError unless the mask has the array's extents, axis by axis."""
    for axis, (n, m) in enumerate(zip(extents(cg, x, xt), extents(cg, mask, mt))):
        cg.check_statement(cg.b.icmp_signed("==", n, m), "IndexError", f"boolean index did not match indexed "
                           f"array along axis {axis}; size of axis is %lld but size of corresponding boolean axis "
                           "is %lld", n, m)


def _masked(interp, x, mask) -> CallResult:
    xt, mt = widen(x), widen(mask)
    impl = _MASKED.get(xt.ndim)
    if impl is None or mt.ndim != xt.ndim:
        raise TypeInferenceError(f"{xt!r}[boolean mask of {mt.ndim} dimensions] is not supported in compiled code",
                                 (xt, mt), hint="index a 1-d or 2-d array with a mask of its own shape")
    dt, loop = const(xt.dtype), const(impl)
    res = invoke_impl(interp, "a[mask]", I.versioned2, [loop, xt, mt, dt])

    def lower(cg, a, at, rt):
        _mask_matches(cg, a[0], at[0], a[1], at[1])
        value = cg.call_result(res, [None, a[0], a[1], None], [loop, at[0], at[1], dt], rt)
        return returned(cg, value, rt)
    return CallResult(res.restype, lower)


def _taken(interp, x, index) -> CallResult:
    xt, it = widen(x), widen(index)
    if xt.ndim != 1 or it.ndim != 1 or it.dtype == T.uint64:
        raise TypeInferenceError(f"{xt!r}[{it!r}] is not supported in compiled code", (xt, it),
                                 hint="index a 1-d array with a 1-d array of signed integers (or of at most 32 bits), "
                                 "or write the loop")
    dt = const(xt.dtype)
    bounds = invoke_impl(interp, "a[index]", X.first_out_of_bounds, [it, T.int64])
    res = invoke_impl(interp, "a[index]", X.taken1, [xt, it, dt])
    bt = widen(bounds.restype)

    def lower(cg, a, at, rt):
        n = extents(cg, a[0], at[0])[0]
        found = cg.call_result(bounds, [a[1], n], [at[1], T.int64], bt)
        value = cg.cast(cg.b.extract_value(found, 1), bt.items[1], T.int64)
        cg.check_statement(cg.b.not_(cg.cast(cg.b.extract_value(found, 0), bt.items[0], T.boolean)), "IndexError",
                           "index %lld is out of bounds for axis 0 with size %lld", value, n)
        return returned(cg, cg.call_result(res, [a[0], a[1], None], [at[0], at[1], dt], rt), rt)
    return CallResult(res.restype, lower)


@base.handler
def _select(interp, fn, args):
    """``a[mask]`` and ``a[index]`` read as values (assignment through a mask is :mod:`.arrayexpr`'s)."""
    if fn is not operator.getitem or len(args) != 2 or not is_arraylike(args[0]) or not is_arraylike(args[1]):
        return None
    x, index = args
    kind = widen(index).dtype.kind
    if kind == "b":
        return _masked(interp, x, index)
    if kind in "iu":
        return _taken(interp, x, index)
    raise TypeInferenceError(f"arrays index arrays with booleans or integers, not {widen(index).dtype!r}",
                             (widen(x), widen(index)))
