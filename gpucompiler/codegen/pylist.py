"""Boxing a list or dict compiled code returns: a new Python ``list`` of its items (``dict`` of its
entries, in their order), then the container's reference given back (its block is freed with the
last one: interpreter/builtins/listmem.py, dictmem.py)."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from .. import types as T
from .lltypes import I64, PTR, ll

_I8 = ir.IntType(8)


def _loop(b: ir.IRBuilder, count, body: Callable) -> None:
    """``for i in range(count): body(i)`` (i64) at the builder's position."""
    fn = b.function
    head, inside, done = (fn.append_basic_block(f"box.{s}") for s in ("head", "body", "done"))
    start = b.block
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(ir.Constant(I64, 0), start)
    b.cbranch(b.icmp_signed("<", i, count), inside, done)
    b.position_at_end(inside)
    body(i)
    i.add_incoming(b.add(i, ir.Constant(I64, 1)), b.block)
    b.branch(head)
    b.position_at_end(done)


def _load(b: ir.IRBuilder, base, offset, t: T.Scalar):
    at = b.gep(base, [offset], source_etype=_I8)
    if t == T.boolean:
        return b.trunc(b.load(at, typ=_I8), ir.IntType(1))
    return b.load(at, typ=ll(t))


def _field(b: ir.IRBuilder, v, offset: int, typ: ir.Type):
    return b.load(b.gep(v, [ir.Constant(I64, offset)], source_etype=_I8), typ=typ)


def _release(mod, b: ir.IRBuilder, v) -> None:
    before = b.atomic_rmw("sub", v, ir.Constant(I64, 1), "acq_rel")
    with b.if_then(b.icmp_signed("==", before, ir.Constant(I64, 1))):
        free = mod.declare("free", ir.VoidType(), [PTR])
        b.call(free, [_field(b, v, 8, PTR)])
        b.call(free, [v])


def box_list(mod, b: ir.IRBuilder, v, t: T.ListType, box_item: Callable) -> ir.Value:
    """A new reference to a Python list of the items of ``v`` (NULL with the error set when no memory);
    ``box_item(b, value, type)`` boxes one item."""
    n = _field(b, v, 16, I64)
    new = b.call(mod.declare("PyList_New", PTR, [I64]), [n])
    count = b.select(b.icmp_unsigned("!=", new, ir.Constant(PTR, None)), n, ir.Constant(I64, 0))
    item = t.item
    if isinstance(item, T.Scalar):
        data = _field(b, v, 8, PTR)
        setitem = mod.declare("PyList_SetItem", ir.IntType(32), [PTR, I64, PTR])
        _loop(b, count, lambda i: b.call(setitem, [new, i, box_item(b, _load(
            b, data, b.mul(i, ir.Constant(I64, item.itemsize)), item), item)]))
    _release(mod, b, v)
    return new


def box_dict(mod, b: ir.IRBuilder, v, t: T.DictType, box_item: Callable) -> ir.Value:
    """A new reference to a Python dict of the entries of ``v`` in their order (NULL with the error set
    when no memory)."""
    new = b.call(mod.declare("PyDict_New", PTR, []), [])
    count = b.select(b.icmp_unsigned("!=", new, ir.Constant(PTR, None)), _field(b, v, 16, I64), ir.Constant(I64, 0))
    kt, vt = t.key, t.value
    if isinstance(kt, T.Scalar) and isinstance(vt, T.Scalar):
        data, cap = _field(b, v, 8, PTR), _field(b, v, 24, I64)
        setitem = mod.declare("PyDict_SetItem", ir.IntType(32), [PTR, PTR, PTR])
        decref = mod.declare("Py_DecRef", ir.VoidType(), [PTR])

        def entry(i):
            key = box_item(b, _load(b, data, b.mul(i, ir.Constant(I64, kt.itemsize)), kt), kt)
            values = b.mul(cap, ir.Constant(I64, kt.itemsize))
            value = box_item(b, _load(b, data, b.add(values, b.mul(i, ir.Constant(I64, vt.itemsize))), vt), vt)
            b.call(setitem, [new, key, value])  # takes references of its own
            b.call(decref, [key])
            b.call(decref, [value])
        _loop(b, count, entry)
    _release(mod, b, v)
    return new
