"""Adjoints of polynomial expressions taken whole.

Taken instruction by instruction, the adjoint of ``r = y*y*y + y - a`` adds
``d*(y*y)``, ``(d*y)*y`` twice and ``d`` into ``y``'s adjoint: five operations
for the derivative ``3y² + 1``. Taken whole (Griewank's statement-level
preaccumulation), it adds ``d * ((3*y)*y + 1)`` — the derivative in Horner's
form — and ``-d`` into ``a``'s: one product, and the polynomial is often
computed already (a Newton step's denominator ``3.0 * y * y + 1.0``, which
LLVM's CSE then shares).

A *polynomial tree* is a scalar ``double``/``float`` ``fadd``/``fsub``/
``fmul``/``fneg`` whose operands are constants, *leaves* (any other value) and
inner nodes: such instructions of the same block used once, by the tree. It
is taken whole when every monomial holds one leaf at most (``y³ + y - a``, not
``x * y``) and some leaf is used twice or to a power above one; otherwise its
instructions keep their own rules. The derivatives agree with the instruction
by instruction ones to rounding.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeGuard

from gpucompiler.llvm import Instruction, Value

from .arith import constant_float
from .table import RuleEmitter

_OPS = ("fadd", "fsub", "fmul", "fneg")
_TYPES = ("double", "float")
MAX_DEGREE = 8
"""Higher powers of a leaf keep the instruction-by-instruction rules (each power a product: no saving)."""
MAX_NODES = 32
"""Instructions of one tree at most."""


class Polynomial:
    """``constant + Σ_leaf Σ_k terms[leaf][k] * leaf**k`` (k ≥ 1); ``uses``: operand slots a leaf fills."""

    __slots__ = ("constant", "terms", "uses", "nodes")

    def __init__(self, constant: float = 0.0, terms: dict[Value, dict[int, float]] | None = None,
                 uses: dict[Value, int] | None = None, nodes: int = 0):
        self.constant, self.terms = constant, terms or {}
        self.uses, self.nodes = uses or {}, nodes

    @classmethod
    def leaf(cls, v: Value) -> Polynomial:
        return cls(0.0, {v: {1: 1.0}}, {v: 1})

    def scaled(self, c: float) -> Polynomial:
        return Polynomial(self.constant * c, {v: {k: a * c for k, a in p.items()} for v, p in self.terms.items()},
                          self.uses, self.nodes)

    def plus(self, other: Polynomial) -> Polynomial:
        terms = {v: dict(p) for v, p in self.terms.items()}
        for v, p in other.terms.items():
            mine = terms.setdefault(v, {})
            for k, a in p.items():
                mine[k] = mine.get(k, 0.0) + a
        return Polynomial(self.constant + other.constant, terms, _merged(self.uses, other.uses),
                          self.nodes + other.nodes)

    def times(self, other: Polynomial) -> Polynomial | None:
        """The product, or None when it would hold a monomial of two leaves (or a power past the cap)."""
        if not self.terms or not other.terms:
            c, p = (self.constant, other) if not self.terms else (other.constant, self)
            out = p.scaled(c)
            return Polynomial(out.constant, out.terms, _merged(self.uses, other.uses), self.nodes + other.nodes)
        leaves = set(self.terms) | set(other.terms)
        if len(leaves) != 1:
            return None
        (v,) = leaves
        a, b = dict(self.terms[v]), dict(other.terms[v])
        a[0], b[0] = self.constant, other.constant
        product: dict[int, float] = {}
        for i, x in a.items():
            for j, y in b.items():
                product[i + j] = product.get(i + j, 0.0) + x * y
        if max(product) > MAX_DEGREE:
            return None
        constant = product.pop(0, 0.0)
        return Polynomial(constant, {v: product}, _merged(self.uses, other.uses), self.nodes + other.nodes)

    def derivative(self, v: Value) -> list[float]:
        """The coefficients of ``d/dv``, lowest power first, without trailing zeros."""
        p = self.terms.get(v, {})
        coefficients = [(k + 1) * p.get(k + 1, 0.0) for k in range(max(p, default=0))]
        while coefficients and coefficients[-1] == 0.0:
            coefficients.pop()
        return coefficients

    def worth_taking_whole(self) -> bool:
        """Whether the whole tree's adjoint saves operations: a leaf used twice or to a power above one, and
        no leaf whose derivative vanished (``y*y - y*y``: left to the rules, which keep its NaN at infinity)."""
        if self.nodes < 2:
            return False
        repeated = any(n > 1 for n in self.uses.values()) or any(max(p) > 1 for p in self.terms.values())
        return repeated and all(self.derivative(v) for v in self.terms)


def _merged(a: dict[Value, int], b: dict[Value, int]) -> dict[Value, int]:
    out = dict(a)
    for v, n in b.items():
        out[v] = out.get(v, 0) + n
    return out


def _candidate(v: Value) -> bool:
    return isinstance(v, Instruction) and v.opcode in _OPS and str(v.type) in _TYPES


class PolynomialTrees:
    """The trees of a function: ``roots`` (root -> its polynomial, for those taken whole) and ``inner``
    (their other instructions, whose own rules are left out)."""

    def __init__(self, instructions: Iterable[Instruction]):
        self._memo: dict[Instruction, Polynomial | None] = {}
        self.roots: dict[Instruction, Polynomial] = {}
        self.inner: set[Instruction] = set()
        candidates = [i for i in instructions if _candidate(i)]
        for inst in candidates:
            if self._inlined(inst):
                continue
            p = self.polynomial(inst)
            if p is not None and p.worth_taking_whole():
                self.roots[inst] = p
        for root in self.roots:
            self._collect_inner(root)

    def _inlined(self, inst: Instruction) -> bool:
        """Whether ``inst`` is an inner node of its only user's polynomial."""
        uses = inst.uses
        if len(uses) != 1:
            return False
        user = uses[0].user
        return isinstance(user, Instruction) and _candidate(user) and _inner_operand(inst, user) \
            and self.polynomial(inst) is not None and self.polynomial(user) is not None

    def polynomial(self, inst: Instruction) -> Polynomial | None:
        """``inst``'s polynomial over its leaves, or None when it is none (a cross term, too large)."""
        if inst in self._memo:
            return self._memo[inst]
        self._memo[inst] = None  # a cycle (only through phis, which are leaves) reads None
        parts = [self._operand(inst, o) for o in inst.operands]
        op = inst.opcode
        p = parts[0].scaled(-1.0) if op == "fneg" else parts[0].plus(parts[1]) if op == "fadd" \
            else parts[0].plus(parts[1].scaled(-1.0)) if op == "fsub" else parts[0].times(parts[1])
        if p is not None:
            p = Polynomial(p.constant, p.terms, p.uses, p.nodes + 1)
            if p.nodes > MAX_NODES:
                p = None
        self._memo[inst] = p
        return p

    def _operand(self, user: Instruction, o: Value) -> Polynomial:
        c = constant_float(o)
        if c is not None:
            return Polynomial(c)
        if _inner_operand(o, user):
            inner = self.polynomial(o)
            if inner is not None:
                return inner
        return Polynomial.leaf(o)

    def _collect_inner(self, inst: Instruction) -> None:
        for o in inst.operands:
            if _inner_operand(o, inst) and self.polynomial(o) is not None:
                self.inner.add(o)
                self._collect_inner(o)


