"""The last three stages: target lowering (``finish``), ``validate`` and ``emit``.

Each is a few lines around a target hook, so they share this module.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidIRError
from ..core.facts import ModuleFacts
from .context import CompileContext, run_hooks

EMIT_KINDS = ("llvm", "bc", "asm", "obj")


def finish(ctx: CompileContext) -> None:
    """``target.finish`` (library linking, annotations), then the ``finish`` callbacks."""
    ctx.job.target.finish(ctx.job, ctx.ir)
    run_hooks(ctx, "finish")


def validate(ctx: CompileContext) -> None:
    """``validate`` callbacks, then the target's checks on the module's facts (one walk, kept in
    ``ctx.facts``); all problems raise one InvalidIRError."""
    run_hooks(ctx, "validate")
    if not ctx.job.config.validate:
        return
    ctx.facts = ModuleFacts.of(ctx.ir.ref)
    problems = list(ctx.job.target.validate(ctx.job, ctx.ir, ctx.facts))
    if problems:
        raise InvalidIRError(problems, job_name=ctx.job.name)


def emit(ctx: CompileContext, kinds: Sequence[str]) -> None:
    """``emit`` callbacks, then ``target.emit`` once per requested kind."""
    run_hooks(ctx, "emit")
    for kind in kinds:
        ctx.artifacts[kind] = ctx.job.target.emit(ctx.job, ctx.ir, kind)
