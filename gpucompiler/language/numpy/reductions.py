"""NumPy reductions and products: ``np.sum(x)``, ``x.max()``, ``np.dot(a, b)``, ``a @ b``...

Each call is inferred as a call of its Python implementation in
:mod:`.npimpl` on the array or fused expression, with the result type
NumPy gives (``sum`` of int32 is int64, ``mean`` of ints float64, ``dot``
keeps the common type). Array methods (``a.sum()``, the frontend's
``call_method``) are the NumPy functions of the same name.
"""

from __future__ import annotations

import operator

from llvmlite import ir

from ... import types as T
from ...errors import AxisError, TypeInferenceError
from ...interpreter.lattice import Const, const, pyobj, widen
from ...interpreter.rules import CallResult
from .linalg import linalgimpl as L
from . import npaxes as X, npimpl as I
from .arrayexpr import extents
from .arraymem import Fill, allocate, disown, managed_array
from .npintrinsics import new_array, zeroed_array
from ..python.numbers import base
from ...frontend import intrinsics as K
from .ufuncs import is_arraylike, keyword_call, numpy, scalar_type

_A, _E = T.ArrayType, T.ArrayExpr
_I64 = ir.IntType(64)


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
#: name -> implementations along axis 0 and axis 1 of a 2-d array
_ALONG = {
    "sum": (X.sum0, X.sum1), "prod": (X.prod0, X.prod1), "min": (X.min0, X.min1), "max": (X.max0, X.max1),
    "amin": (X.min0, X.min1), "amax": (X.max0, X.max1), "argmin": (X.argmin0, X.argmin1),
    "argmax": (X.argmax0, X.argmax1), "mean": (X.mean0, X.mean1), "any": (X.any0, X.any1),
    "all": (X.all0, X.all1),
}
#: reductions without an identity: an empty reduced axis is NumPy's ValueError
_NO_IDENTITY = {
    "min": "zero-size array to reduction operation minimum which has no identity",
    "amin": "zero-size array to reduction operation minimum which has no identity",
    "max": "zero-size array to reduction operation maximum which has no identity",
    "amax": "zero-size array to reduction operation maximum which has no identity",
    "argmin": "attempt to get argmin of an empty sequence", "argmax": "attempt to get argmax of an empty sequence",
}


def _constant(name: str, what: str, value, kinds: tuple[type, ...]):
    if value is None:
        return None
    if not isinstance(value, Const) or not isinstance(value.value, kinds):
        raise TypeInferenceError(f"np.{name}(..., {what}=...) must be a constant in compiled code, not a value of "
                                 f"type {widen(value)!r}", (widen(value),),
                                 hint=f"write the {what} as a literal (Numba asks the same)")
    return value.value


def _axis(name: str, ndim: int, kw) -> tuple[int | None, bool]:
    """``(axis, keepdims)``: the axis counted from 0 (None: every element), checked against ``ndim``."""
    allowed = {"axis"} | ({"keepdims"} if name not in ("argmin", "argmax") else set())
    unknown = set(kw) - allowed
    if unknown:
        raise TypeInferenceError(f"np.{name}() keyword argument {sorted(unknown)[0]!r} is not supported in "
                                 "compiled code", hint="the supported keywords are " + " and ".join(sorted(allowed)))
    keepdims = bool(_constant(name, "keepdims", kw.get("keepdims"), (bool, int)))
    axis = _constant(name, "axis", kw.get("axis"), (int, type(None)))
    if axis is None:
        return None, keepdims
    if isinstance(axis, bool) or not -ndim <= axis < ndim:
        raise AxisError(f"axis {axis} is out of bounds for array of dimension {ndim}", hint=f"np.{name}() of a "
                        f"{ndim}-d array takes an axis from {-ndim} to {ndim - 1}" if ndim else "")
    return axis % ndim, keepdims


def _nonempty(cg, name: str, value, t, axis: int | None) -> None:
    """NumPy's ValueError (with the user's line) where a reduction without identity meets no element."""
    shape = extents(cg, value, t)
    count = shape[axis] if axis is not None else ir.Constant(_I64, 1)
    if axis is None:
        for n in shape:
            count = cg.b.mul(count, n)
    cg.check_statement(cg.b.icmp_signed(">", count, ir.Constant(_I64, 0)), "ValueError", _NO_IDENTITY[name])


