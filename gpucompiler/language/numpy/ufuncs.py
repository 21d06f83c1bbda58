"""NumPy ufuncs and the operators on arrays: fused elementwise expressions.

A ufunc (``np.sin``, ``np.add``...) or an operator with an array operand
does not compute anything where it is called: its value is an
:class:`~gpucompiler.types.ArrayExpr`, a tree of scalar operations over its
leaves (arrays and scalars) that is evaluated element by element where it is
consumed (assigned into an array, reduced, bound to a name), so ``a * b +
np.sin(c)`` is one loop with no temporary arrays. On scalars alone a ufunc
computes its scalar result at once.

Result and loop types are NumPy's own (``ufunc.resolve_dtypes``, with
``int64``/``float64``/``bool`` scalars as Python's weak scalars); each node's
scalar operation is the compiler's scalar rule for it (``math.sin``,
``operator.add``, a GPU target's overlay of them) or a helper of
:mod:`.npscalar`, with NumPy's error behaviour: no math errors, IEEE results.
"""

from __future__ import annotations

from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
import functools
from ...pristine import math  # as imported (pristine.py: the rules key on its functions)
import operator
from typing import Any

from llvmlite import ir

from ... import types as T
from ...core.mathfns import MATH_FUNCTIONS
from ...errors import TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, widen
from ...interpreter.rules import CallResult
from . import arraymem as mem, npscalar as S
from ..python.numbers import base

_A, _E = T.ArrayType, T.ArrayExpr

#: ufunc name -> its scalar function (of the loop's input types)
_SCALAR: dict[str, Any] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv,
    "true_divide": operator.truediv, "power": operator.pow, "negative": operator.neg,
    "positive": operator.pos, "absolute": builtins.abs, "fabs": builtins.abs, "less": operator.lt, "less_equal": operator.le,
    "greater": operator.gt, "greater_equal": operator.ge, "equal": operator.eq, "not_equal": operator.ne,
    "bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
    "invert": operator.invert, "left_shift": operator.lshift, "right_shift": operator.rshift,
    "isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite,
    "maximum": S.maximum, "minimum": S.minimum, "fmax": S.fmax, "fmin": S.fmin,
    "floor": S.floor, "ceil": S.ceil, "trunc": S.trunc, "rint": S.rint, "square": S.square, "sign": S.sign,
    "logical_and": S.logical_and, "logical_or": S.logical_or, "logical_xor": S.logical_xor,
    "logical_not": S.logical_not,
}
for _f in MATH_FUNCTIONS:  # the math functions with a ufunc (math.exp2 and math.cbrt are new in Python 3.11)
    if _f.numpy is not None and _f.python is not None and hasattr(math, _f.python):
        _SCALAR[_f.numpy] = getattr(math, _f.python)
#: ufuncs whose scalar function depends on the loop's kind (integer or float)
_BY_KIND: dict[str, tuple[Any, Any]] = {
    "floor_divide": (S.int_floor_divide, S.float_floor_divide),
    "remainder": (S.int_remainder, S.float_remainder), "mod": (S.int_remainder, S.float_remainder),
    "fmod": (S.int_fmod, K.fmod_ieee),
}
#: ufuncs whose NumPy loop on bools is not Python's operator on bools (``~True`` is -2, NumPy's is False)
_ON_BOOLS: dict[str, Any] = {"invert": S.logical_not}
#: ufuncs whose NumPy loop on complex numbers is not CPython's operator (a zero divisor gives inf/NaN)
_ON_COMPLEX: dict[str, Any] = {"true_divide": S.complex_true_divide, "divide": S.complex_true_divide}
#: operators (and builtins) on arrays -> the ufunc NumPy calls for them
OPERATOR_UFUNCS: dict[Any, str] = {
    operator.add: "add", operator.sub: "subtract", operator.mul: "multiply", operator.truediv: "true_divide",
    operator.floordiv: "floor_divide", operator.mod: "remainder", operator.pow: "power",
    operator.neg: "negative", operator.pos: "positive", builtins.abs: "absolute", operator.lt: "less",
    operator.le: "less_equal", operator.gt: "greater", operator.ge: "greater_equal", operator.eq: "equal",
    operator.ne: "not_equal", operator.and_: "bitwise_and", operator.or_: "bitwise_or",
    operator.xor: "bitwise_xor", operator.invert: "invert", operator.lshift: "left_shift",
    operator.rshift: "right_shift",
}
#: elementwise functions that are not ufuncs: name -> (number of arguments, scalar function)
_ELEMENTWISE = {"where": (3, S.where)}
#: Python scalars next to arrays take NumPy's weak types (NEP 50); a bool is NumPy's bool, the lowest type
#: (NumPy's resolver refuses the class ``bool``: ``a + True`` was a type error)
_WEAK = {T.int64: int, T.float64: float, T.complex128: complex}


