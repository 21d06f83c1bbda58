"""Derivative rules as tables, one adjoint per operand, split by family.

A reverse rule is a tuple with one entry per operand: ``rule(e, inst, d)``
returns the adjoint contribution of that operand given the adjoint ``d`` of
the result, or the entry is None (the operand gets no derivative: an index,
a condition, a rounding function's input). ``e.op(inst, k)`` is the primal
operand ``k`` and ``e.res(inst)`` the primal result, as available where the
rule is emitted.

Forward rules are derived from the reverse ones (``tangent = sum of
rule_k(e, inst, t_k)``), which holds whenever the partial derivative is a
scalar factor; the few others (casts, vector shuffles, reductions) give a
forward rule of their own: ``fwd(e, inst, tangents) -> tangent``.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpucompiler.llvm import Instruction, Value

from .aggregate import FORWARD as _AGG_FORWARD, REVERSE as _AGG_REVERSE
from .arith import FORWARD as _ARITH_FORWARD, REVERSE as _ARITH_REVERSE
from .math import FORWARD as MATH_FORWARD, REVERSE as MATH_REVERSE, math_name
from .table import ForwardRule, ForwardTable, ReverseRule, ReverseTable, RuleEmitter

ARITH_REVERSE: ReverseTable = {**_ARITH_REVERSE, **_AGG_REVERSE}
"""Reverse rules of arithmetic, casts, select, vector and aggregate instructions."""
ARITH_FORWARD: ForwardTable = {**_ARITH_FORWARD, **_AGG_FORWARD}
"""Forward rules that are not derived from the reverse ones."""

__all__ = ["ARITH_FORWARD", "ARITH_REVERSE", "MATH_FORWARD", "MATH_REVERSE", "ForwardRule", "ForwardTable", "ReverseRule",
           "ReverseTable", "RuleEmitter", "derived_forward", "math_name"]


def derived_forward(rule: tuple[ReverseRule | None, ...], e: RuleEmitter, inst: Instruction,
                    tangents: Sequence[Value | None]) -> Value | None:
    """The tangent of ``inst`` from its reverse ``rule``: the sum over operands with a tangent (None: none has one)."""
    out: Value | None = None
    for k, t in enumerate(tangents):
        r = rule[k] if k < len(rule) else None
        if t is None or r is None:
            continue
        c = r(e, inst, t)
        out = c if out is None else e.fadd(out, c)
    return out
