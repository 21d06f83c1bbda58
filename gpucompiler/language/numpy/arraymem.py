"""Arrays the compiled code owns: allocation, references and the conversions of array values.

A *managed* array value (``ArrayType(managed=True)``) is ``{data, shape,
strides, buffer}``: ``buffer`` is the header :func:`allocate` got from
``malloc`` (null when the memory is borrowed from Python): 16 bytes holding
the reference count (i64) and the address of the elements, a ``malloc``'d
block of their own (so the elements' memory holds nothing but elements, as
the AD engine's type analysis wants). Codegen keeps the counts (codegen/lifetimes.py):
every SSA value holding a managed array owns one reference; a rule's result
gets one when it is made (so a view copies ``buffer`` and says nothing), the
last use of a value gives it back, and the block is freed when the count
reaches zero. A function's return value is moved to its caller; the CPython
wrapper hands the block to NumPy (runtime/owned.py) as the array's ``base``.

The small internal API for rules that make arrays (``cg`` is the codegen
object a rule lowers with)::

    t = managed_array(T.float64, 2)              # the result type of the rule
    value = allocate(cg, T.float64, [rows, cols], fill=Fill.ZERO)  # C order
    ptr = element_pointer(cg, value, [i, j], t)  # to store the elements

``allocate`` returns a value with count 0: codegen adds the reference of the
rule's result (a rule never frees what it returns; ``free_now`` is for a
rule's own temporaries). ``views.copy_into(cg, src, src_type, dst, dst_type)``
copies every element of a same-shape source (any layout, with conversion);
``arrayloops.nested_loop`` visits every index of a shape.
"""

from __future__ import annotations

import enum

from llvmlite import ir

from ... import types as T
from ...errors import TypeInferenceError
from ...interpreter.lattice import pyobj, widen

HEADER = 16
"""bytes of an allocation's header: the reference count (i64), then the address of the elements"""
_I64 = ir.IntType(64)
_I8 = ir.IntType(8)
_PTR = ir.PointerType()


class Fill(enum.Enum):
    """What a new allocation's elements hold."""

    UNINITIALIZED = "uninitialized"
    ZERO = "zero"


def refuse_bool_index(items) -> None:
    """A bool among an array index's items (``a[True]``, ``a[i > 0, :]``): NumPy adds an axis there, which
    element access and views do not model, so it is a ``TypeInferenceError`` (it read ``a[1]``)."""
    if any(isinstance(t, T.Scalar) and t.kind == "b" for t in items):
        raise TypeInferenceError("a bool index adds an axis in NumPy (a[True] is a[np.newaxis], a[False] is "
                                 "empty); compiled code does not index with a bool", tuple(items),
                                 hint="index with int(b), or a[b:b + 1] for NumPy's shape")


def returns_view(lower):
    """Mark a rule's lowering whose result views its one managed operand (a slice, a row, a tuple item):
    codegen may then skip the result's reference where the operand outlives it (codegen/lifetimes.py)."""
    setattr(lower, "returns_view", True)  # noqa: B010  (an attribute on a function object)
    return lower


def managed_array(dtype: T.Scalar, ndim: int, layout: str = "C") -> T.ArrayType:
    """The type of an array the compiled code may have allocated."""
    return T.ArrayType(dtype, ndim, layout, False, True)


def holds_managed(t) -> bool:
    """Whether values of type ``t`` hold references to managed arrays."""
    t = widen(t)
    if type(t) is T.Scalar:  # most values: codegen asks of every instruction
        return False
    if isinstance(t, (T.TupleType, T.RecordType)):
        return any(holds_managed(it) for it in t.items)
    if isinstance(t, T.BoundMethod):  # a method value is its receiver at run time
        return holds_managed(t.receiver)
    if isinstance(t, T.ArrayExpr):  # its leaves are read where it is consumed: they live as long
        return any(holds_managed(leaf) for leaf in t.leaves)
    return isinstance(t, (T.ListType, T.DictType, T.DictView)) or (isinstance(t, T.ArrayType) and t.managed)


def c_strides(cg, shape, itemsize: int) -> list:
    """Byte strides of a C-contiguous array of ``shape`` (i64 values)."""
    acc = ir.Constant(_I64, itemsize)
    strides = []
    for extent in reversed(shape):
        strides.insert(0, acc)
        acc = cg.b.mul(acc, extent)
    return strides