def numpy():
    """NumPy, imported when a NumPy function or an array is compiled (its import costs ~240 ms)."""
    import numpy as np
    return np


def is_arraylike(t) -> bool:
    return isinstance(widen(t), (_A, _E))


def keyword_call(args, claim) -> CallResult | None:
    """``call_kw(fn, names, *args)`` (``fn(..., name=v)``) as ``claim(fn, positional, {name: v})``;
    its lowering gets the positional arguments only (keyword values are compile-time choices)."""
    callee, names = args[0], args[1]
    if not (isinstance(callee, Const) and isinstance(names, Const)):
        return None
    n = len(names.value)
    positional = list(args[2:len(args) - n])
    res = claim(callee.value, positional, dict(zip(names.value, args[len(args) - n:])))
    if res is None:
        return None
    end = 2 + len(positional)
    return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, a[2:end], at[2:end], rt))


def scalar_type(dtype) -> T.Scalar:
    t = T.SCALARS.get(str(dtype))
    if t is None:
        raise TypeInferenceError(f"arrays of dtype {dtype} are not supported in compiled code")
    return t


# -- typing ------------------------------------------------------------------
def _operand(a) -> tuple[tuple, Any, T.Scalar, int]:
    """``(leaves, tree, dtype, ndim)`` of an operand."""
    w = widen(a)
    if isinstance(w, _E):
        return w.leaves, w.tree, w.dtype, w.ndim
    if isinstance(w, _A):
        return (w,), 0, w.dtype, w.ndim
    if isinstance(w, T.Scalar):
        return (w,), 0, w, 0
    raise TypeInferenceError(f"NumPy functions take arrays and numbers, not {w!r}", (w,))


def _shift(tree, by: int):
    if isinstance(tree, int):
        return tree + by
    op, intypes, dtype, kids = tree
    return (op, intypes, dtype, tuple(_shift(k, by) for k in kids))


def _loop_types(ufunc, operands) -> tuple[tuple[T.Scalar, ...], T.Scalar]:
    """NumPy's loop input types and result type of ``ufunc`` on ``operands`` (``_operand`` tuples)."""
    arrays = any(nd > 0 for _, _, _, nd in operands)
    key = tuple(_WEAK[dt] if arrays and nd == 0 and dt in _WEAK else dt.name
                for _, _, dt, nd in operands)
    return _resolve(ufunc, key)


@functools.lru_cache(maxsize=1024)
def _resolve(ufunc, key):
    np = numpy()
    spec = tuple(np.dtype(k) if isinstance(k, str) else k for k in key)
    try:
        found = ufunc.resolve_dtypes(spec + (None,) * ufunc.nout)
    except (TypeError, ValueError) as exc:  # NumPy's own message: no loop for these types
        raise TypeInferenceError(f"np.{ufunc.__name__} of {', '.join(map(str, key))}: {exc}") from None
    return tuple(scalar_type(d) for d in found[:ufunc.nin]), scalar_type(found[ufunc.nin])


