# llvmlite has no type stubs: its members are untyped (strict elsewhere)
# pyright: reportUnknownMemberType=false, reportMissingTypeStubs=false
"""The ``ad`` stage: plugins' AD engines, the hook after them, then the optimiser again.

1. ``ad`` callbacks: the engines (marker-gated: only jobs that differentiate);
2. ``ad.late`` callbacks: the differentiated module before it is optimised again
   (order with ``after="enzyme"`` to follow a given engine);
3. the job's ``O<n>`` pipeline again (:func:`gpucompiler.stages.optimize.after_ad`) when an
   ``ad`` callback ran and ``opt_level > 0``.

``pre_ad`` (after linking, before the ``optimize`` stage) and ``post_ad`` (after
this one) are stages of their own.
"""

from __future__ import annotations

from . import optimize
from .context import CompileContext, run_hooks


def differentiate(ctx: CompileContext) -> None:
    """Engines, ``ad.late`` callbacks, then re-optimisation when an engine ran."""
    engines = run_hooks(ctx, "ad")
    run_hooks(ctx, "ad.late")
    if engines and ctx.job.config.opt_level > 0:
        optimize.after_ad(ctx, ctx.ir)
