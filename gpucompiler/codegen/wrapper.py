"""The CPython entry wrapper of a jit-compiled function.

``<entry>.pywrap`` takes scalars as C values and NumPy arrays as ``PyObject*``
(the ``PyArrayObject`` fields data/dimensions/strides are read directly, so
the Python side does no per-array work), calls the entry and returns a C
scalar, nothing, or a new tuple object built with the C API. It is called
through ``ctypes.PYFUNCTYPE``: the GIL is held and an exception set by the
compiled code (``ZeroDivisionError``...) is raised on return. With ``nogil`` the
wrapper releases the GIL between unpacking the arguments and boxing the result. The entry has
a status (see :func:`~.lltypes.status_type`): when it failed, the wrapper
returns a dummy value at once (``NULL`` for a tuple) and ctypes raises the
exception the compiled code set.
"""

from __future__ import annotations

from llvmlite import ir

from .. import types as T
from ..errors import TypeInferenceError
from ..frontend.ir import Return
from ..interpreter.lattice import widen
from .lltypes import I64, PTR, has_value, ll
from .pyargs import Reflected
from .pylist import box_dict, box_list

# offsets in PyArrayObject (after PyObject_HEAD): data, nd, dimensions, strides
_DATA, _DIMS, _STRIDES = 16, 32, 40
_I8 = ir.IntType(8)


def _param_type(t):
    if isinstance(t, (T.ArrayType, T.StructArrayType, T.TupleType, T.RecordType, T.ListType, T.DictType)) \
            or _is_complex(t):
        return PTR
    return _I8 if t == T.boolean else ll(t)


def _is_complex(t) -> bool:
    return isinstance(t, T.Scalar) and t.kind == "c"


def _unbox_complex(mod, b, obj, t):
    """The complex value of the Python ``complex`` ``obj`` (the call boundary passes those)."""
    parts = [b.call(mod.declare(f"PyComplex_{p}AsDouble", ir.DoubleType(), [PTR]), [obj]) for p in ("Real", "Imag")]
    if t == T.complex64:
        parts = [b.fptrunc(p, ir.FloatType()) for p in parts]
    value = ir.Constant(ll(t), ir.Undefined)
    return b.insert_value(b.insert_value(value, parts[0], 0), parts[1], 1)


def _unbox(mod, b, obj, t):
    """The value of type ``t`` of the Python object ``obj`` (a tuple's or record's part: its type was
    checked by ``typeof`` at the call)."""
    if isinstance(t, (T.ArrayType, T.StructArrayType)):
        return _array(b, obj, t)
    if _is_complex(t):
        return _unbox_complex(mod, b, obj, t)
    if isinstance(t, (T.TupleType, T.RecordType)):
        value = ir.Constant(ll(t), ir.Undefined)
        decref = mod.declare("Py_DecRef", ir.VoidType(), [PTR])
        for k, it in enumerate(t.items):
            if isinstance(t, T.TupleType):  # a borrowed reference
                item = b.call(mod.declare("PyTuple_GetItem", PTR, [PTR, I64]), [obj, ir.Constant(I64, k)])
            else:  # a new one, dropped once read (the record keeps an array field's memory alive)
                item = b.call(mod.declare("PyObject_GetAttrString", PTR, [PTR, PTR]), [obj, mod.cstring(t.fields[k][0])])
            value = b.insert_value(value, _unbox(mod, b, item, it), k)
            if isinstance(t, T.RecordType):
                b.call(decref, [item])
        return value
    if t == T.boolean:
        return b.icmp_signed("!=", b.call(mod.declare("PyObject_IsTrue", ir.IntType(32), [PTR]), [obj]),
                             ir.Constant(ir.IntType(32), 0))
    if t.kind == "f":
        d = b.call(mod.declare("PyFloat_AsDouble", ir.DoubleType(), [PTR]), [obj])
        return b.fptrunc(d, ll(t)) if t == T.float32 else d
    if t == T.uint64:
        return b.call(mod.declare("PyLong_AsUnsignedLongLong", I64, [PTR]), [obj])
    v = b.call(mod.declare("PyLong_AsLongLong", I64, [PTR]), [obj])
    return b.trunc(v, ll(t)) if t.bits < 64 else v