def scalar_function(name: str, intypes) -> Any:
    if intypes[0] == T.boolean and name in _ON_BOOLS:
        return _ON_BOOLS[name]
    if intypes[0].kind == "c" and name in _ON_COMPLEX:
        return _ON_COMPLEX[name]
    kinds = _BY_KIND.get(name)
    if kinds is not None:
        return kinds[intypes[0].kind == "f"]
    return _SCALAR.get(name)


def elementwise_type(interp, name: str, fn, operands, intypes, dtype):
    """The value of the elementwise ``fn`` (a scalar function) on ``operands``: its ArrayExpr, or
    the scalar ``dtype`` when every operand is a scalar. The scalar call is inferred now."""
    if interp.abstract_call(fn, list(intypes)) is None:
        shown = ", ".join(map(repr, intypes))
        raise TypeInferenceError(f"np.{name} has no compiled implementation for {shown}", tuple(intypes))
    leaves, kids = [], []
    for lv, tree, _, _ in operands:
        kids.append(_shift(tree, len(leaves)))
        leaves += lv
    ndim = max(nd for _, _, _, nd in operands)
    return _E(dtype, ndim, tuple(leaves), (fn, tuple(intypes), dtype, tuple(kids)))


#: comparisons: NumPy 2 compares a Python int with an integer array exactly, whatever the array's type
_COMPARISONS = frozenset({"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"})


def _python_ints(operands, intypes) -> list[tuple[int, T.Scalar]]:
    """``(k, loop type)`` of each Python int (an int64 scalar next to arrays, NEP 50's weak int) that
    NumPy converts to a narrower integer loop type: out of its range, NumPy's ``OverflowError``."""
    if not any(nd > 0 for _, _, _, nd in operands):
        return []
    return [(k, it) for k, ((_, _, dt, nd), it) in enumerate(zip(operands, intypes))
            if nd == 0 and dt == T.int64 and it.kind in "iu" and it != T.int64]


def _ufunc_call(interp, ufunc, args, kw=None):
    if kw:
        raise TypeInferenceError(f"np.{ufunc.__name__}() keyword arguments {', '.join(kw)} are not supported in "
                                 "compiled code", hint="assign the result into an array: out[:] = np.f(x)")
    if len(args) != ufunc.nin:
        raise TypeInferenceError(f"np.{ufunc.__name__}() takes {ufunc.nin} arguments, got {len(args)}")
    operands = [_operand(a) for a in args]
    intypes, dtype = _loop_types(ufunc, operands)
    narrowed = _python_ints(operands, intypes)
    if narrowed and ufunc.__name__ in _COMPARISONS:  # the int keeps its value: the scalar rule compares exactly
        intypes = tuple(T.int64 if any(k == j for j, _ in narrowed) else it for k, it in enumerate(intypes))
        narrowed = []
    fn = scalar_function(ufunc.__name__, intypes)
    if fn is None:
        raise TypeInferenceError(f"np.{ufunc.__name__} is not supported in compiled code",
                                 hint="write the loop over the elements")
    result = _result(elementwise_type(interp, ufunc.__name__, fn, operands, intypes, dtype))
    if not narrowed:
        return result
    checks = [(k, *_int_range(it), it) for k, it in narrowed]
    inner = result.lower
    assert inner is not None, "an elementwise result has a lowering"

    def lower(cg, vals, argtypes, rt):
        for k, lo, hi, it in checks:
            v = vals[k]
            fits = cg.b.and_(cg.b.icmp_signed(">=", v, ir.Constant(v.type, lo)),
                             cg.b.icmp_signed("<=", v, ir.Constant(v.type, hi)))
            cg.check_required(fits, "OverflowError", f"Python integer %lld out of bounds for {it}", v)
        return inner(cg, vals, argtypes, rt)
    return CallResult(result.restype, lower)


