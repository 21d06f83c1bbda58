"""The native entry of a GPU kernel launch: a CPython ``METH_FASTCALL | METH_KEYWORDS`` function that does a
bound launch's host work and calls the driver's ``cuLaunchKernel`` (:mod:`gpucompiler.runtime.launch_entry`
makes it a builtin function and wires it to the launch object).

Its signature is ``PyObject *f(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)``;
``self`` is a tuple ``(fallback, words, on_error, ...)`` (the ``SELF_`` indices), ``words`` a ctypes array of
64-bit words laid out as the ``W_`` constants of :mod:`.launchwords` say. The code depends only on the arguments' kinds (a
:data:`Plan`): every address, the grid, the stream and the expected layouts are words, so one compiled
entry serves every launch of that plan. It

1. checks the call: no keywords, the positional count, the entry still valid (``W_VALID``: the runtime
   clears it when the kernel's code or the launch's launcher is dropped), not already launching
   (``W_BUSY``), made by this thread (``W_THREAD``: the thread whose context the runtime checked), the
   chosen device (a ``ContextVar``, read with ``PyContextVar_Get``) None, and every guard word holding (the kernel's global reads and the runtime's state: the dict version
   tags of :class:`gpucompiler.runtime.pyentry.Guard`, rechecked by name where a tag moved); where the
   launch recorder (another ``ContextVar``) holds a callable, it returns ``recorder(launch, args)`` instead,
   as the Python launch does (the launch object in ``self``'s item :data:`SELF_LAUNCH`, the arguments made a
   tuple);
2. reads every argument by its exact type: ``float``, ``int`` (fitting in int64), ``True``/``False``, a NumPy
   scalar of the kind's type (its value at the scalar object's ``obval``), a CuPy ``ndarray`` (the type in
   ``W_NDARRAY``) whose ``dtype`` equals the signature's, whose ``shape`` and ``strides`` are tuples of the
   signature's rank of ``int`` and give its contiguity (C order, dimensions of extent 1 aside, as the
   signature computes it), and whose ``data.ptr`` is an ``int``: any length and strides of that layout;
3. takes the stream: the given one (``W_STREAM``), or where the launch follows the arrays' producers
   CuPy's current stream (``cupy.cuda.stream.get_current_stream_ptr()``, else ``get_current_stream().ptr``;
   0 and 1 are the legacy default stream, handle 0);
4. writes the values into its own parameter buffer (a builtin holds the GIL throughout: no other thread
   runs between the writes and the driver's copy of them) and calls ``cuLaunchKernel`` at ``W_LAUNCH``.

A *fixed* entry (the plan's third item: a launch tape's, for a launch that repeats one it recorded) leaves
out the recorder check (its caller is the recorder) and writes nothing: every argument must be the recorded
launch's object (``ARG_OBJECT``), every value equal, bit for bit, the one its buffer holds (the runtime's
packing of the recorded launch's values) and the stream the one in ``W_STREAM``, or the call is a miss.

Anything that does not hold is a *miss*: the call goes unchanged to ``fallback`` (the Python launch, or a fixed
entry's tape), which launches, records, recompiles or raises as it does without an entry. A launch the driver
refuses ran nothing: ``on_error(code)`` is called (it raises the typed error, or returns when the Python
launch should ask for the context again), then the fallback. Every attribute read releases its reference
before any branch.
"""

from __future__ import annotations

from llvmlite import ir

from .guardloop import emit_guard_loop
from .launchwords import (ARG_OBJECT, ARG_WORDS, SELF_ERROR, SELF_FALLBACK, SELF_LAUNCH, SELF_WORDS, W_ARGS,
                          W_BUFFER, W_BUSY, W_CURRENT, W_DATA, W_DEVICE, W_DIMS, W_DTYPE, W_FUNCTION, W_GUARD,
                          W_LAUNCH, W_NDARRAY, W_PARAMS, W_PTR, W_RECORDER, W_SHAPE, W_STREAM, W_STRIDES, W_THREAD,
                          W_VALID, Kind, Plan, StreamMode, param_sizes)

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
_OB_TYPE, _OB_SIZE, _TUPLE_ITEMS, _CDATA_PTR, _SCALAR_VALUE = 8, 16, 24, 16, 16
_PY_EQ = 2

