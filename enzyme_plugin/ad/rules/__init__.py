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

from .aggregate import FORWARD as _AGG_FORWARD, REVERSE as _AGG_REVERSE
from .arith import FORWARD as _ARITH_FORWARD, REVERSE as _ARITH_REVERSE
from .math import FORWARD as MATH_FORWARD, REVERSE as MATH_REVERSE, math_name

ARITH_REVERSE = {**_ARITH_REVERSE, **_AGG_REVERSE}
"""Reverse rules of arithmetic, casts, select, vector and aggregate instructions."""
ARITH_FORWARD = {**_ARITH_FORWARD, **_AGG_FORWARD}
"""Forward rules that are not derived from the reverse ones."""

__all__ = ["ARITH_FORWARD", "ARITH_REVERSE", "MATH_FORWARD", "MATH_REVERSE", "math_name", "derived_forward"]


def derived_forward(rule, e, inst, tangents):
    """The tangent of ``inst`` from its reverse ``rule``: the sum over operands with a tangent."""
    out = None
    for k, t in enumerate(tangents):
        if t is None or k >= len(rule) or rule[k] is None:
            continue
        c = rule[k](e, inst, t)
        out = c if out is None else e.fadd(out, c)
    return out
