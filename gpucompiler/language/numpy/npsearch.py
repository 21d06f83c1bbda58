"""``np.searchsorted``, ``np.bincount``, ``np.histogram``, ``np.interp``, ``np.roll``,
``np.count_nonzero``, ``np.isclose``/``np.allclose`` and ``np.nansum``/``nanmean``/``nanmax``/``nanmin``.

Each call is inferred as a call of its loop in :mod:`.npsearchimpl` with NumPy's result type
(indices and counts int64; ``histogram`` ``(int64 counts, float64 edges)``; ``interp`` float64;
the NaN-ignoring reductions the dtype's, float64 for ``nanmean`` of integers). Arrays of 1 and 2
dimensions and fused expressions are taken (``searchsorted``'s sorted array, ``bincount``'s and
``interp``'s samples 1-d); what NumPy offers beyond that (``sorter=``, ``bins`` as edges, ``weights``
and ``density`` of ``histogram``, complex ``interp``, an ``axis``) is a typed error at the user's line.
"""

from __future__ import annotations

from ... import types as T
from ...errors import TypeInferenceError
from ...interpreter.lattice import Const, const, widen
from . import npsearchimpl as S
from .npcalls import Bindings, Bound, Plan, Signature, register
from ..python.numbers import base
from .ufuncs import is_arraylike

_INT, _FLOAT, _BOOL = (None, const(T.int64)), (None, const(T.float64)), (None, const(T.boolean))


def _array(name: str, bound: Bindings, key: str, ndims: tuple[int, ...] = (1, 2)) -> Bound:
    if key not in bound or not is_arraylike(bound[key][1]):
        raise TypeInferenceError(f"np.{name}() takes an array as {key} in compiled code", hint="pass a NumPy array")
    x = widen(bound[key][1])
    if x.ndim not in ndims:
        raise TypeInferenceError(f"np.{name}() of a {x.ndim}-d {key} is not supported in compiled code", (x,),
                                 hint=f"pass a {' or '.join(f'{n}-d' for n in ndims)} array")
    if x.dtype.kind == "c":
        raise TypeInferenceError(f"np.{name}() of a complex array is not supported in compiled code", (x,))
    return bound[key]


def _scalar(name: str, bound: Bindings, key: str, kinds: str, default) -> Bound:
    index, value = bound.get(key, (None, const(default)))
    t = widen(value)
    if not (isinstance(t, T.Scalar) and t.kind in kinds):
        raise TypeInferenceError(f"np.{name}(..., {key}=...) takes a number here, not {t!r}", (t,))
    return index, value


def _constant(name: str, bound: Bindings, key: str, default, allowed: tuple) -> Bound:
    _, value = bound.get(key, (None, const(default)))
    if not (isinstance(value, Const) and value.value in allowed):
        raise TypeInferenceError(f"np.{name}(..., {key}=...) must be one of {', '.join(map(repr, allowed))}, "
                                 "a constant in compiled code", hint="write it as a literal")
    return None, value


def _searchsorted(name: str, bound: Bindings) -> Plan:
    a = _array(name, bound, "a", (1,))
    side = _constant(name, bound, "side", "left", ("left", "right"))
    right = (None, const(side[1].value == "right"))
    v = bound.get("v")
    if v is not None and is_arraylike(v[1]):
        return S.search_many, [a, _array(name, bound, "v", (1,)), right, _INT]
    return S.search_one, [a, _scalar(name, bound, "v", "biuf", 0), right]


def _bincount(name: str, bound: Bindings) -> Plan:
    x = _array(name, bound, "x", (1,))
    if widen(x[1]).dtype.kind not in "biu":
        raise TypeInferenceError("np.bincount() takes non-negative integers", (widen(x[1]),),
                                 hint="convert first: x.astype(np.int64)")
    minlength = _scalar(name, bound, "minlength", "iu", 0)
    if "weights" in bound:
        return S.bincount_weighted, [x, _array(name, bound, "weights", (1,)), minlength, _FLOAT]
    return S.bincount, [x, minlength, _INT]


def _histogram(name: str, bound: Bindings) -> Plan:
    a = _array(name, bound, "a")
    bins = bound.get("bins", (None, const(10)))
    if is_arraylike(bins[1]):
        raise TypeInferenceError("np.histogram(..., bins=<edges>) is not supported in compiled code",
                                 hint="give the number of bins (and range=)")
    bins = _scalar(name, bound, "bins", "iu", 10)
    if "range" in bound:
        items = getattr(widen(bound["range"][1]), "items", None)
        if not items or len(items) != 2 or any(not (isinstance(t, T.Scalar) and t.kind in "iuf") for t in items):
            raise TypeInferenceError("np.histogram(..., range=...) takes a tuple of two numbers")
        return S.histogram_range, [a, bins, bound["range"], _INT, _FLOAT]
    return S.histogram, [a, bins, _INT, _FLOAT]


