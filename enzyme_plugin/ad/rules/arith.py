"""Arithmetic, casts, select and vector instructions."""

from __future__ import annotations

from collections.abc import Sequence
import math

from gpucompiler.llvm import ConstantAggregate, ConstantData, ConstantExpr, Instruction, User, Value, const_int, \
    types as T

from ..emit import zero
from ..errors import unsupported
from .table import ForwardRule, ForwardTable, ReverseRule, ReverseTable, RuleEmitter, vector_type


def _d(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    return d


def _neg(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    return e.fneg(d)


def _frem_x(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    # 1, and NaN where the remainder is undefined (y = 0, x infinite: the result is NaN)
    r = e.res(I)
    return e.select(e.fcmp("uno", r, r), r, d)


def _frem_y(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    # x - y * trunc(x / y): d/dy = -trunc(x / y)
    q = e.math("trunc", e.fdiv(e.op(I, 0), e.op(I, 1)))
    return e.fneg(e.fmul(d, q))


def _by_reciprocal(e: RuleEmitter, I: Instruction) -> bool:
    """Whether ``fdiv``'s adjoints take ``1 / b`` and ``a`` rather than ``a / b`` itself: when the quotient is
    not at hand (it would cost a tape slot, or a division to compute again) and ``a`` costs no tape slot (a
    Newton step's residual, rebuilt from the iterate: :mod:`..carried`; an ``exp`` computed again anyway)."""
    return not e.at_hand(I) and not e.taped(I.operands[0])


#: below this magnitude ``1 / b`` would overflow (from about 2^-1024 down: the subnormals), so the reciprocal is
#: taken of ``b * 2^64`` and the products by it multiplied by 2^64 again (exact: a power of two)
_TINY = 2.0 ** -960
_SCALE = 2.0 ** 64


def _reciprocal(e: RuleEmitter, I: Instruction) -> tuple[Value, Value | None]:
    """``(1 / (b * k), k)``: ``k`` is 2^64 where ``|b|`` is below :data:`_TINY`, else 1; None when ``b`` is
    never that small (:func:`_at_least`: a Newton step's ``3 y² + 1``)."""
    b, t = e.op(I, 1), I.type
    one = e.const(t, 1.0)
    if _at_least(I.operands[1]) >= _TINY:
        return e.fdiv(one, b), None
    k = e.select(e.fcmp("olt", e.math("fabs", b), e.const(t, _TINY)), e.const(t, _SCALE), one)
    return e.fdiv(one, e.fmul(b, k)), k


def _over(e: RuleEmitter, v: Value, reciprocal: tuple[Value, Value | None]) -> Value:
    """``v / b`` by the reciprocal: ``(v * (1 / (b * k))) * k``."""
    inverse, k = reciprocal
    product = e.fmul(v, inverse)
    return product if k is None else e.fmul(product, k)


def _at_least(v: Value, depth: int = 8) -> float:
    """A lower bound of ``|v|`` (or ``v`` is NaN) read from its expression: a constant's magnitude; a sum of a
    constant and a value never negative (``fadd``); the square root of a value with a bound (an n-body
    distance ``sqrt(r² + ε)``); 0 otherwise."""
    c = constant_float(v)
    if c is not None:
        return abs(c)
    if not isinstance(v, Instruction) or depth <= 0:
        return 0.0
    if v.opcode == "fadd":
        for x, y in (v.operands, v.operands[::-1]):
            c = constant_float(y)
            if c is not None and c > 0.0 and _never_negative(x, depth - 1):
                return c
    if v.opcode == "call" and getattr(v.callee, "name", "").startswith("llvm.sqrt.") and len(v.args) == 1:
        return math.sqrt(_at_least(v.args[0], depth - 1))
    return 0.0


def _never_negative(v: Value, depth: int) -> bool:
    """Whether ``v`` is never below 0 (or is NaN): a constant, ``fabs``, a sum of such values, a product of
    two values of one sign (``y * y``, ``(3 * y) * y``), and ``fmuladd``/``fma`` of such a product and sum."""
    c = constant_float(v)
    if c is not None:
        return c >= 0.0
    if not isinstance(v, Instruction) or depth <= 0:
        return False
    if v.opcode == "fadd":
        return all(_never_negative(x, depth - 1) for x in v.operands)
    if v.opcode == "fmul":
        return _product_never_negative(*v.operands, depth=depth - 1)
    name = getattr(v.callee, "name", "") if v.opcode == "call" else ""
    if name.startswith(("llvm.fmuladd.", "llvm.fma.")) and len(v.args) == 3:  # a * b + c, as clang contracts it
        a, b, c = v.args
        return _product_never_negative(a, b, depth=depth - 1) and _never_negative(c, depth - 1)
    return name.startswith("llvm.fabs.")


def _product_never_negative(a: Value, b: Value, depth: int) -> bool:
    return _signed_root(a) == _signed_root(b) or (_never_negative(a, depth) and _never_negative(b, depth))


def _signed_root(v: Value, depth: int = 4) -> tuple[int, bool]:
    """``(id(y), s)`` when ``v`` is ``y`` times positive constants (``s``: True) or negative ones (False)."""
    sign = True
    while isinstance(v, Instruction) and v.opcode == "fmul" and depth > 0:
        x, c = v.operands
        k = constant_float(c)
        if k is None:
            x, c = c, x
            k = constant_float(c)
        if k is None or k == 0.0:
            break
        sign, v, depth = sign == (k > 0.0), x, depth - 1
    return id(v), sign


def constant_float(v: Value) -> float | None:
    """A scalar float constant's value (None for anything else)."""
    if not isinstance(v, ConstantData) or v.type.kind != "float":
        return None
    x = v.value
    return x if isinstance(x, float) else None


# d(a / b) = d / b, and -(d / b) * (a / b) for b: one division when both are active (LLVM merges the two);
# by the reciprocal, d * (1 / b) and -(d * (1 / b)) * (a * (1 / b)), each product by 1 / b scaled as above
def _fdiv_x(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    if _by_reciprocal(e, I):
        return _over(e, d, _reciprocal(e, I))
    return e.fdiv(d, e.op(I, 1))


def _fdiv_y(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    if _by_reciprocal(e, I):
        reciprocal = _reciprocal(e, I)
        return e.fneg(e.fmul(_over(e, d, reciprocal), _over(e, e.op(I, 0), reciprocal)))
    return e.fneg(e.fmul(e.fdiv(d, e.op(I, 1)), e.res(I)))


def _non_finite(v: Value) -> bool:
    """Whether the constant ``v`` (a number, or a vector of them) holds an infinity or a NaN."""
    if isinstance(v, ConstantData):
        x = v.value
        return isinstance(x, float) and not math.isfinite(x)
    if isinstance(v, (ConstantAggregate, ConstantExpr)):
        return any(_non_finite(o) for o in v.operands)
    return False


def _times(k: int) -> ReverseRule:
    """The adjoint of ``fmul``'s other operand: ``d`` times operand ``k``. By a constant infinity or NaN
    (``x * math.inf`` in an arm of a ``select``), a zero ``d`` (the arm not taken) stays zero: the
    product would be NaN."""
    def rule(e: RuleEmitter, I: Instruction, d: Value) -> Value:
        p = e.fmul(d, e.op(I, k))
        if _non_finite(I.operands[k]):
            return e.select(e.fcmp("oeq", d, zero(d.type)), zero(d.type), p)
        return p
    return rule


REVERSE: ReverseTable = {
    "fadd": (_d, _d),
    "fsub": (_d, _neg),
    "fmul": (_times(1), _times(0)),
    "fdiv": (_fdiv_x, _fdiv_y),
    "frem": (_frem_x, _frem_y),
    "fneg": (_neg,),
    "freeze": (_d,),
    "fpext": (lambda e, I, d: e.cast("fptrunc", d, I.operands[0].type),),
    "fptrunc": (lambda e, I, d: e.cast("fpext", d, I.operands[0].type),),
    "select": (None,
               lambda e, I, d: e.select(e.op(I, 0), d, zero(d.type)),
               lambda e, I, d: e.select(e.op(I, 0), zero(d.type), d)),
    "extractelement": (lambda e, I, d: e.b.insertelement(zero(I.operands[0].type), d, e.op(I, 1)), None),
    "insertelement": (lambda e, I, d: e.b.insertelement(d, zero(I.operands[1].type), e.op(I, 2)),
                      lambda e, I, d: e.b.extractelement(d, e.op(I, 2)), None),
    "shufflevector": (lambda e, I, d: _unshuffle(e, I, d, 0), lambda e, I, d: _unshuffle(e, I, d, 1), None),
    "bitcast": (lambda e, I, d: e.cast("bitcast", d, I.operands[0].type),),
}


def _mask(I: Instruction) -> list[int]:
    m = I.operands[2]
    text = m.ref
    n = vector_type(I.type).count
    if text is None:  # a constant vector with element operands
        lanes = m.operands if isinstance(m, User) else [m]
        refs = [o.ref for o in lanes]
        if not all(r is not None and (r in ("undef", "poison") or r.lstrip("-").isdigit()) for r in refs):
            raise unsupported(f"shufflevector mask {refs} not understood", I)
        return [-1 if r in ("undef", "poison") else int(str(r)) for r in refs]
    if text in ("zeroinitializer",):
        return [0] * n
    if text in ("undef", "poison"):
        return [-1] * n
    if text.startswith("<"):
        out: list[int] = []
        for item in text.strip("<>").split(","):
            w = item.split()[-1]
            out.append(-1 if w in ("undef", "poison") else int(w))
        return out
    if text.startswith("splat"):
        w = text.split()[-1].rstrip(")")
        return [int(w)] * n
    raise unsupported(f"shufflevector mask {text} not understood", I)


def _unshuffle(e: RuleEmitter, I: Instruction, d: Value, which: int) -> Value:
    """Adjoint of shufflevector operand ``which``: lanes of ``d`` summed back where the mask took them."""
    src = I.operands[which].type
    n = vector_type(src).count
    acc: Value = zero(src)
    for j, m in enumerate(_mask(I)):
        if m < 0 or (m >= n) != bool(which):
            continue
        lane = m - n * which
        cur = e.extract(acc, lane) if acc.ref != "zeroinitializer" else None
        v = e.extract(d, j)
        acc = e.insert(acc, v if cur is None else e.fadd(cur, v), lane)
    return acc


def _shuffle_fwd(e: RuleEmitter, I: Instruction, ts: Sequence[Value | None]) -> Value:
    a = ts[0] if ts[0] is not None else zero(I.operands[0].type)
    b = ts[1] if ts[1] is not None else zero(I.operands[1].type)
    return e.b.shufflevector(a, b, I.operands[2])


def _insert_fwd(e: RuleEmitter, I: Instruction, ts: Sequence[Value | None]) -> Value:
    v = ts[0] if ts[0] is not None else zero(I.type)
    x = ts[1] if ts[1] is not None else zero(I.operands[1].type)
    return e.b.insertelement(v, x, e.op(I, 2))


def _cast_fwd(op: str) -> ForwardRule:
    def fwd(e: RuleEmitter, I: Instruction, ts: Sequence[Value | None]) -> Value:
        return zero(I.type) if ts[0] is None else e.cast(op, ts[0], I.type)
    return fwd


def _extract_fwd(e: RuleEmitter, I: Instruction, ts: Sequence[Value | None]) -> Value:
    return zero(I.type) if ts[0] is None else e.b.extractelement(ts[0], e.op(I, 1))


FORWARD: ForwardTable = {
    "fpext": _cast_fwd("fpext"),
    "fptrunc": _cast_fwd("fptrunc"),
    "bitcast": _cast_fwd("bitcast"),
    "extractelement": _extract_fwd,
    "insertelement": _insert_fwd,
    "shufflevector": _shuffle_fwd,
}

__all__ = ["FORWARD", "REVERSE", "T", "const_int", "constant_float"]