def _field(b, obj, offset):
    return b.load(b.gep(obj, [ir.Constant(I64, offset)], source_etype=_I8), typ=PTR)


def _array(b, obj, t: T.ArrayType | T.StructArrayType):
    data, dims = _field(b, obj, _DATA), _field(b, obj, _DIMS)
    shape = [b.load(b.gep(dims, [ir.Constant(I64, k)], source_etype=I64), typ=I64)
             for k in range(t.ndim)]
    if t.layout == "C":  # known strides let LLVM vectorise
        strides, acc = [], ir.Constant(I64, t.dtype.itemsize)
        for k in reversed(range(t.ndim)):
            strides.insert(0, acc)
            acc = b.mul(acc, shape[k])
    else:
        sp = _field(b, obj, _STRIDES)
        strides = [b.load(b.gep(sp, [ir.Constant(I64, k)], source_etype=I64), typ=I64)
                   for k in range(t.ndim)]
    value = ir.Constant(ll(t), ir.Undefined)
    value = b.insert_value(value, data, 0)
    for k in range(t.ndim):
        value = b.insert_value(value, shape[k], [1, k])
        value = b.insert_value(value, strides[k], [2, k])
    return value


def _owner(mod, b, v, t: T.ArrayType):
    """A capsule of the array's allocation header (its reference moves into it), or the int 0."""
    zero = lambda: b.call(mod.declare("PyLong_FromLongLong", PTR, [I64]), [ir.Constant(I64, 0)])  # noqa: E731
    if not t.managed:
        return zero()
    header = b.extract_value(v, 3)
    new = mod.declare("PyCapsule_New", PTR, [PTR, PTR, PTR])
    here = b.block
    with b.if_else(b.icmp_unsigned("!=", header, ir.Constant(PTR, None))) as (owned, borrowed):
        with owned:
            capsule = b.call(new, [header, ir.Constant(PTR, None), _release_function(mod)])
            owned_end = b.block
        with borrowed:
            number = zero()
            borrowed_end = b.block
    assert here is not None
    out = b.phi(PTR)
    out.add_incoming(capsule, owned_end)
    out.add_incoming(number, borrowed_end)
    return out


