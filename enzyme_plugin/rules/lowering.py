"""Codegen of ``autodiff``: the lookup of the nested job and the ``gpuc.enzyme.autodiff`` marker call."""

from __future__ import annotations

from llvmlite import ir

from gpucompiler.codegen.deferred import _TypedCallee, job_global
from gpucompiler.codegen.lltypes import PTR, ll
from gpucompiler.interpreter.deferred import LOOKUP

from . import KINDS, MARKER, MODES

_I32 = ir.IntType(32)


def emit_autodiff(cg, job, mode, acts, wrapped, values, restype):
    """``call <restype> @gpuc.enzyme.autodiff(ptr f, i32 mode, (i32 kind, values...)...)``."""
    b = cg.b
    lookup = cg.mod.declare(LOOKUP, PTR, [PTR])
    args = [b.call(lookup, [job_global(cg.mod, job.id)], name="deferred"), ir.Constant(_I32, MODES[mode.name])]
    for act, is_wrapped, v in zip(acts, wrapped, values):
        args.append(ir.Constant(_I32, KINDS[act.kind]))
        args += [b.extract_value(v, k) for k in range(len(act.items))] if is_wrapped else [v]
    decl = cg.mod.declare(MARKER, ir.VoidType(), [PTR])
    if not decl.function_type.var_arg:
        decl.function_type.var_arg = True
    return b.call(_TypedCallee(decl, ir.FunctionType(ll(restype), [PTR], var_arg=True)), args)
