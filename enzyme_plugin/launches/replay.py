"""A launch tape's recorder in native code, for a recording that repeats the last one.

When every launch of a recording repeated the launch at its place in the recording before it through that
launch's fixed native entry (:attr:`.tape.Repeat.native`), the next recording's launch recorder is a
:class:`Replay`: a builtin function (compiled once per process from :func:`emit_replay`, on a thread of its
own; until then the tape records in Python) that, called as ``recorder(launch, args)``, takes the launch at
the cursor's place when it is the same launch object, its kernel has no hand-written gradient registered,
and that place's fixed entry launched it on ``args`` (the entry compares every argument object, value and
stream, and misses otherwise): it moves the cursor on and returns None. Anything else, a miss of the entry
included (it launched nothing), calls the tape's Python recorder, which first takes the records the cursor
passed (:meth:`.tape.LaunchTape._catch_up`) and then records as it does without a replay.

The words: ``[cursor, count, (launch, its kernel's __dict__, fixed entry) * count]`` (object addresses, the
objects kept alive by the builtin's ``self`` tuple). Setting ``count`` to 0 sends every later call of the
recording to the Python recorder.
"""

from __future__ import annotations

import ctypes
import functools
import weakref

from gpucompiler.runtime.launch_entry import builtin_function, compiled_code

_NAME = "gpuc_tape_replay"
W_CURSOR, W_COUNT, W_ROWS = 0, 1, 2
ROW_WORDS = 3
#: the items of the builtin's ``self`` tuple it reads: the Python recorder, the words, the gradient's attribute name
SELF_FALLBACK, SELF_WORDS, SELF_NAME = range(3)
_TUPLE_ITEMS, _CDATA_PTR, _OB_TYPE, _OB_SIZE = 24, 16, 8, 16


def emit_replay(name: str = _NAME) -> str:
    """The LLVM IR text of the replay recorder ``PyObject *f(self, args, nargs, kwnames)`` (see the module
    docstring)."""
    from llvmlite import ir

    i64, ptr = ir.IntType(64), ir.PointerType()
    module = ir.Module(name=name)
    fn = ir.Function(module, ir.FunctionType(ptr, [ptr, ptr, i64, ptr]), name=name)
    self_tuple, args, nargs, kwnames = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slow = fn.append_basic_block("slow")

    def declare(fname: str, restype, argtypes) -> ir.Function:
        got = module.globals.get(fname)
        return got if got is not None else ir.Function(module, ir.FunctionType(restype, argtypes), name=fname)

    def extern(gname: str) -> ir.GlobalVariable:
        got = module.globals.get(gname)
        if got is None:
            got = ir.GlobalVariable(module, ir.IntType(8), name=gname)
            got.linkage = "external"
        return got

    def load_at(base, offset: int, typ: ir.Type = ptr):
        return b.load(b.gep(base, [ir.Constant(i64, offset)], source_etype=ir.IntType(8)), typ=typ)

    def expect(ok, label: str) -> None:
        cont = fn.append_basic_block(label)
        b.cbranch(ok, cont, slow)
        b.position_at_end(cont)

    null = ir.Constant(ptr, None)
    vectorcall = declare("PyObject_Vectorcall", ptr, [ptr, ptr, i64, ptr])
    words = load_at(load_at(self_tuple, _TUPLE_ITEMS + 8 * SELF_WORDS), _CDATA_PTR)

    def word_ptr(index):
        return b.gep(words, [index], source_etype=i64)

    expect(b.icmp_unsigned("==", kwnames, null), "positional")
    expect(b.icmp_signed("==", nargs, ir.Constant(i64, 2)), "two")
    at = b.load(word_ptr(ir.Constant(i64, W_CURSOR)), typ=i64)
    count = b.load(word_ptr(ir.Constant(i64, W_COUNT)), typ=i64)
    expect(b.icmp_unsigned("<", at, count), "ahead")
    row = b.add(ir.Constant(i64, W_ROWS), b.mul(at, ir.Constant(i64, ROW_WORDS)))
    launch = b.load(args, typ=ptr)
    expected = b.load(word_ptr(row), typ=ptr)
    expect(b.icmp_unsigned("==", launch, expected), "same_launch")
    kdict = b.load(word_ptr(b.add(row, ir.Constant(i64, 1))), typ=ptr)
    gradient_name = load_at(self_tuple, _TUPLE_ITEMS + 8 * SELF_NAME)
    found = b.call(declare("PyDict_GetItem", ptr, [ptr, ptr]), [kdict, gradient_name])  # borrowed; NULL: absent
    expect(b.icmp_unsigned("==", found, null), "no_gradient")
    items = b.load(b.gep(args, [ir.Constant(i64, 1)], source_etype=ptr), typ=ptr)
    expect(b.icmp_unsigned("==", load_at(items, _OB_TYPE), extern("PyTuple_Type")), "tuple")
    size = load_at(items, _OB_SIZE, i64)
    entry = b.load(word_ptr(b.add(row, ir.Constant(i64, 2))), typ=ptr)
    vector = b.gep(items, [ir.Constant(i64, _TUPLE_ITEMS)], source_etype=ir.IntType(8))
    result = b.call(vectorcall, [entry, vector, size, null])
    raised, returned = fn.append_basic_block("raised"), fn.append_basic_block("returned")
    b.cbranch(b.icmp_unsigned("==", result, null), raised, returned)
    b.position_at_end(raised)  # the entry's error (the driver refused the launch): the caller's
    b.ret(null)
    b.position_at_end(returned)
    launched, missed = fn.append_basic_block("launched"), fn.append_basic_block("missed")
    b.cbranch(b.icmp_unsigned("==", result, extern("_Py_NoneStruct")), launched, missed)
    b.position_at_end(missed)  # the entry's miss (it launched nothing): the Python recorder takes the call
    b.call(declare("Py_DecRef", ir.VoidType(), [ptr]), [result])
    b.branch(slow)
    b.position_at_end(launched)
    b.store(b.add(at, ir.Constant(i64, 1)), word_ptr(ir.Constant(i64, W_CURSOR)))
    b.ret(result)
    b.position_at_end(slow)
    fallback = load_at(self_tuple, _TUPLE_ITEMS + 8 * SELF_FALLBACK)
    b.ret(b.call(vectorcall, [fallback, args, nargs, kwnames]))
    return str(module)


