"""Helpers of the deferred-job tests: function names and call targets by parsing, IR after link_deferred."""

from __future__ import annotations

import llvmlite.binding as llvm


def defined_and_declared(ir: str) -> tuple[set[str], set[str]]:
    ref = llvm.parse_assembly(ir)
    defined = {f.name for f in ref.functions if not f.is_declaration}
    declared = {f.name for f in ref.functions if f.is_declaration}
    return defined, declared


def callees(ir: str, function: str) -> list[str]:
    """Names of the functions ``function`` calls directly, in order (parsed with the Python model)."""
    from gpucompiler.llvm import parse

    fn = parse(ir).functions[function]
    return [i.operands[0].name for i in fn.instructions() if i.opcode == "call"]


def linked_ir(job) -> str:
    """The module of ``job`` after ``link_deferred`` (irgen, post_irgen, link_deferred only)."""
    from gpucompiler import plugin
    from gpucompiler.stages import irgen, link_deferred
    from gpucompiler.settings import CompileSettings
    from gpucompiler.stages.context import CompileContext, run_hooks

    ctx = CompileContext(job, CompileSettings(), plugin.enabled(job.config.plugins))
    irgen.generate(ctx)
    run_hooks(ctx, "post_irgen")
    link_deferred.link(ctx)
    return ctx.ir.text


def after_irgen(job):
    """The compile context of ``job`` after irgen and the post_irgen callbacks."""
    from gpucompiler import plugin
    from gpucompiler.stages import irgen
    from gpucompiler.settings import CompileSettings
    from gpucompiler.stages.context import CompileContext, run_hooks

    ctx = CompileContext(job, CompileSettings(), plugin.enabled(job.config.plugins))
    irgen.generate(ctx)
    run_hooks(ctx, "post_irgen")
    return ctx
