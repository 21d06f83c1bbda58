"""Loop-carried floats that are a function of another loop-carried value, rebuilt from it before AD.

A Newton loop carries its residual beside its iterate::

    while abs(r) > tol and k < 60:
        y = y - r / (3*y*y + 1)
        r = y*y*y + y - a

``r`` enters the loop as ``g(y0)`` and the latch passes back ``g(y')``, ``y'`` being what it passes back
to ``y``: ``r`` is ``g(y)`` at every iteration. :func:`rebuild_carried` has the header compute ``g(y)``
and gives that to every use of the phi (the same operations on the same operands: bitwise the same
values). The reverse sweep then takes the adjoint of ``r`` to the iteration's own ``y`` (taped anyway)
instead of back through the previous iteration's ``g(y')``, which needed ``y'`` and so the quotient that
made it: one tape slot per iteration instead of two (the quotient's adjoint is then taken with its
operands, :data:`~.rules.arith.REVERSE`'s ``fdiv``). The forward sweep, which needs no adjoint, carries the
phi again (:class:`Carried`, :meth:`.sweep.Sweep.run`): ``g(y)`` is not computed twice there.

A value the loop passes out the same way (``y*y`` after the loop, which LLVM takes from the last
iteration's ``y'*y'`` that the residual computes anyway) is rebuilt after the loop from ``y'`` there:
the reverse sweep of the loop then needs no ``y'`` for it either.

Only operations without side effects are matched (arithmetic, divisions included, casts, comparisons, selects), with the
loop's invariants and constants as the other leaves; commutative operands may be spelled in either order.
"""

from __future__ import annotations

from typing import NamedTuple

from gpucompiler.llvm import BasicBlock, Builder, Instruction, User, Value

from .analysis import CFG
from .emit import is_float_like
from .loops import find_loops

#: opcodes matched inside ``g``: those without side effects or memory (a division too: the reverse sweep
#: computes it again or tapes it, :mod:`.recompute`, as it would the residual's own slot)
_PURE = frozenset("add sub mul shl lshr ashr and or xor trunc zext sext icmp fcmp select fadd fsub fmul fdiv "
                  "fneg fpext fptrunc sitofp uitofp".split())
_COMMUTATIVE = frozenset("add mul and or xor fadd fmul".split())
#: instructions that must come first after a block's phis (nothing is computed before them)
_EH_PADS = frozenset(("landingpad", "catchpad", "cleanuppad", "catchswitch"))
#: most instructions in one ``g`` (a residual of a few terms is 4 to 8)
MAX_NODES = 24


class Carried(NamedTuple):
    """A header phi :func:`rebuild_carried` replaced by ``value`` (``g`` of another phi): its incoming
    ``start`` from ``preheader`` and ``back`` from ``latch``."""

    value: Instruction
    start: Value
    back: Value
    preheader: BasicBlock
    latch: BasicBlock


def rebuild_carried(fn) -> list[Carried]:
    """Rewrite every header phi of ``fn``'s canonical loops that carries ``g`` of another phi, and the loops'
    exit values computed the same way (see the module docstring); returns the header phis replaced."""
    rewritten: list[Carried] = []
    for lp in find_loops(CFG(fn))[0]:
        if lp.preheader is None or lp.latch is None or _after_phis(lp.header).opcode in _EH_PADS:
            continue
        phis = [i for i in lp.header.instructions if i.opcode == "phi"]
        edges = {p: _edges(p, lp) for p in phis}
        for p in phis:
            found = edges[p]
            if not is_float_like(p.type) or found is None or not p.uses:
                continue
            start, back = found
            others = {q: e for q, e in edges.items() if q is not p and e is not None}
            nodes: list = []
            leaves = _match(back, start, lp, others, nodes)
            if leaves is None or len(leaves) != 1 or not nodes:
                continue
            value = _emit(back, lp, {others[q][1]: q for q in leaves}, _after_phis(lp.header))
            p.replace_all_uses_with(value)
            p.erase()
            rewritten.append(Carried(value, start, back, lp.preheader, lp.latch))
        _rebuild_outside(lp, {e[1] for e in edges.values() if e is not None})
    return rewritten