def _interp(name: str, bound: Bindings) -> Plan:
    xp, fp = _array(name, bound, "xp", (1,)), _array(name, bound, "fp", (1,))
    ends = []
    defaults = 0
    for k, key in enumerate(("left", "right")):
        if key in bound:
            ends.append(_scalar(name, bound, key, "biuf", 0.0))
        else:
            ends.append((None, const(0.0)))
            defaults |= 1 << k
    tail = [*ends, (None, const(defaults))]
    x = bound.get("x")
    if x is not None and is_arraylike(x[1]):
        return S.interp_many, [_array(name, bound, "x", (1,)), xp, fp, *tail, _FLOAT]
    return S.interp_one, [_scalar(name, bound, "x", "biuf", 0.0), xp, fp, *tail]


def _roll(name: str, bound: Bindings) -> Plan:
    a = _array(name, bound, "a")
    return S.roll, [a, _scalar(name, bound, "shift", "iu", 0), (None, const(widen(a[1]).dtype))]


def _count_nonzero(name: str, bound: Bindings) -> Plan:
    a = _array(name, bound, "a")
    return S.count_nonzero, [a, (None, const(widen(a[1]).dtype))]


def _close(name: str, bound: Bindings) -> Plan:
    a = _array(name, bound, "a")
    rtol, atol = _scalar(name, bound, "rtol", "iuf", 1e-05), _scalar(name, bound, "atol", "iuf", 1e-08)
    nan = _constant(name, bound, "equal_nan", False, (False, True))
    b = bound.get("b")
    whole = name == "allclose"
    if b is not None and is_arraylike(b[1]):
        b = _array(name, bound, "b")
        if widen(b[1]).ndim != widen(a[1]).ndim:
            raise TypeInferenceError(f"np.{name}() of arrays of different dimensions is not supported in compiled "
                                     "code", hint="compare arrays of one shape, or an array and a number")
        return (S.allclose, [a, b, rtol, atol, nan, _FLOAT]) if whole else \
            (S.isclose, [a, b, rtol, atol, nan, _FLOAT, _BOOL])
    b = _scalar(name, bound, "b", "biuf", 0.0)
    return (S.allclose_scalar, [a, b, rtol, atol, nan, _FLOAT]) if whole else \
        (S.isclose_scalar, [a, b, rtol, atol, nan, _FLOAT, _BOOL])


def _nan_reduction(name: str, bound: Bindings) -> Plan:
    a = _array(name, bound, "a")
    d = widen(a[1]).dtype
    if name == "nanmean":
        dt = T.float64 if d.kind in "biu" else d
    elif name == "nansum":
        dt = {"b": T.int64, "i": T.int64, "u": T.uint64}.get(d.kind, d)
    else:
        dt = d
    loop = {"nansum": S.nansum, "nanmean": S.nanmean, "nanmax": S.nanmax, "nanmin": S.nanmin}[name]
    return loop, [a, (None, const(dt))]


_CLOSE = ("a", "b", "rtol", "atol", "equal_nan")
_NAN = ("a", "axis", "dtype", "out", "keepdims")

register(base, __name__, {
    "searchsorted": (Signature(("a", "v", "side", "sorter"), frozenset({"a", "v", "side"})), _searchsorted),
    "bincount": (Signature(("x", "weights", "minlength"), frozenset({"x", "weights", "minlength"})), _bincount),
    "histogram": (Signature(("a", "bins", "range", "density", "weights"), frozenset({"a", "bins", "range"})),
                  _histogram),
    "interp": (Signature(("x", "xp", "fp", "left", "right", "period"), frozenset({"x", "xp", "fp", "left", "right"})),
               _interp),
    "roll": (Signature(("a", "shift", "axis"), frozenset({"a", "shift"})), _roll),
    "count_nonzero": (Signature(("a", "axis", "keepdims"), frozenset({"a"})), _count_nonzero),
    "isclose": (Signature(_CLOSE, frozenset(_CLOSE)), _close),
    "allclose": (Signature(_CLOSE, frozenset(_CLOSE)), _close),
    "nansum": (Signature(_NAN, frozenset({"a"})), _nan_reduction),
    "nanmean": (Signature(_NAN, frozenset({"a"})), _nan_reduction),
    "nanmax": (Signature(("a", "axis", "out", "keepdims"), frozenset({"a"})), _nan_reduction),
    "nanmin": (Signature(("a", "axis", "out", "keepdims"), frozenset({"a"})), _nan_reduction),
})
