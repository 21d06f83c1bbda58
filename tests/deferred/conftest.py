"""The deferred-job tests import their helper modules from this folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def after_irgen():
    """``after_irgen(job)`` -> the compile context after irgen and post_irgen."""
    from gpucompiler import plugin
    from gpucompiler.stages import irgen
    from gpucompiler.stages.context import CompileContext, Settings, run_hooks

    def run(job):
        ctx = CompileContext(job, Settings(), plugin.enabled(job.config.plugins))
        irgen.generate(ctx)
        run_hooks(ctx, "post_irgen")
        return ctx

    return run
