"""Python objects made by compiled code on the host: ``print`` and exceptions of any class.

``print(...)`` on the CPU calls CPython's own ``builtins.print`` with boxed
values (the GIL taken with ``PyGILState_Ensure``, so it also works where the
caller released it): the output is exactly CPython's (``repr`` of floats) and
goes through ``sys.stdout``, in order with the caller's prints. On the GPU it
is CUDA's ``vprintf`` (``%g`` for floats).

``raise Cls("text")`` and ``assert`` make the exception object, add a note
with the ``file:line`` of the statement (PEP 678: tracebacks show it), and
set it as the error. A built-in class is CPython's global (``PyExc_...``),
read through a name of ours (:data:`PYEXC`, bound to that variable when the
code is loaded): another user of LLVM in the process, Numba, registers
``PyExc_...`` as the class object itself, not CPython's pointer variable, and
code reading the pointer through it raised with a garbage class (a segfault).
Another class is imported by module and qualified name when raised.
"""

from __future__ import annotations

from llvmlite import ir

from .. import types as T
from .entrywords import PYEXC
from .lltypes import I64, PTR

_I32 = ir.IntType(32)
_F64 = ir.DoubleType()


def builtin_exception(mod, b, exc_name: str):
    """CPython's built-in exception class ``exc_name`` (a borrowed reference)."""
    return b.load(mod.extern_global(PYEXC + exc_name), typ=PTR)


def _decl(mod, name, ret, args, var_arg=False) -> ir.Function:
    fn = mod.module.globals.get(name)
    if fn is None:
        fn = ir.Function(mod.module, ir.FunctionType(ret, args, var_arg=var_arg), name=name)
    return fn


def lookup(mod, b, module: str, qualname: str):
    """A new reference to ``module.qualname``, imported now (intermediate references dropped)."""
    decref = _decl(mod, "Py_DecRef", ir.VoidType(), [PTR])
    obj = b.call(_decl(mod, "PyImport_ImportModule", PTR, [PTR]), [mod.cstring(module)])
    for part in qualname.split("."):
        attr = b.call(_decl(mod, "PyObject_GetAttrString", PTR, [PTR, PTR]), [obj, mod.cstring(part)])
        b.call(decref, [obj])
        obj = attr
    return obj


def exception_class(cg, exc_name: str):
    """``(PyObject*, owned)`` of the exception class ``exc_name``: a built-in name (CPython's global,
    borrowed) or ``module:qualname`` (imported: a new reference)."""
    module, _, qualname = exc_name.rpartition(":")
    if not module:
        return builtin_exception(cg.mod, cg.b, exc_name), False
    return lookup(cg.mod, cg.b, module, qualname), True


def set_exception(cg, exc_name: str, message: str | None, note: str, values=()) -> None:
    """Set the error ``exc_name(message)`` (no arguments for None) with the note ``note``; ``values``
    (i64) fill the ``%lld`` fields of ``message``."""
    b = cg.b
    cls, owned = exception_class(cg, exc_name)
    ok = cg.fn.append_basic_block("exc.made")
    done = cg.fn.append_basic_block("exc.set")
    if message is None:
        exc = b.call(_decl(cg.mod, "PyObject_CallNoArgs", PTR, [PTR]), [cls])
    elif values:  # "N" takes the string's reference (a NULL string: its error stays set)
        text = b.call(_decl(cg.mod, "PyUnicode_FromFormat", PTR, [PTR], var_arg=True),
                      [cg.mod.cstring(message), *values])
        exc = b.call(_decl(cg.mod, "PyObject_CallFunction", PTR, [PTR, PTR], var_arg=True),
                     [cls, cg.mod.cstring("N"), text])
    else:
        exc = b.call(_decl(cg.mod, "PyObject_CallFunction", PTR, [PTR, PTR], var_arg=True),
                     [cls, cg.mod.cstring("s"), cg.mod.cstring(message)])
    b.cbranch(b.icmp_unsigned("!=", exc, ir.Constant(PTR, None)), ok, done)  # NULL: its own error is set
    b.position_at_end(ok)
    added = b.call(_decl(cg.mod, "PyObject_CallMethod", PTR, [PTR, PTR, PTR], var_arg=True),
                   [exc, cg.mod.cstring("add_note"), cg.mod.cstring("s"), cg.mod.cstring(note)])
    decref = _decl(cg.mod, "Py_DecRef", ir.VoidType(), [PTR])
    b.call(decref, [added])
    b.call(_decl(cg.mod, "PyErr_SetObject", ir.VoidType(), [PTR, PTR]), [cls, exc])
    b.call(decref, [exc])
    b.branch(done)
    b.position_at_end(done)
    if owned:
        b.call(decref, [cls])