def _int_range(t: T.Scalar) -> tuple[int, int]:
    """The values of integer type ``t`` that an int64 holds."""
    if t.kind == "u":
        return 0, min((1 << t.bits) - 1, (1 << 63) - 1)
    return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1


def _where_call(interp, args, kw=None):
    if len(args) == 1 and not kw:
        return None  # np.where(c) is np.nonzero(c): npnonzero.py
    if kw or len(args) != 3:
        raise TypeInferenceError("np.where() takes (condition, x, y) or (condition) in compiled code")
    np = numpy()
    operands = [_operand(a) for a in args]
    arrays = any(o[3] > 0 for o in operands)
    # a Python number next to arrays is weak (NEP 50): given to ``result_type`` as a value (the class
    # ``int`` would mean int64: ``np.where(c, float32_array, 0)`` is float32)
    pair = [_WEAK[o[2]](0) if arrays and o[3] == 0 and o[2] in _WEAK else np.dtype(o[2].name)
            for o in operands[1:]]
    dtype = scalar_type(np.result_type(*pair))
    return _result(elementwise_type(interp, "where", S.where, operands, (T.boolean, dtype, dtype), dtype))


def _result(expr: T.ArrayExpr) -> CallResult:
    """An array operand: the lazy expression (its value packs the leaves); scalars only: the value now."""
    if expr.ndim:
        return CallResult(expr, _pack)
    return CallResult(expr.dtype, lambda cg, vals, argtypes, rt: evaluate(cg, expr, _elements(cg, vals, argtypes)))


def _elements(cg, vals, argtypes):
    """The operands' numbers: a 0-d array's one element (NumPy computes ``a0 * 2`` on it), scalars as they are."""
    out = []
    for v, t in zip(vals, argtypes):
        w = widen(t)
        out.append(cg.load_scalar(mem.element_pointer(cg, v, [], w), w.dtype) if isinstance(w, _A) else v)
    return out


def _pack(cg, args, argtypes, rt):
    """An ArrayExpr's value: the struct of its leaves (the operands' leaves, in order)."""
    leaves = []
    for v, t in zip(args, argtypes):
        w = widen(t)
        if isinstance(w, _E):
            leaves += [cg.b.extract_value(v, k) for k in range(len(w.leaves))]
        else:
            leaves.append(v)
    value = ir.Constant(cg.ll(rt), ir.Undefined)
    for k, v in enumerate(leaves):
        value = cg.b.insert_value(value, v, k)
    return value


# -- evaluation ----------------------------------------------------------------
def evaluate(cg, expr: T.ArrayExpr, leaf_values):
    """The scalar value of ``expr``'s tree given its leaves' element values (NumPy's errors: none)."""
    mod = cg.mod
    saved, mod.math_errors = mod.math_errors, False
    try:
        return _node(cg, expr.tree, expr.leaves, leaf_values)[0]
    finally:
        mod.math_errors = saved


def _node(cg, tree, leaves, values):
    if isinstance(tree, int):
        return values[tree], leaves[tree] if isinstance(leaves[tree], T.Scalar) else leaves[tree].dtype
    fn, intypes, dtype, kids = tree
    xs = []
    for kid, it in zip(kids, intypes):
        v, t = _node(cg, kid, leaves, values)
        xs.append(cg.cast(v, t, it))
    res = cg.mod.interp.abstract_call(fn, list(intypes))
    rt = widen(res.restype)
    return cg.cast(cg.call_result(res, xs, list(intypes), rt), rt, dtype), dtype


def _fast_power(base, exponent) -> str | None:
    """The ufunc NumPy's ``ndarray.__pow__`` calls for a constant exponent instead of ``power``
    (``a ** 2`` is ``np.square(a)``, ``a ** 0.5`` of floats ``np.sqrt(a)``), or None."""
    if not isinstance(exponent, Const) or type(exponent.value) not in (int, float):
        return None
    kind = widen(base).dtype.kind
    if exponent.value == 2 and (kind in "fc" or (kind in "iu" and type(exponent.value) is int)):
        return "square"  # (an integer array ** 2.0 is float64: power)
    return "sqrt" if exponent.value == 0.5 and kind in "fc" else None


