"""Codegen of deferred calls, and the source of a nested job.

A deferred call (see :mod:`gpucompiler.interpreter.deferred`) becomes::

    @"gpuc.job.<id>" = linkonce_odr constant [65 x i8] c"<id>\\00"
    declare ptr @gpuc.lookup(ptr)
    declare void @__autodiff(ptr, ...)

    %f = call ptr @gpuc.lookup(ptr @"gpuc.job.<id>")
    %r = call double (ptr, ...) @__autodiff(ptr %f, double %x)

The job id is a content hash, so the module holds no process-local data
and prints byte-identically everywhere. The marker is declared ``void (ptr,
...)`` once per module; each call carries its own function type (opaque
pointers allow it), so one marker serves every result type.
"""

from __future__ import annotations

from typing import Any

import attrs
from llvmlite import ir

from ..interpreter.deferred import JOB_GLOBAL_PREFIX, LOOKUP, DeferredJob
from ..interpreter.lattice import BOTTOM, pyobj, widen
from .lltypes import PTR, has_value, ll

_I8 = ir.IntType(8)


class _TypedCallee:
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
        g.initializer = ir.Constant(ir.ArrayType(_I8, len(data)), data)
    return g


def emit_deferred(cg, job: DeferredJob, marker: str, values, argtypes, restype):
    """Emit ``gpuc.lookup`` of ``job`` and the ``marker`` call with the arguments; returns its result."""
    b = cg.b
    lookup = cg.mod.declare(LOOKUP, PTR, [PTR])
    fptr = b.call(lookup, [job_global(cg.mod, job.id)], name="deferred")
    args = [fptr]
    for v, at, pt in zip(values, argtypes, job.argtypes):
        if has_value(widen(pt)) and widen(pt) != pyobj:
            args.append(cg.cast(v, widen(at), widen(pt)))
    decl = cg.mod.declare(marker, ir.VoidType(), [PTR])
    if not decl.function_type.var_arg:
        decl.function_type.var_arg = True
    rt = ll(restype) if has_value(restype) else ir.VoidType()
    out = b.call(_TypedCallee(decl, ir.FunctionType(rt, [PTR], var_arg=True)), args)
    return out if has_value(restype) else None


@attrs.frozen
class DeferredSpec:
    """The source of a nested job: ``job.fn(job.argtypes)`` under the nested rules, entry ``job.name``."""

    job: DeferredJob
    _cache: dict = attrs.field(factory=dict, eq=False, repr=False, alias="_cache")

    @property
    def entry(self) -> str:
        return self.job.name

    def infer(self, *_ignored):
        """``(interpreter, entry frame)`` under the parent's rules plus the meta's."""
        from ..interpreter.infer import Interpreter

        if "infer" not in self._cache:
            job = self.job
            interp = Interpreter(job.target_name, (), job.python_errors)
            interp.plugin_sets = list(job.plugin_sets)
            frame = interp.infer(job.fn, list(job.argtypes))
            if frame.rettype is BOTTOM:
                from ..errors import TypeInferenceError

                raise TypeInferenceError("the deferred function never returns", (),
                                         (frame.ir.filename, frame.ir.line, 0), frame.ir.name)
            self._cache["infer"] = (interp, frame)
        return self._cache["infer"]

    def dependencies(self) -> list[tuple]:
        return list(self.infer()[0].deps.values())

    def fingerprint(self) -> Any:
        from ..frontend.spec import FunctionSpec

        deps = FunctionSpec.fingerprint.__get__(self)()["globals"]
        return {"deferred": self.job.id, "globals": deps}

    def generate_ir(self, job) -> str:
        """The LLVM IR of the nested entry and its callees."""
        from .module import ModuleCodegen

        interp, frame = self.infer()
        mod = ModuleCodegen(self.entry, interp, **nested_checks(self.job, job.config))
        mod.emit(frame, self.entry)
        return str(mod.module)


def nested_checks(deferred: DeferredJob, config) -> dict:
    """How the nested job's checks report: ``ModuleCodegen`` options from the parent's config.

    Array indices are checked when the parent's are (``boundscheck``, a job
    parameter, so it is part of the nested job's key). A failed check sets the
    Python error under the Python ABI, calls the CPU grid emulation's
    callback in an emulated kernel, and traps elsewhere (on the GPU). When the
    meta asks for an error slot (:attr:`DeferredMeta.error_slot`) and the
    parent stops on errors (it has a status: the Python ABI, or an emulated
    kernel with bounds checks), the nested functions take the slot instead
    of a status, and the parent passes it (:meth:`FunctionCodegen.call_slot`).
    """
    from ..runtime.grid import PLUGIN as EMULATION

    boundscheck = bool(config.param("boundscheck", False))
    emulated = EMULATION in config.plugins
    on_error = "python" if deferred.python_errors else "emulation" if emulated else "trap"
    parent_stops = deferred.python_errors or (emulated and boundscheck)
    return {"boundscheck": boundscheck, "on_error": on_error,
            "error_slot": bool(getattr(deferred.meta, "error_slot", False)) and parent_stops}

