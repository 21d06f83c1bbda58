"""``a.astype(dtype)`` and ``np.clip`` / ``a.clip``.

``astype`` makes a new array in NumPy's default order ``K`` (an F-ordered
array gives F order, see :mod:`.orders`), converted element by element
(float to int truncates; NaN and values out of int64's range raise, where
NumPy writes an undefined value); ``copy=False`` of the same dtype is the
array itself, as NumPy's. A complex array to a real dtype is refused (NumPy
drops the imaginary part with a warning). ``np.clip(a, lo, hi)`` is
``np.minimum(np.maximum(a, lo), hi)``, as NumPy computes it for every dtype
(NaN propagates, ``lo > hi`` gives ``hi``, the result dtype is NumPy's):
compiled Python over the ufuncs, so the Enzyme plugin differentiates it.
"""

from __future__ import annotations

from llvmlite import ir

from ... import types as T
from ...errors import TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, const, widen
from ...interpreter.rules import CallResult
from . import arraymem as mem, orders
from .npdtypes import dtype_of, numpy_function
from ..python.numbers import base
from .orders import Order
from .reductions import invoke_impl, returned
from .ufuncs import keyword_call, numpy
from .npstatsimpl import flat
from .views import copy_into

_A = T.ArrayType


def _flag(what: str, value, default: bool) -> bool:
    if value is None:
        return default
    if not (isinstance(value, Const) and isinstance(value.value, (bool, int))):
        raise TypeInferenceError(f"{what}= must be a constant True or False in compiled code, not a value of type "
                                 f"{widen(value)!r}", (widen(value),))
    return bool(value.value)


def _astype(interp, pos, kw) -> CallResult:
    a, rest = widen(pos[0]), pos[2:]
    unknown = set(kw) - {"dtype", "copy"}
    if unknown:
        raise TypeInferenceError(f"a.astype() keyword argument {sorted(unknown)[0]!r} is not supported in compiled "
                                 "code", hint="the supported keywords are dtype and copy (order is NumPy's 'K')")
    if len(rest) + ("dtype" in kw) != 1 or len(rest) > 1:
        raise TypeInferenceError("a.astype() takes one dtype in compiled code", (a,))
    dt = dtype_of(rest[0] if rest else kw["dtype"], "astype's dtype")
    copy = _flag("copy", kw.get("copy"), True)
    if a.dtype.kind == "c" and dt.kind != "c":
        raise TypeInferenceError(f"a.astype({dt.name}) of a complex array would drop the imaginary part "
                                 "(NumPy warns and drops it)", (a,), hint=f"write a.real.astype({dt.name}) "
                                 "or np.abs(a).astype(...)")
    if not copy and dt == a.dtype:
        @mem.returns_view
        def same(cg, v, at, rt):
            return v[0]
        return CallResult(a, same)
    if interp.target.is_gpu:
        raise TypeInferenceError("a.astype() makes a new array, which kernels on the GPU cannot do",
                                 hint="allocate the result on the host, pass it in and convert in a loop")
    if isinstance(a, T.ArrayExpr):
        if a.ndim not in (1, 2):
            raise TypeInferenceError(f"astype() of a {a.ndim}-d expression is not supported in compiled code", (a,),
                                     hint="evaluate it into an array first")
        res = invoke_impl(interp, "astype()", cast_expression, [pos[0], const(dt)])
        return CallResult(res.restype, lambda cg, v, at, rt: returned(
            cg, cg.call_result(res, [v[0], None], [at[0], const(dt)], rt), rt))
    rt = mem.managed_array(dt, a.ndim, orders.layout(Order.K, a.ndim, a))

    def lower(cg, v, at, rt):
        shape = [cg.b.extract_value(v[0], [1, k]) for k in range(a.ndim)]
        out = mem.allocate(cg, dt, shape)
        if rt.layout != "C":
            strides = orders.strides(cg, Order.K, shape, dt.itemsize, (v[0], a))
            out = mem.build_array(cg, rt, cg.b.extract_value(out, 0), shape, strides, cg.b.extract_value(out, 3))
        copy_into(cg, v[0], a, out, rt)
        return out
    return CallResult(rt, lower)


def cast_expression(x, dt):
    """``x.astype(dt)`` of a fused expression: its elements converted into a new C-ordered array."""
    return flat(x, dt).reshape(x.shape)


# -- clip: compiled Python over np.minimum / np.maximum (passed in: no NumPy import at start-up) ------
def clip_both(a, lo, hi, mn, mx):
    return mn(mx(a, lo), hi)


def clip_low(a, lo, hi, mn, mx):
    return mx(a, lo)


def clip_high(a, lo, hi, mn, mx):
    return mn(a, hi)