def elementwise_call(interp, fn, args, kw=None) -> CallResult | None:
    """ufuncs, ``np.where``, and the operators (and ``abs``) with an array operand; else None."""
    if type(fn).__name__ == "ufunc" and fn.__name__ != "matmul":  # not elementwise: a product (reductions.py)
        return _ufunc_call(interp, fn, args, kw)
    name = OPERATOR_UFUNCS.get(fn)
    if name is not None and any(is_arraylike(a) for a in args):
        if fn is operator.pow and is_arraylike(args[0]) and not kw:
            fast = _fast_power(args[0], args[1])
            if fast is not None:  # NumPy's own ndarray ** of these constants: no pow per element
                res = _ufunc_call(interp, getattr(numpy(), fast), args[:1])
                return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(res, a[:1], at[:1], rt))
        return _ufunc_call(interp, getattr(numpy(), name), args, kw)
    if fn is builtins.bool and args and is_arraylike(args[0]):
        raise TypeInferenceError("the truth value of an array is ambiguous",
                                 hint="use np.any(a) or np.all(a), or compare elements")
    if getattr(fn, "__name__", "") in _ELEMENTWISE and getattr(fn, "__module__", "") == "numpy":
        return _where_call(interp, args, kw)
    if getattr(fn, "__name__", "") in ("round", "around") and getattr(fn, "__module__", "") == "numpy":
        return _round_call(interp, args, kw)
    return None


def _round_call(interp, args, kw) -> CallResult:
    """``np.round(x, decimals)`` of floats as NumPy computes it: ``np.rint`` (half to even) of ``x`` scaled
    by ``10 ** decimals``, scaled back (a constant ``decimals`` of either sign). Integers are refused."""
    decimals = (kw or {}).get("decimals", args[1] if len(args) > 1 else Const(0, T.int64))
    x = widen(args[0]) if args else None
    dtype = x.dtype if isinstance(x, (_A, _E)) else x
    if (len(args) + len(kw or {}) not in (1, 2) or not isinstance(decimals, Const) or type(decimals.value) is not int
            or not isinstance(dtype, T.Scalar) or dtype.kind != "f"):
        raise TypeInferenceError("np.round() is supported in compiled code for floats and a constant decimals",
                                 hint="np.rint(x) rounds to the nearest integer (ties to even)")
    d = decimals.value
    if d == 0:
        return _ufunc_call(interp, numpy().rint, args[:1])
    np_ = numpy()
    factor = Const(float(10 ** abs(d)), T.float64)
    scale, unscale = (np_.multiply, np_.true_divide) if d > 0 else (np_.true_divide, np_.multiply)
    scaled = _ufunc_call(interp, scale, [args[0], factor])
    rounded = _ufunc_call(interp, np_.rint, [scaled.restype])
    back = _ufunc_call(interp, unscale, [rounded.restype, factor])

    def lower(cg, a, at, rt):
        f = ir.Constant(ir.DoubleType(), factor.value)
        v = cg.call_result(scaled, [a[0], f], [at[0], factor], scaled.restype)
        v = cg.call_result(rounded, [v], [scaled.restype], rounded.restype)
        return cg.call_result(back, [v, f], [rounded.restype, factor], rt)
    return CallResult(back.restype, lower)


@base.handler
def _elementwise(interp, fn, args):
    if fn is K.call_kw:
        return keyword_call(args, lambda f, pos, kw: elementwise_call(interp, f, pos, kw))
    return elementwise_call(interp, fn, args)


__all__ = ["OPERATOR_UFUNCS", "evaluate", "numpy", "keyword_call", "is_arraylike"]
