"""``np.cumsum`` / ``np.cumprod`` and the methods ``a.cumsum()`` / ``a.cumprod()``.

Plain loops compiled like user code (the Enzyme plugin differentiates them)
over an array or a fused expression of 1 or 2 dimensions. As NumPy: without
``axis`` the elements in C order give a 1-d result; ``axis=0``/``1``/``-1``
accumulate along that axis; the result dtype is ``sum``'s (bools and signed
ints accumulate in int64, unsigned ints in uint64) unless ``dtype=`` names
one; each element is the previous one combined with the next input, the
first the input itself (``cumsum([-0.0])`` is ``-0.0``, as NumPy's).
"""

from __future__ import annotations

from ...frontend import intrinsics as K
from ...frontend.intrinsics import getitem_unchecked, setitem_unchecked
from ... import types as T
from ...errors import AxisError, TypeInferenceError
from ...interpreter.lattice import Const, const, widen
from ...interpreter.rules import CallResult
from .npdtypes import dtype_of, numpy_function
from .npintrinsics import element, new_array
from ..python.numbers import base
from .reductions import invoke_impl, returned
from .ufuncs import is_arraylike, numpy


def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def flat1(x, dt, op):
    n = x.shape[0]
    out = new_array((n,), dt)
    if n > 0:
        s = dt(element(x, 0))
        setitem_unchecked(out, 0, s)
        for i in range(1, n):
            s = dt(op(s, dt(element(x, i))))
            setitem_unchecked(out, i, s)
    return out


def flat2(x, dt, op):
    """The elements of a 2-d ``x`` in C order, accumulated into a 1-d array."""
    n, m = x.shape
    out = new_array((n * m,), dt)
    if n * m > 0:
        s = dt(element(x, 0, 0))
        for i in range(n):
            for j in range(m):
                if i + j > 0:
                    s = dt(op(s, dt(element(x, i, j))))
                setitem_unchecked(out, i * m + j, s)
    return out


def along0(x, dt, op):
    """Down the columns: each row the previous row of the result combined with the row of ``x``."""
    n, m = x.shape
    out = new_array((n, m), dt)
    if n > 0:
        for j in range(m):
            setitem_unchecked(out, (0, j), dt(element(x, 0, j)))
        for i in range(1, n):
            for j in range(m):
                setitem_unchecked(out, (i, j), dt(op(getitem_unchecked(out, (i - 1, j)), dt(element(x, i, j)))))
    return out


def along1(x, dt, op):
    n, m = x.shape
    out = new_array((n, m), dt)
    if m > 0:
        for i in range(n):
            s = dt(element(x, i, 0))
            setitem_unchecked(out, (i, 0), s)
            for j in range(1, m):
                s = dt(op(s, dt(element(x, i, j))))
                setitem_unchecked(out, (i, j), s)
    return out


_OPS = {"cumsum": _add, "cumprod": _mul}


def _accumulator(d: T.Scalar) -> T.Scalar:
    return {"b": T.int64, "i": T.int64, "u": T.uint64}.get(d.kind, d)


def _cumulative(interp, name: str, values: list, kwnames: tuple) -> tuple:
    """``(result, lower)`` of ``np.<name>`` of ``values`` (positional, then those of ``kwnames``);
    ``lower`` gets the values of all of them (only the array's is used)."""
    npos = len(values) - len(kwnames)
    params = ("a", "axis", "dtype")
    if npos > 3:
        raise TypeInferenceError(f"np.{name}() takes an array, an axis and a dtype in compiled code (no out=)")
    given = dict(zip(params, values[:npos]))
    for k, v in zip(kwnames, values[npos:]):
        if k not in params or k in given:
            raise TypeInferenceError(f"np.{name}() keyword argument {k!r} is not supported in compiled code",
                                     hint="the supported keywords are axis and dtype (out= is not)")
        given[k] = v
    x = widen(given.get("a"))
    if not is_arraylike(x):
        raise TypeInferenceError(f"np.{name}() of {x!r} is not supported in compiled code", (x,),
                                 hint="pass an array")
    axis = given.get("axis")
    if axis is not None and not (isinstance(axis, Const) and (axis.value is None or type(axis.value) is int)):
        raise TypeInferenceError(f"np.{name}(..., axis=...) must be a constant integer or None in compiled code",
                                 (widen(axis),), hint="write the axis as a literal (Numba asks the same)")
    axis = axis.value if axis is not None else None
    if x.ndim not in (1, 2):
        raise TypeInferenceError(f"np.{name}() of a {x.ndim}-d array is not supported in compiled code", (x,),
                                 hint="accumulate 1-d and 2-d arrays, or write the loops")
    if axis is not None and not -x.ndim <= axis < x.ndim:
        raise AxisError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
    dtype = given.get("dtype")
    dt = const(dtype_of(dtype, f"np.{name}()'s dtype") if dtype is not None and not (
        isinstance(dtype, Const) and dtype.value is None) else _accumulator(x.dtype))
    if x.dtype.kind == "c" and dt.value.kind != "c":
        raise TypeInferenceError(f"np.{name}(..., dtype={dt.value.name}) of a complex array would drop the imaginary "
                                 "part (NumPy warns and drops it)", (x,), hint="accumulate a.real, then convert")
    if axis is None or x.ndim == 1:
        impl = flat1 if x.ndim == 1 else flat2
    else:
        impl = along0 if axis % 2 == 0 else along1
    op = const(_OPS[name])
    res = invoke_impl(interp, f"np.{name}()", impl, [x, dt, op])

    def lower(cg, v, at, rt):
        return returned(cg, cg.call_result(res, [v[0], None, None], [at[0], dt, op], rt), rt)
    return res.restype, lower


@base.handler
def _cumulative_call(interp, fn, args):
    """``np.cumsum(a, ...)``, ``a.cumsum(...)`` (and ``cumprod``), with keywords or without."""
    if fn is K.call_kw:
        callee, names = args[0], args[1]
        if not (isinstance(callee, Const) and isinstance(names, Const)):
            return None
        if callee.value is K.call_method and len(args) > 3 and _named(args[2], args[3]):
            rt, lower = _cumulative(interp, args[3].value, [args[2], *args[4:]], names.value)
            return CallResult(rt, lambda cg, a, at, rt: lower(cg, [a[2], *a[4:]], [at[2], *at[4:]], rt))
        name = numpy_function(callee.value)
        if name in _OPS and callee.value is getattr(numpy(), name):
            rt, lower = _cumulative(interp, name, list(args[2:]), names.value)
            return CallResult(rt, lambda cg, a, at, rt: lower(cg, a[2:], at[2:], rt))
        return None
    if fn is K.call_method and _named(args[0], args[1]):
        rt, lower = _cumulative(interp, args[1].value, [args[0], *args[2:]], ())
        return CallResult(rt, lambda cg, a, at, rt: lower(cg, [a[0], *a[2:]], [at[0], *at[2:]], rt))
    name = numpy_function(fn)
    if name in _OPS and fn is getattr(numpy(), name):
        return CallResult(*_cumulative(interp, name, list(args), ()))
    return None


def _named(receiver, name) -> bool:
    return is_arraylike(receiver) and isinstance(name, Const) and name.value in _OPS
