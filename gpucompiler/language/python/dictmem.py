"""The memory of a dict compiled code made: an insertion-ordered hash table of numbers.

A dict value (``types.DictType``) is the address of a 32-byte block
``{i64 count, ptr data, i64 length, i64 capacity}`` (the first two fields
an array header's: codegen keeps its references as of arrays and lists).
``data`` holds, for a capacity ``c`` (0, or a power of two from 8):
``c`` keys, then ``c`` values, both in insertion order (CPython's order of
iteration), then an index of ``2c`` i64 slots, each 0 (free) or one more
than the position of the entry whose key hashes there (open addressing,
linear probing, at most half full). A removal (:func:`remove`) moves the
later entries down one place and builds the index again, so the index has
no tombstones and a probe ends at the first free slot. Keys are bools, integers or floats compared
by ``==`` (``-0.0`` is ``0.0``; a NaN key is refused by the rules, dicts.py).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ... import types as T
from ..numpy.arrayloops import range_loop

_I64, _I8, _PTR = ir.IntType(64), ir.IntType(8), ir.PointerType()
_DATA, _LENGTH, _CAPACITY, _BLOCK = 8, 16, 24, 32
_FIRST_ROOM = 8


def _c(v: int) -> ir.Constant:
    return ir.Constant(_I64, v)


def _field(cg, d, offset: int):
    return cg.b.gep(d, [_c(offset)], source_etype=_I8)


def length(cg, d):
    """The number of entries of dict ``d``."""
    return cg.b.load(_field(cg, d, _LENGTH), typ=_I64)


def new_dict(cg):
    """A new empty dict (no room yet), reference count 0; a failed ``malloc`` is a ``MemoryError``."""
    b = cg.b
    malloc = cg.mod.declare("malloc", _PTR, [_I64])
    block, data = b.call(malloc, [_c(_BLOCK)]), b.call(malloc, [_c(1)])
    null = ir.Constant(_PTR, None)
    cg.check_required(b.and_(b.icmp_unsigned("!=", block, null), b.icmp_unsigned("!=", data, null)),
                      "MemoryError", "cannot allocate the dict")
    for offset, v in ((0, _c(0)), (_DATA, data), (_LENGTH, _c(0)), (_CAPACITY, _c(0))):
        b.store(v, _field(cg, block, offset))
    return block


def loop(cg, start, stop, body: Callable) -> None:
    """``for i in range(start, stop): body(i)`` (i64 values) at the builder's position."""
    range_loop(cg.b, start, stop, body)


class Table:
    """The parts of dict ``d`` of key type ``kt`` and value type ``vt`` at the builder's position (read
    again after anything that may grow it)."""

    def __init__(self, cg, d, kt: T.Scalar, vt: T.Scalar):
        self.cg, self.d, self.kt, self.vt = cg, d, kt, vt
        b = cg.b
        self.data = b.load(_field(cg, d, _DATA), typ=_PTR)
        self.cap = b.load(_field(cg, d, _CAPACITY), typ=_I64)

    def key_at(self, e):
        return self.cg.b.gep(self.data, [self.cg.b.mul(e, _c(self.kt.itemsize))], source_etype=_I8)

    def value_at(self, e):
        b = self.cg.b
        start = b.mul(self.cap, _c(self.kt.itemsize))
        return b.gep(self.data, [b.add(start, b.mul(e, _c(self.vt.itemsize)))], source_etype=_I8)

    def slot_at(self, i):
        b = self.cg.b
        start = b.mul(self.cap, _c(self.kt.itemsize + self.vt.itemsize))
        return b.gep(self.data, [b.add(start, b.mul(i, _c(8)))], source_etype=_I8)

    def hash(self, key):
        """An i64 mixing every bit of ``key`` (equal keys hash equal: ``-0.0`` as ``0.0``)."""
        b, kt = self.cg.b, self.kt
        if kt.kind == "f":
            x = b.fpext(key, ir.DoubleType()) if kt.bits < 64 else key
            x = b.select(b.fcmp_ordered("==", x, ir.Constant(ir.DoubleType(), 0.0)),
                         ir.Constant(ir.DoubleType(), 0.0), x)
            h = b.bitcast(x, _I64)
        else:
            h = b.zext(key, _I64) if kt.kind in "bu" and kt.bits < 64 else b.sext(key, _I64) if kt.bits < 64 else key
        for shift, factor in ((33, 0xFF51AFD7ED558CCD), (33, 0xC4CEB9FE1A85EC53), (33, None)):  # murmur3's finalizer
            h = b.xor(h, b.lshr(h, _c(shift)))
            if factor is not None:
                h = b.mul(h, ir.Constant(_I64, factor - (1 << 64) if factor >= 1 << 63 else factor))
        return h

    def equal(self, a, c):
        b = self.cg.b
        return b.fcmp_ordered("==", a, c) if self.kt.kind == "f" else b.icmp_unsigned("==", a, c)

    def find(self, key):
        """The position of the entry of ``key``, or -1."""
        cg, b = self.cg, self.cg.b
        probe, check, done = (cg.fn.append_basic_block(f"dict.find.{s}") for s in ("probe", "check", "done"))
        mask = b.sub(b.mul(self.cap, _c(2)), _c(1))
        first = b.and_(self.hash(key), mask)
        entry = b.block
        b.cbranch(b.icmp_signed(">", self.cap, _c(0)), probe, done)
        b.position_at_end(probe)
        i = b.phi(_I64)
        i.add_incoming(first, entry)
        slot = b.load(self.slot_at(i), typ=_I64)
        free = b.icmp_signed("==", slot, _c(0))
        probe_end = b.block
        b.cbranch(free, done, check)
        b.position_at_end(check)
        e = b.sub(slot, _c(1))
        same = self.equal(cg.load_scalar(self.key_at(e), self.kt), key)
        i.add_incoming(b.and_(b.add(i, _c(1)), mask), check)
        b.cbranch(same, done, probe)
        b.position_at_end(done)
        out = b.phi(_I64)
        out.add_incoming(_c(-1), entry)
        out.add_incoming(_c(-1), probe_end)
        out.add_incoming(e, check)
        return out

    def place(self, e, key) -> None:
        """Point the first free slot of ``key``'s probe at entry ``e``."""
        cg, b = self.cg, self.cg.b
        probe, step, done = (cg.fn.append_basic_block(f"dict.place.{s}") for s in ("probe", "step", "done"))
        mask = b.sub(b.mul(self.cap, _c(2)), _c(1))
        first = b.and_(self.hash(key), mask)
        entry = b.block
        b.branch(probe)
        b.position_at_end(probe)
        i = b.phi(_I64)
        i.add_incoming(first, entry)
        at = self.slot_at(i)
        b.cbranch(b.icmp_signed("==", b.load(at, typ=_I64), _c(0)), done, step)
        b.position_at_end(step)
        i.add_incoming(b.and_(b.add(i, _c(1)), mask), step)
        b.branch(probe)
        b.position_at_end(done)
        b.store(b.add(e, _c(1)), at)


