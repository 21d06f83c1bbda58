"""Structured control flow from the blocks' jumps: ``if``/``else``, ``for``, ``while True`` with
``break``/``continue``, ``return``.

Loops are the targets of backward jumps (CPython lays code out forward); a loop's body is its natural
loop, its exit the one block outside it that its edges reach (after blocks that only pop the
iterator). An ``if`` runs up to its follow, the first block both branches reach within the
enclosing loop's body (:meth:`Structurer.follow`). A block reached on two paths
before a follow (``if a and b``) is written on each, which is exact; a budget stops blow-ups. Anything
else is an :class:`~gpucompiler.errors.UnsupportedError`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .blocks import PREFIX, Block, slot_name

class Loop:
    """A loop: its head, body and the blocks it leaves to (the normal exit of a ``for`` first); with
    more than one, each ``break`` sets the selector ``__bc_x<head>`` and the code after the loop
    dispatches on it (``for``/``else``, a ``continue`` of a rotated ``while`` that re-tests the
    condition from the top)."""

    __slots__ = ("head", "body", "exits")

    def __init__(self, head: int, body: frozenset[int], exits: tuple[int, ...]):
        self.head, self.body, self.exits = head, body, exits

    @property
    def selector(self) -> str:
        return f"{PREFIX}x{self.head}"


class Structurer:
    def __init__(self, blocks: dict[int, Block], fail: Callable[[str, int], None]):
        self.blocks, self.fail = blocks, fail
        self.budget = 32 * len(blocks) + 256
        self.preds: dict[int, set[int]] = {b: set() for b in blocks}
        for b, blk in blocks.items():
            for s in blk.succs:
                self.preds[s].add(b)
        self.loops: dict[int, Loop] = {}
        heads = sorted({s for b, blk in blocks.items() for s in blk.succs if s <= b}
                       | {b for b, blk in blocks.items() if blk.term[:1] == ("for",)})
        for h in heads:
            self.loops[h] = self._loop(h)

    # -- analysis ------------------------------------------------------------
    def canon(self, b: int) -> int:
        """``b``, past blocks that do nothing but pass control on (popping an iterator)."""
        seen = set()
        while not self.blocks[b].stmts and self.blocks[b].term[0] == "goto" and b not in seen:
            seen.add(b)
            b = self.blocks[b].term[1]
        return b

    def _loop(self, h: int) -> Loop:
        head = self.blocks[h]
        if head.term[0] == "for":  # its body is laid out between FOR_ITER and the exit it jumps to
            body = {b for b in self.blocks if h <= b < head.term[3]}
            normal = self.canon(head.term[3])
            exits = {self.canon(s) for b in body for s in self.blocks[b].succs if s not in body} - {normal}
            return Loop(h, frozenset(body), (normal, *sorted(exits)))
        tails = [b for b in self.preds[h] if b >= h]
        body, todo = {h}, list(tails)
        while todo:
            b = todo.pop()
            if b not in body:
                body.add(b)
                todo.extend(self.preds[b])
        last = max(tails)
        while True:  # blocks laid out inside the loop that leave it only by return belong to it
            inner = {s for b in body for s in self.blocks[b].succs if s not in body and h < s < last}
            if not inner:
                break
            body |= inner
        exits = {self.canon(s) for b in body for s in self.blocks[b].succs if s not in body}
        return Loop(h, frozenset(body), tuple(sorted(exits)))

    def follow(self, loop: Loop | None, *starts: int) -> int | None:
        """Where the branches of an ``if`` (or a loop's exits) meet: the first block, in layout order,
        that all reach inside the loop's body (``None``: they leave it or return). Any choice would be
        exact, since a branch is written out up to it; the first keeps the code small."""
        def reach(b: int) -> set[int]:
            seen, todo = set(), [b]
            while todo:
                n = todo.pop()
                if n in seen or (loop is not None and (n == loop.head or n not in loop.body)):
                    continue
                seen.add(n)
                todo.extend(self.blocks[n].succs)
            return seen
        common = set.intersection(*map(reach, starts))
        return min(common) if common else None

    # -- emission ------------------------------------------------------------
    def run(self) -> list[ast.stmt]:
        return self.seq(min(self.blocks), None, None)

    def seq(self, b: int | None, loop: Loop | None, stop: int | None, entering: bool = False) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        while b is not None and b != stop:
            self.budget -= 1
            if self.budget < 0:
                self.fail("control flow too tangled to write back as Python", b)
            blk = self.blocks[b]
            if loop is not None and not entering:
                if b == loop.head:
                    out.append(self._at(ast.Continue(), blk))
                    return out
                if b not in loop.body:
                    if self.canon(b) not in loop.exits:
                        self.fail("jump out of a loop to somewhere other than its exits", b)
                    if len(loop.exits) > 1:
                        out.append(self._select(loop, loop.exits.index(self.canon(b)), blk))
                    out.append(self._at(ast.Break(), blk))
                    return out
            if b in self.loops and not (entering and loop is not None and loop.head == b):
                inner = self.loops[b]
                if len(inner.exits) > 1:
                    out.append(self._select(inner, 0, blk))
                out.append(self.loop(inner))
                if len(inner.exits) <= 1:
                    b = inner.exits[0] if inner.exits else None
                    continue
                follow = self.follow(loop, *inner.exits)
                follow = stop if follow is None else follow
                dispatch: list[ast.stmt] = self.seq(inner.exits[-1], loop, follow)
                for i in reversed(range(len(inner.exits) - 1)):
                    test = ast.Compare(self._at(ast.Name(inner.selector, ast.Load()), blk), [ast.Eq()],
                                       [ast.Constant(i)])
                    dispatch = [self._at(ast.If(self._at(test, blk), self.seq(inner.exits[i], loop, follow)
                                                or [self._at(ast.Pass(), blk)], dispatch), blk)]
                out.extend(dispatch)
                b = follow
                continue
            entering = False
            out.extend(blk.stmts)
            kind = blk.term[0]
            if kind == "return":
                return out
            if kind == "goto":
                b = blk.term[1]
            elif kind == "if":
                _, test, then, other = blk.term
                follow = self.follow(loop, then, other)
                follow = stop if follow is None else follow
                body = self.seq(then, loop, follow) or [self._at(ast.Pass(), blk)]
                orelse = self.seq(other, loop, follow)
                out.append(self._at(ast.If(test, body, orelse), blk))
                b = follow
            else:
                self.fail("loop header reached outside its loop", b)
        return out

    def loop(self, loop: Loop) -> ast.stmt:
        head = self.blocks[loop.head]
        if head.term[0] == "for":
            _, iterable, body_start, _ = head.term
            body = self.seq(body_start, loop, None)
            target: ast.expr = ast.Name(slot_name(body_start, len(head.entry or ())), ast.Store())
            first = body[0] if body else None
            if (isinstance(first, ast.Assign) and isinstance(first.value, ast.Name)
                    and first.value.id == target.id and len(first.targets) == 1
                    and isinstance(first.targets[0], (ast.Name, ast.Tuple))):
                target = first.targets[0]
                body = body[1:]
            body = self._trim(body) or [self._at(ast.Pass(), head)]
            return self._at(ast.For(self._at(target, head), iterable, body, []), head)
        body = self._trim(self.seq(loop.head, loop, None, entering=True)) or [self._at(ast.Pass(), head)]
        return self._at(ast.While(self._at(ast.Constant(True), head), body, []), head)

    def _select(self, loop: Loop, index: int, blk: Block) -> ast.stmt:
        return self._at(ast.Assign([self._at(ast.Name(loop.selector, ast.Store()), blk)],
                                   self._at(ast.Constant(index), blk)), blk)

    @staticmethod
    def _trim(body: list[ast.stmt]) -> list[ast.stmt]:
        """A loop body without the ``continue`` it ends with."""
        return body[:-1] if body and isinstance(body[-1], ast.Continue) else body

    def _at(self, node, blk: Block):
        op = blk.ops[0]
        node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = op.line, op.col, op.line, op.col
        return node


__all__ = ["Structurer"]
