"""Python lists and dicts passed to a ``@jit`` function: converted at the call, reflected when it returns.

The CPython wrapper (:mod:`.wrapper`) makes each list argument (a Python
``list``, or Numba's ``typed.List``: read through the sequence protocol) a
compiled list (a new block of its items, language/python/listmem.py)
and each dict argument (a ``dict``, Numba's ``typed.Dict``: read through
``items()``) a compiled dict (a table sized for its entries, dictmem.py), holding one reference of its own. After the call, whether it
returned or raised, it writes what the call did back into the caller's
object, as Numba reflects a list: an item whose value changed is replaced,
an item left equal (bit for bit) keeps its object, the list is cut or
extended to the compiled length; a dict whose entries differ in any way
(keys, values, order, count) is cleared and filled again in the compiled
order. Then the wrapper gives its reference back. A returned list or dict
that is one of the arguments is that argument (pylist.py), as in
CPython. The types were checked by :mod:`gpucompiler.arguments` at the call
(one number type per list, per dict's keys and values).
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

from llvmlite import ir

from .. import types as T
from ..language.numpy.arrayloops import range_loop
from ..language.python.dictmem import Table
from .lltypes import I64, PTR
from .pylist import field, load_item, release

_I8, _I1, _I32 = ir.IntType(8), ir.IntType(1), ir.IntType(32)
_DATA, _LENGTH, _CAPACITY, _BLOCK = 8, 16, 24, 32
_FIRST_ROOM = 8


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _store(b: ir.IRBuilder, value, at, t: T.Scalar) -> None:
    b.store(b.zext(value, _I8) if t == T.boolean else value, at)


def _bits(b: ir.IRBuilder, v, t: T.Scalar) -> list:
    """Integers equal exactly when two values of type ``t`` are the same bits (NaN and -0.0 included)."""
    if t.kind == "c":
        return [p for k in (0, 1) for p in _bits(b, b.extract_value(v, k), T.float32 if t == T.complex64
                                                 else T.float64)]
    if t.kind == "f":
        return [b.bitcast(v, ir.IntType(t.bits))]
    return [v]


def _same(b: ir.IRBuilder, x, y, t: T.Scalar):
    out = ir.Constant(_I1, 1)
    for p, q in zip(_bits(b, x, t), _bits(b, y, t)):
        out = b.and_(out, b.icmp_unsigned("==", p, q))
    return out


def _block(mod, b: ir.IRBuilder, data_bytes, length, capacity, bail: Callable):
    """A new block ``{1, data, length, capacity}`` with ``data_bytes`` of data; no memory: ``MemoryError`` and
    ``bail()``."""
    malloc = mod.declare("malloc", PTR, [I64])
    block, data = b.call(malloc, [_c(_BLOCK)]), b.call(malloc, [b.add(data_bytes, _c(1))])
    null = ir.Constant(PTR, None)
    with b.if_then(b.or_(b.icmp_unsigned("==", block, null), b.icmp_unsigned("==", data, null)), likely=False):
        free = mod.declare("free", ir.VoidType(), [PTR])
        b.call(free, [block])  # free(NULL) does nothing
        b.call(free, [data])
        b.call(mod.declare("PyErr_NoMemory", PTR, []), [])
        bail()
    for offset, v in ((0, _c(1)), (_DATA, data), (_LENGTH, length), (_CAPACITY, capacity)):
        b.store(v, b.gep(block, [_c(offset)], source_etype=_I8))
    return block


def _item(mod, b: ir.IRBuilder, obj, i):
    """``obj[i]`` (a new reference, NULL with the error set when it failed) and a stand-in never NULL to read."""
    got = b.call(mod.declare("PySequence_GetItem", PTR, [PTR, I64]), [obj, i])
    none = mod.extern_global("_Py_NoneStruct")
    return got, b.select(b.icmp_unsigned("==", got, ir.Constant(PTR, None)), none, got)


def _failed(mod, b: ir.IRBuilder, block, bail: Callable) -> None:
    """Where reading the container set an error: its block given back, then ``bail()``."""
    error = b.call(mod.declare("PyErr_Occurred", PTR, []), [])
    with b.if_then(b.icmp_unsigned("!=", error, ir.Constant(PTR, None)), likely=False):
        release(mod, b, block)
        bail()


def unbox_list(mod, b: ir.IRBuilder, obj, t: T.ListType, unbox_item: Callable, bail: Callable):
    """The compiled list (one reference, the wrapper's) of the list ``obj`` (a Python list or any sequence
    with ``len`` and indexing: Numba's ``typed.List``)."""
    item = t.item
    assert isinstance(item, T.Scalar)
    n = b.call(mod.declare("PySequence_Size", I64, [PTR]), [obj])
    n = b.select(b.icmp_signed("<", n, _c(0)), _c(0), n)  # an error: caught below
    block = _block(mod, b, b.mul(n, _c(item.itemsize)), n, n, bail)
    data = field(b, block, _DATA, PTR)
    decref = mod.declare("Py_DecRef", ir.VoidType(), [PTR])

    def read(i):
        got, readable = _item(mod, b, obj, i)
        _store(b, unbox_item(readable, item), b.gep(data, [b.mul(i, _c(item.itemsize))], source_etype=_I8), item)
        b.call(decref, [got])  # NULL-safe
    range_loop(b, _c(0), n, read)
    _failed(mod, b, block, bail)
    return block


def _items(mod, b: ir.IRBuilder, obj):
    """``list(obj.items())``: a new reference (NULL with the error set)."""
    return b.call(mod.declare("PyMapping_Items", PTR, [PTR]), [obj])


def _pair(mod, b: ir.IRBuilder, items, e) -> tuple:
    """The key and the value of entry ``e`` of ``items`` (a list of pairs; borrowed references)."""
    pair = b.call(mod.declare("PyList_GetItem", PTR, [PTR, I64]), [items, e])
    get = mod.declare("PyTuple_GetItem", PTR, [PTR, I64])
    return b.call(get, [pair, _c(0)]), b.call(get, [pair, _c(1)])


def unbox_dict(mod, b: ir.IRBuilder, obj, t: T.DictType, unbox_item: Callable, bail: Callable):
    """The compiled dict (one reference, the wrapper's) of the mapping ``obj`` (a Python dict, Numba's
    ``typed.Dict``): room for its entries (a power of two, 8 at least), entries in its order, the index
    built."""
    kt, vt = t.key, t.value
    assert isinstance(kt, T.Scalar) and isinstance(vt, T.Scalar)
    items = _items(mod, b, obj)
    with b.if_then(b.icmp_unsigned("==", items, ir.Constant(PTR, None)), likely=False):
        bail()
    n = b.call(mod.declare("PyList_Size", I64, [PTR]), [items])
    ctlz = mod.declare("llvm.ctlz.i64", I64, [I64, _I1])
    room = b.shl(_c(1), b.sub(_c(64), b.call(ctlz, [b.sub(n, _c(1)), ir.Constant(_I1, 0)])))
    room = b.select(b.icmp_signed("<=", n, _c(_FIRST_ROOM)), _c(_FIRST_ROOM), room)
    decref = mod.declare("Py_DecRef", ir.VoidType(), [PTR])
    block = _block(mod, b, b.mul(room, _c(kt.itemsize + vt.itemsize + 16)), n, room,
                   lambda: (b.call(decref, [items]), bail()))
    table = Table(SimpleNamespace(b=b, fn=b.function), block, kt, vt)
    memset = mod.declare("llvm.memset.p0.i64", ir.VoidType(), [PTR, _I8, I64, _I1])
    b.call(memset, [table.slot_at(_c(0)), ir.Constant(_I8, 0), b.mul(room, _c(16)), ir.Constant(_I1, 0)])

    def entry(e):
        key, value = _pair(mod, b, items, e)
        k = unbox_item(key, kt)
        _store(b, k, table.key_at(e), kt)
        _store(b, unbox_item(value, vt), table.value_at(e), vt)
        table.place(e, k)
    range_loop(b, _c(0), n, entry)
    b.call(decref, [items])
    _failed(mod, b, block, bail)
    return block


def _call_method(mod, b: ir.IRBuilder, obj, name: str, *args) -> None:
    """``obj.name(*args)`` (``args``: objects), its result dropped; an error stays set."""
    fn = mod.module.globals.get("PyObject_CallMethod") or ir.Function(
        mod.module, ir.FunctionType(PTR, [PTR, PTR, PTR], var_arg=True), name="PyObject_CallMethod")
    fmt = mod.cstring("O" * len(args)) if args else ir.Constant(PTR, None)
    out = b.call(fn, [obj, mod.cstring(name), fmt, *args])
    b.call(mod.declare("Py_DecRef", ir.VoidType(), [PTR]), [out])


def reflect_list(mod, b: ir.IRBuilder, obj, block, t: T.ListType, box_item: Callable, unbox_item: Callable) -> None:
    """Write the compiled list ``block``'s items back into the list ``obj`` (see the module docstring)."""
    item = t.item
    assert isinstance(item, T.Scalar)
    new, old = field(b, block, _LENGTH, I64), b.call(mod.declare("PySequence_Size", I64, [PTR]), [obj])
    data = field(b, block, _DATA, PTR)
    common = b.select(b.icmp_signed("<", new, old), new, old)
    at = lambda i: load_item(b, data, b.mul(i, _c(item.itemsize)), item)  # noqa: E731
    decref = mod.declare("Py_DecRef", ir.VoidType(), [PTR])
    null = ir.Constant(PTR, None)

    def replace(i):
        value = at(i)
        got, readable = _item(mod, b, obj, i)
        kept = unbox_item(readable, item)
        b.call(decref, [got])
        with b.if_then(b.not_(_same(b, kept, value, item))):
            boxed = box_item(b, value, item)
            with b.if_then(b.icmp_unsigned("!=", boxed, null)):
                b.call(mod.declare("PySequence_SetItem", _I32, [PTR, I64, PTR]), [obj, i, boxed])
                b.call(decref, [boxed])
    range_loop(b, _c(0), common, replace)
    with b.if_then(b.icmp_signed("<", new, old)):
        b.call(mod.declare("PySequence_DelSlice", _I32, [PTR, I64, I64]), [obj, new, old])

    def append(i):
        boxed = box_item(b, at(i), item)
        with b.if_then(b.icmp_unsigned("!=", boxed, null)):
            _call_method(mod, b, obj, "append", boxed)
            b.call(decref, [boxed])
    range_loop(b, common, new, append)


def reflect_dict(mod, b: ir.IRBuilder, obj, block, t: T.DictType, box_item: Callable, unbox_item: Callable) -> None:
    """Write the compiled dict ``block``'s entries back into the mapping ``obj`` when they differ."""
    kt, vt = t.key, t.value
    assert isinstance(kt, T.Scalar) and isinstance(vt, T.Scalar)
    new = field(b, block, _LENGTH, I64)
    items = _items(mod, b, obj)
    null = ir.Constant(PTR, None)
    differs = b.alloca(_I1)
    b.store(b.icmp_unsigned("==", items, null), differs)
    table = Table(SimpleNamespace(b=b, fn=b.function), block, kt, vt)
    key_of = lambda e: load_item(b, table.key_at(e), _c(0), kt)  # noqa: E731
    value_of = lambda e: load_item(b, table.value_at(e), _c(0), vt)  # noqa: E731
    decref = mod.declare("Py_DecRef", ir.VoidType(), [PTR])
    with b.if_then(b.not_(b.load(differs, typ=_I1))):
        old = b.call(mod.declare("PyList_Size", I64, [PTR]), [items])
        b.store(b.icmp_signed("!=", new, old), differs)
        with b.if_then(b.icmp_signed("==", new, old)):
            def compare(e):
                key, value = _pair(mod, b, items, e)
                same = b.and_(_same(b, unbox_item(key, kt), key_of(e), kt),
                              _same(b, unbox_item(value, vt), value_of(e), vt))
                b.store(b.or_(b.load(differs, typ=_I1), b.not_(same)), differs)
            range_loop(b, _c(0), new, compare)
    b.call(decref, [items])
    with b.if_then(b.load(differs, typ=_I1)):
        _call_method(mod, b, obj, "clear")

        def fill(e):
            k, v = box_item(b, key_of(e), kt), box_item(b, value_of(e), vt)
            with b.if_then(b.and_(b.icmp_unsigned("!=", k, null), b.icmp_unsigned("!=", v, null))):
                b.call(mod.declare("PyObject_SetItem", _I32, [PTR, PTR, PTR]), [obj, k, v])  # takes its own
            b.call(decref, [k])  # NULL-safe
            b.call(decref, [v])
        range_loop(b, _c(0), new, fill)


class Reflected:
    """The list and dict arguments of one wrapper call: ``(object, block, type)`` each."""

    def __init__(self, mod, b: ir.IRBuilder, box_item: Callable, unbox_item: Callable):
        self.mod, self.b, self.box_item, self.unbox_item = mod, b, box_item, unbox_item
        self.items: list[tuple] = []

    def unbox(self, obj, t, bail: Callable):
        """The compiled container of argument ``obj`` (of type ``t``), remembered for :meth:`finish`."""
        if isinstance(t, T.ListType):
            block = unbox_list(self.mod, self.b, obj, t, self.unbox_item, bail)
        else:
            block = unbox_dict(self.mod, self.b, obj, t, self.unbox_item, bail)
        self.items.append((obj, block, t))
        return block

    def finish(self) -> None:
        """Reflect every argument into its object, then give the wrapper's references back; an error the call
        set stays the one raised."""
        if not self.items:
            return
        b, mod = self.b, self.mod
        saved = [b.alloca(PTR) for _ in range(3)]
        b.call(mod.declare("PyErr_Fetch", ir.VoidType(), [PTR] * 3), saved)
        for obj, block, t in self.items:
            if isinstance(t, T.ListType):
                reflect_list(mod, b, obj, block, t, self.box_item, self.unbox_item)
            else:
                reflect_dict(mod, b, obj, block, t, self.box_item, self.unbox_item)
            release(mod, b, block)
        kind = b.load(saved[0], typ=PTR)
        with b.if_then(b.icmp_unsigned("!=", kind, ir.Constant(PTR, None))):
            b.call(mod.declare("PyErr_Restore", ir.VoidType(), [PTR] * 3), [b.load(p, typ=PTR) for p in saved])


__all__ = ["Reflected", "reflect_dict", "reflect_list", "unbox_dict", "unbox_list"]
