"""Boxing a list or dict compiled code returns: a new Python ``list`` of its items (``dict`` of its
entries, in their order), then the container's reference given back (its block is freed with the
last one: language/python/listmem.py, dictmem.py). One that is a list or dict argument's compiled
copy is that argument (``parents``: :mod:`.pyargs`)."""

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


def load_item(b: ir.IRBuilder, base, offset, t: T.Scalar):
    at = b.gep(base, [offset], source_etype=_I8)
    if t == T.boolean:
        return b.trunc(b.load(at, typ=_I8), ir.IntType(1))
    return b.load(at, typ=ll(t))


def field(b: ir.IRBuilder, v, offset: int, typ: ir.Type):
    return b.load(b.gep(v, [ir.Constant(I64, offset)], source_etype=_I8), typ=typ)


def release(mod, b: ir.IRBuilder, v) -> None:
    before = b.atomic_rmw("sub", v, ir.Constant(I64, 1), "acq_rel")
    with b.if_then(b.icmp_signed("==", before, ir.Constant(I64, 1))):
        free = mod.declare("free", ir.VoidType(), [PTR])
        b.call(free, [field(b, v, 8, PTR)])
        b.call(free, [v])


def _parent(mod, b: ir.IRBuilder, v, t, parents, copy: Callable) -> ir.Value:
    """The argument object of ``parents`` (``(object, block, type)``) whose block is ``v`` (a new reference),
    else ``copy()``; ``v``'s reference given back either way."""
    if not any(pt == t for _, _, pt in parents):
        made = copy()
        release(mod, b, v)
        return made
    found = ir.Constant(PTR, None)
    for obj, block, pt in parents:
        if pt == t:
            found = b.select(b.icmp_unsigned("==", v, block), obj, found)
    with b.if_else(b.icmp_unsigned("!=", found, ir.Constant(PTR, None))) as (same, other):
        with same:
            b.call(mod.declare("Py_IncRef", ir.VoidType(), [PTR]), [found])
            same_end = b.block
        with other:
            made = copy()
            other_end = b.block
    out = b.phi(PTR)
    out.add_incoming(found, same_end)
    out.add_incoming(made, other_end)
    release(mod, b, v)
    return out


def box_list(mod, b: ir.IRBuilder, v, t: T.ListType, box_item: Callable, parents=()) -> ir.Value:
    """A new reference to a Python list of the items of ``v`` (NULL with the error set when no memory);
    ``box_item(b, value, type)`` boxes one item."""
    return _parent(mod, b, v, t, parents, lambda: _new_list(mod, b, v, t, box_item))


def box_dict(mod, b: ir.IRBuilder, v, t: T.DictType, box_item: Callable, parents=()) -> ir.Value:
    """A new reference to a Python dict of the entries of ``v`` in their order (NULL with the error set when no
    memory)."""
    return _parent(mod, b, v, t, parents, lambda: _new_dict(mod, b, v, t, box_item))


def _new_list(mod, b: ir.IRBuilder, v, t: T.ListType, box_item: Callable) -> ir.Value:
    n = field(b, v, 16, I64)
    new = b.call(mod.declare("PyList_New", PTR, [I64]), [n])
    count = b.select(b.icmp_unsigned("!=", new, ir.Constant(PTR, None)), n, ir.Constant(I64, 0))
    item = t.item
    if isinstance(item, T.Scalar):
        data = field(b, v, 8, PTR)
        setitem = mod.declare("PyList_SetItem", ir.IntType(32), [PTR, I64, PTR])
        _loop(b, count, lambda i: b.call(setitem, [new, i, box_item(b, load_item(
            b, data, b.mul(i, ir.Constant(I64, item.itemsize)), item), item)]))
    return new


def _new_dict(mod, b: ir.IRBuilder, v, t: T.DictType, box_item: Callable) -> ir.Value:
    new = b.call(mod.declare("PyDict_New", PTR, []), [])
    count = b.select(b.icmp_unsigned("!=", new, ir.Constant(PTR, None)), field(b, v, 16, I64), ir.Constant(I64, 0))
    kt, vt = t.key, t.value
    if isinstance(kt, T.Scalar) and isinstance(vt, T.Scalar):
        data, cap = field(b, v, 8, PTR), field(b, v, 24, I64)
        setitem = mod.declare("PyDict_SetItem", ir.IntType(32), [PTR, PTR, PTR])
        decref = mod.declare("Py_DecRef", ir.VoidType(), [PTR])

        def entry(i):
            key = box_item(b, load_item(b, data, b.mul(i, ir.Constant(I64, kt.itemsize)), kt), kt)
            values = b.mul(cap, ir.Constant(I64, kt.itemsize))
            value = box_item(b, load_item(b, data, b.add(values, b.mul(i, ir.Constant(I64, vt.itemsize))), vt), vt)
            b.call(setitem, [new, key, value])  # takes references of its own
            b.call(decref, [key])
            b.call(decref, [value])
        _loop(b, count, entry)
    return new
