"""``np.var``/``np.std`` (and the methods), ``np.median``, ``np.percentile``/``np.quantile``,
``np.outer``, ``np.diff``, ``np.tril``/``np.triu``, ``np.unique`` and ``np.unravel_index``.

Each call is inferred as a call of its loop in :mod:`.npstatsimpl` with NumPy's result type: the
statistics of integers and booleans are float64, of float32 float32; ``outer`` has the operands'
common type; ``diff``, the triangles and ``unique`` keep the dtype. Arrays of 1 and 2 dimensions
and fused expressions are taken; what NumPy offers beyond the common use (``out=``,
``keepdims=``, an ``axis`` for the median and the quantiles, their other methods, ``unique``'s
``return_*``) is a typed error at the user's line.
"""

from __future__ import annotations

from typing import Any

from ... import types as T
from ...errors import AxisError, TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, const, widen
from ...interpreter.rules import CallResult
from . import npstatsimpl as S
from .npdtypes import numpy_function
from ..python.numbers import base
from .reductions import invoke_impl, returned
from .ufuncs import is_arraylike, numpy, scalar_type

#: a bound argument: its index among the call's values (None: a compile-time default) and its abstract value
Bound = tuple[int | None, Any]

#: name -> NumPy's parameters in order, and those compiled code takes
_PARAMS: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "var": (("a", "axis", "dtype", "out", "ddof", "keepdims"), frozenset({"a", "axis", "ddof"})),
    "std": (("a", "axis", "dtype", "out", "ddof", "keepdims"), frozenset({"a", "axis", "ddof"})),
    "median": (("a", "axis", "out", "overwrite_input", "keepdims"), frozenset({"a"})),
    "percentile": (("a", "q", "axis", "out", "overwrite_input", "method", "keepdims"), frozenset({"a", "q"})),
    "quantile": (("a", "q", "axis", "out", "overwrite_input", "method", "keepdims"), frozenset({"a", "q"})),
    "outer": (("a", "b", "out"), frozenset({"a", "b"})),
    "diff": (("a", "n", "axis", "prepend", "append"), frozenset({"a", "n", "axis"})),
    "tril": (("m", "k"), frozenset({"m", "k"})),
    "triu": (("m", "k"), frozenset({"m", "k"})),
    "unique": (("ar", "return_index", "return_inverse", "return_counts", "axis", "equal_nan"),
               frozenset({"ar"})),
    "unravel_index": (("indices", "shape", "order"), frozenset({"indices", "shape"})),
}
#: the array methods among them
_METHODS = frozenset({"var", "std"})


def _bind(name: str, positional: list[Bound], keywords: dict[str, Bound]) -> dict[str, Bound]:
    params, supported = _PARAMS[name]
    if len(positional) > len(params):
        raise TypeInferenceError(f"np.{name}() takes at most {len(params)} arguments")
    bound = dict(zip(params, positional))
    for key, value in keywords.items():
        if key not in params or key in bound:
            raise TypeInferenceError(f"np.{name}() got an unexpected or repeated keyword argument {key!r}")
        bound[key] = value
    for key, (_, value) in list(bound.items()):
        if key not in supported:
            if isinstance(value, Const) and (value.value is None or value.value is False):  # NumPy's default, spelled out
                del bound[key]
                continue
            raise TypeInferenceError(f"np.{name}(..., {key}=...) is not supported in compiled code",
                                     hint="the supported arguments are " + ", ".join(
                                         p for p in params if p in supported))
    first = params[0]
    if first not in bound or not is_arraylike(bound[first][1]):
        raise TypeInferenceError(f"np.{name}() takes an array in compiled code",
                                 tuple(widen(v) for _, v in bound.values()), hint="pass a NumPy array")
    x = widen(bound[first][1])
    if x.ndim not in (1, 2):
        raise TypeInferenceError(f"np.{name}() of a {x.ndim}-d array is not supported in compiled code", (x,),
                                 hint="pass a 1-d or 2-d array, or write the loops")
    return bound


