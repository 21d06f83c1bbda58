"""The ``finish`` stage: the target's lowering (library linking, annotations), then its callbacks."""

from __future__ import annotations

from .context import CompileContext, run_hooks


def finish(ctx: CompileContext) -> None:
    """``target.finish`` (library linking, annotations), then the ``finish`` callbacks."""
    ctx.job.target.finish(ctx.job, ctx.ir)
    run_hooks(ctx, "finish")
