"""``np.nonzero(a)``, ``a.nonzero()`` and one-argument ``np.where(c)``: the indices of the nonzero
elements, a tuple of one int64 array per dimension, in C order (as NumPy's).

Compiled loops over 1-d and 2-d arrays and fused expressions (``np.where(a
> 0)``): a count, then the indices. NaN is nonzero, as in NumPy.
"""

from __future__ import annotations

from ... import types as T
from ...errors import TypeInferenceError
from ...frontend import intrinsics as K
from ...frontend.intrinsics import setitem_unchecked
from ...interpreter.lattice import Const, const, widen
from ...interpreter.rules import CallResult
from .npdtypes import numpy_function
from .npintrinsics import element, new_array
from ..python.numbers import base
from .reductions import invoke_impl, returned
from .ufuncs import is_arraylike, numpy

INDEX = T.int64


def nonzero1(x, dt):
    n = x.shape[0]
    count = 0
    for i in range(n):
        count += int(element(x, i) != 0)
    out = new_array((count,), dt)
    k = 0
    for i in range(n):
        if element(x, i) != 0:
            setitem_unchecked(out, k, i)
            k += 1
    return (out,)


def nonzero2(x, dt):
    n, m = x.shape
    count = 0
    for i in range(n):
        for j in range(m):
            count += int(element(x, i, j) != 0)
    rows = new_array((count,), dt)
    columns = new_array((count,), dt)
    k = 0
    for i in range(n):
        for j in range(m):
            if element(x, i, j) != 0:
                setitem_unchecked(rows, k, i)
                setitem_unchecked(columns, k, j)
                k += 1
    return rows, columns


def _nonzero(interp, name: str, x) -> CallResult:
    t = widen(x)
    if not is_arraylike(t):
        raise TypeInferenceError(f"{name}() of {t!r} is not supported in compiled code", (t,), hint="pass an array")
    impl = {1: nonzero1, 2: nonzero2}.get(t.ndim)
    if impl is None:
        raise TypeInferenceError(f"{name}() of a {t.ndim}-d array is not supported in compiled code", (t,),
                                 hint="1-d and 2-d arrays (NumPy refuses 0-d ones)")
    dt = const(INDEX)
    res = invoke_impl(interp, f"{name}()", impl, [t, dt])

    def lower(cg, v, at, rt):
        return returned(cg, cg.call_result(res, [v[0], None], [at[0], dt], rt), rt)
    return CallResult(res.restype, lower)


@base.handler
def _nonzero_call(interp, fn, args):
    """``np.nonzero(a)``, ``np.where(c)`` and ``a.nonzero()``."""
    if fn is K.call_method and len(args) == 2 and is_arraylike(args[0]) and isinstance(args[1], Const) \
            and args[1].value == "nonzero":
        res = _nonzero(interp, "a.nonzero", args[0])
        return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, a[:1], at[:1], rt))
    name = numpy_function(fn)
    if name in ("nonzero", "where") and fn is getattr(numpy(), name) and len(args) == 1:
        return _nonzero(interp, f"np.{name}", args[0])
    return None
