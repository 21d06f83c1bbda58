"""Complex numbers (``complex64``, ``complex128``) and the numeric constructors.

A complex value is ``{real, imag}``. ``+ - *``, ``==``/``!=``, ``.real``,
``.imag``, ``.conjugate()`` and ``complex(a, b)`` lower here; division and
``abs`` are CPython's algorithms written in Python (pyhelpers), so they raise
``ZeroDivisionError`` and ``OverflowError`` where CPython does. The NumPy
scalar classes (``np.float32(x)``, ``np.uint8(x)``...) convert like NumPy
(integers wrap).
"""

from __future__ import annotations

import operator

from llvmlite import ir

from ... import types as T
from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, widen
from ...interpreter.rules import CallResult, Complex, Constant, Number, Numeric
from . import pyhelpers as H
from .numbers import _promoted, base


def _complex_type(*ts):
    """The promoted type when one operand is complex, else None (the real rules apply)."""
    if not any(widen(t).kind == "c" for t in ts):
        return None
    return _promoted(*ts)


def _parts(cg, args, argtypes, rt):
    part = T.float_of(rt)
    return [cg.complex_parts(v, widen(t), part) for v, t in zip(args, argtypes)]


def _componentwise(op):
    def lower(cg, args, argtypes, rt):
        (ar, ai), (br, bi) = _parts(cg, args, argtypes, rt)
        return cg.make_complex(getattr(cg.b, op)(ar, br), getattr(cg.b, op)(ai, bi))
    return lower


for _fn, _op in ((operator.add, "fadd"), (operator.sub, "fsub")):
    base.define(_fn, Numeric, Numeric, restype=_complex_type)(_componentwise(_op))


@base.define(operator.mul, Numeric, Numeric, restype=_complex_type)
def _mul(cg, args, argtypes, rt):
    (ar, ai), (br, bi) = _parts(cg, args, argtypes, rt)
    b = cg.b
    return cg.make_complex(b.fsub(b.fmul(ar, br), b.fmul(ai, bi)), b.fadd(b.fmul(ar, bi), b.fmul(ai, br)))


def _equal(cg, args, argtypes):
    t = _promoted(*argtypes)
    (ar, ai), (br, bi) = _parts(cg, args, argtypes, t)
    return cg.b.and_(cg.b.fcmp_ordered("==", ar, br), cg.b.fcmp_ordered("==", ai, bi))


base.define(operator.eq, Numeric, Numeric, restype=lambda a, b: T.boolean if _complex_type(a, b) else None)(
    lambda cg, args, argtypes, rt: _equal(cg, args, argtypes))
base.define(operator.ne, Numeric, Numeric, restype=lambda a, b: T.boolean if _complex_type(a, b) else None)(
    lambda cg, args, argtypes, rt: cg.b.not_(_equal(cg, args, argtypes)))


@base.define(operator.neg, Complex, restype=lambda a: widen(a))
def _neg(cg, args, argtypes, rt):
    re, im = cg.complex_parts(args[0], rt, T.float_of(rt))
    return cg.make_complex(cg.b.fneg(re), cg.b.fneg(im))


@base.define(operator.pos, Complex, restype=lambda a: widen(a))
def _pos(cg, args, argtypes, rt):
    return args[0]


@base.handler
def _complex_helpers(interp, fn, args):
    """``/`` with a complex operand and ``abs`` of a complex number: CPython's algorithms (pyhelpers),
    called with the operands converted to the promoted complex type."""
    if fn is operator.truediv and len(args) == 2 and all(isinstance(widen(a), T.Scalar) for a in args):
        t = _complex_type(*args)
        return interp.invoke(H.complex_div, [t, t]) if t is not None else None
    if fn is abs and len(args) == 1 and isinstance(widen(args[0]), T.Scalar) and widen(args[0]).kind == "c":
        return interp.invoke(H.complex_abs, [widen(args[0])])
    return None


# -- attributes and methods of numbers ------------------------------------------
def _part_type(t):
    t = widen(t)
    if t.kind == "c":
        return T.float_of(t)
    return T.int64 if t == T.boolean else t


def _attr_type(x, name):
    if name.value in ("real", "imag"):
        return _part_type(x)
    if name.value == "conjugate":
        return T.BoundMethod(widen(x), "conjugate")
    return None


@base.define(builtins.getattr, Numeric, Constant, restype=_attr_type, pure=False)
def _number_attr(cg, args, argtypes, rt):
    t, name = widen(argtypes[0]), argtypes[1].value
    if name == "conjugate":
        return args[0]
    if t.kind == "c":
        return cg.b.extract_value(args[0], 0 if name == "real" else 1)
    if name == "real":
        return cg.cast(args[0], t, rt)
    return ir.Constant(cg.ll(rt), 0.0 if rt.kind == "f" else 0)


@base.define(K.call_method, Numeric, lambda n: isinstance(n, Const) and n.value == "conjugate",
             restype=lambda x, n: _part_type(x) if widen(x).kind != "c" else widen(x))
def _conjugate(cg, args, argtypes, rt):
    t = widen(argtypes[0])
    if t.kind != "c":
        return cg.cast(args[0], t, rt)
    re, im = cg.complex_parts(args[0], t, T.float_of(t))
    return cg.make_complex(re, cg.b.fneg(im))


# -- constructors ------------------------------------------------------------
@base.define(complex, Number, Number, restype=T.complex128)
@base.define(complex, Numeric, restype=T.complex128)
def _complex(cg, args, argtypes, rt):
    if len(args) == 1:
        return cg.cast(args[0], widen(argtypes[0]), rt)
    return cg.make_complex(*(cg.cast(v, widen(t), T.float64) for v, t in zip(args, argtypes)))


@base.define(K.make_complex, Number, Number, restype=lambda a, b: T.complex_of(_promoted(a, b, T.float32)))
def _make_complex(cg, args, argtypes, rt):
    part = T.float_of(rt)
    return cg.make_complex(*(cg.cast(v, widen(t), part) for v, t in zip(args, argtypes)))


def numpy_scalar_class(fn) -> T.Scalar | None:
    """The scalar type a NumPy scalar class (``np.float32``, ``np.uint8``...) constructs, else None."""
    if isinstance(fn, type) and fn.__module__ == "numpy":
        return T.SCALARS.get(fn.__name__)
    return None


def _convert(cg, args, argtypes, rt):
    return cg.cast(args[0], widen(argtypes[0]), rt)


@base.handler
def _numpy_constructor(interp, fn, args):
    """``np.float32(x)``, ``np.int8(x)``, ``np.complex128(x)``: NumPy's conversion of one number."""
    t = numpy_scalar_class(fn)
    if t is None or len(args) != 1 or not isinstance(widen(args[0]), T.Scalar):
        return None
    if widen(args[0]).kind == "c" and t.kind != "c":
        return None  # NumPy drops the imaginary part with a warning: refused (no implementation)
    return CallResult(t, _convert)