def build_array(cg, t: T.ArrayType, data, shape, strides, buffer=None):
    """An array value of type ``t`` from its parts (``buffer`` only for managed types; null if omitted)."""
    value = ir.Constant(cg.ll(t), ir.Undefined)
    value = cg.b.insert_value(value, data, 0)
    for k in range(t.ndim):
        value = cg.b.insert_value(value, shape[k], [1, k])
        value = cg.b.insert_value(value, strides[k], [2, k])
    if t.managed:
        value = cg.b.insert_value(value, buffer if buffer is not None else ir.Constant(_PTR, None), 3)
    return value


def allocate(cg, dtype: T.Scalar, shape: list, fill: Fill = Fill.UNINITIALIZED):
    """A new C-contiguous managed array of ``shape`` (i64 values), reference count 0.

    A negative extent is NumPy's ``ValueError``; a failed ``malloc`` a ``MemoryError``.
    """
    b = cg.b
    count = ir.Constant(_I64, 1)
    ok = ir.Constant(ir.IntType(1), 1)
    for extent in shape:
        ok = b.and_(ok, b.icmp_signed(">=", extent, ir.Constant(_I64, 0)))
        count = b.mul(count, extent)
    cg.check_value(ok, "negative dimensions are not allowed")
    nbytes = b.mul(count, ir.Constant(_I64, dtype.itemsize))
    malloc = cg.mod.declare("malloc", _PTR, [_I64])
    block = b.call(malloc, [ir.Constant(_I64, HEADER)])
    data = b.call(malloc, [b.add(nbytes, ir.Constant(_I64, 1))])  # never malloc(0): null is failure
    null = ir.Constant(_PTR, None)
    cg.check_required(b.and_(b.icmp_unsigned("!=", block, null), b.icmp_unsigned("!=", data, null)),
                      "MemoryError", "cannot allocate the array")
    b.store(ir.Constant(_I64, 0), block)
    b.store(data, b.gep(block, [ir.Constant(_I64, 8)], source_etype=_I8))
    if fill is Fill.ZERO:
        memset = cg.mod.declare("llvm.memset.p0.i64", ir.VoidType(), [_PTR, _I8, _I64, ir.IntType(1)])
        b.call(memset, [data, ir.Constant(_I8, 0), nbytes, ir.Constant(ir.IntType(1), 0)])
    t = managed_array(dtype, len(shape))
    return build_array(cg, t, data, shape, c_strides(cg, shape, dtype.itemsize), block)


def element_pointer(cg, value, indices, t: T.ArrayType):
    """The address of element ``indices`` (i64 values, in range) of array ``value``."""
    offset = ir.Constant(_I64, 0)
    for k, i in enumerate(indices):
        offset = cg.b.add(offset, cg.b.mul(i, cg.b.extract_value(value, [2, k])))
    return cg.b.gep(cg.b.extract_value(value, 0), [offset], source_etype=_I8)


def _each_managed(cg, value, t, action) -> None:
    t = widen(t)
    if isinstance(t, (T.TupleType, T.RecordType)):
        k = 0
        for it in t.items:
            if _has_llvm_value(it):
                if holds_managed(it):
                    _each_managed(cg, cg.b.extract_value(value, k), it, action)
                k += 1
    elif isinstance(t, T.BoundMethod):
        _each_managed(cg, value, t.receiver, action)
    elif isinstance(t, T.ArrayExpr):  # the struct of its leaves
        for k, leaf in enumerate(t.leaves):
            if holds_managed(leaf):
                _each_managed(cg, cg.b.extract_value(value, k), leaf, action)
    elif isinstance(t, T.ArrayType) and t.managed:
        action(cg.b.extract_value(value, 3))
    elif isinstance(t, (T.ListType, T.DictType, T.DictView)):  # the block itself: {count, data, ...}
        # (language/python/listmem.py, dictmem.py)
        action(value)


def _has_llvm_value(t) -> bool:
    t = widen(t)
    return isinstance(t, T.Type) and t != T.none and t != pyobj


