"""The ``math`` module: LLVM intrinsics or libm by name on the CPU, libdevice on PTX.

The base rule set lowers to LLVM intrinsics where LLVM has one and to the C
library name otherwise; the ``base.ptx`` overlay replaces every function by
libdevice's ``__nv_*`` (``__nv_sinf`` for float32).
"""

from __future__ import annotations

from ...pristine import math  # as imported (pristine.py: the rules key on its functions)

from llvmlite import ir

from ... import types as T
from ...frontend import intrinsics as K
from ..lattice import widen
from ..rules import Number, RuleSet, register
from .floatint import exact_pow, finite
from .numbers import base, convert

ptx = register(RuleSet("base.ptx", target="ptx", builtin=True))

_INTRINSICS = ("sin", "cos", "exp", "exp2", "log", "log2", "log10", "sqrt", "fabs")
_LIBM = ("tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
         "expm1", "log1p", "erf", "erfc", "cbrt")
_BINARY_INTRINSICS = {"copysign": "llvm.copysign"}
_BINARY_LIBM = ("atan2", "hypot")


def _float_type(*ts):
    return T.float32 if all(widen(t) == T.float32 for t in ts) else T.float64


def _args(cg, args, argtypes, rt):
    return [cg.cast(v, widen(t), rt) for v, t in zip(args, argtypes)]


_OVERFLOWS = {"exp", "exp2", "expm1", "cosh", "sinh", "pow", "hypot"}
"""Functions whose infinite result from finite arguments is a range error (OverflowError)."""
_NEVER_FAIL = {"fabs", "copysign", "atan2", "atan"}


def check_math(cg, r, xs, name):
    """CPython's rule for ``math`` functions (``math_1``/``math_2`` in mathmodule.c): a NaN
    from non-NaN arguments is a domain error (ValueError), an infinity from finite ones a
    range error (OverflowError where the function can overflow, else ValueError).
    The hot path tests that ``r`` is finite; the rest is on the cold path. Nothing under
    ``ErrorModel.NUMPY``."""
    if name in _NEVER_FAIL or not cg.mod.math_errors:
        return
    cg.check_cases(finite(cg, r), lambda: _math_cases(cg, r, xs, name), math=True)


def _math_cases(cg, r, xs, name):
    b = cg.b
    nan_in = finite_in = None
    for x in xs:
        n, f = b.fcmp_unordered("uno", x, x), finite(cg, x)
        nan_in = n if nan_in is None else b.or_(nan_in, n)
        finite_in = f if finite_in is None else b.and_(finite_in, f)
    is_nan = b.fcmp_unordered("uno", r, r)
    fails = b.or_(b.and_(is_nan, b.not_(nan_in)), b.and_(b.not_(is_nan), finite_in))
    cases = [(None, "ValueError", "math domain error")]
    if name == "pow":  # math.pow(0.0, -1.0): an infinity from a zero base is a domain error
        zero = b.fcmp_ordered("==", xs[0], ir.Constant(r.type, 0.0))
        cases.insert(0, (b.and_(b.not_(is_nan), b.not_(zero)), "OverflowError", "math range error"))
    elif name in _OVERFLOWS:
        cases.insert(0, (b.not_(is_nan), "OverflowError", "math range error"))
    return fails, cases


def _of(v):
    return T.float32 if v.type == ir.FloatType() else T.float64


def _checked(name, call):
    def lower(cg, args, argtypes, rt):
        xs = _args(cg, args, argtypes, rt)
        r = call(cg, rt, xs)
        check_math(cg, r, xs, name)
        return r
    return lower


def _intrinsic(name, pyname):
    return _checked(pyname, lambda cg, rt, xs: cg.call_intrinsic(name, rt, xs))


def _libm(name):
    return _checked(name, lambda cg, rt, xs: cg.call_extern(name + ("f" if rt == T.float32 else ""), rt, xs))


