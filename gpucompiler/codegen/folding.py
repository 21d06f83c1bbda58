# llvmlite has no type stubs: its members are untyped (strict elsewhere)
# pyright: reportUnknownMemberType=false, reportMissingTypeStubs=false
"""An IR builder that folds comparisons, conversions and selects of constants, for modules LLVM compiles at
``opt_level=0``.

Rules lower Python's semantics whatever their operands: ``i % 3`` tests its divisor for zero and -1,
``s / 2`` converts 2 to a float and tests it. LLVM's O0 pipeline folds none of that, so each test
became a branch, a cold block and its call in the quick tier's code (docs/user_guide.md, "Tiered first
compiles"), generated, printed, parsed and compiled for nothing. Folded here as LLVM's constant folder
folds them (integers by their bit width, floats as IEEE doubles: a NaN is unordered), the code computes
the same values; a check whose condition folds to true emits nothing
(:meth:`~gpucompiler.codegen.function.FunctionCodegen.check` and friends). At higher levels the
module is left as it was: LLVM's own folding gives the code it always gave.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from llvmlite import ir

_I1 = ir.IntType(1)
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _int(v: Any, signed: bool) -> int | None:
    """The value of the integer constant ``v`` at its bit width (two's complement when ``signed``), else None."""
    if not (isinstance(v, ir.Constant) and isinstance(v.type, ir.IntType) and type(v.constant) in (int, bool)):
        return None
    bits = v.type.width
    x = int(v.constant) % (1 << bits)
    return x - (1 << bits) if signed and x >> (bits - 1) else x


def _double(v: Any) -> float | None:
    """The value of the double constant ``v``, else None."""
    if isinstance(v, ir.Constant) and isinstance(v.type, ir.DoubleType) and type(v.constant) in (int, float):
        return float(v.constant)
    return None


def is_true(v: Any) -> bool:
    """Whether ``v`` is the i1 constant true (a check of it never fails)."""
    return _int(v, False) == 1 and v.type == _I1


class FoldingBuilder(ir.IRBuilder):
    """``ir.IRBuilder`` whose integer and double comparisons, ``sitofp`` to double, logic on i1 and
    ``select`` on an i1 constant give a constant when their operands are constants."""

    def icmp_signed(self, cmpop, lhs, rhs, name=""):
        c = _folded_icmp(cmpop, lhs, rhs, True)
        return super().icmp_signed(cmpop, lhs, rhs, name) if c is None else c

    def icmp_unsigned(self, cmpop, lhs, rhs, name=""):
        c = _folded_icmp(cmpop, lhs, rhs, False)
        return super().icmp_unsigned(cmpop, lhs, rhs, name) if c is None else c

    def fcmp_ordered(self, cmpop, lhs, rhs, name="", flags=()):
        c = _folded_fcmp(cmpop, lhs, rhs, False, flags)
        return super().fcmp_ordered(cmpop, lhs, rhs, name, flags) if c is None else c

    def fcmp_unordered(self, cmpop, lhs, rhs, name="", flags=()):
        c = _folded_fcmp(cmpop, lhs, rhs, True, flags)
        return super().fcmp_unordered(cmpop, lhs, rhs, name, flags) if c is None else c

    def sitofp(self, value, typ, name=""):
        a = _int(value, True)
        if a is not None and isinstance(typ, ir.DoubleType):
            return ir.Constant(typ, float(a))  # round to nearest, ties to even: LLVM's conversion
        return super().sitofp(value, typ, name)

    def and_(self, lhs, rhs, name=""):
        a, b = _bits(lhs, rhs)
        return super().and_(lhs, rhs, name) if a is None or b is None else ir.Constant(_I1, a & b)

    def or_(self, lhs, rhs, name=""):
        a, b = _bits(lhs, rhs)
        return super().or_(lhs, rhs, name) if a is None or b is None else ir.Constant(_I1, a | b)

    def xor(self, lhs, rhs, name=""):
        a, b = _bits(lhs, rhs)
        return super().xor(lhs, rhs, name) if a is None or b is None else ir.Constant(_I1, a ^ b)

    def select(self, cond, lhs, rhs, name="", flags=()):
        c = _int(cond, False) if cond.type == _I1 and not flags else None
        if c is not None and lhs.type == rhs.type:
            return lhs if c else rhs
        return super().select(cond, lhs, rhs, name, flags)


def _folded_icmp(cmpop: str, lhs, rhs, signed: bool) -> ir.Constant | None:
    a, b = _int(lhs, signed), _int(rhs, signed)
    if a is None or b is None or cmpop not in _COMPARE or lhs.type != rhs.type:
        return None
    return ir.Constant(_I1, int(_COMPARE[cmpop](a, b)))


def _folded_fcmp(cmpop: str, lhs, rhs, unordered: bool, flags) -> ir.Constant | None:
    a, b = _double(lhs), _double(rhs)
    if a is None or b is None or cmpop not in _COMPARE or flags:
        return None
    if math.isnan(a) or math.isnan(b):
        return ir.Constant(_I1, int(unordered))
    return ir.Constant(_I1, int(_COMPARE[cmpop](a, b)))


def _bits(lhs, rhs) -> tuple[int | None, int | None]:
    """Both operands' values when both are i1 constants."""
    if lhs.type != _I1 or rhs.type != _I1:
        return None, None
    return _int(lhs, False), _int(rhs, False)