def _release_function(mod) -> ir.Function:
    """``void(ptr capsule)``: the capsule destructor giving back the reference it holds (the allocation
    is freed with the last one). Internal to each module; loaded modules stay for the process."""
    name = "gpuc.array.release"
    fn = mod.module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(mod.module, ir.FunctionType(ir.VoidType(), [PTR]), name=name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    header = b.call(mod.declare("PyCapsule_GetPointer", PTR, [PTR, PTR]), [fn.args[0], ir.Constant(PTR, None)])
    before = b.atomic_rmw("sub", header, ir.Constant(I64, 1), "acq_rel")
    with b.if_then(b.icmp_signed("==", before, ir.Constant(I64, 1))):
        free = mod.declare("free", ir.VoidType(), [PTR])
        b.call(free, [b.load(b.gep(header, [ir.Constant(I64, 8)], source_etype=_I8), typ=PTR)])
        b.call(free, [header])
    b.ret_void()
    return fn


def _box(mod, b, v, t, parents=()):
    """A new reference to a Python object holding ``v`` of type ``t`` (a list or dict argument's compiled copy
    in ``parents``: that argument, :mod:`.pyargs`).

    An array is boxed as the tuple ``(owner, data, *shape, *strides)``: ``owner`` is
    a capsule holding the array's reference to its allocation (released by
    :func:`_release_function` when NumPy drops the array), or 0 for memory
    borrowed from an argument; a record as the tuple of its fields.
    runtime/owned.py makes the NumPy arrays and the records, however nested.
    """
    if isinstance(t, T.RecordType):  # the tuple of its fields: runtime/owned.py makes the instance
        return _box(mod, b, v, T.TupleType(t.items), parents)
    if isinstance(t, T.ListType):
        return box_list(mod, b, v, t, lambda bb, x, xt: _box(mod, bb, x, xt), parents)
    if isinstance(t, T.DictType):
        return box_dict(mod, b, v, t, lambda bb, x, xt: _box(mod, bb, x, xt), parents)
    if isinstance(t, T.ArrayType):
        setitem = mod.declare("PyTuple_SetItem", ir.IntType(32), [PTR, I64, PTR])
        ints = [b.extract_value(v, [f, k]) for f in (1, 2) for k in range(t.ndim)]
        tup = b.call(mod.declare("PyTuple_New", PTR, [I64]), [ir.Constant(I64, 2 + len(ints))])
        b.call(setitem, [tup, ir.Constant(I64, 0), _owner(mod, b, v, t)])
        data = b.call(mod.declare("PyLong_FromVoidPtr", PTR, [PTR]), [b.extract_value(v, 0)])
        b.call(setitem, [tup, ir.Constant(I64, 1), data])
        for k, n in enumerate(ints):
            b.call(setitem, [tup, ir.Constant(I64, 2 + k),
                             b.call(mod.declare("PyLong_FromLongLong", PTR, [I64]), [n])])
        return tup
    if isinstance(t, T.TupleType):
        new = mod.declare("PyTuple_New", PTR, [I64])
        setitem = mod.declare("PyTuple_SetItem", ir.IntType(32), [PTR, I64, PTR])
        tup = b.call(new, [ir.Constant(I64, len(t.items))])
        for k, (it, item) in enumerate(zip(t.items, items_of(b, v, t))):
            b.call(setitem, [tup, ir.Constant(I64, k), _box(mod, b, item, it, parents)])
        return tup
    if not has_value(t):  # None (an item of a tuple): CPython's own object
        none = mod.extern_global("_Py_NoneStruct")
        b.call(mod.declare("Py_IncRef", ir.VoidType(), [PTR]), [none])
        return none
    if t == T.boolean:
        return b.call(mod.declare("PyBool_FromLong", PTR, [I64]), [b.zext(v, I64)])
    if t.kind == "c":
        parts = [b.extract_value(v, k) for k in (0, 1)]
        if t == T.complex64:
            parts = [b.fpext(p, ir.DoubleType()) for p in parts]
        return b.call(mod.declare("PyComplex_FromDoubles", PTR, [ir.DoubleType()] * 2), parts)
    if t.kind == "u":
        return b.call(mod.declare("PyLong_FromUnsignedLongLong", PTR, [I64]), [b.zext(v, I64)])
    if t.kind == "f":
        d = b.fpext(v, ir.DoubleType()) if t == T.float32 else v
        return b.call(mod.declare("PyFloat_FromDouble", PTR, [ir.DoubleType()]), [d])
    return b.call(mod.declare("PyLong_FromLongLong", PTR, [I64]), [b.sext(v, I64)])


def items_of(b, v, t) -> list:
    """The LLVM value of each item of tuple ``v`` of type ``t`` (None for an item without one: ``None``)."""
    out, k = [], 0
    for it in t.items:
        out.append(b.extract_value(v, k) if has_value(it) else None)
        k += has_value(it)
    return out


def _local_record(t) -> T.RecordType | None:
    """A record of ``t`` (itself or inside it) whose class is defined inside a function: Python cannot
    find it by module and name to make the returned instance."""
    if isinstance(t, T.RecordType) and "<locals>" in t.qualname:
        return t
    if isinstance(t, (T.TupleType, T.RecordType)):
        return next((r for r in map(_local_record, t.items) if r is not None), None)
    return None


def _structured(t) -> bool:
    """Whether ``t`` is (or holds) a structured array or one of its elements."""
    if isinstance(t, (T.TupleType, T.RecordType)):
        return any(map(_structured, t.items))
    return isinstance(t, (T.StructArrayType, T.StructRef))


def check_returnable(frame) -> None:
    """Refuse a returned record of a class defined inside a function, and a returned structured array or
    element (every other record, tuple and array comes back, however nested)."""
    rt = widen(frame.rettype)
    local = _local_record(rt)
    if local is None and not _structured(rt):
        return
    loc = next((frame.where(bl.term) for bl in frame.ir.blocks
                if isinstance(bl.term, Return) and frame.executable(bl)), (frame.ir.filename, frame.ir.line, 0))
    if local is None:
        raise TypeInferenceError("returning a structured array or one of its elements to Python is not supported",
                                 (rt,), loc, frame.ir.name, "return a field (a['x'], a['x'].copy(), p.x) or the "
                                 "numbers you need; writes through the array (a[i].x = v) reach the caller's array")
    raise TypeInferenceError(f"returning an instance of {local.qualname}, a class defined inside a function, to "
                             "Python is not supported", (rt,), loc, frame.ir.name,
                             "define the NamedTuple or dataclass at the top level of a module")


def call_entry(mod, b: ir.IRBuilder, entry: ir.Function, args) -> ir.Instruction:
    """Call the compiled entry from a wrapper whose arguments are unpacked: without the GIL under ``nogil``
    (released before, taken back after; an error inside takes it to set the exception).

    An entry with a loop is called, not inlined (``noinline`` on the call): inlined, each of the two
    wrappers carried its own copy of the loop, which LLVM optimised and compiled three times (about
    a third of a cold compile), to save a call that costs a nanosecond next to a loop."""
    attrs = ("noinline",) if has_loop(entry) else ()
    if not mod.nogil:
        return b.call(entry, args, attrs=attrs)
    saved = b.call(mod.declare("PyEval_SaveThread", PTR, []), [])
    out = b.call(entry, args, attrs=attrs)
    b.call(mod.declare("PyEval_RestoreThread", ir.VoidType(), [PTR]), [saved])
    return out


def has_loop(fn: ir.Function) -> bool:
    """Whether ``fn``'s control flow has a cycle (a branch back to a block on the path to it)."""
    succs = {block: [op for op in block.terminator.operands if isinstance(op, ir.Block)]
             for block in fn.blocks if block.terminator is not None}
    state: dict[ir.Block, int] = {}  # 1: on the current path, 2: done
    for root in fn.blocks[:1]:
        stack = [(root, iter(succs.get(root, ())))]
        state[root] = 1
        while stack:
            block, rest = stack[-1]
            nxt = next(rest, None)
            if nxt is None:
                state[block] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return True
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(succs.get(nxt, ()))))
    return False


