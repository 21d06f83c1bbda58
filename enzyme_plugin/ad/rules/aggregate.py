"""Aggregates (``extractvalue``/``insertvalue``): the derivative of a struct or
array value is a value of the same type holding the derivatives of its float
members (zero in the others). Derivative code returns such aggregates
(``{ double }`` of adjoints, ``{ primal, tangent }``), so differentiating it
again (higher-order AD) goes through these rules."""

from __future__ import annotations

from collections.abc import Sequence

from gpucompiler.llvm import Instruction, Value

from ..emit import zero
from .table import ForwardTable, ReverseTable, RuleEmitter


def _extract_adjoint(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    return e.b.insertvalue(zero(I.operands[0].type), d, I.aggregate_indices)


def _insert_adjoint_agg(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    return e.b.insertvalue(d, zero(I.operands[1].type), I.aggregate_indices)


def _insert_adjoint_value(e: RuleEmitter, I: Instruction, d: Value) -> Value:
    return e.b.extractvalue(d, I.aggregate_indices)


REVERSE: ReverseTable = {
    "extractvalue": (_extract_adjoint,),
    "insertvalue": (_insert_adjoint_agg, _insert_adjoint_value),
}


def _extract_fwd(e: RuleEmitter, I: Instruction, ts: Sequence[Value | None]) -> Value:
    return e.b.extractvalue(ts[0], I.aggregate_indices) if ts[0] is not None else zero(I.type)


def _insert_fwd(e: RuleEmitter, I: Instruction, ts: Sequence[Value | None]) -> Value:
    agg = ts[0] if ts[0] is not None else zero(I.type)
    v = ts[1] if ts[1] is not None else zero(I.operands[1].type)
    return e.b.insertvalue(agg, v, I.aggregate_indices)


FORWARD: ForwardTable = {"extractvalue": _extract_fwd, "insertvalue": _insert_fwd}

__all__ = ["FORWARD", "REVERSE"]
