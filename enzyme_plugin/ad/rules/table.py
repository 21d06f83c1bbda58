"""The shape of a derivative table: what a rule writes with, and the two kinds of rule.

A table maps an opcode (``fmul``) or a math function's base name (``sin``) to
its rules. A reverse rule returns the adjoint contribution of one operand; a
forward rule (only where it is not derived from the reverse ones) returns the
tangent of the result::

    def _sin_x(e: RuleEmitter, I: Instruction, d: Value) -> Value:
        return e.fmul(d, e.math("cos", e.op(I, 0)))

    REVERSE: ReverseTable = {"sin": (_sin_x,)}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from gpucompiler.llvm import Builder, Instruction, Value, types as T


class RuleEmitter(Protocol):
    """What a rule emits with: the sweep that runs it (forward or reverse), seen through the helpers
    rules use. Its arithmetic folds additions of zero; ``b`` is the builder for everything else."""

    @property
    def b(self) -> Builder:
        """The builder, positioned where the rule's code goes."""
        ...

    def op(self, inst: Instruction, k: int) -> Value:
        """Primal operand ``k`` of ``inst`` (call argument ``k`` of a call), as available where the rule runs."""
        ...

    def res(self, inst: Instruction) -> Value:
        """The primal result of ``inst``, as available where the rule runs."""
        ...

    def at_hand(self, v: Value) -> bool:
        """Whether the primal value ``v`` costs nothing more where the rule runs (not a tape slot to read,
        not a value to compute again in the reverse sweep)."""
        ...

    def taped(self, v: Value) -> bool:
        """Whether the primal value ``v`` would cost a tape slot where the rule runs (the reverse sweep of
        a loop), so that a rule may rather rebuild what it needs from values it has anyway."""
        ...

    def fadd(self, a: Value, b: Value) -> Value: ...
    def fsub(self, a: Value, b: Value) -> Value: ...
    def fmul(self, a: Value, b: Value) -> Value: ...
    def fdiv(self, a: Value, b: Value) -> Value: ...
    def fneg(self, a: Value) -> Value: ...

    def const(self, t: T.Type, x: float) -> Value:
        """``x`` as a constant of the float (or float vector) type ``t``."""
        ...

    def select(self, c: Value, a: Value, b: Value) -> Value: ...

    def fcmp(self, pred: str, a: Value, b: Value) -> Value: ...

    def cast(self, op: str, v: Value, t: T.Type) -> Value:
        """The cast instruction ``op`` (``fpext``, ``bitcast``...) of ``v`` to ``t``."""
        ...

    def extract(self, vec: Value, i: int) -> Value:
        """Lane ``i`` of the vector ``vec``."""
        ...

    def insert(self, vec: Value, v: Value, i: int) -> Value:
        """``vec`` with lane ``i`` replaced by ``v``."""
        ...

    def splat(self, v: Value, t: T.VectorType) -> Value:
        """A vector of type ``t`` with every lane ``v``."""
        ...

    def call(self, name: str, ret: T.Type, args: Sequence[Value]) -> Value:
        """A call of the function ``name`` (declared when missing) returning ``ret``."""
        ...

    def math(self, name: str, *args: Value) -> Value:
        """``name(args)`` on the type of the first argument: an intrinsic where LLVM has one, else libm."""
        ...


ReverseRule = Callable[[RuleEmitter, Instruction, Value], Value]
"""``rule(e, inst, d)``: the adjoint contribution of one operand of ``inst`` given the adjoint ``d`` of its
result (an operand without a derivative has None in the table instead of a rule)."""
ForwardRule = Callable[[RuleEmitter, Instruction, Sequence[Value | None]], Value]
"""``fwd(e, inst, tangents)``: the tangent of ``inst`` from its operands' tangents (None for an inactive
operand: its tangent is zero)."""
ReverseTable = dict[str, tuple[ReverseRule | None, ...]]
"""Opcode or base name -> one reverse rule per operand; None for an operand that gets no derivative (an
index, a condition, a rounding function's input)."""
ForwardTable = dict[str, ForwardRule]
"""Opcode or base name -> the forward rule of what is not derived from the reverse rules."""


def vector_type(t: T.Type) -> T.VectorType:
    """``t``, which the instruction's opcode makes a vector type (``shufflevector``, a vector reduction)."""
    assert isinstance(t, T.VectorType), f"a vector instruction of type {t}"
    return t


__all__ = ["ForwardRule", "ForwardTable", "ReverseRule", "ReverseTable", "RuleEmitter", "vector_type"]