def emit_wrapper(mod, frame, entry: ir.Function, name: str) -> ir.Function:
    """Add ``name``, the CPython wrapper of ``entry`` (specialization ``frame``)."""
    check_returnable(frame)
    argtypes = [widen(t) for t in frame.argtypes]
    rt = widen(frame.rettype)
    if isinstance(rt, (T.TupleType, T.RecordType, T.ArrayType, T.ListType, T.DictType)) or _is_complex(rt):
        ret = PTR
    elif has_value(rt):
        ret = _I8 if rt == T.boolean else ll(rt)
    else:
        ret = ir.VoidType()
    fn = ir.Function(mod.module, ir.FunctionType(ret, [_param_type(t) for t in argtypes]), name=name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args = []
    reflected = Reflected(mod, b, lambda bb, x, xt: _box(mod, bb, x, xt), lambda x, xt: _unbox(mod, b, x, xt))

    def bail():
        reflected.finish()
        b.ret_void() if isinstance(ret, ir.VoidType) else b.ret(ir.Constant(ret, None))
    for p, t in zip(fn.args, argtypes):
        if isinstance(t, (T.ListType, T.DictType)):  # a compiled copy, reflected into the argument on return
            args.append(reflected.unbox(p, t, bail))
        elif isinstance(t, (T.ArrayType, T.StructArrayType, T.TupleType, T.RecordType)) or _is_complex(t):
            args.append(_unbox(mod, b, p, t))
        else:
            args.append(b.trunc(p, ir.IntType(1)) if t == T.boolean else p)
    out = call_entry(mod, b, entry, args)
    if mod.status:
        failed = b.extract_value(out, 1) if has_value(rt) else out
        with b.if_then(failed, likely=False):
            bail()
        out = b.extract_value(out, 0) if has_value(rt) else None
    if isinstance(rt, (T.TupleType, T.RecordType, T.ArrayType, T.ListType, T.DictType)) or _is_complex(rt):
        result = _box(mod, b, out, rt, reflected.items)
        reflected.finish()
        b.ret(result)
    elif not has_value(rt):
        reflected.finish()
        b.ret_void()
    else:
        reflected.finish()
        b.ret(b.zext(out, _I8) if rt == T.boolean else out)
    return fn
