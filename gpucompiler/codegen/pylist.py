"""Boxing a list compiled code returns: a new Python ``list`` of its items, then the list's reference
given back (its block is freed with the last one: interpreter/builtins/listmem.py)."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from .. import types as T
from .lltypes import I64, PTR, ll

_I8 = ir.IntType(8)


def box_list(mod, b: ir.IRBuilder, v, t: T.ListType, box_item: Callable) -> ir.Value:
    """A new reference to a Python list of the items of ``v`` (NULL with the error set when no memory);
    ``box_item(b, value, type)`` boxes one item."""
    n = b.load(b.gep(v, [ir.Constant(I64, 16)], source_etype=_I8), typ=I64)
    new = b.call(mod.declare("PyList_New", PTR, [I64]), [n])
    made = b.icmp_unsigned("!=", new, ir.Constant(PTR, None))
    count = b.select(made, n, ir.Constant(I64, 0))
    item = t.item if isinstance(t.item, T.Scalar) else None
    if item is not None:
        data = b.load(b.gep(v, [ir.Constant(I64, 8)], source_etype=_I8), typ=PTR)
        fn = b.function
        head, body, done = (fn.append_basic_block(f"list.{s}") for s in ("head", "body", "done"))
        start = b.block
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(ir.Constant(I64, 0), start)
        b.cbranch(b.icmp_signed("<", i, count), body, done)
        b.position_at_end(body)
        at = b.gep(data, [b.mul(i, ir.Constant(I64, item.itemsize))], source_etype=_I8)
        value = b.load(at, typ=_I8 if item == T.boolean else ll(item))
        value = b.trunc(value, ir.IntType(1)) if item == T.boolean else value
        b.call(mod.declare("PyList_SetItem", ir.IntType(32), [PTR, I64, PTR]), [new, i, box_item(b, value, item)])
        i.add_incoming(b.add(i, ir.Constant(I64, 1)), b.block)
        b.branch(head)
        b.position_at_end(done)
    before = b.atomic_rmw("sub", v, ir.Constant(I64, 1), "acq_rel")
    with b.if_then(b.icmp_signed("==", before, ir.Constant(I64, 1))):
        free = mod.declare("free", ir.VoidType(), [PTR])
        b.call(free, [b.load(b.gep(v, [ir.Constant(I64, 8)], source_etype=_I8), typ=PTR)])
        b.call(free, [v])
    return new