def _nv(name):
    def lower(cg, args, argtypes, rt):
        return cg.call_extern("__nv_" + name + ("f" if rt == T.float32 else ""), rt,
                              _args(cg, args, argtypes, rt))
    return lower


for _name in _INTRINSICS + _LIBM:
    _fn = getattr(math, _name, None)
    if _fn is None:  # math.exp2 and math.cbrt are new in Python 3.11
        continue
    _low = _intrinsic("llvm." + _name, _name) if _name in _INTRINSICS else _libm(_name)
    base.define(_fn, Number, restype=_float_type)(_low)
    ptx.define(_fn, Number, restype=_float_type)(_nv(_name))
for _name in tuple(_BINARY_INTRINSICS) + _BINARY_LIBM:
    _fn = getattr(math, _name)
    _low = (_intrinsic(_BINARY_INTRINSICS[_name], _name) if _name in _BINARY_INTRINSICS
            else _libm(_name))
    base.define(_fn, Number, Number, restype=_float_type)(_low)
    ptx.define(_fn, Number, Number, restype=_float_type)(_nv(_name))
base.define(math.pow, Number, Number, restype=_float_type)(_checked("pow", exact_pow))
ptx.define(math.pow, Number, Number, restype=_float_type)(_nv("pow"))
# math.fmod as LLVM's frem (the same IEEE remainder): LLVM 22 folds a call of libm's fmod
# with a NaN argument into a wrong result
base.define(math.fmod, Number, Number, restype=_float_type)(
    _checked("fmod", lambda cg, rt, xs: cg.b.frem(*xs)))
ptx.define(math.fmod, Number, Number, restype=_float_type)(_nv("fmod"))


# C's fmod without CPython's domain check (LLVM's frem): Python's ``%`` and ``//`` on floats
# are built on it
base.define(K.fmod_ieee, Number, Number, restype=_float_type)(
    lambda cg, args, argtypes, rt: cg.b.frem(*_args(cg, args, argtypes, rt)))
ptx.define(K.fmod_ieee, Number, Number, restype=_float_type)(_nv("fmod"))


def _rounding(intrinsic: str | None, nv: str | None = None):
    """``intrinsic`` (``llvm.floor``), or libdevice's ``__nv_<nv>`` (the PTX overlay); an integer
    is its own floor (CPython's ``int.__floor__``: exact, never through a float)."""
    def lower(cg, args, argtypes, rt):
        if widen(argtypes[0]).kind in "biu" and rt == T.int64:
            return convert(cg, args, argtypes, rt)
        t = _float_type(*argtypes)
        x = cg.cast(args[0], widen(argtypes[0]), t)
        if nv is not None:
            r = cg.call_extern("__nv_" + nv + ("f" if t == T.float32 else ""), t, [x])
        else:
            r = cg.call_intrinsic(intrinsic, t, [x])
        return cg.cast(r, t, rt)
    return lower


for _fn, _intr, _nvname, _rt in ((math.floor, "llvm.floor", "floor", T.int64),
                                  (math.ceil, "llvm.ceil", "ceil", T.int64),
                                  (math.trunc, "llvm.trunc", "trunc", T.int64),
                                  (K.ffloor, "llvm.floor", "floor", T.float64)):
    base.define(_fn, Number, restype=_rt)(_rounding(_intr))
    ptx.define(_fn, Number, restype=_rt)(_rounding(None, _nvname))


def _classify(kind):
    def lower(cg, args, argtypes, rt):
        t = widen(argtypes[0])
        if t.kind != "f":
            return cg.const(T.boolean, kind == "isfinite")
        x = args[0]
        if kind == "isnan":
            return cg.b.fcmp_unordered("uno", x, x)
        inf = cg.const(t, math.inf)
        ax = cg.call_intrinsic("llvm.fabs", t, [x])
        return cg.b.fcmp_ordered("==" if kind == "isinf" else "<", ax, inf)
    return lower


for _name in ("isnan", "isinf", "isfinite"):
    base.define(getattr(math, _name), Number, restype=T.boolean)(_classify(_name))
