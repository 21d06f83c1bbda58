"""The memory of a list compiled code made: a reference-counted block and its items.

A list value (``types.ListType``) is the address of a 32-byte block
``{i64 count, ptr data, i64 length, i64 capacity}``; ``data`` is a
``malloc``'d array of ``capacity`` items. The first two fields are those
of an array's allocation header (arraymem.py), so codegen keeps the counts
of lists as of arrays (codegen/lifetimes.py) and the last reference frees
``data`` and the block. Every name holding the list holds this one block:
an ``append`` (which may move ``data``) is seen through all of them.
"""

from __future__ import annotations

from llvmlite import ir

from ... import types as T

_I64, _I8, _PTR = ir.IntType(64), ir.IntType(8), ir.PointerType()
_DATA, _LENGTH, _CAPACITY, _BLOCK = 8, 16, 24, 32


def _field(cg, lst, offset: int):
    return cg.b.gep(lst, [ir.Constant(_I64, offset)], source_etype=_I8)


def length(cg, lst):
    """The number of items of list ``lst``."""
    return cg.b.load(_field(cg, lst, _LENGTH), typ=_I64)


def new_list(cg, item: T.Type | None, count: int):
    """A new list of room for ``count`` items (their values to be stored), length ``count``,
    reference count 0; a failed ``malloc`` is a ``MemoryError``."""
    b = cg.b
    size = item.itemsize if isinstance(item, T.Scalar) else 0
    malloc = cg.mod.declare("malloc", _PTR, [_I64])
    block = b.call(malloc, [ir.Constant(_I64, _BLOCK)])
    data = b.call(malloc, [ir.Constant(_I64, count * size + 1)])  # never malloc(0): null is failure
    null = ir.Constant(_PTR, None)
    cg.check_required(b.and_(b.icmp_unsigned("!=", block, null), b.icmp_unsigned("!=", data, null)),
                      "MemoryError", "cannot allocate the list")
    b.store(ir.Constant(_I64, 0), block)
    b.store(data, _field(cg, block, _DATA))
    b.store(ir.Constant(_I64, count), _field(cg, block, _LENGTH))
    b.store(ir.Constant(_I64, count), _field(cg, block, _CAPACITY))
    return block


def item_pointer(cg, lst, index, item: T.Scalar):
    """The address of item ``index`` (an i64 in range) of ``lst``."""
    data = cg.b.load(_field(cg, lst, _DATA), typ=_PTR)
    return cg.b.gep(data, [cg.b.mul(index, ir.Constant(_I64, item.itemsize))], source_etype=_I8)


def checked_index(cg, lst, index, message: str = "list index out of range"):
    """``index`` (an i64, negative from the end as in Python) as a position in ``lst``: an
    ``IndexError`` unless it names an item (checked whatever the bounds-check option: CPython's
    lists always check)."""
    b = cg.b
    n = length(cg, lst)
    wrapped = b.select(b.icmp_signed("<", index, ir.Constant(_I64, 0)), b.add(index, n), index)
    cg.check_required(b.icmp_unsigned("<", wrapped, n), "IndexError", message)
    return wrapped


def append(cg, lst, value, item: T.Scalar) -> None:
    """Store ``value`` after the last item, doubling the room when it is full."""
    b = cg.b
    n, cap = length(cg, lst), b.load(_field(cg, lst, _CAPACITY), typ=_I64)
    with b.if_then(b.icmp_signed("==", n, cap), likely=False):
        room = b.add(b.mul(cap, ir.Constant(_I64, 2)), ir.Constant(_I64, 4))
        realloc = cg.mod.declare("realloc", _PTR, [_PTR, _I64])
        data = b.call(realloc, [b.load(_field(cg, lst, _DATA), typ=_PTR),
                                b.mul(room, ir.Constant(_I64, item.itemsize))])
        cg.check_required(b.icmp_unsigned("!=", data, ir.Constant(_PTR, None)), "MemoryError",
                          "cannot grow the list")
        b.store(data, _field(cg, lst, _DATA))
        b.store(room, _field(cg, lst, _CAPACITY))
    cg.store_scalar(value, item_pointer(cg, lst, n, item), item)
    b.store(b.add(n, ir.Constant(_I64, 1)), _field(cg, lst, _LENGTH))


def pop(cg, lst, index, item: T.Scalar):
    """Remove item ``index`` (a checked position) and return it; the items after it move down one by
    one (loads and stores, which differentiated code follows; an overlapping ``memmove`` it would not)."""
    b = cg.b
    value = cg.load_scalar(item_pointer(cg, lst, index, item), item)
    last = b.sub(length(cg, lst), ir.Constant(_I64, 1))
    head, body, done = (cg.fn.append_basic_block(f"pop.{s}") for s in ("head", "body", "done"))
    start = b.block
    b.branch(head)
    b.position_at_end(head)
    j = b.phi(_I64)
    j.add_incoming(index, start)
    b.cbranch(b.icmp_signed("<", j, last), body, done)
    b.position_at_end(body)
    after = b.add(j, ir.Constant(_I64, 1))
    cg.store_scalar(cg.load_scalar(item_pointer(cg, lst, after, item), item), item_pointer(cg, lst, j, item), item)
    j.add_incoming(after, b.block)
    b.branch(head)
    b.position_at_end(done)
    b.store(last, _field(cg, lst, _LENGTH))
    return value