def compiled() -> int | None:
    """The replay recorder's address, or None while it compiles (the first ask starts that, on a thread of its
    own) or where LLVM could not make it (one ``RuntimeWarning``; recordings stay in Python)."""
    got = compiled_code(_NAME, emit_replay, _NAME, "launch-tape replay", "recordings stay in Python")
    return None if got is None else got[1]


class Replay:
    """The native recorder of a recording that repeats ``repeats`` (:class:`.tape.Repeat`, each with its fixed
    entry and record) in order; misses call ``fallback(launch, args)``."""

    __slots__ = ("words", "count", "function", "repeats", "records")

    def __init__(self, address: int, repeats: list, fallback, gradient_attribute: str):
        self.repeats = tuple(repeats)
        self.records = tuple(m.record for m in repeats)
        self.count = len(repeats)
        words = (ctypes.c_uint64 * (W_ROWS + ROW_WORDS * self.count))()
        dicts = tuple(vars(m.launch.kernel) for m in repeats)
        natives = tuple(m.native for m in repeats)
        for k, (m, kdict, native) in enumerate(zip(repeats, dicts, natives)):
            at = W_ROWS + ROW_WORDS * k
            words[at], words[at + 1], words[at + 2] = id(m.launch), id(kdict), id(native)
        words[W_COUNT] = self.count
        self.words = words
        # the tuple keeps alive everything the words point at
        self.function = builtin_function(_NAME, address, (fallback, words, gradient_attribute, self.repeats, dicts,
                                                          natives))

    def stop(self) -> int:
        """How many launches the recorder took; every later call goes to the Python recorder."""
        words = self.words
        words[W_COUNT] = 0
        return words[W_CURSOR]


def weak_recorder(record) -> functools.partial:
    """``record``, a bound method, called through a weak reference to its object (a replay the object holds
    would otherwise hold it back: a cycle, freed only by the collector)."""
    return functools.partial(_call_weak, weakref.WeakMethod(record))


def _call_weak(ref, launch, args):
    return ref()(launch, args)


__all__ = ["Replay", "compiled", "emit_replay", "weak_recorder"]
