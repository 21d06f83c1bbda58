"""The C-speed entry of a jit-compiled function: a CPython ``METH_FASTCALL | METH_KEYWORDS`` function.

``<entry>.pyentry`` is what a warm ``@jit`` call runs (the dispatcher makes
it a builtin function object: :mod:`gpucompiler.runtime.pyentry`). Its
signature is ``PyObject *f(PyObject *self, PyObject *const *args,
Py_ssize_t nargs, PyObject *kwnames)``; ``self`` is a tuple ``(fallback,
ndarray type, guard words, NumPy words, borrowed, ..., dtype words)`` (see the ``SELF_`` indices). It

1. checks the call: no keywords, the positional count, every guard of a
   global read still holding: a word (a global dict's version tag, a
   closure cell's content) equal to the one recorded, or, where a dict's
   tag moved, its name still finding the same object (then the new tag
   is recorded: a change to another global costs a lookup per read, once);
2. checks and unboxes every argument by its exact type: ``int`` (the value
   must fit in int64), ``float``, ``complex``, ``True``/``False``, an ``ndarray`` of the
   specialization's ndim, dtype, byte order, contiguity and writeability
   (read from the ``PyArrayObject`` struct: no Python-level work); a
   structured array (or ``numpy.recarray``) by its dtype's address, which must be one of the two
   the dispatcher last remembered for that argument (dtypes of the compiled
   layout: :class:`~gpucompiler.runtime.pyentry.Dtypes`), still holding the
   ``names`` tuple it held then (renaming fields in place replaces it), and
   its alignment flag too;
3. calls the specialization and boxes its result (arrays through NumPy's
   C API: :mod:`.pyresult`); a raised error (the entry's status) returns
   ``NULL`` with the Python exception already set.

Anything else (a keyword, a subclass, an overflowing ``int``, a rebound
global, a structured dtype object not remembered yet) is a *miss*: the call
is handed unchanged to ``fallback`` (the Python dispatcher), which types the
arguments as before (remembering structured dtypes), compiles when needed
and raises the errors Python would. The struct offsets used here are
CPython's and NumPy's (3.10-3.12, NumPy 1 and 2); the runtime checks them
on live objects before it ever calls an entry.
"""

from __future__ import annotations

from llvmlite import ir

from .. import types as T
from ..interpreter.lattice import widen
from .entrywords import DTYPE_HEADER, DTYPE_WORDS
from .guardloop import emit_guard_loop
from .lltypes import I64, PTR, has_value, ll
from .pyresult import ResultBoxer, boxable
from .wrapper import _array, call_entry

I8, I32 = ir.IntType(8), ir.IntType(32)
_OB_TYPE, _FLOAT_VALUE, _TUPLE_ITEMS, _CDATA_PTR = 8, 16, 24, 16
_ND, _DESCR, _FLAGS = 24, 56, 64            # PyArrayObject
_BYTEORDER, _TYPE_NUM = 26, 28              # PyArray_Descr (both NumPy 1 and 2)
_C_CONTIGUOUS, _WRITEABLE, _ALIGNED = 0x0001, 0x0400, 0x0100
#: NumPy type numbers an array of each element type may carry (Linux: long and longlong are 64-bit)
TYPE_NUMS = {T.boolean: (0,), T.int32: (5,), T.int64: (7, 9), T.float32: (11,), T.float64: (12,)}
#: the items of the entry's ``self`` tuple it reads: the Python dispatcher, ``numpy.ndarray``, the guard
#: words, the NumPy words (:data:`.entrywords.NUMPY_FUNCTIONS`), the helper boxing borrowed arrays, the
#: keyword miss's helper and the dtype words (see :data:`DTYPE_WORDS`)
SELF_FALLBACK, SELF_NDARRAY, SELF_GUARD, SELF_NUMPY, SELF_BORROWED, SELF_KEYWORDS, SELF_DTYPES = range(7)


