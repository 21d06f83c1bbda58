"""The ``validate`` stage: no plugin marker left, its callbacks, then the target's checks."""

from __future__ import annotations

from .. import plugin as plugins
from ..errors import CompileError, InvalidIRError, PluginError
from ..core.facts import ModuleFacts
from .context import CompileContext, run_hooks


def validate(ctx: CompileContext) -> None:
    """``validate`` callbacks, then the target's checks on the module's facts (one walk, kept in
    ``ctx.facts``); all problems raise one InvalidIRError. The facts are read from the module's print
    kept for its later readers (:meth:`gpucompiler.module.IRModule.keep_text`: the ``llvm`` artifact), which the cache's
    serialisable check reads no more: one print of the final module."""
    check_markers(ctx)
    run_hooks(ctx, "validate")
    if not ctx.job.config.validate:
        return
    ref = ctx.ir.ref
    ctx.facts = ModuleFacts.of(ref, ctx.ir.keep_text())
    problems = list(ctx.job.target.validate(ctx.job, ctx.ir, ctx.facts))
    if problems:
        raise InvalidIRError(problems, job_name=ctx.job.name)


def check_markers(ctx: CompileContext) -> None:
    """A marker function of an enabled plugin (its ``markers``) left in the module is the plugin's
    bug: a PluginError naming it, not an unresolved symbol at load time."""
    present = ctx.ir.function_names()
    for p in ctx.plugins:
        left = sorted(present.intersection(plugins.hook(p, "markers")))
        if left:
            model = ctx.ir.model
            calls = {n: len(model.functions[n].uses) for n in left}
            shown = ", ".join(f"@{n} ({calls[n]} use{'s' if calls[n] != 1 else ''})" for n in left)
            raise PluginError(p.name, "validate", "markers", CompileError(
                f"the plugin's marker function(s) {shown} are still in the module of job {ctx.job.name!r} "
                f"after its stages ran: plugin {p.name!r} (version {p.version}) must lower every marker call "
                "and remove the declarations; report this to the plugin's authors"))