_NUMPY_VALUES = {Kind.NP_FLOAT64: ir.DoubleType(), Kind.NP_FLOAT32: ir.FloatType(), Kind.NP_INT64: I64,
                 Kind.NP_INT32: I32, Kind.NP_BOOL: I8}


class _Emitter:
    def __init__(self, module: ir.Module, fn: ir.Function):
        self.module, self.fn = module, fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.miss = fn.append_basic_block("miss")
        #: the words (the ctypes array in ``self``'s item :data:`SELF_WORDS`)
        self.words = self.load_at(self.load_at(fn.args[0], _TUPLE_ITEMS + 8 * SELF_WORDS), _CDATA_PTR)

    def declare(self, name: str, restype: ir.Type, argtypes) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(restype, argtypes), name=name)
        return fn

    def call(self, name: str, restype: ir.Type, args, argtypes=None):
        return self.b.call(self.declare(name, restype, argtypes or [PTR] * len(args)), args)

    def extern(self, name: str) -> ir.GlobalVariable:
        g = self.module.globals.get(name)
        if g is None:
            g = ir.GlobalVariable(self.module, I8, name=name)
            g.linkage = "external"
        return g

    def load_at(self, base, offset: int, typ: ir.Type = PTR):
        return self.b.load(self.b.gep(base, [ir.Constant(I64, offset)], source_etype=I8), typ=typ)

    def word(self, index: int, typ: ir.Type = PTR):
        return self.b.load(self.b.gep(self.words, [ir.Constant(I64, index)], source_etype=I64), typ=typ)

    def expect(self, ok, name: str) -> None:
        cont = self.fn.append_basic_block(name)
        self.b.cbranch(ok, cont, self.miss)
        self.b.position_at_end(cont)

    def expect_object(self, obj, name: str) -> None:
        """``obj`` (a new reference or NULL) is not NULL; a raised error is cleared (the Python launch raises
        its own)."""
        failed = self.fn.append_basic_block(name + ".failed")
        cont = self.fn.append_basic_block(name)
        self.b.cbranch(self.b.icmp_unsigned("==", obj, ir.Constant(PTR, None)), failed, cont)
        self.b.position_at_end(failed)
        self.call("PyErr_Clear", ir.VoidType(), [])
        self.b.branch(self.miss)
        self.b.position_at_end(cont)

    def decref(self, obj) -> None:
        self.call("Py_DecRef", ir.VoidType(), [obj])

    def is_type(self, obj, type_ptr, name: str) -> None:
        self.expect(self.b.icmp_unsigned("==", self.load_at(obj, _OB_TYPE), type_ptr), name)

    def unset(self, var_word: int, name: str) -> None:
        """The context variable at ``var_word`` holds None (its default) in this thread or task."""
        b = self.b
        out = b.alloca(PTR, name=name + ".value")
        rc = self.call("PyContextVar_Get", I32, [self.word(var_word), ir.Constant(PTR, None), out])
        self.expect(b.icmp_signed("==", rc, ir.Constant(I32, 0)), name + ".read")
        value = b.load(out, typ=PTR)
        none = b.icmp_unsigned("==", value, self.extern("_Py_NoneStruct"))
        self.decref(value)
        self.expect(none, name)

    def recorder(self, var_word: int, self_tuple, args, count: int) -> None:
        """When the context variable at ``var_word`` (the launch recorder) holds a callable in this thread or
        task, return ``recorder(launch, args)`` (the launch object at :data:`SELF_LAUNCH`, the arguments as a
        tuple): what the Python launch does then, without its frame."""
        b = self.b
        out = b.alloca(PTR, name="recorder.value")
        rc = self.call("PyContextVar_Get", I32, [self.word(var_word), ir.Constant(PTR, None), out])
        self.expect(b.icmp_signed("==", rc, ir.Constant(I32, 0)), "recorder.read")
        value = b.load(out, typ=PTR)
        none = b.icmp_unsigned("==", value, self.extern("_Py_NoneStruct"))
        record = self.fn.append_basic_block("recorder.call")
        cont = self.fn.append_basic_block("recorder.none")
        b.cbranch(none, cont, record)
        b.position_at_end(record)
        items = self.call("PyTuple_New", PTR, [ir.Constant(I64, count)], [I64])
        made = self.fn.append_basic_block("recorder.tuple")
        failed = self.fn.append_basic_block("recorder.failed")
        b.cbranch(b.icmp_unsigned("==", items, ir.Constant(PTR, None)), failed, made)
        b.position_at_end(failed)  # (the MemoryError raised)
        self.decref(value)
        b.ret(ir.Constant(PTR, None))
        b.position_at_end(made)
        for k in range(count):  # PyTuple_SET_ITEM of a new reference to each argument
            obj = b.load(b.gep(args, [ir.Constant(I64, k)], source_etype=PTR), typ=PTR)
            self.call("Py_IncRef", ir.VoidType(), [obj])
            b.store(obj, b.gep(items, [ir.Constant(I64, _TUPLE_ITEMS + 8 * k)], source_etype=I8))
        argv = b.alloca(PTR, 2, name="recorder.argv")
        b.store(self.load_at(self_tuple, _TUPLE_ITEMS + 8 * SELF_LAUNCH), argv)
        b.store(items, b.gep(argv, [ir.Constant(I64, 1)], source_etype=PTR))
        result = self.call("PyObject_Vectorcall", PTR, [value, argv, ir.Constant(I64, 2), ir.Constant(PTR, None)],
                           [PTR, PTR, I64, PTR])
        self.decref(items)
        self.decref(value)
        b.ret(result)
        b.position_at_end(cont)
        self.decref(value)

    def guards(self) -> None:
        """Every guard of the guard words holds (see :data:`~.entrywords.GUARD_WORDS`); a dict whose tag
        moved is looked up again and its new tag taken where the name finds the same object."""
        emit_guard_loop(self.b, self.fn, self.word(W_GUARD), self.miss, self.declare("PyDict_GetItem", PTR, [PTR, PTR]))

    def as_int64(self, obj, name: str):
        """The value of ``obj`` (a new reference, released here), an exact ``int`` fitting in int64."""
        b = self.b
        is_int = b.icmp_unsigned("==", self.load_at(obj, _OB_TYPE), self.extern("PyLong_Type"))
        value = b.alloca(I64, name=name + ".slot")
        b.store(ir.Constant(I64, -1), value)
        with b.if_then(is_int):
            b.store(self.call("PyLong_AsLongLong", I64, [obj]), value)
        self.decref(obj)
        self.expect(is_int, name + ".int")
        return self.checked(b.load(value, typ=I64), name)

    def checked(self, value, name: str):
        """``value`` from ``PyLong_AsLongLong``: -1 with an error raised (it overflowed) is a miss."""
        b = self.b
        maybe, ok = self.fn.append_basic_block(name + ".maybe"), self.fn.append_basic_block(name + ".ok")
        b.cbranch(b.icmp_signed("==", value, ir.Constant(I64, -1)), maybe, ok)
        b.position_at_end(maybe)
        raised = b.icmp_unsigned("!=", self.call("PyErr_Occurred", PTR, []), ir.Constant(PTR, None))
        clear = self.fn.append_basic_block(name + ".overflow")
        b.cbranch(raised, clear, ok)
        b.position_at_end(clear)
        self.call("PyErr_Clear", ir.VoidType(), [])
        b.branch(self.miss)
        b.position_at_end(ok)
        return value

    def scalar(self, obj, kind: Kind, k: int):
        b = self.b
        if kind is Kind.BOOL:
            is_true = b.icmp_unsigned("==", obj, self.extern("_Py_TrueStruct"))
            self.expect(b.or_(is_true, b.icmp_unsigned("==", obj, self.extern("_Py_FalseStruct"))), f"arg{k}.bool")
            return b.zext(is_true, I8)
        if kind is Kind.FLOAT:
            self.is_type(obj, self.extern("PyFloat_Type"), f"arg{k}.float")
            return self.load_at(obj, _SCALAR_VALUE, ir.DoubleType())
        if kind is Kind.INT:
            self.is_type(obj, self.extern("PyLong_Type"), f"arg{k}.int")
            return self.checked(self.call("PyLong_AsLongLong", I64, [obj]), f"arg{k}")
        self.is_type(obj, self.word(W_ARGS + ARG_WORDS * k), f"arg{k}.type")
        return self.load_at(obj, _SCALAR_VALUE, _NUMPY_VALUES[kind])

    def equal_attribute(self, obj, name_word: int, expected_word: int, name: str) -> None:
        """``getattr(obj, name) == expected`` (``PyObject_RichCompareBool``: identity first)."""
        b = self.b
        value = self.call("PyObject_GetAttr", PTR, [obj, self.word(name_word)])
        self.expect_object(value, name + ".read")
        same = self.call("PyObject_RichCompareBool", I32, [value, self.word(expected_word), ir.Constant(I32, _PY_EQ)],
                         [PTR, PTR, I32])
        self.decref(value)
        failed = b.icmp_signed("<", same, ir.Constant(I32, 0))
        with b.if_then(failed, likely=False):
            self.call("PyErr_Clear", ir.VoidType(), [])
        self.expect(b.icmp_signed("==", same, ir.Constant(I32, 1)), name)

    def array(self, obj, k: int, ndim: int) -> list:
        """The parameter of CuPy array ``obj``: its ``data.ptr``, shape and strides, once its dtype is the
        expected one and its contiguity the signature's (as ``runtime.arguments.is_contiguous`` decides it)."""
        b = self.b
        self.is_type(obj, self.word(W_NDARRAY), f"arg{k}.ndarray")
        at = W_ARGS + ARG_WORDS * k
        self.equal_attribute(obj, W_DTYPE, at, f"arg{k}.dtype")
        shape = self.int_tuple(obj, W_SHAPE, ndim, f"arg{k}.shape")
        strides = self.int_tuple(obj, W_STRIDES, ndim, f"arg{k}.strides")
        contiguous, expect = ir.Constant(ir.IntType(1), 1), self.word(at + 1, I64)
        for n, stride in zip(reversed(shape), reversed(strides)):
            one = b.icmp_signed("==", n, ir.Constant(I64, 1))
            contiguous = b.and_(contiguous, b.or_(one, b.icmp_signed("==", stride, expect)))
            expect = b.mul(expect, n)
        wanted = b.icmp_unsigned("!=", self.word(at + 2, I64), ir.Constant(I64, 0))
        self.expect(b.icmp_unsigned("==", contiguous, wanted), f"arg{k}.contiguity")
        data = self.call("PyObject_GetAttr", PTR, [obj, self.word(W_DATA)])
        self.expect_object(data, f"arg{k}.data")
        ptr = self.call("PyObject_GetAttr", PTR, [data, self.word(W_PTR)])
        self.decref(data)
        self.expect_object(ptr, f"arg{k}.ptr")
        return [self.as_int64(ptr, f"arg{k}.address"), *shape, *strides]

    def int_tuple(self, obj, name_word: int, ndim: int, name: str) -> list:
        """The ``ndim`` values of attribute ``obj.<name>``, an exact tuple of exact ints fitting in int64; the
        tuple is released on every path."""
        b = self.b
        value = self.call("PyObject_GetAttr", PTR, [obj, self.word(name_word)])
        self.expect_object(value, name + ".read")
        drop = self.fn.append_basic_block(name + ".drop")
        is_tuple = b.icmp_unsigned("==", self.load_at(value, _OB_TYPE), self.extern("PyTuple_Type"))
        sized = b.icmp_signed("==", self.load_at(value, _OB_SIZE, I64), ir.Constant(I64, ndim))
        self.expect_to(b.and_(is_tuple, sized), name + ".tuple", drop)
        items = []
        for j in range(ndim):
            item = self.load_at(value, _TUPLE_ITEMS + 8 * j)
            self.expect_to(b.icmp_unsigned("==", self.load_at(item, _OB_TYPE), self.extern("PyLong_Type")),
                           f"{name}.{j}.int", drop)
            got = self.call("PyLong_AsLongLong", I64, [item])
            maybe, ok = self.fn.append_basic_block(f"{name}.{j}.maybe"), self.fn.append_basic_block(f"{name}.{j}.ok")
            b.cbranch(b.icmp_signed("==", got, ir.Constant(I64, -1)), maybe, ok)
            b.position_at_end(maybe)
            raised = b.icmp_unsigned("!=", self.call("PyErr_Occurred", PTR, []), ir.Constant(PTR, None))
            clear = self.fn.append_basic_block(f"{name}.{j}.overflow")
            b.cbranch(raised, clear, ok)
            b.position_at_end(clear)
            self.call("PyErr_Clear", ir.VoidType(), [])
            b.branch(drop)
            b.position_at_end(ok)
            items.append(got)
        self.decref(value)
        cont = b.block
        b.position_at_end(drop)
        self.decref(value)
        b.branch(self.miss)
        b.position_at_end(cont)
        return items

    def expect_to(self, ok, name: str, otherwise) -> None:
        """Go on where ``ok``, else to block ``otherwise``."""
        cont = self.fn.append_basic_block(name)
        self.b.cbranch(ok, cont, otherwise)
        self.b.position_at_end(cont)

    def stream(self, mode: StreamMode):
        b = self.b
        if mode is StreamMode.GIVEN:
            return self.word(W_STREAM, I64)
        current = self.call("PyObject_CallNoArgs", PTR, [self.word(W_CURRENT)])
        self.expect_object(current, "stream.current")
        if mode is StreamMode.OBJECT:
            handle = self.call("PyObject_GetAttr", PTR, [current, self.word(W_PTR)])
            self.decref(current)
            self.expect_object(handle, "stream.ptr")
            current = handle
        value = self.as_int64(current, "stream")
        self.expect(b.icmp_signed(">=", value, ir.Constant(I64, 0)), "stream.handle")
        legacy = b.icmp_unsigned("==", value, ir.Constant(I64, 1))  # the legacy default stream: handle 0
        return b.select(legacy, ir.Constant(I64, 0), value)

    def same_as_buffer(self, at: int, value):
        """Whether ``value`` has the bits the parameter buffer holds at byte ``at``."""
        b = self.b
        bits = ir.IntType(value.type.width if isinstance(value.type, ir.IntType)
                          else 64 if isinstance(value.type, ir.DoubleType) else 32)
        if not isinstance(value.type, ir.IntType):
            value = b.bitcast(value, bits)
        held = b.load(b.gep(self.word(W_BUFFER), [ir.Constant(I64, at)], source_etype=I8), typ=bits)
        return b.icmp_unsigned("==", value, held)

    def launch(self, stream, self_tuple, args, nargs, kwnames) -> None:
        """Busy around ``cuLaunchKernel``; None on success, else ``on_error(code)`` then the miss."""
        b = self.b
        busy = b.gep(self.words, [ir.Constant(I64, W_BUSY)], source_etype=I64)
        b.store(ir.Constant(I64, 1), busy)
        dims = [self.word(W_DIMS + j, I32) for j in range(7)]
        launch = self.word(W_LAUNCH, ir.FunctionType(I32, [PTR] + [I32] * 7 + [I64, PTR, PTR]).as_pointer())
        err = b.call(launch, [self.word(W_FUNCTION), *dims, stream, self.word(W_PARAMS), ir.Constant(PTR, None)])
        b.store(ir.Constant(I64, 0), busy)
        failed = self.fn.append_basic_block("launch.failed")
        ok = self.fn.append_basic_block("launch.ok")
        b.cbranch(b.icmp_signed("==", err, ir.Constant(I32, 0)), ok, failed)
        b.position_at_end(ok)
        none = self.extern("_Py_NoneStruct")
        self.call("Py_IncRef", ir.VoidType(), [none])
        b.ret(none)
        b.position_at_end(failed)
        code = b.alloca(PTR, name="code")
        b.store(self.call("PyLong_FromLong", PTR, [b.sext(err, I64)], [I64]), code)
        self.expect_object(b.load(code, typ=PTR), "launch.code")
        handler = self.load_at(self_tuple, _TUPLE_ITEMS + 8 * SELF_ERROR)
        result = self.call("PyObject_Vectorcall", PTR, [handler, code, ir.Constant(I64, 1), ir.Constant(PTR, None)],
                           [PTR, PTR, I64, PTR])
        self.decref(b.load(code, typ=PTR))
        raised = self.fn.append_basic_block("launch.raised")
        retry = self.fn.append_basic_block("launch.retry")
        b.cbranch(b.icmp_unsigned("==", result, ir.Constant(PTR, None)), raised, retry)
        b.position_at_end(raised)
        b.ret(ir.Constant(PTR, None))
        b.position_at_end(retry)
        self.decref(result)
        b.branch(self.miss)
        b.position_at_end(self.miss)
        fallback = self.load_at(self_tuple, _TUPLE_ITEMS + 8 * SELF_FALLBACK)
        b.ret(self.call("PyObject_Vectorcall", PTR, [fallback, args, nargs, kwnames], [PTR, PTR, I64, PTR]))