def _reduction(interp, name: str, args, kw) -> CallResult:
    args, kw = list(args), dict(kw)
    if len(args) == 2 and "axis" not in kw:
        kw["axis"] = args.pop()
    if len(args) != 1 or not is_arraylike(args[0]):
        raise TypeInferenceError(f"np.{name}() takes an array (and axis=) in compiled code",
                                 tuple(widen(a) for a in args))
    x = widen(args[0])
    axis, keepdims = _axis(name, x.ndim, kw)
    if x.ndim not in (1, 2):
        raise TypeInferenceError(f"np.{name}() of a {x.ndim}-d array is not supported in compiled code", (x,),
                                 hint="reduce 1-d and 2-d arrays, or write the loops")
    if axis is not None and x.ndim == 1:
        axis = None  # a 1-d array along its one axis: the reduction of every element
    _, result = _REDUCTIONS[name]
    dt = const(result(x.dtype) if result is not None else x.dtype)
    if axis is None:
        res = _whole(interp, name, x, dt)
    else:
        loop = const(_ALONG[name][axis])
        if name in ("argmin", "argmax"):
            dt = const(x.dtype)  # the loops compare elements; their result holds int64 indices
        res = invoke_impl(interp, f"np.{name}()", I.versioned, [loop, x, dt])
        res = CallResult(res.restype, _lowering(res, [loop, None, dt]))
    if keepdims:
        res = _kept(interp, res, x.ndim, axis, dt)

    def lower(cg, a, at, rt):
        if name in _NO_IDENTITY:
            _nonempty(cg, name, a[0], at[0], axis)
        return returned(cg, cg.call_result(res, [a[0]], [at[0]], rt), rt)
    return CallResult(res.restype, lower)


def returned(cg, value, rt):
    """``value``, the result of a compiled call, as a rule's result: without the reference the call
    gave it (codegen adds the rule result's own)."""
    disown(cg, value, rt)
    return value


def _lowering(res: CallResult, argtypes: list):
    """Lower ``res``, a call whose one run-time argument (the array) is at the ``None`` of ``argtypes``."""
    k = argtypes.index(None)

    def lower(cg, a, at, rt):
        return cg.call_result(res, [a[0] if i == k else None for i in range(len(argtypes))],
                              [at[0] if i == k else t for i, t in enumerate(argtypes)], rt)
    return lower


def _whole(interp, name: str, x, dt) -> CallResult:
    """The reduction of every element of ``x``: a number."""
    impls, _ = _REDUCTIONS[name]
    loop = const(impls[x.ndim])
    res = invoke_impl(interp, f"np.{name}()", I.versioned, [loop, x, dt])
    if name != "mean":
        return CallResult(res.restype, _lowering(res, [loop, None, dt]))
    mean = invoke_impl(interp, "np.mean()", I.mean, [x, dt, widen(res.restype)])

    def lower(cg, a, at, rt):
        total = cg.call_result(res, [None, a[0], None], [loop, at[0], dt], widen(res.restype))
        return cg.call_result(mean, [a[0], None, total], [at[0], dt, widen(res.restype)], rt)
    return CallResult(mean.restype, lower)


def _kept(interp, res: CallResult, ndim: int, axis: int | None, dt) -> CallResult:
    """``keepdims=True``: the reduced axes kept with extent 1."""
    if axis is None:
        keep = X.keep_all1 if ndim == 1 else X.keep_all2
        rdt = const(widen(res.restype))
        kept = invoke_impl(interp, "keepdims", keep, [widen(res.restype), rdt])

        def lower(cg, a, at, rt):
            s = cg.call_result(res, a, at, widen(res.restype))
            return cg.call_result(kept, [s, None], [widen(res.restype), rdt], rt)
        return CallResult(kept.restype, lower)
    kept = invoke_impl(interp, "keepdims", X.keep0 if axis == 0 else X.keep1, [widen(res.restype)])

    def lower_axis(cg, a, at, rt):
        r = cg.call_result(res, a, at, widen(res.restype))
        view = cg.call_result(kept, [r], [widen(res.restype)], rt)
        disown(cg, r, widen(res.restype))  # the view holds the array now
        return view
    return CallResult(kept.restype, lower_axis)


#: (ndim of a, ndim of b) -> the product's implementation
_PRODUCTS = {(1, 1): I.dot11, (2, 2): X.matmul22, (2, 1): X.matmul21, (1, 2): X.matmul12}
#: the products of float32 and float64 through BLAS on the host
_BLAS_PRODUCTS = {X.matmul22: L.matmul22, X.matmul21: L.matmul21, X.matmul12: L.matmul12}


def _shape_text(ndim: int) -> str:
    return "(%lld,)" if ndim == 1 else "(%lld,%lld)"


def _aligned(cg, matmul: bool, a, at, b, bt) -> None:
    """NumPy's ValueError (at the user's line) unless the inner extents of a product agree."""
    sa, sb = extents(cg, a, at), extents(cg, b, bt)
    ok = cg.b.icmp_signed("==", sa[-1], sb[0])
    if matmul:
        cg.check_statement(ok, "ValueError", "matmul: Input operand 1 has a mismatch in its core dimension 0, with "
                           "gufunc signature (n?,k),(k,m?)->(n?,m?) (size %lld is different from %lld)", sb[0], sa[-1])
    else:
        na = len(sa)
        cg.check_statement(ok, "ValueError", f"shapes {_shape_text(na)} and {_shape_text(len(sb))} not aligned: "
                           f"%lld (dim {na - 1}) != %lld (dim 0)", *sa, *sb, sa[-1], sb[0])


