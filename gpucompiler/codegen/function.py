"""Typed SSA IR of one specialization -> an LLVM function (llvmlite.ir).

Only blocks and edges the interpreter found reachable are emitted; values
the interpreter knows as constants are materialised instead of computed.
This class is also the ``cg`` object rules lower with: what they may use of it
(``b``, the builder; ``cast``, ``call_intrinsic``, ``check``...) is the protocol
:class:`~gpucompiler.interpreter.lowering.CodeGen`.

Errors stop execution: in a module with a status (``mod.status``) a failed
check sets the error and returns ``failed`` at once, and every call of a
compiled function tests the callee's flag and returns at once too. In a
module with an error slot (``mod.error_slot``: plain signatures plus a
leading slot pointer, for differentiated code) a failed check sets the
error, stores 1 into the slot and returns a zero result at once; every call
tests the slot after it. The error paths are marked cold (branch weights),
so the hot path pays one well-predicted branch per check.
"""

from __future__ import annotations

from llvmlite import ir

from .. import types as T
from ..errors import GPUCompilerError, PluginError, UnsupportedError
from ..interface import plugin_location
from ..frontend.ir import Branch, Inst, Jump, Return
from ..language.numpy import arraymem as mem
from ..language.numpy.arraymem import holds_managed
from ..interpreter.lattice import BOTTOM, Const, const, pyobj, widen
from .deferred import lower_deferred
from .folding import FoldingBuilder, is_true
from .lifetimes import Lifetimes, plan
from .lltypes import I64, PTR, STATUS, has_value, ll
from .options import ErrorPolicy
from .pyobjects import builtin_exception, print_python, print_vprintf, set_exception

_INT_SUFFIX: dict[T.Type, str] = {T.float32: "f32", T.float64: "f64"}
_LIKELY = [1 << 20, 1]  # branch weights: the first successor is taken, the second is cold
_I8 = ir.IntType(8)
RECURSION_LIMIT = 1000
"""Calls of compiled functions that may recurse, in flight at once (CPython's default limit)."""
_EMU_RAISE = "gpuc_emu_raise"
"""The CPU grid emulation's callback ``void(ptr exception name, ptr message)`` (runtime/grid.py)."""
_EMU_INDEX_ERROR = "gpuc_emu_index_error"
_EMU_VALUE_ERROR = "gpuc_emu_value_error"
"""The CPU grid emulation's callback ``void(i64 index, i64 axis, i64 size)`` (runtime/grid.py)."""


