"""A module of specializations: the entry function and every callee, by stable names.

Names, declaration order and string constants depend only on the job, so the
same job prints byte-identical IR in every process.
"""

from __future__ import annotations

import hashlib
import weakref
from typing import Any

from llvmlite import ir

from ..errors import ErrorModel
from ..interpreter.lattice import pyobj, widen
from .function import FunctionCodegen
from .lltypes import I64, PTR, has_value, ll, status_type
from .options import ErrorPolicy

_FLOAT_OPS = frozenset({"fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "fcmp"})
#: Python functions whose specializations are ``alwaysinline`` (``@jit(inline="always")``)
ALWAYS_INLINE: weakref.WeakSet = weakref.WeakSet()


def add_fast_math_flags(module: ir.Module) -> None:
    """``fast`` on every floating-point instruction and math intrinsic call (Numba's ``fastmath=True``:
    LLVM may reassociate, contract and assume no NaN or infinity)."""
    for fn in module.functions:
        for block in fn.blocks:
            for inst in block.instructions:
                if inst.opname in _FLOAT_OPS and "fast" not in inst.flags:
                    inst.flags.append("fast")
                elif (isinstance(inst, ir.CallInstr) and isinstance(inst.callee, ir.Function)
                      and inst.callee.name.startswith("llvm.") and inst.type in (ir.FloatType(), ir.DoubleType())
                      and "fast" not in inst.fastmath):
                    inst.fastmath.add("fast")


def spec_name(frame) -> str:
    """A readable, stable LLVM name of a specialization: ``mod.qualname(types)``."""
    fn = frame.pyfunc
    sig = ", ".join(repr(t) for t in frame.argtypes)
    return f"{fn.__module__}.{fn.__qualname__}({sig})"


def release(module: ir.Module) -> None:
    """Clear the attributes of ``module``'s globals, their blocks, instructions and arguments, and of the module:
    they refer to each other (an instruction and its block, a block and its function, a function and the
    module), so a module let go would wait for the cyclic collector, whose pass at the end of a compile cost
    several times more. Types and constants, which modules share, are left as they are."""
    for value in module.globals.values():
        for block in getattr(value, "blocks", ()):
            for inst in block.instructions:
                vars(inst).clear()
            vars(block).clear()
        for arg in getattr(value, "args", ()):
            vars(arg).clear()
        vars(value).clear()
    vars(module).clear()


class ModuleCodegen:
    """Builds one ``ir.Module`` from inferred frames (``cg.mod`` of a rule's lowering: what rules may use of it
    is the protocol :class:`~gpucompiler.interpreter.lowering.ModuleGen`)."""

    def __init__(self, name: str, interp, triple: str = "", data_layout: str = "", *,
                 status: bool = False, boundscheck: bool = False, on_error: ErrorPolicy = ErrorPolicy.PYTHON,
                 error_slot: bool = False, source_lines: bool = False,
                 error_model: ErrorModel = ErrorModel.PYTHON, parallel_threads: int = 0, nogil: bool = False,
                 fastmath: bool = False, fold: bool = False):
        """``status``: every function also returns a failure flag (see :func:`status_type`);
        ``boundscheck``: array indices are checked; ``on_error`` says how a failed
        index check reports (:class:`ErrorPolicy`): an ``IndexError`` is set, ``llvm.trap``,
        or the CPU grid emulation's callback.
        ``error_slot`` (instead of a status, for code a plugin transforms and
        that must keep plain signatures, such as a differentiated function):
        every function takes a leading ``ptr`` to an ``i8`` slot; a failed check
        reports, stores 1 there and returns at once (a zero result), and every
        call of a compiled function tests the slot after it (see
        :meth:`FunctionCodegen.call_slot`). ``source_lines``: instructions carry
        ``!gpuc.loc !{!"file", i32 line}``, their Python line (for a plugin's errors). ``error_model``: whether math errors
        raise (``PYTHON``, with Python errors) or give IEEE results (``NUMPY``). ``fold``: comparisons,
        conversions and selects of constants are folded, and checks that cannot fail left out
        (:mod:`.folding`: for code compiled at ``opt_level=0``, which LLVM folds nothing of)."""
        self.module = ir.Module(name=name)
        if triple:
            self.module.triple = triple
        if data_layout:
            self.module.data_layout = data_layout
        self.interp = interp
        self.target = interp.target
        self.python_errors = interp.python_errors
        self.error_slot = error_slot and not status
        self.source_lines = source_lines
        self.math_errors = self.python_errors and error_model is ErrorModel.PYTHON
        self.status, self.boundscheck, self.on_error = status, boundscheck, on_error
        self.parallel_threads, self.nogil, self.fastmath = parallel_threads, nogil, fastmath
        self.fold = fold
        self.gil_free = self.python_errors and (nogil or parallel_threads > 1)
        self.slotted: set[str] = set()
        """names of the functions taking the error slot (all but those asked ``plain``)"""
        self.functions: dict[Any, ir.Function] = {}  # frame -> its function
        self.queue: list = []
        self.strings: dict[str, ir.GlobalVariable] = {}
        self._locations: dict[tuple[str, int], ir.MDValue] = {}
        self._reaches: dict = {}

    def location_node(self, filename: str, line: int) -> ir.MDValue:
        """The ``!{!"file", i32 line}`` node of a Python source line (one per line)."""
        node = self._locations.get((filename, line))
        if node is None:
            node = self._locations[(filename, line)] = self.module.add_metadata(
                [ir.MetaDataString(self.module, filename), ir.Constant(ir.IntType(32), line)])
        return node

    def calls_back(self, caller, callee) -> bool:
        """Whether calling ``callee`` from ``caller`` may recurse (``caller`` is reachable from it)."""
        return caller in self._reachable(callee)

    def _reachable(self, frame) -> set:
        seen = self._reaches.get(frame)
        if seen is None:
            seen, stack = set(), [frame]
            while stack:
                for res in stack.pop().calls.values():
                    if res.callee is not None and res.callee not in seen:
                        seen.add(res.callee)
                        stack.append(res.callee)
            self._reaches[frame] = seen
        return seen

    def recursion_depth(self) -> ir.GlobalVariable:
        """This module's count of recursive calls in flight (``@jit`` code holds the GIL)."""
        g = self.module.globals.get("gpuc.recursion_depth")
        if g is None:
            g = ir.GlobalVariable(self.module, ir.IntType(64), name="gpuc.recursion_depth")
            g.linkage, g.initializer = "internal", ir.Constant(ir.IntType(64), 0)  # pyright: ignore[reportAttributeAccessIssue]
        return g

    def signature(self, frame, slot: bool = False) -> ir.FunctionType:
        params = [PTR] if slot else []
        params += [ll(t) for t in frame.argtypes if has_value(t) and widen(t) != pyobj]
        rt = widen(frame.rettype)
        if self.status:
            return ir.FunctionType(status_type(rt), params)
        return ir.FunctionType(ll(rt) if has_value(rt) else ir.VoidType(), params)

    def function_for(self, frame, name: str | None = None, *, plain: bool = False) -> ir.Function:
        """The LLVM function of ``frame``, declared now and emitted by :meth:`emit`.

        ``plain``: without the error slot even when the module has one (a
        function whose signature a convention fixes, such as a custom
        derivative rule's); the first request decides.
        """
        fn = self.functions.get(frame)
        if fn is None:
            internal = not (name or frame.name)
            name = name or frame.name or self.module.get_unique_name(spec_name(frame))  # two lambdas: two names
            slot = self.error_slot and not plain
            fn = ir.Function(self.module, self.signature(frame, slot), name=name)
            if slot:
                self.slotted.add(fn.name)
            self.functions[frame] = fn
            self.queue.append((frame, fn))
            if internal:
                fn.linkage = "internal"
            policy = self._inline(frame)
            if policy is not None:
                fn.attributes.add("alwaysinline" if policy else "noinline")
        return fn

    def _inline(self, frame):
        if frame.pyfunc in ALWAYS_INLINE:
            return True
        for rs in (*self.interp.plugin_sets, *self.interp.base_sets):
            if rs.inline_policy is not None:
                decision = rs.inline_policy(self.interp, frame)
                if decision is not None:
                    return decision
        return None

    def text(self) -> str:
        """The module's LLVM IR, for a caller done with the module: its llvmlite objects are let go (see
        :func:`release`), so :attr:`module` is unusable afterwards."""
        text = str(self.module)
        release(self.module)
        return text

    def emit(self, entry_frame, entry_name: str) -> ir.Function:
        entry = self.function_for(entry_frame, entry_name)
        while self.queue:
            frame, fn = self.queue.pop(0)
            FunctionCodegen(self, frame, fn).emit()
        if self.fastmath:
            add_fast_math_flags(self.module)
        return entry

    def declare(self, name: str, restype: ir.Type, argtypes) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(restype, list(argtypes)), name=name)
        return fn

    def extern_global(self, name: str) -> ir.GlobalVariable:
        g = self.module.globals.get(name)
        if g is None:
            g = ir.GlobalVariable(self.module, ir.PointerType(), name=name)
            g.linkage = "external"
        return g

    def frozen_array(self, t, value) -> ir.Constant:
        """The array value of the NumPy array ``value`` (type ``t``) frozen into this module: its
        elements in a private constant named after their digest, C strides."""
        data = value.tobytes(order="C")
        name = "gpuc.frozen." + hashlib.sha256(data + repr((value.dtype.str, value.shape)).encode()).hexdigest()[:24]
        g = self.module.globals.get(name)
        if g is None:
            ty = ir.ArrayType(ir.IntType(8), len(data))
            g = ir.GlobalVariable(self.module, ty, name=name)
            g.global_constant, g.linkage = True, "private"
            g.align = 16  # pyright: ignore[reportAttributeAccessIssue]  (llvmlite's untyped member)
            g.initializer = ir.Constant(ty, bytearray(data))  # pyright: ignore[reportAttributeAccessIssue]
        strides, acc = [], t.dtype.itemsize
        for extent in reversed(value.shape):
            strides.insert(0, acc)
            acc *= extent
        dims = [ir.Constant(ir.ArrayType(I64, t.ndim), [ir.Constant(I64, v) for v in vs]) for vs in (value.shape, strides)]
        return ir.Constant(ll(t), [g, *dims])

    def cstring(self, text: str) -> ir.GlobalVariable:
        g = self.strings.get(text)
        if g is None:
            data = bytearray(text.encode() + b"\0")
            ty = ir.ArrayType(ir.IntType(8), len(data))
            g = ir.GlobalVariable(self.module, ty, name=f".str.{len(self.strings)}")
            g.global_constant, g.linkage = True, "private"
            g.initializer = ir.Constant(ty, data)  # pyright: ignore[reportAttributeAccessIssue]
            self.strings[text] = g
        return g