def _statistic_type(name: str, x) -> T.Scalar:
    d = x.dtype
    if d.kind == "c":
        raise TypeInferenceError(f"np.{name}() of a complex array is not supported in compiled code", (x,),
                                 hint="take it of a.real and a.imag")
    return T.float64 if d.kind in "biu" else d


def _constant_axis(name: str, bound: dict[str, Bound], ndim: int) -> int | None:
    """The constant ``axis`` counted from 0 (None: every element; a 1-d array's one axis is every element)."""
    _, value = bound.get("axis", (None, const(None)))
    if not (isinstance(value, Const) and (value.value is None or type(value.value) is int)):
        raise TypeInferenceError(f"np.{name}(..., axis=...) must be a constant integer or None in compiled code",
                                 (widen(value),), hint="write the axis as a literal (Numba asks the same)")
    axis = value.value
    if axis is None:
        return None
    if not -ndim <= axis < ndim:
        raise AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return None if ndim == 1 else axis % ndim


def _integer(name: str, what: str, bound: dict[str, Bound], default: int) -> Bound:
    index, value = bound.get(what, (None, const(default)))
    t = widen(value)
    if not (isinstance(t, T.Scalar) and t.kind in "iu"):
        raise TypeInferenceError(f"np.{name}(..., {what}=...) takes an integer, not {t!r}", (t,))
    return index, value


def _number(name: str, what: str, bound: dict[str, Bound]) -> Bound:
    if what not in bound:
        raise TypeInferenceError(f"np.{name}() needs {what}")
    index, value = bound[what]
    t = widen(value)
    if not (isinstance(t, T.Scalar) and t.kind in "iuf"):
        raise TypeInferenceError(f"np.{name}(..., {what}) takes one number in compiled code, not {t!r}", (t,),
                                 hint="call it once per quantile")
    return index, value


def _plan(name: str, bound: dict[str, Bound]) -> tuple[Any, list[Bound]]:
    """``(loop, its arguments)`` of the call."""
    first = _PARAMS[name][0][0]
    xb = bound[first]
    x = widen(xb[1])
    if name in ("var", "std"):
        dt = const(_statistic_type(name, x))
        ddof = _integer(name, "ddof", bound, 0)
        axis = _constant_axis(name, bound, x.ndim)
        if axis is None:
            return (S.var_all if name == "var" else S.std_all), [xb, (None, dt), ddof]
        return S.var_along, [xb, (None, dt), ddof, (None, const(axis)), (None, const(name == "std"))]
    if name == "median":
        return S.median_all, [xb, (None, const(_statistic_type(name, x)))]
    if name in ("percentile", "quantile"):
        if x.dtype is T.boolean:
            raise TypeInferenceError(f"np.{name}() of booleans is NumPy's TypeError (it subtracts them)", (x,),
                                     hint="convert first: a.astype(np.int64)")
        loop = S.percentile_all if name == "percentile" else S.quantile_all
        q = _number(name, "q", bound)
        dt = _statistic_type(name, x)
        if name == "quantile" and widen(q[1]).kind in "iu" and x.dtype.kind in "iu":
            dt = x.dtype  # an integer q (0 or 1) of integers: NumPy interpolates in their type
        return loop, [xb, (None, const(dt)), q]
    if name == "outer":
        b = bound.get("b")
        if b is None or not is_arraylike(b[1]) or widen(b[1]).ndim not in (1, 2):
            raise TypeInferenceError("np.outer() takes two arrays of 1 or 2 dimensions in compiled code")
        np = numpy()
        dt = scalar_type(np.result_type(np.dtype(x.dtype.name), np.dtype(widen(b[1]).dtype.name)))
        return S.outer, [xb, b, (None, const(dt))]
    if name == "diff":
        dt, times = const(x.dtype), _integer(name, "n", bound, 1)
        flag = (None, const(x.dtype is T.boolean))
        axis = _constant_axis(name, bound, x.ndim) if "axis" in bound else (None if x.ndim == 1 else 1)
        if axis is None and x.ndim == 2:
            raise TypeInferenceError("np.diff(..., axis=None) is NumPy's error too: give an axis")
        if x.ndim == 1:
            return S.diff1, [xb, (None, dt), times, flag]
        return S.diff2, [xb, (None, dt), times, (None, const(axis)), flag]
    if name in ("tril", "triu"):
        if x.ndim != 2:
            raise TypeInferenceError(f"np.{name}() of a {x.ndim}-d array is not supported in compiled code", (x,),
                                     hint="pass a 2-d array")
        return S.triangle, [xb, (None, const(x.dtype)), _integer(name, "k", bound, 0),
                            (None, const(name == "tril"))]
    return S.unique, [xb, (None, const(x.dtype))]


