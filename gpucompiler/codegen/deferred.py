"""Codegen of deferred calls (the nested job's source is :mod:`gpucompiler.source.deferred`).

A deferred call (see :mod:`gpucompiler.interpreter.deferred`) becomes::

    @"gpuc.job.<id>" = linkonce_odr constant [65 x i8] c"<id>\\00"
    declare ptr @gpuc.lookup(ptr)
    declare void @__autodiff(ptr, ...)

    %f = call ptr @gpuc.lookup(ptr @"gpuc.job.<id>")
    %r = call double (ptr, ...) @__autodiff(ptr %f, double %x)

When the nested job takes an error slot (:attr:`DeferredJob.takes_error_slot`, its calling
convention) the slot is the marker call's first argument after the function, and the caller
stops after the call if the job failed; a plugin lowering the marker forwards the arguments as
they are. The job id is a content hash, so the module holds no process-local data
and prints byte-identically everywhere. The marker is declared ``void (ptr,
...)`` once per module; each call carries its own function type (opaque
pointers allow it), so one marker serves every result type.
"""

from __future__ import annotations


from llvmlite import ir

from ..interpreter.deferred import JOB_GLOBAL_PREFIX, LOOKUP, DeferredCall, DeferredJob
from ..interpreter.lattice import pyobj, widen
from .lltypes import PTR, has_value, ll

_I8 = ir.IntType(8)


class TypedCallee:
    """A function called with a type other than its declaration's (llvmlite has no such call)."""

    def __init__(self, fn: ir.Function, ftype: ir.FunctionType):
        self.fn, self.function_type, self.type = fn, ftype, fn.type

    def get_reference(self) -> str:
        return self.fn.get_reference()


def job_global(mod, job_id: str) -> ir.GlobalVariable:
    """``@"gpuc.job.<id>"``: the constant naming a nested job (merged by the linker)."""
    name = JOB_GLOBAL_PREFIX + job_id
    g = mod.module.globals.get(name)
    if g is None:
        data = bytearray(job_id.encode() + b"\0")
        g = ir.GlobalVariable(mod.module, ir.ArrayType(_I8, len(data)), name=name)
        g.global_constant, g.linkage = True, "linkonce_odr"
        g.initializer = ir.Constant(ir.ArrayType(_I8, len(data)), data)  # pyright: ignore[reportAttributeAccessIssue]
    return g


def emit_deferred(cg, job: DeferredJob, marker: str, values, argtypes, restype):
    """Emit ``gpuc.lookup`` of ``job`` and the ``marker`` call with the arguments; returns its result."""
    b = cg.b
    lookup = cg.mod.declare(LOOKUP, PTR, [PTR])
    fptr = b.call(lookup, [job_global(cg.mod, job.id)], name="deferred")
    slot = cg.call_slot() if job.takes_error_slot else None
    args = [fptr] if slot is None else [fptr, slot]
    for v, at, pt in zip(values, argtypes, job.argtypes):
        if has_value(widen(pt)) and widen(pt) != pyobj:
            args.append(cg.cast(v, widen(at), widen(pt)))
    decl = cg.mod.declare(marker, ir.VoidType(), [PTR])
    if not decl.function_type.var_arg:
        decl.function_type.var_arg = True
    rt = ll(restype) if has_value(restype) else ir.VoidType()
    out = b.call(TypedCallee(decl, ir.FunctionType(rt, [PTR], var_arg=True)), args)
    if slot is not None:
        cg.stop_if_failed(slot)
    return out if has_value(restype) else None


def lower_deferred(cg, call: DeferredCall, values, argtypes):
    """Lower the call site of a :class:`DeferredCall`: its last ``call.nargs`` arguments go to the job."""
    n = call.nargs
    return emit_deferred(cg, call.job, call.marker, values[-n:] if n else [], argtypes[-n:] if n else [],
                         call.restype)
