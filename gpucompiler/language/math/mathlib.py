"""The ``math`` module: LLVM intrinsics or libm by name on the CPU; a target's device library on GPUs.

Every function comes from the one table of math functions
(:data:`gpucompiler.core.mathfns.MATH_FUNCTIONS`). The base rule set lowers
to the LLVM intrinsic where the record names one and to the C library name
otherwise; a GPU target's overlay (:func:`device_math_rules`) calls its
device library's version of each function instead.
"""

from __future__ import annotations

from collections.abc import Callable

from ...pristine import math  # as imported (pristine.py: the rules key on its functions)

from llvmlite import ir

from ... import types as T
from ...core.mathfns import MATH_FUNCTIONS, MathError, MathFunction
from ...frontend import intrinsics as K
from ...interpreter.lattice import widen
from ...interpreter.rules import Number, RuleSet
from ..python.floatint import exact_pow, finite
from ..python.numbers import base, convert

DeviceCall = Callable[..., ir.Value]
"""``call(cg, fn, rt, xs)``: a device library's ``fn`` (a :class:`MathFunction`) of the values ``xs``, of
type ``rt`` (``T.float32`` or ``T.float64``)."""

_LANGUAGE = tuple((f, getattr(math, f.python)) for f in MATH_FUNCTIONS if f.python is not None and hasattr(math, f.python))
"""``(record, function)`` of Python's ``math`` the language compiles (``math.exp2`` and ``math.cbrt`` are new in 3.11)."""
_BY_NAME = {f.libm: f for f in MATH_FUNCTIONS}


def _float_type(*ts):
    return T.float32 if all(widen(t) == T.float32 for t in ts) else T.float64


def _args(cg, args, argtypes, rt):
    return [cg.cast(v, widen(t), rt) for v, t in zip(args, argtypes)]


def check_math(cg, r, xs, name):
    """CPython's rule for ``math`` functions (``math_1``/``math_2`` in mathmodule.c): a NaN
    from non-NaN arguments is a domain error (ValueError), an infinity from finite ones a
    range error (OverflowError where the function can overflow, else ValueError).
    The hot path tests that ``r`` is finite; the rest is on the cold path. Nothing under
    ``ErrorModel.NUMPY``."""
    if _BY_NAME[name].error is MathError.NEVER or not cg.mod.math_errors:
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
    elif _BY_NAME[name].error is MathError.RANGE:
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
    return _checked(name, lambda cg, rt, xs: pure(cg.call_extern(name + ("f" if rt == T.float32 else ""), rt, xs)))


def pure(call):
    """``call`` of a libm function, its declaration marked as reading and writing no memory: compiled
    code never reads ``errno`` (results are checked as CPython does), so LLVM may hoist, merge and
    vectorize it (the native target names its SIMD versions)."""
    call.callee.attributes.add("nounwind")
    call.callee.attributes.add("readnone")
    return call


def _rounding(intrinsic: str | None, device: Callable[..., ir.Value] | None = None):
    """``intrinsic`` (``llvm.floor``), or ``device(cg, t, x)`` (a device library's); an integer is its own
    floor (CPython's ``int.__floor__``: exact, never through a float)."""
    def lower(cg, args, argtypes, rt):
        if widen(argtypes[0]).kind in "biu" and rt == T.int64:
            return convert(cg, args, argtypes, rt)
        t = _float_type(*argtypes)
        x = cg.cast(args[0], widen(argtypes[0]), t)
        r = device(cg, t, x) if device is not None else cg.call_intrinsic(intrinsic, t, [x])
        return cg.cast(r, t, rt)
    return lower


_SPECIAL = {  # how the language lowers these on the CPU, where it is not the record's intrinsic or libm call
    "pow": _checked("pow", exact_pow),
    # math.fmod as LLVM's frem (the same IEEE remainder): LLVM 22 folds a call of libm's fmod
    # with a NaN argument into a wrong result
    "fmod": _checked("fmod", lambda cg, rt, xs: cg.b.frem(*xs)),
}
_ROUNDING = ((math.floor, "floor", T.int64), (math.ceil, "ceil", T.int64), (math.trunc, "trunc", T.int64),
             (K.ffloor, "floor", T.float64))
"""Python's rounding functions (an int result, exact for ints) and the frontend's float floor."""

for _f, _py in _LANGUAGE:
    if _f.rounds:
        continue
    _low = _SPECIAL.get(_f.libm) or (_intrinsic(_f.intrinsic, _f.libm) if _f.intrinsic else _libm(_f.libm))
    base.define(_py, *(Number,) * _f.arity, restype=_float_type)(_low)
# C's fmod without CPython's domain check (LLVM's frem): Python's ``%`` and ``//`` on floats
# are built on it
base.define(K.fmod_ieee, Number, Number, restype=_float_type)(
    lambda cg, args, argtypes, rt: cg.b.frem(*_args(cg, args, argtypes, rt)))
for _fn, _name, _rt in _ROUNDING:
    base.define(_fn, Number, restype=_rt)(_rounding("llvm." + _name))


def device_math_rules(rules: RuleSet, call: DeviceCall) -> RuleSet:
    """Define in ``rules`` (a target's overlay) every function of the language's ``math`` as
    ``call(cg, fn, rt, xs)``, its device library's version; returns ``rules``. Kernels give IEEE
    results (no Python exceptions), so no error checks are emitted."""
    def lower(fn: MathFunction):
        return lambda cg, args, argtypes, rt: call(cg, fn, rt, _args(cg, args, argtypes, rt))

    for fn, py in _LANGUAGE:
        if not fn.rounds:
            rules.define(py, *(Number,) * fn.arity, restype=_float_type)(lower(fn))
    rules.define(K.fmod_ieee, Number, Number, restype=_float_type)(lower(_BY_NAME["fmod"]))
    for py, name, rt in _ROUNDING:
        fn = _BY_NAME[name]
        rules.define(py, Number, restype=rt)(_rounding(None, lambda cg, t, x, fn=fn: call(cg, fn, t, [x])))
    return rules


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

#: ``math.degrees`` and ``math.radians``: one product with the constant CPython's mathmodule.c uses
_SCALES = {math.degrees: 180.0 / math.pi, math.radians: math.pi / 180.0}


def _scaled(factor: float):
    def lower(cg, args, argtypes, rt):
        (x,) = _args(cg, args, argtypes, rt)
        return cg.b.fmul(x, ir.Constant(x.type, factor))
    return lower


for _fn, _factor in _SCALES.items():
    base.define(_fn, Number, restype=T.float64)(_scaled(_factor))
