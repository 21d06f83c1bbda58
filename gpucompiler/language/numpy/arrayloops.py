"""Loops that rules emit over the elements of arrays (plain counted loops: LLVM and the AD engine see ordinary code)."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

_I64 = ir.IntType(64)


def counted_loop(cg, count, body: Callable) -> None:
    """``for i in range(count): body(i)`` (``count`` an i64 value; ``body`` emits at ``cg.b``)."""
    range_loop(cg.b, ir.Constant(_I64, 0), count, body)


def range_loop(b: ir.IRBuilder, start, stop, body: Callable) -> None:
    """``for i in range(start, stop): body(i)`` (i64 values) at the builder's position."""
    before = b.block
    head, loop, done = (b.function.append_basic_block(n) for n in ("loop.head", "loop.body", "loop.done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(_I64, name="i")
    i.add_incoming(start, before)
    b.cbranch(b.icmp_signed("<", i, stop), loop, done)
    b.position_at_end(loop)
    body(i)
    i.add_incoming(b.add(i, ir.Constant(_I64, 1)), b.block)
    b.branch(head)
    b.position_at_end(done)


def nested_loop(cg, shape: list, body: Callable) -> None:
    """``for idx in np.ndindex(*shape): body(idx)`` in C order (``idx`` a list of i64 values)."""
    def level(k, outer):
        if k == len(shape):
            body(outer)
            return
        counted_loop(cg, shape[k], lambda i: level(k + 1, [*outer, i]))
    level(0, [])
