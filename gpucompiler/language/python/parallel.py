"""``parallel_region``: an outlined ``prange`` loop (or a ``parallel_reduce``) run on threads.

Inference calls the body ``(lo, hi, start, step, args...)`` and the combine
``(a, b)`` like any compiled function. Lowering runs the body once over the
whole range (``lo, hi = 0, n``) unless the module asks for threads
(``mod.parallel_threads > 1``: ``@jit(parallel=True)``); then the range is cut
into at most that many chunks of near-equal size, one record each (bounds,
arguments, result, error), and the process's worker pool runs them: the
generated code calls the function in the slot :data:`POOL_SYMBOL` as
``run(chunk, records, stride, count)``, which returns once every chunk has
run (chunk 0 on the calling thread; :mod:`gpucompiler.runtime.threadpool`).
While the slot is empty (no pool in this process) the chunks run one after
another on the calling thread. The partials are combined in chunk order,
so the result does not depend on which thread finishes first.

The GIL: the calling thread releases it for the region when it holds it
(``PyGILState_Check``), so the threads run at once. Each chunk runs through
a trampoline on a thread attached to the interpreter (a pool worker attaches
once, at its start; the trampoline attaches a thread that is not, such as a
caller that is no Python thread, for the chunk): the body runs without
the GIL, a check that fails in it takes the GIL only to set its exception
(the module's ``gil_free`` errors), and the trampoline moves that exception
into the chunk's record (``PyErr_Fetch``). After the region the first
failed chunk's exception (in chunk order) is raised in the caller; the
others are dropped.
"""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
from llvmlite import ir

from ... import types as T
from ...errors import TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, pyobj, widen
from ...interpreter.rules import Any_, CallResult, Int
from .numbers import base

_I8, _I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
_EXC = 3  # PyErr_Fetch's type, value, traceback

_RUN_TYPE = ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64])
POOL_SYMBOL = "gpuc_parallel_pool"
"""the name compiled code finds the pool's slot by: a pointer to the function that runs a region's chunks
(``void(ptr chunk, ptr records, i64 stride, i64 count)``, :mod:`gpucompiler.runtime.threadpool`), or
null (the chunks run serially)"""


def pool_slot() -> int:
    """The address of the slot named :data:`POOL_SYMBOL`, registered with ``llvmlite.binding.add_symbol``
    by the first module that asks (this one or the runtime's pool, which loads without the language)."""
    address = llvm.address_of_symbol(POOL_SYMBOL)
    if address is None:
        _SLOTS.append((ctypes.c_void_p * 1)())
        address = ctypes.addressof(_SLOTS[-1])
        llvm.add_symbol(POOL_SYMBOL, address)
    return address


_SLOTS: list = []  # the slot this module made, kept alive
pool_slot()


def region_call(interp, body, combine, start, step, rest):
    """Infer a parallel region running ``body(lo, hi, start, step, *rest)`` on chunks, its partial
    results joined by ``combine(a, b)`` (None: no result). Returns ``(result type, lower)`` with
    ``lower(cg, values, types, restype)`` taking ``n, start, step, *rest`` (LLVM values, abstract types)."""
    frame = interp.infer(body, [T.int64, T.int64, start, step, *rest])
    rt = frame.rettype
    cframe = None
    if combine is not None and _has_value(rt):
        cframe = interp.infer(combine, [widen(rt), widen(rt)])
        if not _bottom(cframe.rettype) and widen(cframe.rettype) != widen(rt):
            raise TypeInferenceError(
                f"the partial results of a parallel loop have type {widen(rt)!r} but combining two gives "
                f"{widen(cframe.rettype)!r}", (widen(rt), widen(cframe.rettype)),
                hint="start each reduction variable with a value of its final type (0.0 for a float sum)")

    def lower(cg, values, types, restype):
        return _lower(cg, frame, cframe, values, types, restype)

    # never a constant: codegen skips calls of constant result, and the region must run
    return (rt if _bottom(rt) else widen(rt)), lower


