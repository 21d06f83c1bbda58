"""Boxing the result of the C-speed entry: scalars, tuples and NumPy arrays made with NumPy's C API.

An array the compiled code allocated becomes an ``ndarray`` at once:
``PyArray_NewFromDescr`` over the elements (writeable, the strides of the
value, the descriptor of ``PyArray_DescrFromType``) and a capsule holding
the value's reference to its allocation set as the array's base with
``PyArray_SetBaseObject`` (the capsule's destructor gives the reference
back: the allocation is freed with the last array viewing it). The three
functions are called through addresses the entry's state holds (NumPy's
``_ARRAY_API`` table, read and checked by :mod:`gpucompiler.runtime.pyentry`),
never through addresses in the IR, which stays cacheable.

An array whose memory is borrowed from an argument (``return a[1:]``) is
rare and goes to a Python helper of the entry's state,
``borrowed(dtype, (0, data, *shape, *strides), args)``
(runtime/owned.py), which finds the argument holding it as the ctypes path
does. A failure while boxing (no memory) returns ``NULL`` with the error
set, and every reference the result held is given back.
"""

from __future__ import annotations

from llvmlite import ir

from .. import types as T
from .lltypes import I64, PTR, ll
from .wrapper import _box, _release_function, items_of

_I32 = ir.IntType(32)
_WRITEABLE = 0x0400
#: NumPy's type number of each element type (Linux: int64 is ``long``)
NUMPY_TYPE_NUMS = {T.boolean: 0, T.int8: 1, T.uint8: 2, T.int16: 3, T.uint16: 4, T.int32: 5, T.uint32: 6,
                   T.int64: 7, T.uint64: 8, T.float32: 11, T.float64: 12, T.complex64: 14, T.complex128: 15}
_NEW_FROM_DESCR = ir.FunctionType(PTR, [PTR, PTR, _I32, PTR, PTR, PTR, _I32, PTR])
_SET_BASE = ir.FunctionType(_I32, [PTR, PTR])
_DESCR_FROM_TYPE = ir.FunctionType(PTR, [_I32])


class _Indirect:
    """A call through a function pointer loaded at run time (llvmlite wants a ``function_type``)."""

    def __init__(self, pointer: ir.Instruction, ftype: ir.FunctionType):
        self.pointer, self.function_type, self.type = pointer, ftype, PTR

    def get_reference(self) -> str:
        return self.pointer.get_reference()


def boxable(t) -> bool:
    """Whether the entry boxes results of type ``t`` (a scalar, none, an array, tuples of those)."""
    if isinstance(t, T.TupleType):
        return all(boxable(it) for it in t.items)
    if isinstance(t, T.ArrayType):
        return t.dtype in NUMPY_TYPE_NUMS
    if isinstance(t, (T.ListType, T.DictType)):  # a Python list (dict) of its numbers
        return True
    return t == T.none or isinstance(t, T.Scalar)


