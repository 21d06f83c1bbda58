"""Math functions and intrinsics, keyed by base name (``llvm.sin.f64``, ``sin``
and ``sinf`` are all ``sin``). Operand ``k`` is call argument ``k``."""

from __future__ import annotations

import math

from collections.abc import Sequence

from gpucompiler.llvm import Instruction, Value, const_int, types as T

from ..emit import zero
from ..errors import unsupported
from .table import ForwardTable, ReverseRule, ReverseTable, RuleEmitter, vector_type


def _x(e: RuleEmitter, I: Instruction, k: int = 0) -> Value:
    return e.op(I, k)


def _r(e: RuleEmitter, I: Instruction) -> Value:
    return e.res(I)


def _c(e: RuleEmitter, I: Instruction, x: float) -> Value:
    return e.const(I.type, x)


def _mul(e: RuleEmitter, d: Value, *factors: Value) -> Value:
    out = d
    for f in factors:
        out = e.fmul(out, f)
    return out


def _sq(e: RuleEmitter, v: Value) -> Value:
    return e.fmul(v, v)


def _one_minus_sq(e: RuleEmitter, I: Instruction, v: Value) -> Value:
    return e.fsub(_c(e, I, 1.0), _sq(e, v))


# x**y is constant in x where y == 0 and in y where the result is 0 (x == 0 < y): the derivatives are
# 0 there, not 0 * inf (pow(0, -1)) or 0 * log(0), which are NaN (a polynomial's x**0 term at x = 0)
def _pow_x(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    x, y = _x(e, I), _x(e, I, 1)
    dx = _mul(e, d, y, e.math("pow", x, e.fsub(y, _c(e, I, 1.0))))
    return e.select(e.fcmp("oeq", y, zero(y.type)), zero(dx.type), dx)


def _pow_y(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    r = _r(e, I)
    dy = _mul(e, d, r, e.math("log", _x(e, I)))
    return e.select(e.fcmp("oeq", r, zero(r.type)), zero(dy.type), dy)


def _powi_x(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    n = _x(e, I, 1)
    t = I.type
    nf = (e.splat(e.cast("sitofp", n, t.element), t) if isinstance(t, T.VectorType)
          else e.cast("sitofp", n, t))
    nm1 = e.b.sub(n, const_int(n.type, 1))
    dx = _mul(e, d, nf, e.math("powi", _x(e, I), nm1))
    return e.select(e.b.icmp("eq", n, const_int(n.type, 0)), zero(dx.type), dx)


def _atan2(k: int) -> ReverseRule:
    def rule(e: RuleEmitter, I: Instruction, d: Value) -> Value:
        y, x = _x(e, I, 0), _x(e, I, 1)
        den = e.fadd(_sq(e, x), _sq(e, y))
        num = e.fmul(d, x if k == 0 else y)
        q = e.fdiv(num, den)
        return q if k == 0 else e.fneg(q)
    return rule


def _maxmin(take_first_when_less: bool, k: int) -> ReverseRule:
    def rule(e: RuleEmitter, I: Instruction, d: Value) -> Value:
        less = e.fcmp("olt", _x(e, I, 0), _x(e, I, 1))
        z = zero(d.type)
        first = (d, z) if take_first_when_less else (z, d)
        a, b = first if k == 0 else first[::-1]
        return e.select(less, a, b)
    return rule


def _sign(e: RuleEmitter, I: Instruction, v: Value) -> Value:
    return e.math("copysign", _c(e, I, 1.0), v)


REVERSE: ReverseTable = {
    "sqrt": (lambda e, I, d: e.fdiv(e.fmul(d, _c(e, I, 0.5)), _r(e, I)),),
    "exp": (lambda e, I, d: e.fmul(d, _r(e, I)),),
    "exp2": (lambda e, I, d: _mul(e, d, _r(e, I), _c(e, I, math.log(2.0))),),
    "expm1": (lambda e, I, d: e.fmul(d, e.fadd(_r(e, I), _c(e, I, 1.0))),),
    "log": (lambda e, I, d: e.fdiv(d, _x(e, I)),),
    "log2": (lambda e, I, d: e.fdiv(d, e.fmul(_x(e, I), _c(e, I, math.log(2.0)))),),
    "log10": (lambda e, I, d: e.fdiv(d, e.fmul(_x(e, I), _c(e, I, math.log(10.0)))),),
    "log1p": (lambda e, I, d: e.fdiv(d, e.fadd(_x(e, I), _c(e, I, 1.0))),),
    "pow": (_pow_x, _pow_y),
    "powi": (_powi_x, None),
    "sin": (lambda e, I, d: e.fmul(d, e.math("cos", _x(e, I))),),
    "cos": (lambda e, I, d: e.fneg(e.fmul(d, e.math("sin", _x(e, I)))),),
    "tan": (lambda e, I, d: e.fmul(d, e.fadd(_c(e, I, 1.0), _sq(e, _r(e, I)))),),
    "asin": (lambda e, I, d: e.fdiv(d, e.math("sqrt", _one_minus_sq(e, I, _x(e, I)))),),
    "acos": (lambda e, I, d: e.fneg(e.fdiv(d, e.math("sqrt", _one_minus_sq(e, I, _x(e, I))))),),
    "atan": (lambda e, I, d: e.fdiv(d, e.fadd(_c(e, I, 1.0), _sq(e, _x(e, I)))),),
    "atan2": (_atan2(0), _atan2(1)),
    "sinh": (lambda e, I, d: e.fmul(d, e.math("cosh", _x(e, I))),),
    "cosh": (lambda e, I, d: e.fmul(d, e.math("sinh", _x(e, I))),),
    "tanh": (lambda e, I, d: e.fmul(d, _one_minus_sq(e, I, _r(e, I))),),
    "asinh": (lambda e, I, d: e.fdiv(d, e.math("sqrt", e.fadd(_sq(e, _x(e, I)), _c(e, I, 1.0)))),),
    "acosh": (lambda e, I, d: e.fdiv(d, e.math("sqrt", e.fsub(_sq(e, _x(e, I)), _c(e, I, 1.0)))),),
    "atanh": (lambda e, I, d: e.fdiv(d, _one_minus_sq(e, I, _x(e, I))),),
    "fabs": (lambda e, I, d: e.fmul(d, _sign(e, I, _x(e, I))),),
    "fma": (lambda e, I, d: e.fmul(d, _x(e, I, 1)), lambda e, I, d: e.fmul(d, _x(e, I, 0)), lambda e, I, d: d),
    "maxnum": (_maxmin(False, 0), _maxmin(False, 1)),
    "minnum": (_maxmin(True, 0), _maxmin(True, 1)),
    "copysign": (lambda e, I, d: _mul(e, d, _sign(e, I, _x(e, I)), _sign(e, I, _x(e, I, 1))), None),
    "floor": (None,), "ceil": (None,), "trunc": (None,), "round": (None,), "rint": (None,),
    "nearbyint": (None,), "roundeven": (None,),
    "erf": (lambda e, I, d: _mul(e, d, _c(e, I, 2.0 / math.sqrt(math.pi)),
                                 e.math("exp", e.fneg(_sq(e, _x(e, I))))),),
    "erfc": (lambda e, I, d: _mul(e, d, _c(e, I, -2.0 / math.sqrt(math.pi)),
                                  e.math("exp", e.fneg(_sq(e, _x(e, I))))),),
    "cbrt": (lambda e, I, d: e.fdiv(e.fmul(d, _r(e, I)), e.fmul(_c(e, I, 3.0), _x(e, I))),),
    "hypot": (lambda e, I, d: e.fdiv(e.fmul(d, _x(e, I)), _r(e, I)),
              lambda e, I, d: e.fdiv(e.fmul(d, _x(e, I, 1)), _r(e, I))),
}
def _frexp(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    """``m = frexp(x, &k)`` is ``x * 2^-k``: ``dm/dx = 2^-k = m / x`` (exact), 1 at ``x = 0``."""
    x = _x(e, I)
    ratio = e.fdiv(_r(e, I), x)
    return e.fmul(d, e.select(e.fcmp("oeq", x, zero(x.type)), _c(e, I, 1.0), ratio))


REVERSE["frexp"] = (_frexp, None)
REVERSE["ldexp"] = (lambda e, I, d: e.math("ldexp", d, _x(e, I, 1)), None)
REVERSE["fmuladd"] = REVERSE["fma"]
REVERSE["fmax"] = REVERSE["maxnum"]
REVERSE["fmin"] = REVERSE["minnum"]
REVERSE["maximum"] = REVERSE["maxnum"]
REVERSE["minimum"] = REVERSE["minnum"]


def _reduce_fadd_rev(k: int) -> ReverseRule:
    def rule(e: RuleEmitter, I: Instruction, d: Value) -> Value:
        return d if k == 0 else e.splat(d, vector_type(I.args[1].type))
    return rule


REVERSE["vector.reduce.fadd"] = (_reduce_fadd_rev(0), _reduce_fadd_rev(1))


def _reduce_fadd_fwd(e: RuleEmitter, I: Instruction, ts: Sequence[Value | None]) -> Value:
    start = ts[0] if ts[0] is not None else zero(I.type)
    if ts[1] is None:
        return start
    if I.callee is None:
        raise unsupported("an indirect call of a vector reduction", I)
    return e.call(I.callee.name, I.type, [start, ts[1]])


def _first_hits(e: RuleEmitter, I: Instruction) -> list[Value]:
    """Per lane of the reduced vector: whether it is the first lane equal to the result (ties
    give the whole derivative to one lane, as the scalar ``maximum`` rule gives it to one operand)."""
    v, r = _x(e, I), _r(e, I)
    no, yes = const_int(T.i1, 0), const_int(T.i1, 1)
    taken: Value = no
    firsts: list[Value] = []
    for i in range(vector_type(v.type).count):
        hit = e.fcmp("oeq", e.extract(v, i), r)
        firsts.append(e.select(taken, no, hit))
        taken = e.select(hit, yes, taken)
    return firsts


def _reduce_extremum_rev(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    out, z = zero(_x(e, I).type), zero(d.type)
    for i, first in enumerate(_first_hits(e, I)):
        out = e.insert(out, e.select(first, d, z), i)
    return out


def _reduce_extremum_fwd(e: RuleEmitter, I: Instruction, ts: Sequence[Value | None]) -> Value:
    if ts[0] is None:
        return zero(I.type)
    out = zero(I.type)
    for i, first in enumerate(_first_hits(e, I)):
        out = e.select(first, e.extract(ts[0], i), out)
    return out


_REDUCTIONS = ("vector.reduce.fadd", "vector.reduce.fmaximum", "vector.reduce.fminimum",
               "vector.reduce.fmax", "vector.reduce.fmin")
for _name in _REDUCTIONS[1:]:
    REVERSE[_name] = (_reduce_extremum_rev,)
FORWARD: ForwardTable = {"vector.reduce.fadd": _reduce_fadd_fwd, **{n: _reduce_extremum_fwd for n in _REDUCTIONS[1:]}}

_LIBM_FLOAT = {name + "f": name for name in REVERSE}


def math_name(callee: str) -> str | None:
    """The rule key of a callee name, or None: ``llvm.sin.f64`` / ``sin`` / ``sinf`` -> ``sin``."""
    if callee.startswith("llvm."):
        body = callee[5:]
        for name in _REDUCTIONS:
            if body.startswith(name + "."):
                return name
        base = body.split(".", 1)[0]
        return base if base in REVERSE else None
    if callee in REVERSE and "." not in callee:
        return callee
    return _LIBM_FLOAT.get(callee)