def _rebuild_outside(lp, backs: set) -> int:
    """Rebuild after the loop, from the latch values ``backs`` there, the floats the loop passes out
    (an exit's one-entry phi) that are computed from those values alone and used in the loop too."""
    rewritten = 0
    for block in lp.exits:
        if list(block.predecessors) != [lp.latch] or _after_phis(block).opcode in _EH_PADS:
            continue  # (an unwind destination: nothing but phis may come before its pad)
        for phi in [i for i in block.instructions if i.opcode == "phi"]:
            (v, _), = phi.incoming
            if not is_float_like(phi.type) or not isinstance(v, Instruction) or v in backs:
                continue
            nodes: list = []
            leaves = _leaves(v, lp, backs, nodes)
            if not leaves or not any(u.parent in lp.blocks for u in v.users if isinstance(u, Instruction)):
                continue
            at = _after_phis(block)
            b = Builder()
            b.position_before(block.instructions[0])
            passed = {leaf: b.phi(leaf.type, [(leaf, lp.latch)]) for leaf in leaves}
            phi.replace_all_uses_with(_emit(v, lp, passed, at))
            phi.erase()
            rewritten += 1
    return rewritten


def _leaves(v: Value, lp, backs: set, nodes: list) -> set | None:
    """The latch values ``v`` is computed from by :data:`_PURE` operations (with values from outside the
    loop), or None."""
    if v in backs:
        return {v}
    if not isinstance(v, Instruction) or v.parent not in lp.blocks:
        return set()
    if v.opcode not in _PURE or len(nodes) >= MAX_NODES:
        return None
    nodes.append(v)
    found: set = set()
    for o in v.operands:
        got = _leaves(o, lp, backs, nodes)
        if got is None:
            return None
        found |= got
    return found


def _after_phis(block) -> Instruction:
    return next(i for i in block.instructions if i.opcode != "phi")


def _edges(phi, lp):
    """``(value from the preheader, value from the latch)`` of a header phi, or None."""
    if len(phi.incoming) != 2:
        return None
    got = {id(block): v for v, block in phi.incoming}
    start, back = got.get(id(lp.preheader)), got.get(id(lp.latch))
    return None if start is None or back is None else (start, back)


def _same_leaf(a: Value, b: Value) -> bool:
    if a is b:
        return True
    return not isinstance(a, (Instruction, User)) and a.type == b.type and a.ref is not None and a.ref == b.ref


def _match(back: Value, start: Value, lp, others: dict, nodes: list) -> set | None:
    """The phis ``g``'s leaves are, when ``back`` is ``g`` of their latch values and ``start`` the same
    ``g`` of their preheader values (the instructions of ``g`` appended to ``nodes``); else None."""
    carried = [q for q, (_, q_back) in others.items() if back is q_back]
    if carried:  # a latch value of another phi is only ever that phi (as :func:`_emit` rebuilds it)
        found = [q for q in carried if _same_leaf(start, others[q][0])]
        return {found[0]} if found else None
    if not isinstance(back, Instruction) or back.parent not in lp.blocks:
        return set() if _same_leaf(back, start) else None
    if (not isinstance(start, Instruction) or back.opcode not in _PURE or start.opcode != back.opcode
            or start.type != back.type or tuple(start.parts) != tuple(back.parts)
            or len(start.operands) != len(back.operands) or len(nodes) >= MAX_NODES):
        return None
    orders = [start.operands]
    if back.opcode in _COMMUTATIVE and len(start.operands) == 2:
        orders.append(start.operands[::-1])
    for order in orders:
        mark, leaves = len(nodes), set()
        for b, s in zip(back.operands, order):
            got = _match(b, s, lp, others, nodes)
            if got is None:
                break
            leaves |= got
        else:
            nodes.append(back)
            return leaves
        del nodes[mark:]
    return None


def _emit(back: Value, lp, leaves: dict, at: Instruction) -> Instruction:
    """``back`` computed again before ``at`` from the values ``leaves`` maps its leaves to (a latch value
    to its phi)."""
    b = Builder()
    b.position_before(at)
    made: dict = {}

    def build(v: Value) -> Value:  # (``back`` is an instruction of the loop: so is what it gives)
        if v in leaves:
            return leaves[v]
        if not isinstance(v, Instruction) or v.parent not in lp.blocks:
            return v
        hit = made.get(v)
        if hit is None:
            clone = v.detached_copy("")
            for o in v.operands:
                clone.append_operand(build(o))
            hit = made[v] = b.insert(clone)
        return hit

    out = build(back)
    assert isinstance(out, Instruction)
    return out


__all__ = ["rebuild_carried"]