def _unravel(bound: dict[str, Bound]) -> tuple[Any, list[Bound]]:
    index, value = bound.get("indices", (None, None))
    t = widen(value) if value is not None else None
    if not (isinstance(t, T.Scalar) and t.kind in "iu"):
        raise TypeInferenceError(f"np.unravel_index() takes one integer index in compiled code, not {t!r}",
                                 hint="call it once per index")
    shape = bound.get("shape")
    st = widen(shape[1]) if shape is not None else None
    items = getattr(st, "items", None)
    if shape is None or not items or len(items) > 3 or any(not (isinstance(i, T.Scalar) and i.kind in "iu") for i in items):
        raise TypeInferenceError(f"np.unravel_index(..., shape) takes a tuple of 1 to 3 integers in compiled "
                                 f"code, not {st!r}", hint="pass a.shape")
    return (S.unravel1, S.unravel2, S.unravel3)[len(items) - 1], [(index, value), shape]


def _call(interp, name: str, positional: list[Bound], keywords: dict[str, Bound]) -> CallResult:
    if name == "unravel_index":
        params, supported = _PARAMS[name]
        bound = dict(zip(params, positional)) | keywords
        if set(bound) - supported:
            raise TypeInferenceError("np.unravel_index(..., order=...) is not supported in compiled code")
        loop, plan = _unravel(bound)
    else:
        loop, plan = _plan(name, _bind(name, positional, keywords))
    res = invoke_impl(interp, f"np.{name}()", loop, [value for _, value in plan])

    def lower(cg, a, at, rt):
        values = [a[i] if i is not None else _number_value(cg, value) for i, value in plan]
        types = [at[i] if i is not None else value for i, value in plan]
        return returned(cg, cg.call_result(res, values, types, rt), rt)
    return CallResult(res.restype, lower)


def _number_value(cg, value):
    """A default number's value (``ddof=0``: the loop takes it as a number); None for a compile-time one."""
    v = value.value
    return cg.const(widen(value), v) if type(v) in (int, float, bool) else None


def _name(fn) -> str | None:
    name = numpy_function(fn)
    return name if name in _PARAMS and fn is getattr(numpy(), name, None) else None


@base.handler
def _statistics(interp, fn, args):
    """The functions above, called plainly, with keywords, or as ``a.var()``/``a.std()``."""
    if fn is K.call_kw:
        callee, names = args[0], args[1]
        if not (isinstance(callee, Const) and isinstance(names, Const)):
            return None
        values: list[Bound] = [(i, a) for i, a in enumerate(args) if i >= 2]
        npos = len(values) - len(names.value)
        keywords = dict(zip(names.value, values[npos:]))
        if callee.value is K.call_method:
            receiver, method = values[0][1], values[1][1]
            if not (is_arraylike(receiver) and isinstance(method, Const) and method.value in _METHODS):
                return None
            return _call(interp, method.value, [values[0], *values[2:npos]], keywords)
        name = _name(callee.value)
        return _call(interp, name, values[:npos], keywords) if name is not None else None
    if fn is K.call_method:
        if not (is_arraylike(args[0]) and isinstance(args[1], Const) and args[1].value in _METHODS):
            return None
        return _call(interp, args[1].value, [(0, args[0]), *[(i, a) for i, a in enumerate(args)][2:]], {})
    name = _name(fn)
    return _call(interp, name, list(enumerate(args)), {}) if name is not None else None