@base.handler
def _parallel_region(interp, fn, args):
    if fn is not K.parallel_region:
        return None
    shared = [widen(a) for a in args[5:] if _container(widen(a))]
    if shared:
        raise TypeInferenceError(f"a {shared[0]!r} made before a prange loop is used inside it: its threads would "
                                 "share it (appends and item assignments would race)", tuple(shared),
                                 hint="convert it before the loop (np.array(items)), write results into an array "
                                 "indexed by the loop variable, or make the list inside the loop body")
    rt, lower = region_call(interp, args[0].value, args[1].value, args[3], args[4], args[5:])
    return CallResult(rt, lambda cg, values, types, restype: lower(cg, values[2:], types[2:], restype))


def _container(t) -> bool:
    """Whether ``t`` is (or holds) a list or dict compiled code made (one block every holder shares)."""
    if isinstance(t, T.TupleType):
        return any(_container(widen(i)) for i in t.items)
    return isinstance(t, (T.ListType, T.DictType, T.DictView))


def _bottom(t) -> bool:
    return not isinstance(widen(t), T.Type)


@base.define(K.prange_count, Int, Int, Int, restype=T.int64)
def _prange_count(cg, args, argtypes, rt):
    """``len(range(start, stop, step))``: ``max(0, ceil((stop - start) / step))`` (a zero step
    raises ValueError, as ``range`` does)."""
    b = cg.b
    start, stop, step = (cg.cast(v, widen(t), T.int64) for v, t in zip(args, argtypes))
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
    cg.check(b.icmp_signed("!=", step, zero), "ValueError", "range() arg 3 must not be zero")
    up = b.icmp_signed(">", step, zero)
    span = b.select(up, b.sub(stop, start), b.sub(start, stop))
    mag = b.select(up, step, b.neg(step))
    safe = b.select(b.icmp_signed("==", mag, zero), one, mag)
    count = b.sdiv(b.add(span, b.sub(safe, one)), safe)
    return b.select(b.icmp_signed(">", span, zero), count, zero)


def _identity_rule(value):
    def restype(x):
        t = widen(x)
        if not isinstance(t, T.Scalar) or t == T.boolean:
            return None
        return Const({"f": float, "c": complex}.get(t.kind, int)(value), t)

    def lower(cg, args, argtypes, rt):
        return cg.const(rt, value)

    return restype, lower


for _fn, _v in ((K.zero_of, 0), (K.one_of, 1)):
    _rt, _lo = _identity_rule(_v)
    base.define(_fn, Any_, restype=_rt)(_lo)


# -- lowering --------------------------------------------------------------------------------------


def _lower(cg, frame, cframe, values, argtypes, rt):
    """``values``: ``n, start, step, args...`` (LLVM values) of the region call."""
    zero = ir.Constant(I64, 0)
    n = cg.cast(values[0], widen(argtypes[0]), T.int64)
    threads = getattr(cg.mod, "parallel_threads", 0)
    if threads <= 1 or not cg.mod.status or not cg.mod.python_errors:
        return cg.invoke(frame, [zero, n, *values[1:]], [T.int64, T.int64, *argtypes[1:]], rt)
    return _Threads(cg, frame, cframe, threads).emit(n, values[1:], argtypes[1:], rt)