def emit_launch_entry(plan: Plan, name: str) -> str:
    """The LLVM IR text of the entry ``name`` for ``plan``."""
    module = ir.Module(name=name)
    fn = ir.Function(module, ir.FunctionType(PTR, [PTR, PTR, I64, PTR]), name=name)
    self_tuple, args, nargs, kwnames = fn.args
    e = _Emitter(module, fn)
    b = e.b
    kinds, mode, fixed = plan
    e.expect(b.icmp_unsigned("==", kwnames, ir.Constant(PTR, None)), "positional")
    e.expect(b.icmp_signed("==", nargs, ir.Constant(I64, len(kinds))), "count")
    e.expect(b.icmp_unsigned("!=", e.word(W_VALID, I64), ir.Constant(I64, 0)), "valid")
    e.expect(b.icmp_unsigned("==", e.word(W_BUSY, I64), ir.Constant(I64, 0)), "idle")
    thread = e.call("PyThread_get_thread_ident", I64, [])
    e.expect(b.icmp_unsigned("==", thread, e.word(W_THREAD, I64)), "thread")
    if not fixed:
        e.recorder(W_RECORDER, self_tuple, args, len(kinds))
    e.unset(W_DEVICE, "device")
    e.guards()
    values = []
    for k, (kind, ndim) in enumerate(kinds):
        obj = b.load(b.gep(args, [ir.Constant(I64, k)], source_etype=PTR), typ=PTR)
        if fixed:  # the recorded launch's object itself
            e.expect(b.icmp_unsigned("==", obj, e.word(W_ARGS + ARG_WORDS * k + ARG_OBJECT)), f"arg{k}.same")
        values.append(e.array(obj, k, ndim) if kind is Kind.ARRAY else [e.scalar(obj, kind, k)])
    stream = e.stream(mode)
    same = ir.Constant(ir.IntType(1), 1)
    if fixed and mode is not StreamMode.GIVEN:  # (a given stream is W_STREAM itself)
        same = b.icmp_unsigned("==", stream, e.word(W_STREAM, I64))
    buffer, at = e.word(W_BUFFER), 0
    for words, size in zip(values, param_sizes(plan)):
        for j, value in enumerate(words):  # an array's pointer, shape and strides, 8 bytes each
            if fixed:
                same = b.and_(same, e.same_as_buffer(at + 8 * j, value))
            else:
                b.store(value, b.gep(buffer, [ir.Constant(I64, at + 8 * j)], source_etype=I8))
        at += size
    if fixed:
        e.expect(same, "fixed")
    e.launch(stream, self_tuple, args, nargs, kwnames)
    return str(module)


__all__ = ["emit_launch_entry"]
