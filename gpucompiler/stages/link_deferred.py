"""Linking deferred jobs into the module (``gpuc.lookup`` calls).

Nested jobs are not supported yet: a module that references the lookup
function is refused with a typed error instead of being passed on with an
unresolved call.
"""

from __future__ import annotations

from ..errors import CompileError
from .context import CompileContext, run_hooks

LOOKUP = "gpuc.lookup"


def link(ctx: CompileContext) -> None:
    """Refuse deferred jobs (for now), then run the ``link_deferred`` callbacks."""
    if LOOKUP in ctx.ir.function_names():
        raise CompileError(
            f"stage link_deferred: job {ctx.job.name!r} references @{LOOKUP} (a deferred job); "
            "deferred jobs are not supported yet: compile the callee as its own job"
        )
    run_hooks(ctx, "link_deferred")