def supported(argtypes, rettype) -> bool:
    """Whether an entry can take these arguments and box this result (else calls stay on ctypes)."""
    def arg(t):
        if isinstance(t, T.ArrayType):
            return t.dtype in TYPE_NUMS and t.ndim >= 1
        if isinstance(t, T.StructArrayType):
            return t.ndim >= 1
        return t in (T.int64, T.float64, T.boolean, T.complex128)

    return all(arg(t) for t in argtypes) and boxable(rettype)


class _Emitter:
    def __init__(self, mod, fn: ir.Function):
        self.mod, self.fn = mod, fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.miss = fn.append_basic_block("miss")

    def word(self, base, offset: int, typ: ir.Type = PTR):
        gep = self.b.gep(base, [ir.Constant(I64, offset)], source_etype=I8)
        return self.b.load(gep, typ=typ)

    def expect(self, ok, name: str) -> None:
        """Go on where ``ok``, else to the miss block."""
        cont = self.fn.append_basic_block(name)
        self.b.cbranch(ok, cont, self.miss)
        self.b.position_at_end(cont)

    def extern(self, name: str) -> ir.GlobalVariable:
        g = self.mod.module.globals.get(name)
        if g is None:
            g = ir.GlobalVariable(self.mod.module, I8, name=name)
            g.linkage = "external"
        return g

    def is_type(self, obj, type_ptr, name):
        self.expect(self.b.icmp_unsigned("==", self.word(obj, _OB_TYPE), type_ptr), name)

    def guards(self, guard, reads: int) -> None:
        """Every guard of ``guard[1:]`` holds; see :data:`~.entrywords.GUARD_WORDS`.

        A dict guard whose version tag moved looks its name up again
        (``PyDict_GetItem``): the same object means the change was to another
        binding, and the new tag is taken; another object is a miss. Code that
        read no global checks that its guard has none and needs no loop (a
        loop costs LLVM's loop passes and a third of the entry's compile).
        """
        b, mod = self.b, self.mod
        if reads == 0:
            self.expect(b.icmp_unsigned("==", b.load(guard, typ=I64), ir.Constant(I64, 0)), "guard.none")
            return
        emit_guard_loop(b, self.fn, guard, self.miss, mod.declare("PyDict_GetItem", PTR, [PTR, PTR]))

    def scalar(self, obj, t, k: int):
        b, mod = self.b, self.mod
        if t == T.boolean:
            is_true = b.icmp_unsigned("==", obj, self.extern("_Py_TrueStruct"))
            is_false = b.icmp_unsigned("==", obj, self.extern("_Py_FalseStruct"))
            self.expect(b.or_(is_true, is_false), f"arg{k}.bool")
            return is_true
        if t == T.float64:
            self.is_type(obj, self.extern("PyFloat_Type"), f"arg{k}.float")
            return self.word(obj, _FLOAT_VALUE, ir.DoubleType())
        if t == T.complex128:
            self.is_type(obj, self.extern("PyComplex_Type"), f"arg{k}.complex")
            value = ir.Constant(ll(t), ir.Undefined)
            for part in (0, 1):
                value = b.insert_value(value, self.word(obj, _FLOAT_VALUE + 8 * part, ir.DoubleType()), part)
            return value
        self.is_type(obj, self.extern("PyLong_Type"), f"arg{k}.int")
        value = b.call(mod.declare("PyLong_AsLongLong", I64, [PTR]), [obj])
        failed = self.fn.append_basic_block(f"arg{k}.maybe_overflow")
        ok = self.fn.append_basic_block(f"arg{k}.int_ok")
        b.cbranch(b.icmp_signed("==", value, ir.Constant(I64, -1)), failed, ok)
        b.position_at_end(failed)
        error = b.call(mod.declare("PyErr_Occurred", PTR, []), [])
        raised = b.icmp_unsigned("!=", error, ir.Constant(PTR, None))
        clear = self.fn.append_basic_block(f"arg{k}.overflow")
        b.cbranch(raised, clear, ok)
        b.position_at_end(clear)
        b.call(mod.declare("PyErr_Clear", ir.VoidType(), []), [])  # the dispatcher raises its own error
        b.branch(self.miss)
        b.position_at_end(ok)
        return value

    def array(self, obj, t: T.ArrayType | T.StructArrayType, ndarray, dtypes, k: int):
        b = self.b
        if isinstance(t, T.StructArrayType):  # an ndarray or a recarray (as the dispatcher takes them)
            cls = self.word(obj, _OB_TYPE)
            recarray = b.load(b.gep(dtypes, [ir.Constant(I64, 1)], source_etype=I64), typ=I64)
            either = b.or_(b.icmp_unsigned("==", cls, ndarray),
                           b.icmp_unsigned("==", b.ptrtoint(cls, I64), recarray))
            self.expect(either, f"arg{k}.ndarray")
        else:
            self.is_type(obj, ndarray, f"arg{k}.ndarray")
        self.expect(b.icmp_signed("==", self.word(obj, _ND, I32), ir.Constant(I32, t.ndim)), f"arg{k}.ndim")
        descr = self.word(obj, _DESCR)
        mask = _C_CONTIGUOUS | _WRITEABLE
        want = (_C_CONTIGUOUS if t.layout == "C" else 0) | (0 if t.readonly else _WRITEABLE)
        if isinstance(t, T.StructArrayType):
            self.struct_dtype(descr, dtypes, k)
            mask, want = mask | _ALIGNED, want | (_ALIGNED if t.aligned else 0)
        else:
            num = self.word(descr, _TYPE_NUM, I32)
            ok = None
            for n in TYPE_NUMS[t.dtype]:
                eq = b.icmp_signed("==", num, ir.Constant(I32, n))
                ok = eq if ok is None else b.or_(ok, eq)
            swapped = b.icmp_unsigned("==", self.word(descr, _BYTEORDER, I8), ir.Constant(I8, ord(">")))
            self.expect(b.and_(ok, b.not_(swapped)), f"arg{k}.dtype")
        flags = b.and_(self.word(obj, _FLAGS, I32), ir.Constant(I32, mask))
        self.expect(b.icmp_unsigned("==", flags, ir.Constant(I32, want)), f"arg{k}.flags")
        return _array(b, obj, t)

    def struct_dtype(self, descr, dtypes, k: int) -> None:
        """The structured dtype ``descr`` is one of the two remembered for argument ``k`` and holds the
        names it held then (see :data:`DTYPE_WORDS`); its ``names`` is read only once its address matched."""
        b = self.b

        def word(j: int):
            return b.load(b.gep(dtypes, [ir.Constant(I64, j)], source_etype=I64), typ=I64)

        at = DTYPE_HEADER + DTYPE_WORDS * k
        address = b.ptrtoint(descr, I64)
        first = b.icmp_unsigned("==", address, word(at))
        self.expect(b.or_(first, b.icmp_unsigned("==", address, word(at + 2))), f"arg{k}.descr")
        names = b.load(b.gep(descr, [word(0)], source_etype=I8), typ=I64)
        expected = b.select(first, word(at + 1), word(at + 3))
        self.expect(b.icmp_unsigned("==", names, expected), f"arg{k}.names")

    def result(self, out, rt, self_tuple, args, count: int):
        b, mod = self.b, self.mod
        if not has_value(rt):
            none = self.extern("_Py_NoneStruct")
            b.call(mod.declare("Py_IncRef", ir.VoidType(), [PTR]), [none])
            return none
        numpy = self.word(self.word(self_tuple, _TUPLE_ITEMS + 8 * SELF_NUMPY), _CDATA_PTR)
        boxer = ResultBoxer(self, numpy, self.word(self_tuple, _TUPLE_ITEMS + 8 * SELF_NDARRAY),
                            self.word(self_tuple, _TUPLE_ITEMS + 8 * SELF_BORROWED), args, count)
        return boxer.box(out, rt)

    def fall_back(self, self_tuple, args, nargs, kwnames) -> None:
        """The miss block: ``fallback(*args, **kwargs)`` with the call's own arguments.

        With keywords, ``keyword_call(address of args, nargs, kwnames)`` (``self[SELF_KEYWORDS]``)
        reads them from the vector in Python: a dict built here took a loop, and a loop takes
        LLVM's loop passes, a sixth of a small function's compile."""
        b, mod = self.b, self.mod
        b.position_at_end(self.miss)
        plain = self.fn.append_basic_block("miss.positional")
        keywords = self.fn.append_basic_block("miss.keywords")
        b.cbranch(b.icmp_unsigned("==", kwnames, ir.Constant(PTR, None)), plain, keywords)
        b.position_at_end(plain)
        call = mod.declare("PyObject_VectorcallDict", PTR, [PTR, PTR, I64, PTR])
        fallback = self.word(self_tuple, _TUPLE_ITEMS + 8 * SELF_FALLBACK)
        b.ret(b.call(call, [fallback, args, nargs, ir.Constant(PTR, None)]))
        b.position_at_end(keywords)
        call = mod.module.globals.get("PyObject_CallFunction") or ir.Function(
            mod.module, ir.FunctionType(PTR, [PTR, PTR], var_arg=True), name="PyObject_CallFunction")
        helper = self.word(self_tuple, _TUPLE_ITEMS + 8 * SELF_KEYWORDS)
        fmt = mod.cstring("nnO")  # the format: the address, the count, the names
        b.ret(b.call(call, [helper, fmt, b.ptrtoint(args, I64), nargs, kwnames]))