def incref(cg, value, t) -> None:
    """Add a reference to every managed array ``value`` (of type ``t``) holds."""
    def add(block):
        b = cg.b
        with b.if_then(b.icmp_unsigned("!=", block, ir.Constant(_PTR, None))):
            b.atomic_rmw("add", block, ir.Constant(_I64, 1), "monotonic")
    _each_managed(cg, value, t, add)


DECREF = "gpuc.array.decref"
"""The module's ``void(ptr block)`` giving back one reference of an allocation (see :func:`decref`)."""


def decref(cg, value, t) -> None:
    """Give back a reference of every managed array ``value`` holds; free blocks nobody holds.

    Each block's release is a call of :data:`DECREF` (internal, ``alwaysinline``: every pipeline, ``O0``'s
    too, inlines it before optimisation or AD reads the code), not its body at every exit: the IR the
    stages before the optimiser parse and print is that much smaller."""
    release = _decref_function(cg)
    _each_managed(cg, value, t, lambda block: cg.b.call(release, [block]))


def _decref_function(cg) -> ir.Function:
    """The module's :data:`DECREF`, defined at its first use."""
    module = cg.mod.module
    fn = module.globals.get(DECREF)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR]), name=DECREF)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    block = fn.args[0]
    with b.if_then(b.icmp_unsigned("!=", block, ir.Constant(_PTR, None))):
        before = b.atomic_rmw("sub", block, ir.Constant(_I64, 1), "acq_rel")
        with b.if_then(b.icmp_signed("==", before, ir.Constant(_I64, 1))):
            free = cg.mod.declare("free", ir.VoidType(), [_PTR])
            b.call(free, [b.load(b.gep(block, [ir.Constant(_I64, 8)], source_etype=_I8), typ=_PTR)])
            b.call(free, [block])
    b.ret_void()
    return fn


def disown(cg, value, t) -> None:
    """Drop a reference of every managed array ``value`` holds without freeing: for the result of a
    compiled call (it holds a reference) that a rule returns (codegen adds the result's reference) or
    drops while another value still holds the array."""
    def drop(block):
        b = cg.b
        with b.if_then(b.icmp_unsigned("!=", block, ir.Constant(_PTR, None))):
            b.atomic_rmw("sub", block, ir.Constant(_I64, 1), "monotonic")
    _each_managed(cg, value, t, drop)


def free_now(cg, value) -> None:
    """Free the allocation of ``value`` (a managed array nothing else holds: a rule's own temporary)."""
    block = cg.b.extract_value(value, 3)
    free = cg.mod.declare("free", ir.VoidType(), [_PTR])
    cg.b.call(free, [cg.b.load(cg.b.gep(block, [ir.Constant(_I64, 8)], source_etype=_I8), typ=_PTR)])
    cg.b.call(free, [block])


def convert(cg, value, frm, to):
    """``value`` of type ``frm`` as type ``to`` where both are arrays (or tuples of them) that join:
    a borrowed array gets a null buffer to become managed, a managed one lent to a deferred job
    loses it; layouts share one representation."""
    frm, to = widen(frm), widen(to)
    if isinstance(to, T.ArrayType) and isinstance(frm, T.ArrayType):
        if frm.managed and not to.managed:  # lent to a callee for the call (a deferred job)
            parts = [cg.b.extract_value(value, [f, k]) for f in (1, 2) for k in range(frm.ndim)]
            return build_array(cg, to, cg.b.extract_value(value, 0), parts[:frm.ndim], parts[frm.ndim:])
        if to.managed and not frm.managed:
            parts = [cg.b.extract_value(value, [f, k]) for f in (1, 2) for k in range(frm.ndim)]
            return build_array(cg, to, cg.b.extract_value(value, 0), parts[:frm.ndim], parts[frm.ndim:])
        return value
    if isinstance(to, (T.TupleType, T.RecordType)) and type(frm) is type(to) and frm != to:
        out = ir.Constant(cg.ll(to), ir.Undefined)
        k = 0
        for fi, ti in zip(frm.items, to.items):
            if _has_llvm_value(ti):
                out = cg.b.insert_value(out, cg.cast(cg.b.extract_value(value, k), fi, ti), k)
                k += 1
        return out
    return value
