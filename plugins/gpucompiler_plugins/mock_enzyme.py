"""A stand-in for Enzyme (GPUCompiler.jl PR #636): shows how an AD plugin hooks the pipeline.

Marker-gated on ``__autodiff``: at the ``ad`` stage every
``call @__autodiff(ptr @f, args...)`` becomes ``call @f(args...)`` and the
marker's declaration is removed. No derivative is taken; what matters is the
shape: the frontend leaves a marker call, the plugin's callback runs only
when the marker is present, and it rewrites the module through the Python
model (:mod:`gpucompiler.llvm`).
"""

from __future__ import annotations

import gpucompiler.plugin as gp
from gpucompiler.errors import CompileError

MARKER = "__autodiff"


class MockEnzymePlugin(gp.Plugin):
    """Replaces each ``__autodiff(f, args...)`` call by ``f(args...)``."""

    name = "mock_enzyme"
    version = "1.0"
    markers = (MARKER,)

    @property
    def rules(self):
        """The interpreter half: ``mock_autodiff(f, *args)`` as a deferred job (:mod:`.mock_autodiff`)."""
        from .mock_autodiff import rules

        return rules

    @gp.callback("ad", markers=(MARKER,), before="enzyme")  # a nested job inside autodiff: lowered first
    def lower_autodiff(self, job, module):
        from gpucompiler.llvm import Builder

        model = module.model
        marker = model.functions.get(MARKER)
        if marker is None:  # the optimiser deleted every (dead) marker call
            return
        for use in list(marker.uses):
            call = use.user
            fn, *args = call.args
            if getattr(fn, "name", None) not in model.functions:
                raise CompileError(f"{MARKER} in @{call.function.name}: first argument must be a function, "
                                   f"got {fn!r}")
            builder = Builder()
            builder.position_before(call)
            new = builder.call(fn, args)
            call.replace_all_uses_with(new)
            call.erase()
        model.remove_function(marker)