def emit_pyentry(mod, frame, entry: ir.Function, name: str, reads: int) -> ir.Function | None:
    """Add ``name``, the CPython fast-call entry of ``entry`` (specialization ``frame``, which read
    ``reads`` globals: its guard's length); None when :func:`supported` says no (its calls then go
    through the ctypes wrapper alone)."""
    argtypes = [widen(t) for t in frame.argtypes]
    rt = widen(frame.rettype)
    if not supported(argtypes, rt):
        return None
    fn = ir.Function(mod.module, ir.FunctionType(PTR, [PTR, PTR, I64, PTR]), name=name)
    self_tuple, args, nargs, kwnames = fn.args
    e = _Emitter(mod, fn)
    b = e.b
    e.expect(b.icmp_unsigned("==", kwnames, ir.Constant(PTR, None)), "positional")
    e.expect(b.icmp_signed("==", nargs, ir.Constant(I64, len(argtypes))), "count")
    guard = e.word(e.word(self_tuple, _TUPLE_ITEMS + 8 * SELF_GUARD), _CDATA_PTR)
    e.guards(guard, reads)
    ndarray = e.word(self_tuple, _TUPLE_ITEMS + 8 * SELF_NDARRAY)
    dtypes = None
    if any(isinstance(t, T.StructArrayType) for t in argtypes):
        dtypes = e.word(e.word(self_tuple, _TUPLE_ITEMS + 8 * SELF_DTYPES), _CDATA_PTR)
    values = []
    for k, t in enumerate(argtypes):
        obj = b.load(b.gep(args, [ir.Constant(I64, k)], source_etype=PTR), typ=PTR)
        is_array = isinstance(t, (T.ArrayType, T.StructArrayType))
        values.append(e.array(obj, t, ndarray, dtypes, k) if is_array else e.scalar(obj, t, k))
    out = call_entry(mod, b, entry, values)
    if mod.status:
        failed = b.extract_value(out, 1) if has_value(rt) else out
        with b.if_then(failed, likely=False):
            b.ret(ir.Constant(PTR, None))  # the compiled code set the exception
        out = b.extract_value(out, 0) if has_value(rt) else None
    b.ret(e.result(out, rt, self_tuple, args, len(argtypes)))
    e.fall_back(self_tuple, args, nargs, kwnames)
    return fn