def _dot(interp, args, kw=None, matmul: bool = False) -> CallResult:
    what = "a @ b (np.matmul)" if matmul else "np.dot()"
    if kw or len(args) != 2:
        raise TypeInferenceError(f"{what} takes two arrays in compiled code (no out=)")
    a, b = (widen(x) for x in args)
    if not (is_arraylike(a) and is_arraylike(b)):
        raise TypeInferenceError(f"{what} of {a!r} and {b!r} is not supported in compiled code", (a, b),
                                 hint="multiply numbers with *")
    impl = _PRODUCTS.get((a.ndim, b.ndim))
    if impl is None:
        raise TypeInferenceError(f"{what} of a {a.ndim}-d and a {b.ndim}-d array is not supported in compiled "
                                 "code", (a, b), hint="multiply 1-d and 2-d arrays, or write the loops")
    dt = const(scalar_type(numpy().result_type(numpy().dtype(a.dtype.name), numpy().dtype(b.dtype.name))))
    extra = []
    if dt.value in (T.float32, T.float64) and impl in _BLAS_PRODUCTS and not interp.target.is_gpu:
        impl = _BLAS_PRODUCTS[impl]  # the host's BLAS (linalgimpl.py)
    elif impl is X.matmul22 and not (isinstance(b, _A) and b.layout == "C"):
        impl, extra = X.matmul22_packed, [const(b.dtype)]
    res = invoke_impl(interp, what, impl, [a, b, dt, *extra])

    def lower(cg, v, at, rt):
        _aligned(cg, matmul, v[0], at[0], v[1], at[1])
        value = cg.call_result(res, [v[0], v[1], None, *(None for _ in extra)], [at[0], at[1], dt, *extra], rt)
        return returned(cg, value, rt)
    return CallResult(res.restype, lower)


def _numpy_call(interp, fn, args, kw) -> CallResult | None:
    if fn is operator.matmul and len(args) == 2:
        return _dot(interp, args, kw, matmul=True)
    if getattr(fn, "__module__", None) != "numpy":
        return None
    name = getattr(fn, "__name__", "")
    if name in _REDUCTIONS and fn is getattr(numpy(), name, None):
        return _reduction(interp, name, args, kw)
    if name == "dot" and fn is numpy().dot:
        return _dot(interp, args, kw)
    if name == "matmul" and fn is numpy().matmul:
        return _dot(interp, args, kw, matmul=True)
    return None


def _method(interp, args, kw=None) -> CallResult | None:
    """``x.sum()`` and the other methods of arrays and expressions: ``np.sum(x)``."""
    x, name, rest = args[0], args[1], args[2:]
    if not (is_arraylike(x) and isinstance(name, Const) and name.value in METHODS):
        return None
    res = _numpy_call(interp, getattr(numpy(), name.value), [x, *rest], kw or {})
    if res is None:
        return None
    return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, [a[0], *a[2:]], [at[0], *at[2:]], rt))


@base.handler
def _numpy_reductions(interp, fn, args):
    """``np.sum`` and the other reductions, ``np.dot``, ``a @ b``, and the array methods."""
    if fn is K.call_method:
        return _method(interp, args)
    if fn is K.call_kw:
        return keyword_call(args, lambda f, pos, kw: _method(interp, pos, kw) if f is K.call_method
                            else _numpy_call(interp, f, pos, kw))
    return _numpy_call(interp, fn, args, {})


__all__ = ["METHODS"]


@base.handler
def _new_array(interp, fn, args):
    """The implementations' arrays: ``new_array(shape, dt)`` and ``zeroed_array(shape, dt)``."""
    if fn is not new_array and fn is not zeroed_array:
        return None
    shape, dt = args
    if interp.target.is_gpu:
        raise TypeInferenceError("this NumPy function makes a new array, which kernels on the GPU cannot do",
                                 hint="allocate the result on the host, pass it in and write the loops")
    rank = len(widen(shape).items)
    fill = Fill.ZERO if fn is zeroed_array else Fill.UNINITIALIZED

    def lower(cg, a, at, rt):
        if isinstance(at[0], Const):
            dims = [ir.Constant(_I64, n) for n in at[0].value]
        else:
            dims = [cg.cast(cg.b.extract_value(a[0], k), it, T.int64) for k, it in enumerate(widen(at[0]).items)]
        return allocate(cg, dt.value, dims, fill)
    return CallResult(managed_array(dt.value, rank), lower)
