"""NumPy reductions and products: ``np.sum(x)``, ``x.max()``, ``np.dot(a, b)``, ``a @ b``...

Each call is inferred as a call of its Python implementation in
:mod:`.npimpl` on the array or fused expression, with the result type
NumPy gives (``sum`` of int32 is int64, ``mean`` of ints float64, ``dot``
keeps the common type). Array methods (``a.sum()``, the frontend's
``call_method``) are the NumPy functions of the same name.
"""

from __future__ import annotations

import operator

from ... import types as T
from ...errors import TypeInferenceError
from ..lattice import Const, const, pyobj, widen
from ..rules import CallResult
from . import npimpl as I
from .numbers import base
from ...frontend import intrinsics as K
from .ufuncs import is_arraylike, keyword_call, numpy, scalar_type

_A, _E = T.ArrayType, T.ArrayExpr


def _sum_type(d: T.Scalar) -> T.Scalar:
    """NumPy's accumulator: the default integer for bools and signed ints, uint64 for unsigned ones."""
    return {"b": T.int64, "i": T.int64, "u": T.uint64}.get(d.kind, d)


def _mean_type(d: T.Scalar) -> T.Scalar:
    return T.float64 if d.kind in "biu" else d


def invoke_impl(interp, what: str, fn, args) -> CallResult:
    """Infer the implementation ``fn`` on ``args``; its errors are reported at the user's call
    (the implementation's own lines mean nothing to the user)."""
    try:
        return interp.invoke(fn, args)
    except TypeInferenceError as exc:
        raise TypeInferenceError(f"{what} of {', '.join(repr(widen(a)) for a in args if widen(a) != pyobj)} is not "
                                 f"supported in compiled code ({exc.message})", exc.types) from None


#: name -> (implementations by ndim, result type of the dtype (None: the element's))
_REDUCTIONS = {
    "sum": ({1: I.sum1, 2: I.sum2}, _sum_type), "prod": ({1: I.prod1, 2: I.prod2}, _sum_type),
    "min": ({1: I.min1, 2: I.min2}, None), "max": ({1: I.max1, 2: I.max2}, None),
    "amin": ({1: I.min1, 2: I.min2}, None), "amax": ({1: I.max1, 2: I.max2}, None),
    "argmin": ({1: I.argmin1, 2: I.argmin2}, lambda d: T.int64),
    "argmax": ({1: I.argmax1, 2: I.argmax2}, lambda d: T.int64),
    "any": ({1: I.any1, 2: I.any2}, lambda d: T.boolean), "all": ({1: I.all1, 2: I.all2}, lambda d: T.boolean),
    "mean": ({1: I.sum1, 2: I.sum2}, _mean_type),
}
#: array methods: name -> the NumPy function called with the array first
METHODS = ("sum", "prod", "min", "max", "mean", "argmin", "argmax", "any", "all", "dot")


def _axis(name: str, x, kw) -> None:
    unknown = set(kw) - {"axis"}
    if unknown:
        raise TypeInferenceError(f"np.{name}() keyword argument {sorted(unknown)[0]!r} is not supported in "
                                 "compiled code", hint="the supported keyword is axis")
    axis = kw.get("axis")
    if axis is None or (isinstance(axis, Const) and axis.value is None):
        return
    raise TypeInferenceError(f"np.{name}(..., axis=...) is not supported in compiled code yet",
                             hint="reduce with a loop over the other axis")


def _reduction(interp, name: str, args, kw) -> CallResult:
    args, kw = list(args), dict(kw)
    if len(args) == 2 and "axis" not in kw:
        kw["axis"] = args.pop()
    if len(args) != 1 or not is_arraylike(args[0]):
        raise TypeInferenceError(f"np.{name}() takes an array (and axis=) in compiled code",
                                 tuple(widen(a) for a in args))
    x = args[0]
    _axis(name, x, kw)
    impls, result = _REDUCTIONS[name]
    impl = impls.get(widen(x).ndim)
    if impl is None:
        raise TypeInferenceError(f"np.{name}() of a {widen(x).ndim}-d array is not supported in compiled code",
                                 (widen(x),), hint="reduce 1-d and 2-d arrays, or write the loops")
    dtype = widen(x).dtype
    dt = const(result(dtype) if result is not None else dtype)
    loop = const(impl)
    res = invoke_impl(interp, f"np.{name}()", I.versioned, [loop, widen(x), dt])
    if name != "mean":
        return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, [None, a[0], None],
                                                                            [loop, at[0], dt], rt))
    mean = invoke_impl(interp, "np.mean()", I.mean, [widen(x), dt, widen(res.restype)])

    def lower(cg, a, at, rt):
        total = cg.call_result(res, [None, a[0], None], [loop, at[0], dt], widen(res.restype))
        return cg.call_result(mean, [a[0], None, total], [at[0], dt, widen(res.restype)], rt)
    return CallResult(mean.restype, lower)


def _dot(interp, args, kw=None) -> CallResult:
    if kw or len(args) != 2:
        raise TypeInferenceError("np.dot() takes two arrays in compiled code (no out=)")
    a, b = (widen(x) for x in args)
    if not (is_arraylike(a) and is_arraylike(b)):
        raise TypeInferenceError(f"np.dot() of {a!r} and {b!r} is not supported in compiled code", (a, b),
                                 hint="multiply numbers with *")
    if (a.ndim, b.ndim) != (1, 1):
        raise TypeInferenceError(f"np.dot() / @ of a {a.ndim}-d and a {b.ndim}-d array is not supported in "
                                 "compiled code yet", (a, b), hint="write the loops over a 1-d dot")
    dt = const(scalar_type(numpy().result_type(numpy().dtype(a.dtype.name), numpy().dtype(b.dtype.name))))
    loop = const(I.dot11)
    res = invoke_impl(interp, "np.dot()", I.versioned2, [loop, a, b, dt])
    return CallResult(res.restype, lambda cg, v, at, rt: cg.call_result(res, [None, v[0], v[1], None],
                                                                        [loop, at[0], at[1], dt], rt))


def _numpy_call(interp, fn, args, kw) -> CallResult | None:
    if fn is operator.matmul and len(args) == 2:
        return _dot(interp, args, kw)
    if getattr(fn, "__module__", None) != "numpy":
        return None
    name = getattr(fn, "__name__", "")
    if name in _REDUCTIONS and fn is getattr(numpy(), name, None):
        return _reduction(interp, name, args, kw)
    if name == "dot" and fn is numpy().dot:
        return _dot(interp, args, kw)
    return None


def _method(interp, args) -> CallResult | None:
    """``x.sum()`` and the other methods of arrays and expressions: ``np.sum(x)``."""
    x, name, rest = args[0], args[1], args[2:]
    if not (is_arraylike(x) and isinstance(name, Const) and name.value in METHODS):
        return None
    res = _numpy_call(interp, getattr(numpy(), name.value), [x, *rest], {})
    if res is None:
        return None
    return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, [a[0], *a[2:]], [at[0], *at[2:]], rt))


@base.handler
def _numpy_reductions(interp, fn, args):
    """``np.sum`` and the other reductions, ``np.dot``, ``a @ b``, and the array methods."""
    if fn is K.call_method:
        return _method(interp, args)
    if fn is K.call_kw:
        return keyword_call(args, lambda f, pos, kw: _numpy_call(interp, f, pos, kw))
    return _numpy_call(interp, fn, args, {})


__all__ = ["METHODS"]