def _inner_operand(o: Value, user: Instruction) -> TypeGuard[Instruction]:
    """Whether the operand ``o`` of ``user`` may be an inner node of ``user``'s tree: such an instruction of
    the same block, used there alone."""
    return isinstance(o, Instruction) and _candidate(o) and o.parent is user.parent and len(o.uses) == 1


def horner(e: RuleEmitter, coefficients: list[float], v: Value) -> Value:
    """``Σ coefficients[k] * v**k`` (degree one at least) in Horner's form, ``(v*3)*v + 1`` for ``[1, 0, 3]``:
    no product by a leading 1, no addition of a zero."""
    top, t = coefficients[-1], v.type
    acc = v if top == 1.0 else e.fmul(v, e.const(t, top))
    for k in range(len(coefficients) - 2, -1, -1):
        if k < len(coefficients) - 2:
            acc = e.fmul(acc, v)
        if coefficients[k] != 0.0:
            acc = e.fadd(acc, e.const(t, coefficients[k]))
    return acc


def leaf_adjoint(e: RuleEmitter, p: Polynomial, leaf: Value, value: Value, d: Value) -> Value:
    """``d * p'(value)``, the adjoint ``leaf`` receives (``value``: its primal value where the rule runs); a
    constant derivative costs one product (none for 1, a negation for -1)."""
    coefficients = p.derivative(leaf)
    if len(coefficients) == 1:
        c = coefficients[0]
        if c == 1.0:
            return d
        if c == -1.0:
            return e.fneg(d)
        return e.fmul(d, e.const(d.type, c))
    return e.fmul(d, horner(e, coefficients, value))


__all__ = ["MAX_DEGREE", "MAX_NODES", "Polynomial", "PolynomialTrees", "horner", "leaf_adjoint"]