def _grow(cg, d, kt: T.Scalar, vt: T.Scalar) -> None:
    """Double the room of a full dict (8 at first): entries copied, the index built again."""
    b, old = cg.b, Table(cg, d, kt, vt)
    n = length(cg, d)
    room = b.select(b.icmp_signed("==", old.cap, _c(0)), _c(_FIRST_ROOM), b.mul(old.cap, _c(2)))
    nbytes = b.mul(room, _c(kt.itemsize + vt.itemsize + 16))
    data = b.call(cg.mod.declare("malloc", _PTR, [_I64]), [nbytes])
    cg.check_required(b.icmp_unsigned("!=", data, ir.Constant(_PTR, None)), "MemoryError", "cannot grow the dict")
    b.store(data, _field(cg, d, _DATA))
    b.store(room, _field(cg, d, _CAPACITY))
    new = Table(cg, d, kt, vt)
    memset = cg.mod.declare("llvm.memset.p0.i64", ir.VoidType(), [_PTR, _I8, _I64, ir.IntType(1)])
    b.call(memset, [new.slot_at(_c(0)), ir.Constant(_I8, 0), b.mul(room, _c(16)), ir.Constant(ir.IntType(1), 0)])

    def move(e):  # item by item: loads and stores (differentiated code follows them)
        key = cg.load_scalar(old.key_at(e), kt)
        cg.store_scalar(key, new.key_at(e), kt)
        cg.store_scalar(cg.load_scalar(old.value_at(e), vt), new.value_at(e), vt)
        new.place(e, key)
    loop(cg, _c(0), n, move)
    cg.b.call(cg.mod.declare("free", ir.VoidType(), [_PTR]), [old.data])


def store(cg, d, key, value, kt: T.Scalar, vt: T.Scalar) -> None:
    """``d[key] = value``: the entry's value replaced, or a new entry after the last."""
    b = cg.b
    found = Table(cg, d, kt, vt).find(key)
    with b.if_else(b.icmp_signed(">=", found, _c(0))) as (there, new):
        with there:
            cg.store_scalar(value, Table(cg, d, kt, vt).value_at(found), vt)
        with new:
            n = length(cg, d)
            with b.if_then(b.icmp_signed("==", n, b.load(_field(cg, d, _CAPACITY), typ=_I64)), likely=False):
                _grow(cg, d, kt, vt)
            table = Table(cg, d, kt, vt)
            cg.store_scalar(key, table.key_at(n), kt)
            cg.store_scalar(value, table.value_at(n), vt)
            table.place(n, key)
            b.store(b.add(n, _c(1)), _field(cg, d, _LENGTH))


def remove(cg, d, e, kt: T.Scalar, vt: T.Scalar) -> None:
    """Remove entry ``e`` (a position in range): the later entries move down one place (their order
    kept, as CPython's), then the index is built again."""
    b = cg.b
    table = Table(cg, d, kt, vt)
    n = b.sub(length(cg, d), _c(1))

    def down(i):
        after = b.add(i, _c(1))
        cg.store_scalar(cg.load_scalar(table.key_at(after), kt), table.key_at(i), kt)
        cg.store_scalar(cg.load_scalar(table.value_at(after), vt), table.value_at(i), vt)
    loop(cg, e, n, down)
    b.store(n, _field(cg, d, _LENGTH))
    memset = cg.mod.declare("llvm.memset.p0.i64", ir.VoidType(), [_PTR, _I8, _I64, ir.IntType(1)])
    b.call(memset, [table.slot_at(_c(0)), ir.Constant(_I8, 0), b.mul(table.cap, _c(16)), ir.Constant(ir.IntType(1), 0)])
    loop(cg, _c(0), n, lambda i: table.place(i, cg.load_scalar(table.key_at(i), kt)))