def clip_none(a, lo, hi, mn, mx):
    return mn(a, a)  # a new array of a's values (NaN and -0.0 kept)


def _absent(v) -> bool:
    return v is None or (isinstance(v, Const) and v.value is None)


def _bound(a, v):
    """A constant integer bound outside an integer array's dtype clamped into it (NumPy's clip compares
    Python integers by value; np.maximum would refuse them)."""
    t = widen(a)
    if not (isinstance(t, (_A, T.ArrayExpr)) and t.dtype.kind in "iu" and isinstance(v, Const)
            and type(v.value) is int):
        return v
    info = numpy().iinfo(t.dtype.name)
    return const(min(max(v.value, int(info.min)), int(info.max)))


def _constant(cg, c):
    """The run-time value of a constant bound made here (a clamped integer); None for ``None``."""
    return None if c.value is None else ir.Constant(cg.ll(widen(c)), c.value)


def _clip(interp, values: list, kwnames: tuple) -> tuple:
    """``(result, lower)`` of ``np.clip`` of ``values``: the positional arguments, then those of
    ``kwnames``; ``lower`` gets the values of all of them, in that order."""
    names = ("a", "a_min", "a_max")
    npos = len(values) - len(kwnames)
    if npos > 3:
        raise TypeInferenceError("np.clip() takes an array and two bounds in compiled code (no out=)")
    slot = {n: k for k, n in enumerate(names[:npos])}
    for k, name in enumerate(kwnames):
        key = {"min": "a_min", "max": "a_max"}.get(name, name)
        if key not in names or key in slot:
            raise TypeInferenceError(f"np.clip() keyword argument {name!r} is not supported in compiled code",
                                     hint="pass a, a_min and a_max (or min=, max=); out= is not supported")
        slot[key] = npos + k
    if "a" not in slot:
        raise TypeInferenceError("np.clip() takes an array")
    given = [values[slot[n]] if n in slot else None for n in names]
    absent = [_absent(g) for g in given]
    impl = {(False, False): clip_both, (False, True): clip_low, (True, False): clip_high,
            (True, True): clip_none}[(absent[1], absent[2])]
    args = [given[0]] + [const(None) if absent[i] else _bound(given[0], given[i]) for i in (1, 2)]
    fns = [const(numpy().minimum), const(numpy().maximum)]
    res = invoke_impl(interp, "np.clip()", impl, [*args, *fns])
    runtime = [None if absent[i] or args[i] is not given[i] else slot[n] for i, n in enumerate(names)]

    def lower(cg, v, at, rt):
        vals = [v[k] if k is not None else _constant(cg, args[i]) for i, k in enumerate(runtime)]
        types = [at[k] if k is not None else args[i] for i, k in enumerate(runtime)]
        return returned(cg, cg.call_result(res, [*vals, None, None], [*types, *fns], rt), rt)
    return res.restype, lower


def _method(interp, fn, args) -> CallResult | None:
    """``a.astype(...)``, ``a.clip(...)`` and ``np.clip(...)``, with keywords or without."""
    if fn is K.call_kw:
        callee, names = args[0], args[1]
        if not (isinstance(callee, Const) and isinstance(names, Const)):
            return None
        if callee.value is K.call_method and len(args) > 3 and _named(args[2], args[3], "clip"):
            rt, lower = _clip(interp, [args[2], *args[4:]], names.value)
            return CallResult(rt, lambda cg, a, at, rt: lower(cg, [a[2], *a[4:]], [at[2], *at[4:]], rt))
        if numpy_function(callee.value) == "clip" and callee.value is numpy().clip:
            rt, lower = _clip(interp, list(args[2:]), names.value)
            return CallResult(rt, lambda cg, a, at, rt: lower(cg, a[2:], at[2:], rt))
        return keyword_call(args, lambda f, pos, kw: _astype(interp, pos, kw)
                            if f is K.call_method and _named(pos[0], pos[1], "astype") else None)
    if fn is K.call_method and _named(args[0], args[1], "clip"):
        rt, lower = _clip(interp, [args[0], *args[2:]], ())
        return CallResult(rt, lambda cg, a, at, rt: lower(cg, [a[0], *a[2:]], [at[0], *at[2:]], rt))
    if fn is K.call_method and _named(args[0], args[1], "astype"):
        return _astype(interp, args, {})
    if numpy_function(fn) == "clip" and fn is numpy().clip:
        return CallResult(*_clip(interp, list(args), ()))
    return None


def _named(receiver, name, wanted: str) -> bool:
    arrays = (_A, T.ArrayExpr) if wanted == "astype" else (_A,)
    return isinstance(widen(receiver), arrays) and isinstance(name, Const) and name.value == wanted


base.handler(_method)