class ResultBoxer:
    """Boxes an entry's result; ``numpy``: the address of the NumPy words, ``ndarray``: the array type,
    ``borrowed``: the helper for borrowed memory, ``args``: the call's ``count`` arguments."""

    def __init__(self, emitter, numpy, ndarray, borrowed, args, count: int):
        self.e, self.mod, self.b = emitter, emitter.mod, emitter.b
        self.numpy, self.ndarray, self.borrowed = numpy, ndarray, borrowed
        self.args, self.count = args, count

    def box(self, v, t):
        """A new reference to the Python value of ``v`` (NULL, with the error set, when boxing failed)."""
        if isinstance(t, T.ArrayType):
            return self.array(v, t)
        if isinstance(t, T.TupleType):
            return self.tuple(v, t)
        return _box(self.mod, self.b, v, t)

    def tuple(self, v, t: T.TupleType):
        """Every item boxed (each gives its references to its object, or back when it failed), then the
        tuple; NULL if one item failed."""
        b, mod = self.b, self.mod
        items = [self.box(item, it) for it, item in zip(t.items, items_of(b, v, t))]
        tup = b.call(mod.declare("PyTuple_New", PTR, [I64]), [ir.Constant(I64, len(items))])
        failed = b.icmp_unsigned("==", tup, ir.Constant(PTR, None))
        setitem = mod.declare("PyTuple_SetItem", _I32, [PTR, I64, PTR])
        decref = mod.declare("Py_DecRef", ir.VoidType(), [PTR])
        with b.if_else(failed) as (no_tuple, made):
            with no_tuple:
                for item in items:
                    b.call(decref, [item])  # NULL-safe
            with made:
                for k, item in enumerate(items):
                    b.call(setitem, [tup, ir.Constant(I64, k), item])  # NULL items: the tuple is dropped below
        for item in items:
            failed = b.or_(failed, b.icmp_unsigned("==", item, ir.Constant(PTR, None)))
        with b.if_then(b.and_(failed, b.icmp_unsigned("!=", tup, ir.Constant(PTR, None))), likely=False):
            b.call(decref, [tup])
        return b.select(failed, ir.Constant(PTR, None), tup)

    def _numpy(self, k: int, ftype: ir.FunctionType) -> _Indirect:
        return _Indirect(self.e.word(self.numpy, 8 * k), ftype)

    def array(self, v, t: T.ArrayType):
        b = self.b
        header = b.extract_value(v, 3) if t.managed else ir.Constant(PTR, None)
        with b.if_else(b.icmp_unsigned("!=", header, ir.Constant(PTR, None)), likely=True) as (owned, borrowed):
            with owned:
                made = self.owned_array(v, t, header)
                owned_end = b.block
            with borrowed:
                viewed = self.borrowed_array(v, t)
                borrowed_end = b.block
        out = b.phi(PTR)
        out.add_incoming(made, owned_end)
        out.add_incoming(viewed, borrowed_end)
        return out

    def _extents(self, v, t: T.ArrayType):
        """Stack arrays of the value's shape and strides (made in the entry block)."""
        b, fn = self.b, self.e.fn
        here = b.block
        b.position_at_start(fn.entry_basic_block)
        slots = [b.alloca(ir.ArrayType(I64, t.ndim)) for _ in (1, 2)]
        b.position_at_end(here)
        for field, slot in zip((1, 2), slots):
            for k in range(t.ndim):
                b.store(b.extract_value(v, [field, k]), b.gep(slot, [ir.Constant(I64, 0), ir.Constant(I64, k)]))
        return slots

    def owned_array(self, v, t: T.ArrayType, header):
        """``ndarray`` over the elements with a capsule of ``header`` as its base."""
        b, mod, fn = self.b, self.mod, self.e.fn
        null = ir.Constant(PTR, None)
        decref = mod.declare("Py_DecRef", ir.VoidType(), [PTR])
        capsule = b.call(mod.declare("PyCapsule_New", PTR, [PTR, PTR, PTR]),
                         [header, null, _release_function(mod)])
        # no capsule (no memory): the header's reference is not given back (a leak, never a crash)
        make, base, drop, undo, done = (fn.append_basic_block(f"box.{s}") for s in
                                        ("make", "base", "drop", "undo", "done"))
        start = b.block
        b.cbranch(b.icmp_unsigned("!=", capsule, null), make, done)
        b.position_at_end(make)
        shape, strides = self._extents(v, t)
        descr = b.call(self._numpy(2, _DESCR_FROM_TYPE), [ir.Constant(_I32, NUMPY_TYPE_NUMS[t.dtype])])
        data = b.extract_value(v, 0)
        # no elements (null data: NumPy would allocate): the header's address, never read
        data = b.select(b.icmp_unsigned("==", data, null), header, data)
        arr = b.call(self._numpy(0, _NEW_FROM_DESCR),
                     [self.ndarray, descr, ir.Constant(_I32, t.ndim), shape, strides, data,
                      ir.Constant(_I32, _WRITEABLE), null])  # takes descr's reference
        b.cbranch(b.icmp_unsigned("!=", arr, null), base, undo)
        b.position_at_end(undo)
        b.call(decref, [capsule])  # frees the allocation with the last reference
        b.branch(done)
        b.position_at_end(base)  # the base takes the capsule's reference, also when it fails
        status = b.call(self._numpy(1, _SET_BASE), [arr, capsule])
        b.cbranch(b.icmp_signed("==", status, ir.Constant(_I32, 0)), done, drop)
        b.position_at_end(drop)
        b.call(decref, [arr])
        b.branch(done)
        b.position_at_end(done)
        out = b.phi(PTR)
        for value, block in ((null, start), (null, undo), (arr, base), (null, drop)):
            out.add_incoming(value, block)
        return out

    def borrowed_array(self, v, t: T.ArrayType):
        """``borrowed(dtype, (0, data, *shape, *strides), args)`` through the Python helper."""
        b, mod = self.b, self.mod
        decref = mod.declare("Py_DecRef", ir.VoidType(), [PTR])
        incref = mod.declare("Py_IncRef", ir.VoidType(), [PTR])
        setitem = mod.declare("PyTuple_SetItem", _I32, [PTR, I64, PTR])
        plain = T.ArrayType(t.dtype, t.ndim, t.layout, t.readonly)  # no header: boxed with owner 0
        fields = [b.extract_value(v, 0)] + [b.extract_value(v, [f, k]) for f in (1, 2) for k in range(t.ndim)]
        value = ir.Constant(ll(plain), ir.Undefined)
        value = b.insert_value(value, fields[0], 0)
        for k in range(t.ndim):
            value = b.insert_value(value, fields[1 + k], [1, k])
            value = b.insert_value(value, fields[1 + t.ndim + k], [2, k])
        boxed = _box(mod, b, value, plain)
        args = b.call(mod.declare("PyTuple_New", PTR, [I64]), [ir.Constant(I64, self.count)])
        for k in range(self.count):
            item = b.load(b.gep(self.args, [ir.Constant(I64, k)], source_etype=PTR), typ=PTR)
            b.call(incref, [item])
            b.call(setitem, [args, ir.Constant(I64, k), item])
        dtype = b.call(self._numpy(2, _DESCR_FROM_TYPE), [ir.Constant(_I32, NUMPY_TYPE_NUMS[t.dtype])])
        call_args = b.call(mod.declare("PyTuple_New", PTR, [I64]), [ir.Constant(I64, 3)])
        for k, obj in enumerate((dtype, boxed, args)):  # the tuple takes their references
            b.call(setitem, [call_args, ir.Constant(I64, k), obj])
        out = b.call(mod.declare("PyObject_CallObject", PTR, [PTR, PTR]), [self.borrowed, call_args])
        b.call(decref, [call_args])
        return out

