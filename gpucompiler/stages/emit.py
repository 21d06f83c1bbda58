"""The ``emit`` stage: its callbacks, then the target's code of each requested kind."""

from __future__ import annotations

from collections.abc import Sequence

from .context import CompileContext, run_hooks

EMIT_KINDS = ("llvm", "bc", "asm", "obj")


def emit(ctx: CompileContext, kinds: Sequence[str]) -> None:
    """``emit`` callbacks, then ``target.emit`` once per requested kind."""
    run_hooks(ctx, "emit")
    for kind in kinds:
        ctx.artifacts[kind] = ctx.job.target.emit(ctx.job, ctx.ir, kind)
