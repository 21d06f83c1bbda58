"""Loops leave through their header: values a loop computes reach the code after it as phis of its header.

LLVM rotates loops: the exit test sits in the latch, and the code after the loop reads the last
iteration's values straight from the loop's body. Mesa's lavapipe (llvmpipe, Mesa 22.3) runs a loop
as long as any invocation of a SIMD group is in it; an invocation that left early is masked off, and
a value computed in the body and read after the loop may then be the one the last iteration computed
for it while it was masked off (a tape load there read 0), not the one of its own last iteration:
NaN in a gradient's reverse loop (``tests/spirv/test_spirv_loop_exits.py``). A value carried by a
phi is kept per invocation, so :func:`exit_through_headers` rewrites each loop whose only exit is
its latch's conditional branch::

    H: phis; body ...                   G: phis of H; c' = phi [true, pre], [c, T]
    T: ... br c, H, X          ->          v' = phi [0, pre], [v, T]   (each v used after the loop)
    X: use(v)                              br c', H, X
                                        H: body ...   T: ... br G      X: use(v')

The rewritten loop has the same iterations and the same values (``v'`` on the exit is the ``v`` of
the last iteration), in the plain ``while`` form lavapipe runs right. Loops that exit elsewhere, or whose
values leaving are not integers or floats (a phi of pointers needs ``VariablePointers``), keep
their form.
"""

from __future__ import annotations

from ...graphs import immediate_dominators
from ...llvm import BasicBlock, Builder, Function, Instruction, Value, const_float, const_int, constant, types as LT


def exit_through_headers(fn: Function) -> int:
    """Rewrite every loop of ``fn`` that exits only from its latch (see the module docstring); returns
    how many were rewritten."""
    done = 0
    while (loop := _next_loop(fn)) is not None:
        _rewrite(fn, *loop)
        done += 1
    return done


def _next_loop(fn: Function) -> tuple[BasicBlock, BasicBlock, BasicBlock, set] | None:
    """``(header, latch, exit, blocks)`` of a loop to rewrite, or None."""
    graph = {b: b.successors for b in fn.blocks}
    idom = immediate_dominators(graph, fn.entry)
    for latch in fn.blocks:
        if latch not in idom:
            continue
        for header in latch.successors:
            if _dominates(idom, header, latch):
                loop = _rewritable(graph, idom, header, latch)
                if loop is not None:
                    return loop
    return None


def _dominates(idom: dict, a: BasicBlock, b: BasicBlock) -> bool:
    while b is not a:
        up = idom[b]
        if up is b:
            return False
        b = up
    return True


def _rewritable(graph, idom, header: BasicBlock, latch: BasicBlock):
    body, work = {header, latch}, [latch]
    while work:
        block = work.pop()
        for p in block.predecessors if block is not header else ():
            if p not in body and p in idom:
                body.add(p)
                work.append(p)
    term = latch.terminator
    if term is None or term.opcode != "br" or len(term.operands) != 3:
        return None
    exits = [s for b in body for s in graph[b] if s not in body]
    latches = [p for p in header.predecessors if p in body]
    outside = [p for p in header.predecessors if p not in body]
    if len(exits) != 1 or latches != [latch] or exits[0] not in term.operands or not outside:
        return None
    if any(sum(op is header for op in _terminator(p).operands) != 1 for p in outside):
        return None
    if not all(_carried(v.type) for v in _leaving(body)):
        return None
    return header, latch, exits[0], body


def _terminator(block: BasicBlock) -> Instruction:
    term = block.terminator
    assert term is not None, "a block branching in a loop has a terminator"
    return term


def _carried(t: LT.Type) -> bool:
    """Whether a header phi may carry a value of type ``t`` in a shader (integers and floats)."""
    return t.kind in ("int", "float") or (t.kind == "vector" and t.scalar.kind in ("int", "float"))


def _leaving(body: set) -> list[Instruction]:
    """The values computed in ``body`` and used after it, in block order."""
    blocks = sorted(body, key=lambda b: b.parent.blocks.index(b))
    return [i for b in blocks for i in b.instructions
            if any(isinstance(u, Instruction) and u.parent not in body for u in i.users)]


def _zero(t: LT.Type) -> Value:
    if t.kind == "vector":
        return constant(t, "zeroinitializer")
    return const_float(t, 0.0) if t.kind == "float" else const_int(t, 0)


def _rewrite(fn: Function, header: BasicBlock, latch: BasicBlock, exit: BasicBlock, body: set) -> None:
    outside = [p for p in header.predecessors if p not in body]
    leaving = _leaving(body)
    gate = BasicBlock(f"{header.name}.gate" if header.name else "", fn)
    fn.blocks.insert(fn.blocks.index(header), gate)
    for phi in [i for i in header.instructions if i.opcode == "phi"]:
        phi.remove_from_parent()
        gate.append(phi)
    for p in outside:
        term = _terminator(p)
        term.set_operand(term.operands.index(header), gate)
    term = _terminator(latch)
    cond, stays = term.operands[0], term.operands[1] is header  # br i1 c, label a, label b
    term.erase()
    b = Builder(gate)
    carried = {v: b.phi(v.type, [*((_zero(v.type), p) for p in outside), (v, latch)]) for v in leaving}
    go = b.phi(LT.i1, [*((const_int(LT.i1, 1 if stays else 0), p) for p in outside), (cond, latch)])
    if stays:
        b.cond_br(go, header, exit)
    else:
        b.cond_br(go, exit, header)
    Builder(latch).br(gate)
    for phi in (i for i in exit.instructions if i.opcode == "phi"):
        for k in range(1, len(phi.operands), 2):
            if phi.operands[k] is latch:
                phi.set_operand(k, gate)
    for v, phi in carried.items():
        for use in list(v.uses):
            user = use.user
            if isinstance(user, Instruction) and user.parent is not gate and user.parent not in body:
                user.set_operand(use.index, phi)


__all__ = ["exit_through_headers"]
