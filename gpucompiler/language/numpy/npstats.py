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

from ... import types as T
from ...errors import AxisError, TypeInferenceError
from ...interpreter.lattice import Const, const, widen
from . import npstatsimpl as S
from .npcalls import Bindings, Bound, Plan, Signature, register
from ..python.numbers import base
from .ufuncs import is_arraylike, numpy, scalar_type

_STAT = ("a", "axis", "dtype", "out", "ddof", "keepdims")
_ORDER = ("a", "q", "axis", "out", "overwrite_input", "method", "keepdims")


def _array(name: str, bound: Bindings) -> Bound:
    """The array argument, of 1 or 2 dimensions."""
    first = next((bound[k] for k in ("a", "m", "ar") if k in bound), None)
    if first is None or not is_arraylike(first[1]):
        raise TypeInferenceError(f"np.{name}() takes an array in compiled code",
                                 tuple(widen(v) for _, v in bound.values()), hint="pass a NumPy array")
    x = widen(first[1])
    if x.ndim not in (1, 2):
        raise TypeInferenceError(f"np.{name}() of a {x.ndim}-d array is not supported in compiled code", (x,),
                                 hint="pass a 1-d or 2-d array, or write the loops")
    return first


def _statistic_type(name: str, x) -> T.Scalar:
    d = x.dtype
    if d.kind == "c":
        raise TypeInferenceError(f"np.{name}() of a complex array is not supported in compiled code", (x,),
                                 hint="take it of a.real and a.imag")
    return T.float64 if d.kind in "biu" else d


def _constant_axis(name: str, bound: Bindings, ndim: int) -> int | None:
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


def _integer(name: str, what: str, bound: Bindings, default: int) -> Bound:
    index, value = bound.get(what, (None, const(default)))
    t = widen(value)
    if not (isinstance(t, T.Scalar) and t.kind in "iu"):
        raise TypeInferenceError(f"np.{name}(..., {what}=...) takes an integer, not {t!r}", (t,))
    return index, value


def _number(name: str, what: str, bound: Bindings) -> Bound:
    if what not in bound:
        raise TypeInferenceError(f"np.{name}() needs {what}")
    index, value = bound[what]
    t = widen(value)
    if not (isinstance(t, T.Scalar) and t.kind in "iuf"):
        raise TypeInferenceError(f"np.{name}(..., {what}) takes one number in compiled code, not {t!r}", (t,),
                                 hint="call it once per quantile")
    return index, value


def _plan(name: str, bound: Bindings) -> Plan:
    """``(loop, its arguments)`` of the call."""
    xb = _array(name, bound)
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


def _unravel(name: str, bound: Bindings) -> Plan:
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


register(base, __name__, {
    "var": (Signature(_STAT, frozenset({"a", "axis", "ddof"}), method=True), _plan),
    "std": (Signature(_STAT, frozenset({"a", "axis", "ddof"}), method=True), _plan),
    "median": (Signature(("a", "axis", "out", "overwrite_input", "keepdims"), frozenset({"a"})), _plan),
    "percentile": (Signature(_ORDER, frozenset({"a", "q"})), _plan),
    "quantile": (Signature(_ORDER, frozenset({"a", "q"})), _plan),
    "outer": (Signature(("a", "b", "out"), frozenset({"a", "b"})), _plan),
    "diff": (Signature(("a", "n", "axis", "prepend", "append"), frozenset({"a", "n", "axis"})), _plan),
    "tril": (Signature(("m", "k"), frozenset({"m", "k"})), _plan),
    "triu": (Signature(("m", "k"), frozenset({"m", "k"})), _plan),
    "unique": (Signature(("ar", "return_index", "return_inverse", "return_counts", "axis", "equal_nan"),
                         frozenset({"ar"})), _plan),
    "unravel_index": (Signature(("indices", "shape", "order"), frozenset({"indices", "shape"})), _unravel),
})