def _box(cg, v, t):
    """A new reference to a Python object holding ``v`` of the scalar type ``t``: float32 and complex64
    as NumPy's scalars (they print their shortest single-precision digits, as NumPy does)."""
    b = cg.b
    if t in (T.float32, T.complex64):
        wide = _box(cg, cg.cast(v, t, T.float64 if t == T.float32 else T.complex128), T.float64 if t == T.float32
                    else T.complex128)
        cls = lookup(cg.mod, b, "numpy", t.name)
        single = b.call(_decl(cg.mod, "PyObject_CallOneArg", PTR, [PTR, PTR]), [cls, wide])
        for obj in (wide, cls):
            b.call(_decl(cg.mod, "Py_DecRef", ir.VoidType(), [PTR]), [obj])
        return single
    if t == T.boolean:
        return b.call(_decl(cg.mod, "PyBool_FromLong", PTR, [I64]), [b.zext(v, I64)])
    if t.kind == "c":
        re, im = cg.complex_parts(v, t, T.float64)
        return b.call(_decl(cg.mod, "PyComplex_FromDoubles", PTR, [_F64, _F64]), [re, im])
    if t.kind == "f":
        return b.call(_decl(cg.mod, "PyFloat_FromDouble", PTR, [_F64]), [cg.cast(v, t, T.float64)])
    if t.kind == "u":
        return b.call(_decl(cg.mod, "PyLong_FromUnsignedLongLong", PTR, [I64]), [b.zext(v, I64)])
    return b.call(_decl(cg.mod, "PyLong_FromLongLong", PTR, [I64]), [b.sext(v, I64) if v.type.width < 64 else v])


def print_python(cg, items) -> None:
    """``print(*items)`` through CPython's ``builtins.print``; ``items`` are ``(value, type)`` with
    ``str`` constants as Python strings."""
    b = cg.b
    gil = b.call(_decl(cg.mod, "PyGILState_Ensure", _I32, []), [])
    tup = b.call(_decl(cg.mod, "PyTuple_New", PTR, [I64]), [ir.Constant(I64, len(items))])
    setitem = _decl(cg.mod, "PyTuple_SetItem", _I32, [PTR, I64, PTR])
    for k, (v, t) in enumerate(items):
        if isinstance(v, str):
            obj = b.call(_decl(cg.mod, "PyUnicode_FromString", PTR, [PTR]), [cg.mod.cstring(v)])
        else:
            obj = _box(cg, v, t)
        b.call(setitem, [tup, ir.Constant(I64, k), obj])
    builtins = b.call(_decl(cg.mod, "PyEval_GetBuiltins", PTR, []), [])
    fn = b.call(_decl(cg.mod, "PyDict_GetItemString", PTR, [PTR, PTR]), [builtins, cg.mod.cstring("print")])
    out = b.call(_decl(cg.mod, "PyObject_Call", PTR, [PTR, PTR, PTR]), [fn, tup, ir.Constant(PTR, None)])
    decref = _decl(cg.mod, "Py_DecRef", ir.VoidType(), [PTR])
    b.call(decref, [out])  # NULL-safe; a failed print (closed stdout) is not the computation's error
    b.call(decref, [tup])
    b.call(_decl(cg.mod, "PyErr_Clear", ir.VoidType(), []), [])
    b.call(_decl(cg.mod, "PyGILState_Release", ir.VoidType(), [_I32]), [gil])


def print_vprintf(cg, items) -> None:
    """``print(*items)`` as CUDA's ``vprintf``: one format string, the values in a local buffer."""
    b = cg.b
    parts, values = [], []
    for v, t in items:
        if isinstance(v, str):
            parts.append(v.replace("%", "%%"))
        elif t == T.boolean:
            parts.append("%s")
            zero = ir.Constant(_I32, 0)
            values.append(b.select(v, *(b.gep(cg.mod.cstring(w), [zero, zero], inbounds=True)
                                        for w in ("True", "False"))))
        elif t.kind == "c":
            parts.append("(%g%+gj)")
            values += list(cg.complex_parts(v, t, T.float64))
        elif t.kind == "f":
            parts.append("%g")
            values.append(cg.cast(v, t, T.float64))
        else:
            parts.append("%llu" if t.kind == "u" else "%lld")
            values.append(b.zext(v, I64) if t.kind == "u" else b.sext(v, I64) if v.type.width < 64 else v)
    fmt = cg.mod.cstring(" ".join(parts) + "\n")
    buf = ir.Constant(PTR, None)
    if values:
        st = ir.LiteralStructType([x.type for x in values])
        here = b.block
        b.position_at_start(cg.fn.entry_basic_block)
        slot = b.alloca(st, name="printf.args")
        b.position_at_end(here)
        packed = ir.Constant(st, ir.Undefined)
        for k, x in enumerate(values):
            packed = b.insert_value(packed, x, k)
        b.store(packed, slot)
        buf = slot
    b.call(_decl(cg.mod, "vprintf", _I32, [PTR, PTR]), [fmt, buf])