class _Threads:
    """The threaded lowering of one region (see the module docstring)."""

    def __init__(self, cg, frame, cframe, threads: int):
        self.cg, self.frame, self.cframe, self.threads = cg, frame, cframe, threads
        self.b = cg.b
        self.body = cg.mod.function_for(frame)

    def _decl(self, name, ret, params):
        return self.cg.mod.declare(name, ret, params)

    def emit(self, n, values, argtypes, rt):
        cg, b, frame = self.cg, self.b, self.frame
        # the body's parameters after lo and hi, converted as a call converts them
        args = [cg.cast(v, widen(at), widen(pt)) for v, at, pt in zip(values, argtypes, frame.argtypes[2:])
                if _has_value(pt)]
        has_ret = _has_value(rt)
        ret_ty = cg.ll(widen(rt)) if has_ret else None
        fields = [I64, I64, *(a.type for a in args), *([ret_ty] if ret_ty else []), _I8, PTR, PTR, PTR]
        ctx_ty = ir.LiteralStructType(fields)
        nargs = len(args)
        self.layout = (ctx_ty, nargs, has_ret)
        tramp = self._trampoline(ctx_ty, nargs, has_ret)
        ctxs = cg.alloca(ctx_ty, "region.chunks", ir.Constant(I64, self.threads))

        # GIL: released for the region when this thread holds it
        held = b.icmp_signed("!=", b.call(self._decl("PyGILState_Check", _I32, []), []), ir.Constant(_I32, 0))
        saved = cg.alloca(PTR, "gil.saved")
        b.store(ir.Constant(PTR, None), saved)
        with b.if_then(held):
            b.store(b.call(self._decl("PyEval_SaveThread", PTR, []), []), saved)

        one = ir.Constant(I64, 1)
        n0 = b.select(b.icmp_signed(">", n, ir.Constant(I64, 0)), n, ir.Constant(I64, 0))
        T_ = ir.Constant(I64, self.threads)
        count = b.select(b.icmp_signed("<", n0, T_), n0, T_)
        count = b.select(b.icmp_signed("<", count, one), one, count)
        base_, rem = b.sdiv(n0, count), b.srem(n0, count)

        def fill(t):
            extra = b.select(b.icmp_signed("<", t, rem), t, rem)
            lo = b.add(b.mul(t, base_), extra)
            hi = b.add(b.add(lo, base_), b.zext(b.icmp_signed("<", t, rem), I64))
            slot = self._chunk(ctxs, t)
            for k, v in enumerate([lo, hi, *args]):
                b.store(v, self._field(slot, k))
            b.store(ir.Constant(_I8, 0), self._field(slot, 2 + nargs + has_ret))

        self._loop(ir.Constant(I64, 0), count, fill)
        self._run(tramp, ctxs, count)
        with b.if_then(held):
            b.call(self._decl("PyEval_RestoreThread", ir.VoidType(), [PTR]), [b.load(saved, typ=PTR)])
        self._raise_first(ctxs, count)
        if not has_ret:
            return None
        acc = cg.alloca(ret_ty, "region.acc")
        b.store(b.load(self._field(self._chunk(ctxs, ir.Constant(I64, 0)), 2 + nargs),
                       typ=ret_ty), acc)
        if self.cframe is not None:
            rtype = widen(rt)

            def combine(t):
                part = b.load(self._field(self._chunk(ctxs, t), 2 + nargs), typ=ret_ty)
                b.store(cg.invoke(self.cframe, [b.load(acc, typ=ret_ty), part], [rtype, rtype], rtype), acc)

            self._loop(one, count, combine)
        return b.load(acc, typ=ret_ty)

    def _chunk(self, ctxs, t):
        return self.b.gep(ctxs, [t])

    def _field(self, slot, k):
        return self.b.gep(slot, [ir.Constant(_I32, 0), ir.Constant(_I32, k)])

    def _run(self, tramp, ctxs, count):
        """The pool in the slot :data:`POOL_SYMBOL` runs the ``count`` chunks (each record ``stride`` bytes
        after the one before); an empty slot: this thread runs them, in order."""
        b = self.b
        slot = self.cg.mod.module.globals.get(POOL_SYMBOL)
        if slot is None:
            slot = ir.GlobalVariable(self.cg.mod.module, PTR, POOL_SYMBOL)
        run = b.load_atomic(slot, "acquire", 8, typ=PTR)  # filled by another thread at the first region
        stride = b.sub(b.ptrtoint(self._chunk(ctxs, ir.Constant(I64, 1)), I64), b.ptrtoint(ctxs, I64))
        with b.if_else(b.icmp_unsigned("!=", run, ir.Constant(PTR, None)), likely=True) as (pooled, alone):
            with pooled:
                b.call(_Indirect(run, _RUN_TYPE), [tramp, ctxs, stride, count])
            with alone:
                self._loop(ir.Constant(I64, 0), count, lambda t: b.call(tramp, [self._chunk(ctxs, t)]))

    def _loop(self, lo, hi, body):
        """``for t in range(lo, hi): body(t)`` (the counter in a stack slot; mem2reg makes it a phi)."""
        b, fn = self.b, self.b.function
        counter = self.cg.alloca(I64, "region.t")
        b.store(lo, counter)
        head, step, done = (fn.append_basic_block(f"region.{s}") for s in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        t = b.load(counter, typ=I64)
        b.cbranch(b.icmp_signed("<", t, hi), step, done)
        b.position_at_end(step)
        body(t)
        b.store(b.add(t, ir.Constant(I64, 1)), counter)
        b.branch(head)
        b.position_at_end(done)

    def _raise_first(self, ctxs, count):
        """Restore the exceptions of failed chunks from the last to the first (each replaces the one
        before, which is released): the first failed chunk's is raised."""
        b, (_, nargs, has_ret) = self.b, self.layout
        failed_at = 2 + nargs + has_ret
        any_failed = self.cg.alloca(_I8, "region.failed")
        b.store(ir.Constant(_I8, 0), any_failed)
        restore = self._decl("PyErr_Restore", ir.VoidType(), [PTR, PTR, PTR])
        ensure = self._decl("PyGILState_Ensure", _I32, [])
        release = self._decl("PyGILState_Release", ir.VoidType(), [_I32])

        def check(k):
            t = b.sub(b.sub(count, ir.Constant(I64, 1)), k)
            slot = self._chunk(ctxs, t)
            failed = b.icmp_signed("!=", b.load(self._field(slot, failed_at), typ=_I8), ir.Constant(_I8, 0))
            with b.if_then(failed, likely=False):
                state = b.call(ensure, [])
                b.call(restore, [b.load(self._field(slot, failed_at + 1 + j), typ=PTR) for j in range(_EXC)])
                b.call(release, [state])
                b.store(ir.Constant(_I8, 1), any_failed)

        self._loop(ir.Constant(I64, 0), count, check)
        self.cg.stop_if_failed(any_failed)

    def _trampoline(self, ctx_ty, nargs, has_ret) -> ir.Function:
        """``void @<body>.chunk(ptr ctx)``: run the body over the chunk ``ctx`` describes, off the GIL, on a
        thread attached to the interpreter (attached for the chunk when it is not: a failed check's
        exception lives in the thread's state until it is fetched)."""
        mod = self.cg.mod
        name = self.body.name + ".chunk"
        existing = mod.module.globals.get(name)
        if existing is not None:
            return existing
        fn = ir.Function(mod.module, ir.FunctionType(ir.VoidType(), [PTR]), name=name)
        fn.linkage = "internal"
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = fn.args[0]

        def field(k):
            return b.gep(ctx, [ir.Constant(_I32, 0), ir.Constant(_I32, k)], source_etype=ctx_ty)

        ensure = self._decl("PyGILState_Ensure", _I32, [])
        release = self._decl("PyGILState_Release", ir.VoidType(), [_I32])
        own = b.call(self._decl("PyGILState_GetThisThreadState", PTR, []), [])
        stranger = b.icmp_unsigned("==", own, ir.Constant(PTR, None))
        state, saved = b.alloca(_I32), b.alloca(PTR)
        with b.if_then(stranger, likely=False):
            b.store(b.call(ensure, []), state)
            b.store(b.call(self._decl("PyEval_SaveThread", PTR, []), []), saved)
        params = [b.load(field(k), typ=ctx_ty.elements[k]) for k in range(2 + nargs)]
        out = b.call(self.body, params)
        failed = b.extract_value(out, 1) if has_ret else out
        if has_ret:
            b.store(b.extract_value(out, 0), field(2 + nargs))
        b.store(b.zext(failed, _I8), field(2 + nargs + has_ret))
        with b.if_then(failed, likely=False):
            held = b.call(ensure, [])
            b.call(self._decl("PyErr_Fetch", ir.VoidType(), [PTR, PTR, PTR]),
                   [field(2 + nargs + has_ret + 1 + j) for j in range(_EXC)])
            b.call(release, [held])
        with b.if_then(stranger, likely=False):
            b.call(self._decl("PyEval_RestoreThread", ir.VoidType(), [PTR]), [b.load(saved, typ=PTR)])
            b.call(release, [b.load(state, typ=_I32)])
        b.ret_void()
        return fn


class _Indirect:
    """A call through a loaded function pointer (llvmlite calls only values of a function type)."""

    def __init__(self, value, ftype: ir.FunctionType):
        self.value, self.function_type, self.type = value, ftype, value.type

    def get_reference(self) -> str:
        return self.value.get_reference()


def _has_value(t) -> bool:
    t = widen(t)
    return isinstance(t, T.Type) and t != T.none and t != pyobj


__all__: list[str] = []