class FunctionCodegen:
    """Emits the body of ``frame`` into ``fn`` (an ``ir.Function`` of ``mod``)."""

    def __init__(self, mod, frame, fn: ir.Function):
        self.mod, self.frame, self.fn = mod, frame, fn
        self.target = mod.target
        self.values: dict = {}
        self.b = ir.IRBuilder()  # positioned per block by run()
        self._failed: ir.Block | None = None  # returns "failed" (modules with a status)
        self.slot = fn.args[0] if fn.name in mod.slotted else None
        """this function's error slot parameter (modules with an error slot)"""
        self._stopped: ir.Block | None = None  # sets the slot and returns (functions with a slot)
        self._local_slot: ir.AllocaInstr | None = None
        self.lives = Lifetimes()
        """where the values holding managed arrays give back their references"""
        self.inst = None
        """the instruction being lowered (its source location names a failed check)"""
        self.held: dict = {}
        """SSA value holding managed memory -> (its stack slot, its type): the slot holds the value while
        it owns its reference (null otherwise), so that a failed call gives back what it made"""

    # -- helpers for rules -------------------------------------------------
    def ll(self, t):
        return ll(t)

    def const(self, t, value):
        t = widen(t)
        if isinstance(t, T.TupleType):
            return ir.Constant(ll(t), [self.const(it, v) for it, v in zip(t.items, value) if has_value(it)])
        if isinstance(t, (T.ArrayType, T.StructArrayType)):
            return self.mod.frozen_array(t, value)
        if isinstance(t, T.Scalar) and t.kind == "c":
            part = T.float_of(t)
            return ir.Constant(ll(t), [self.const(part, value.real), self.const(part, value.imag)])
        if isinstance(t, T.SliceType):  # (start, stop, step), the parts given
            return ir.Constant(ll(t), [ir.Constant(I64, v) for v in value if v is not None])
        if isinstance(t, T.Scalar) and t.kind == "f":
            return ir.Constant(ll(t), float(value))
        if isinstance(t, T.Scalar) and t.kind == "u":
            return ir.Constant(ll(t), int(value) % (1 << t.bits))  # llvmlite wants the bit pattern
        return ir.Constant(ll(t), int(value))

    def cast(self, v, frm, to):
        """Numeric conversion: Python's between bool, int64 and float (float -> int truncates, NaN
        and overflow raise), NumPy's (C's) to and from the other integer types (wrapping)."""
        frm, to = widen(frm), widen(to)
        if frm == to:
            return v
        if not isinstance(to, T.Scalar):
            return mem.convert(self, v, frm, to)
        assert isinstance(frm, T.Scalar), f"numeric conversion from {frm}"
        b = self.b
        if to.kind == "c":
            return self.make_complex(*self.complex_parts(v, frm, T.float_of(to)))
        assert frm.kind != "c", f"complex {frm} cast to {to}"  # rules refuse it (NumPy would drop .imag)
        if frm.kind == "f" and to.kind == "f":
            return b.fpext(v, ll(to)) if to.bits > frm.bits else b.fptrunc(v, ll(to))
        if to.kind == "b":
            return self.truth(v, frm)
        if frm.kind == "f":
            return self._float_to_int(v, to)
        if to.kind == "f":
            return (b.sitofp if frm.kind == "i" else b.uitofp)(v, ll(to))
        if to.bits > frm.bits:
            return (b.sext if frm.kind == "i" else b.zext)(v, ll(to))
        return b.trunc(v, ll(to)) if to.bits < frm.bits else v

    def _float_to_int(self, v, to):
        """A float converted to the integer type ``to``: :meth:`float_to_int` to int64 (Python's
        errors), then wrapped to a narrower type; uint64 takes values from 2**63 on unsigned."""
        it = ll(to)
        assert isinstance(it, ir.IntType)
        if to in (T.int32, T.int64):
            return self.float_to_int(v, it)
        b, i64 = self.b, ir.IntType(64)
        if to == T.uint64:
            big = b.fcmp_ordered(">=", v, ir.Constant(v.type, float(2 ** 63)))
            low = self.float_to_int(b.select(big, ir.Constant(v.type, 0.0), v), i64)
            name = f"llvm.fptoui.sat.i64.{'f32' if v.type == ir.FloatType() else 'f64'}"
            high = b.call(self.mod.declare(name, i64, [v.type]), [v])
            return b.select(big, high, low)
        return b.trunc(self.float_to_int(v, i64), it)

    def complex_parts(self, v, t, part):
        """``(real, imag)`` of the number ``v`` of type ``t``, as floats of type ``part``."""
        t = widen(t)
        if t.kind == "c":
            re, im = self.b.extract_value(v, 0), self.b.extract_value(v, 1)
            src = T.float_of(t)
            return self.cast(re, src, part), self.cast(im, src, part)
        return self.cast(v, t, part), ir.Constant(ll(part), 0.0)

    def make_complex(self, re, im):
        """The complex value ``re + im*j`` of two floats of one type."""
        t = ir.LiteralStructType([re.type, re.type])
        return self.b.insert_value(self.b.insert_value(ir.Constant(t, ir.Undefined), re, 0), im, 1)

    def truth(self, v, t):
        t = widen(t)
        if t == T.boolean:
            return v
        if isinstance(t, T.Scalar) and t.kind == "c":
            re, im = self.complex_parts(v, t, T.float_of(t))
            return self.b.or_(self.truth(re, T.float_of(t)), self.truth(im, T.float_of(t)))
        if isinstance(t, T.Scalar) and t.kind == "f":
            return self.b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return self.b.icmp_signed("!=", v, ir.Constant(v.type, 0))

    def call_intrinsic(self, name, restype, args):
        """Call the overloaded LLVM intrinsic ``name`` (``llvm.sin``) at ``restype``."""
        suffix = _INT_SUFFIX[widen(restype)]
        return self.call_extern(f"{name}.{suffix}", restype, args)

    def call_result(self, res, args, argtypes, restype):
        """Lower a call the interpreter resolved to ``res`` (a rule's lowering or a specialization)."""
        if res.callee is not None:
            return self._invoke(res.callee, args, argtypes, restype)
        return res.lower(self, args, argtypes, restype)

    def call_extern(self, name, restype, args):
        """Call the external function ``name`` (declared by name)."""
        fn = self.mod.declare(name, ll(restype), [a.type for a in args])
        return self.b.call(fn, args)

    def print_values(self, items) -> None:
        """``print(*items)`` (``(value, type)`` pairs, ``str`` constants as themselves): CPython's own
        ``print`` on the host, ``vprintf`` on the GPU (pyobjects.py)."""
        if self.mod.error_slot and not self.target.is_gpu:
            raise UnsupportedError("print in a function that is differentiated",
                                   self.frame.where(self.inst) if self.inst is not None else None, self.frame.ir.name,
                                   "print the values outside the differentiated function (or return them)")
        (print_vprintf if self.target.is_gpu else print_python)(self, items)

    def check_statement(self, ok, exc_name, message, *values):
        """A ``raise`` or ``assert`` statement's check: :meth:`check` whose exception carries a note
        with the statement's ``file:line`` (``message`` None: no arguments). Rules check NumPy's
        preconditions with it too, so that the error names the user's line; ``values`` (i64) fill
        ``%lld`` fields of ``message`` (shown as ``?`` where no Python error is raised)."""
        if self.mod.python_errors:
            self._unless(ok, lambda: self._set_statement_error(exc_name, message, values))
            return
        shown = message.replace("%lld", "?") if message is not None else None
        if self.target.is_gpu:  # the thread prints the exception and traps (the launch fails)
            self._unless(ok, lambda: self._gpu_raise(exc_name, shown))
        else:
            self.check_required(ok, exc_name, shown or "")

    def _gpu_raise(self, exc_name, message):
        """On the GPU: ``vprintf`` the exception with the statement's ``file:line``, then trap."""
        print_vprintf(self, [(f"{exc_name}: {message or ''} (raised at {self._where()})", None)])
        self._trap()

    def check(self, ok, exc_name, message, *values):
        """When Python errors are on: raise ``exc_name(message)`` if not ``ok``.

        ``values`` (i64) fill ``%lld`` fields of ``message`` (``PyErr_Format``).
        With a status or an error slot the function returns at once; in a
        function with neither (a custom derivative rule's) execution goes on
        and the exception surfaces when the wrapper returns.
        """
        if not self.mod.python_errors:
            if self.mod.on_error == ErrorPolicy.EMULATION and self._stops():  # the emulation reports it
                self._unless(ok, lambda: self._emu_raise(exc_name, message.replace("%lld", "?")))
            return
        self._unless(ok, lambda: self._set_python_error(exc_name, message, values))

    def check_value(self, ok, message, *values):
        """A check on every target (a cold path): ``ValueError(message)`` if not ``ok``.

        With Python errors ``values`` (i64) fill ``%lld`` fields (``PyErr_Format``); the grid
        emulation raises the message with the ``file:line`` (fields shown as ``?``); elsewhere
        (the GPU, or code that cannot stop) a failed check traps.
        """
        how = self.mod.on_error
        stops = self.mod.status or self.slot is not None
        if how == ErrorPolicy.PYTHON and self.mod.python_errors and stops:
            self._unless(ok, lambda: self._set_python_error("ValueError", message, values))
        elif how == ErrorPolicy.EMULATION and stops:
            report = self.mod.declare(_EMU_VALUE_ERROR, ir.VoidType(), [PTR])
            text = self.mod.cstring(message.replace("%lld", "?") + f" at {self._where()}")
            self._unless(ok, lambda: self.b.call(report, [text]))
        else:
            self._unless(ok, self._trap)

    def check_required(self, ok, exc_name, message, *values):
        """:meth:`check` that stops execution on every target: where errors cannot be raised
        (the GPU, code without a status) a failed check traps instead of going on."""
        if self._stops() and (self.mod.python_errors or self.mod.on_error == ErrorPolicy.EMULATION):
            self.check(ok, exc_name, message, *values)
        else:
            self._unless(ok, self._trap)

    def check_math(self, ok, exc_name, message):
        """:meth:`check` of a math error (division by zero...): only under ``ErrorModel.PYTHON``."""
        if self.mod.math_errors:
            self.check(ok, exc_name, message)

    def check_cases(self, ok, decide, math: bool = False):
        """Like :meth:`check`, everything but ``ok`` on the cold path: there ``decide()``
        returns ``(fails, cases)``; when ``fails`` holds, the first of ``cases``
        (``(cond, exc_name, message)``) whose ``cond`` holds is raised (the last one's
        ``cond`` is ignored). ``math``: a math error, checked only under the Python
        error model. Not in code a plugin transforms (``error_slot``: differentiated
        functions), whose AD would have to go through the cold paths too."""
        if not self.mod.python_errors or self.mod.error_slot or (math and not self.mod.math_errors):
            return
        if self.mod.fold and is_true(ok):
            return
        cold, cont = self.fn.append_basic_block("check.cold"), self.fn.append_basic_block("ok")
        self.b.cbranch(ok, cont, cold).set_weights(_LIKELY)
        self.b.position_at_end(cold)
        fails, cases = decide()

        def report():
            done = self.fn.append_basic_block("raise.set")
            for k, (cond, exc_name, message) in enumerate(cases):
                if k < len(cases) - 1:
                    this, rest = self.fn.append_basic_block("raise.case"), self.fn.append_basic_block("raise.next")
                    self.b.cbranch(cond, this, rest)
                    self.b.position_at_end(this)
                self._set_python_error(exc_name, message, ())
                self.b.branch(done)
                if k < len(cases) - 1:
                    self.b.position_at_end(rest)
            self.b.position_at_end(done)
        self._unless(self.b.not_(fails), report)
        self.b.branch(cont)
        self.b.position_at_end(cont)

    def float_to_int(self, v, to: ir.IntType):
        """Python's ``int()`` of a float: NaN is a ValueError, an infinity or a value outside
        ``to`` an OverflowError (checked on a cold path); without Python errors (and in
        differentiated code) LLVM's saturating conversion (NaN gives 0), never ``fptosi`` poison."""
        lo = ir.Constant(v.type, -float(2 ** (to.width - 1)))
        hi = ir.Constant(v.type, float(2 ** (to.width - 1)))
        if not self.mod.python_errors or self.mod.error_slot:
            name = f"llvm.fptosi.sat.i{to.width}.{'f32' if v.type == ir.FloatType() else 'f64'}"
            return self.b.call(self.mod.declare(name, to, [v.type]), [v])
        b = self.b
        ok = b.and_(b.fcmp_ordered(">=", v, lo), b.fcmp_ordered("<", v, hi))
        inf = ir.Constant(v.type, float("inf"))
        self.check_cases(ok, lambda: (ir.Constant(ir.IntType(1), 1), [
            (b.fcmp_unordered("uno", v, v), "ValueError", "cannot convert float NaN to integer"),
            (b.and_(b.fcmp_ordered("!=", v, inf), b.fcmp_ordered("!=", v, b.fneg(inf))), "OverflowError",
             f"float too large to convert to int{to.width}"),
            (None, "OverflowError", "cannot convert float infinity to integer")]))
        return b.fptosi(v, to)

    def check_index(self, index, size, axis, original, unsigned=False):
        """With bounds checks on: ``index`` (wrapped) must lie in ``[0, size)``, NumPy's IndexError
        (``original`` shown as an unsigned number when ``unsigned``)."""
        if not self.mod.boundscheck:
            return
        ok = self.b.icmp_unsigned("<", index, size)
        how = self.mod.on_error
        stops = self.mod.status or self.slot is not None  # else only a trap keeps memory safe
        if how == ErrorPolicy.PYTHON and self.mod.python_errors and stops:
            message = f"index %{'llu' if unsigned else 'lld'} is out of bounds for axis {axis} with size %lld"
            self._unless(ok, lambda: self._set_python_error("IndexError", message, (original, size)))
        elif how == ErrorPolicy.EMULATION and stops:
            report = self.mod.declare(_EMU_INDEX_ERROR, ir.VoidType(), [I64, I64, I64, PTR])
            where = self.mod.cstring(self._where())
            self._unless(ok, lambda: self.b.call(report, [original, ir.Constant(I64, axis), size, where]))
        else:
            self._unless(ok, self._trap)

    def _where(self) -> str:
        """``file:line (in function)`` of the instruction being lowered."""
        loc = self.frame.where(self.inst) if self.inst is not None else (self.frame.ir.filename, self.frame.ir.line)
        return f"{loc[0]}:{loc[1]} (in {self.frame.ir.name})"

    def raise_now(self, exc_name, message, statement: bool = False):
        """Raise ``exc_name(message)`` here and end the block: an error that always happens.

        ``statement``: a ``raise`` or ``assert`` (the exception gets a note with the ``file:line``).
        Where Python errors cannot stop execution (kernels) the thread traps.
        """
        if self._stops() and (self.mod.python_errors or self.mod.on_error == ErrorPolicy.EMULATION):
            if self.mod.python_errors and statement:
                self._set_statement_error(exc_name, message)
            elif self.mod.python_errors:
                self._set_python_error(exc_name, message, ())
            else:
                self._emu_raise(exc_name, message or "")
            self.b.branch(self._fail_block() if self.mod.status else self._stop_block())
        elif statement and self.target.is_gpu:
            self._gpu_raise(exc_name, message)
        else:
            self._trap()

    def _trap(self):
        self.b.call(self.mod.declare("llvm.trap", ir.VoidType(), []), [])
        self.b.unreachable()

    def _set_python_error(self, exc_name, message, values):
        self._holding_gil(lambda: self._set_python_error_held(exc_name, message, values))

    def _set_statement_error(self, exc_name, message, values=()):
        """A ``raise``/``assert`` statement's exception, with a note naming its ``file:line``."""
        self._holding_gil(lambda: set_exception(self, exc_name, message, f"raised at {self._where()}", values))

    def _holding_gil(self, emit) -> None:
        """``emit()`` the code of a Python C-API use; code that may run without the GIL (``nogil``, the
        threads of a parallel loop) takes it around that code."""
        if not self.mod.gil_free:
            emit()
            return
        state = self.b.call(self.mod.declare("PyGILState_Ensure", ir.IntType(32), []), [])
        emit()
        self.b.call(self.mod.declare("PyGILState_Release", ir.VoidType(), [ir.IntType(32)]), [state])

    def _set_python_error_held(self, exc_name, message, values):
        exc = builtin_exception(self.mod, self.b, exc_name)
        if values:
            fmt = self.mod.module.globals.get("PyErr_Format")
            if fmt is None:
                fmt = ir.Function(self.mod.module, ir.FunctionType(PTR, [PTR, PTR], var_arg=True),
                                  name="PyErr_Format")
            self.b.call(fmt, [exc, self.mod.cstring(message), *values])
        else:
            setter = self.mod.declare("PyErr_SetString", ir.VoidType(), [PTR, PTR])
            self.b.call(setter, [exc, self.mod.cstring(message)])

    def builder(self, block: ir.Block) -> ir.IRBuilder:
        """A builder at the end of ``block``: folding constants when the module does (:mod:`.folding`)."""
        return FoldingBuilder(block) if self.mod.fold else ir.IRBuilder(block)

    def _unless(self, ok, report):
        """Run ``report()`` on the cold path where ``ok`` is false, then stop (or go on); nothing when the
        module folds and ``ok`` is the constant true."""
        if self.mod.fold and is_true(ok):
            return
        fail = self.fn.append_basic_block("raise")
        cont = self.fn.append_basic_block("ok")
        self.b.cbranch(ok, cont, fail).set_weights(_LIKELY)
        self.b.position_at_end(fail)
        report()
        block = self.b.block
        assert block is not None
        if not block.is_terminated:
            self.b.branch(self._fail_block() if self.mod.status
                          else self._stop_block() if self.slot is not None else cont)
        self.b.position_at_end(cont)

    def _stop_block(self) -> ir.Block:
        """The block storing 1 into this function's error slot and returning a zero result."""
        if self._stopped is None:
            self._stopped = self.fn.append_basic_block("stop")
            b = ir.IRBuilder(self._stopped)
            b.store(ir.Constant(_I8, 1), self.slot)
            rt = self.fn.function_type.return_type
            b.ret_void() if isinstance(rt, ir.VoidType) else b.ret(ir.Constant(rt, None))
        return self._stopped

    def call_slot(self):
        """The error slot to pass to a callee that takes one: this function's, else a local one cleared now."""
        if self.slot is not None:
            return self.slot
        if self._local_slot is None:
            here = self.b.block
            self.b.position_at_start(self.fn.entry_basic_block)
            self._local_slot = self.b.alloca(_I8, name="error.slot")
            self.b.position_at_end(here)
        self.b.store(ir.Constant(_I8, 0), self._local_slot)
        return self._local_slot

    def stop_if_failed(self, slot) -> None:
        """After a call given ``slot`` (from :meth:`call_slot`): return at once if the callee failed.

        With a status the function returns ``failed`` (the error is set); with
        a slot it returns through it; otherwise execution goes on.
        """
        if not (self.mod.status or self.slot is not None):
            return
        failed = self.b.icmp_unsigned("!=", self.b.load(slot, typ=_I8), ir.Constant(_I8, 0))
        stop = self._fail_block() if self.mod.status else self._stop_block()
        cont = self.fn.append_basic_block("ok")
        self.b.cbranch(failed, stop, cont).set_weights(list(reversed(_LIKELY)))
        self.b.position_at_end(cont)

    def _fail_block(self) -> ir.Block:
        """The block returning ``failed`` (an error is set), made on first use."""
        if self._failed is None:
            self._failed = self.fn.append_basic_block("failed")
            b = ir.IRBuilder(self._failed)
            rt = self.fn.function_type.return_type
            if isinstance(rt, ir.LiteralStructType):
                b.ret(ir.Constant(rt, [ir.Constant(rt.elements[0], ir.Undefined), ir.Constant(STATUS, 1)]))
            else:
                b.ret(ir.Constant(STATUS, 1))
        return self._failed

    def _propagate(self, out, has_result):
        """After a call of a function with a status: return at once if it failed; its value."""
        failed = self.b.extract_value(out, 1) if has_result else out
        cont = self.fn.append_basic_block("ok")
        self.b.cbranch(failed, self._fail_block(), cont).set_weights(list(reversed(_LIKELY)))
        self.b.position_at_end(cont)
        return self.b.extract_value(out, 0) if has_result else None

    def load_scalar(self, ptr, t):
        if t == T.boolean:
            return self.b.trunc(self.b.load(ptr, typ=ir.IntType(8)), ir.IntType(1))
        return self.b.load(ptr, typ=ll(t))

    def store_scalar(self, v, ptr, t):
        self.b.store(self.b.zext(v, ir.IntType(8)) if t == T.boolean else v, ptr)

    # -- emission ----------------------------------------------------------
    def value(self, v):
        """The LLVM value of SSA value ``v`` (None for values without one)."""
        t = self._abstract(v)
        if isinstance(t, Const) and t.type != pyobj and has_value(t.type):
            return self.const(t.type, t.value)
        return self.values.get(v)

    def emit(self) -> None:
        frame = self.frame
        live = [bl for bl in frame.ir.blocks if frame.executable(bl)]
        blocks = {bl: self.fn.append_basic_block(f"bb{bl.id}") for bl in live}
        params = iter(self.fn.args[1:] if self.slot is not None else self.fn.args)
        for arg, t in zip(frame.ir.args, frame.argtypes):
            if has_value(widen(t)) and widen(t) != pyobj:
                self.values[arg] = next(params)
        self.lives = plan(frame)
        for bl in live:
            self.b = self.builder(blocks[bl])
            for phi in bl.phis:
                t = widen(frame.types.get(phi, BOTTOM))
                if t is not BOTTOM and has_value(t):
                    self.values[phi] = self.b.phi(ll(t), name=phi.var.replace("$", "t"))
        pending = []
        for bl in live:
            self.b = self.builder(blocks[bl])
            self.b.position_at_end(blocks[bl])
            if bl is frame.ir.entry:
                for arg in self.lives.params:  # the caller keeps its own reference
                    mem.incref(self, self.values[arg], frame.typeof(arg))
                    self._hold(arg, frame.typeof(arg))
            for phi in bl.phis:
                if phi in self.values and holds_managed(frame.types.get(phi, BOTTOM)):
                    self._hold(phi, frame.types[phi])
            for v in self.lives.at_start.get(bl, ()):
                self._release(v)
            for inst in bl.insts:
                if inst in frame.raising:
                    self.inst = inst
                    self.raise_now(*frame.raising[inst])
                    break
                self._inst(inst)
            else:
                if bl.term in frame.raising:
                    self.raise_now(*frame.raising[bl.term])
                else:
                    pending += self._terminator(bl, blocks)
        for phi, v, block in pending:
            phi.add_incoming(v, block)
        self._release_on_failure()

    def _inst(self, inst):
        self.inst = inst
        t = self.frame.types.get(inst, BOTTOM)
        res = self.frame.calls.get(inst)
        if res is None or (isinstance(t, Const) and res.callee is None):
            for dead in self.lives.after.get(inst, ()):
                self._release(dead)
            return
        block = self.b.block
        mark = (block, len(block.instructions), len(self.fn.blocks)) \
            if self.mod.source_lines and inst.loc and block is not None else None
        args = [self.value(a) for a in inst.args]
        argtypes = [self._abstract(a) for a in inst.args]
        if res.method:  # a method value called: call_method(receiver, name, *args)
            method = widen(self._abstract(inst.fn))
            args, argtypes = [self.value(inst.fn), None, *args], [method.receiver, const(method.name), *argtypes]
        if res.callee is not None:  # a compiled function's result: its reference moves here
            self.values[inst] = self._invoke(res.callee, args, argtypes, t)
        elif res.deferred is not None:
            self.values[inst] = lower_deferred(self, res.deferred, args, argtypes)
        else:
            self.values[inst] = self._lower_rule(res, inst, args, argtypes, t)
        if self.values[inst] is not None and holds_managed(t) and inst not in self.lives.borrowed:
            if res.callee is None:  # a rule's or a nested job's result: a reference of its own
                mem.incref(self, self.values[inst], t)
            self._hold(inst, t)
        for dead in self.lives.after.get(inst, ()):
            self._release(dead)
        if mark is not None:
            self._locate(inst.loc, *mark)

    def _locate(self, loc, block, first, nblocks):
        """Attach ``!gpuc.loc !{file, line}`` to the instructions just emitted for a Python
        instruction (``source_lines``: a plugin's errors can name the Python line)."""
        node = self.mod.location_node(loc[0], loc[1])
        blocks = [block, *self.fn.blocks[nblocks:]]
        for k, bl in enumerate(blocks):
            for ins in bl.instructions[first if k == 0 else 0:]:
                if "gpuc.loc" not in ins.metadata:
                    ins.set_metadata("gpuc.loc", node)

    def alloca(self, t: ir.Type, name: str = "", size=None) -> ir.AllocaInstr:
        """A stack slot of ``size`` (default one) values of type ``t``, made in the entry block (once
        per function, not per iteration)."""
        here = self.b.block
        self.b.position_at_start(self.fn.entry_basic_block)
        slot = self.b.alloca(t, size=size, name=name)
        if here is not None:
            self.b.position_at_end(here)
        return slot

    def invoke(self, callee, args, argtypes, t):
        """Call the specialization ``callee`` (a frame) with LLVM ``args`` of abstract ``argtypes``,
        converting them to its parameter types; errors propagate as for any compiled call."""
        return self._invoke(callee, args, argtypes, t)

    def _lower_rule(self, res, inst, args, argtypes, t):
        """A rule's lowering of ``inst``; one of a plugin's rule sets that fails (other than with a typed
        compiler error) is a PluginError naming the plugin, its line and the user's call."""
        try:
            return res.lower(self, args, argtypes, t)
        except GPUCompilerError:
            raise
        except Exception as exc:
            rs = next((r for r in self.mod.interp.plugin_sets if r.name == res.rule_set), None)
            if rs is None:
                raise
            name = getattr(res.lower, "__qualname__", repr(res.lower))
            raise PluginError(rs.plugin, "lowering", name, exc, self.frame.where(inst), self.frame.ir.name,
                              plugin_location(exc, res.lower)) from exc

    def _invoke(self, callee, args, argtypes, t):
        """Call the specialization ``callee``, filling parameters left to their defaults."""
        missing = callee.pyfunc.__code__.co_argcount - len(args)
        if missing:
            defaults = [const(d) for d in callee.pyfunc.__defaults__[-missing:]]
            args = args + [self.const(d.type, d.value) if has_value(d.type) else None for d in defaults]
            argtypes = argtypes + defaults
        vals = [self.cast(v, widen(at), widen(pt))
                for v, at, pt in zip(args, argtypes, callee.argtypes)
                if has_value(widen(pt)) and widen(pt) != pyobj]
        fn = self.mod.function_for(callee)
        slot = self.call_slot() if fn.name in self.mod.slotted else None
        depth = self._enter_recursion() if self.mod.calls_back(self.frame, callee) else None
        out = self.b.call(fn, [slot, *vals] if slot is not None else vals)
        if depth is not None:
            self.b.store(depth, self.mod.recursion_depth())
        if self.mod.status:
            out = self._propagate(out, has_value(widen(callee.rettype)))
        elif slot is not None:
            self.stop_if_failed(slot)
        return out if has_value(widen(t)) else None

    def _enter_recursion(self):
        """Before a call that may recurse: RecursionError at CPython's default limit, else count
        the call; returns the depth to store back after it (errors included)."""
        counter = self.mod.recursion_depth()
        depth = self.b.load(counter, typ=I64)
        if self.mod.python_errors:
            self.check(self.b.icmp_signed("<", depth, ir.Constant(I64, RECURSION_LIMIT)), "RecursionError",
                       "maximum recursion depth exceeded")
        self.b.store(self.b.add(depth, ir.Constant(I64, 1)), counter)
        return depth

    def _stops(self) -> bool:
        return bool(self.mod.status or self.slot is not None)

    def _emu_raise(self, exc_name, message):
        """Report ``exc_name(message)`` to the CPU grid emulation (raised when the launch ends)."""
        report = self.mod.declare(_EMU_RAISE, ir.VoidType(), [PTR, PTR])
        self.b.call(report, [self.mod.cstring(exc_name), self.mod.cstring(f"{message} at {self._where()}")])

    def _abstract(self, v):
        return self.frame.typeof(v)

    def _terminator(self, bl, blocks):
        term, frame = bl.term, self.frame
        if isinstance(term, Return):
            rt = widen(frame.rettype)
            v = None
            if has_value(rt):
                v = self.value(term.value)
                v = (self.cast(v, widen(frame.typeof(term.value)), rt)
                     if v is not None else ir.Constant(ll(rt), ir.Undefined))
            for dead in self.lives.after.get(term, ()):
                self._release(dead)
            if self.mod.status:
                ok = ir.Constant(STATUS, 0)
                if v is None:
                    self.b.ret(ok)
                else:
                    st = self.fn.function_type.return_type
                    self.b.ret(self.b.insert_value(self.b.insert_value(ir.Constant(st, ir.Undefined), v, 0),
                                                   ok, 1))
            elif v is None:
                self.b.ret_void()
            else:
                self.b.ret(v)
            return []
        succs = [s for s in ((term.target,) if isinstance(term, Jump) else (term.then, term.orelse))
                 if (bl, s) in frame.edges]
        succs = list(dict.fromkeys(succs))
        if not succs:
            self.b.unreachable()
            return []
        if len(succs) == 1:
            pending = self._edge(bl, succs[0])
            self.b.branch(blocks[succs[0]])
            return pending
        here, pending, targets = self.b.block, [], {}
        for s in succs:  # an edge giving back references gets a block of its own
            if not self._edge_work(bl, s):
                pending += self._edge(bl, s)
                targets[s] = blocks[s]
        for s in succs:
            if s not in targets:
                targets[s] = self.fn.append_basic_block(f"edge{bl.id}.{s.id}")
                self.b.position_at_end(targets[s])
                pending += self._edge(bl, s)
                self.b.branch(blocks[s])
        self.b.position_at_end(here)
        assert isinstance(term, Branch), "two successors come from a branch"
        self.b.cbranch(self.value(term.cond), targets[succs[0]], targets[succs[1]])
        return pending

    def _edge_work(self, bl, s) -> bool:
        return (bl, s) in self.lives.on_edge or any(holds_managed(self.frame.types.get(p, BOTTOM))
                                                    for p in s.phis if p in self.values)

    def _edge(self, bl, s) -> list:
        """The phi inputs of edge ``bl -> s`` (each phi takes a reference), then the references the
        edge gives back; returns ``(phi, value, block)`` to add once every block exists."""
        frame, pending = self.frame, []
        for phi in s.phis:
            llphi = self.values.get(phi)
            if llphi is None:
                continue
            inc = phi.incoming[bl]
            v = self.value(inc)
            pt = widen(frame.types[phi])
            v = self.cast(v, widen(frame.typeof(inc)), pt) if v is not None else ir.Constant(llphi.type, ir.Undefined)
            if holds_managed(pt) and self.value(inc) is not None:
                mem.incref(self, v, pt)
            pending.append((llphi, v))
        for v in self.lives.on_edge.get((bl, s), ()):
            self._release(v)
        return [(llphi, v, self.b.block) for llphi, v in pending]

    def _release(self, v) -> None:
        """Give back the reference SSA value ``v`` holds."""
        llv = self.values.get(v)
        if llv is not None and v not in self.lives.borrowed:
            mem.decref(self, llv, self.frame.typeof(v) if not isinstance(v, Inst) else self.frame.types[v])
            if v in self.held:
                slot, t = self.held[v]
                self.b.store(ir.Constant(ll(t), None), slot)

    def _hold(self, v, t) -> None:
        """Note in ``v``'s slot that it owns its reference now (functions with a status only: their
        failure path gives the references back)."""
        if not self.mod.status:
            return
        t = widen(t)
        if v not in self.held:
            slot = self.alloca(ll(t), name="held")
            here = self.b.block
            self.b.position_after(slot)
            self.b.store(ir.Constant(ll(t), None), slot)
            if here is not None:
                self.b.position_at_end(here)
            self.held[v] = (slot, t)
        self.b.store(self.values[v], self.held[v][0])

    def _release_on_failure(self) -> None:
        """On the failure path: give back the references of the values that hold one there."""
        if self._failed is None or not self.held:
            return
        ret = self._failed.instructions.pop()  # the ``ret``, put back after the releases
        self._failed.terminator = None
        self.b.position_at_end(self._failed)
        for slot, t in self.held.values():
            mem.decref(self, self.b.load(slot, typ=ll(t)), t)
        end = self.b.block
        assert end is not None
        end.instructions.append(ret)
        ret.parent, end.terminator = end, ret


__all__ = ["FunctionCodegen"]
