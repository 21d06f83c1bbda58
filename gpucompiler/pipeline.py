"""The driver: compile a job through the stages, in order.

Reads top to bottom like GPUCompiler.jl's driver: :func:`compile` →
:func:`emit_llvm` (IR generation, plugin stages, deferred linking,
optimisation, AD, target lowering, validation) → :func:`emit_code`. Each stage
runs inside ``with stage(ctx, name)``, which times it, dumps the IR around it
(``GPUC_DUMP_DIR``) and tells listening plugins. The stage table is
:data:`gpucompiler.stages.STAGES`.
"""

from __future__ import annotations

import hashlib
from typing import Any
from collections.abc import Sequence

import attrs

from . import plugin as plugins
from .errors import ConfigError, PluginError
from .core import CompilerJob
from .llvm.module import no_cyclic_gc
from .module import IRModule
from .stages import ad, emit, finish, irgen, link_deferred, optimize, validate
from .settings import CompileSettings
from .stages.context import CompileContext, run_hooks, stage
from .core.facts import ModuleFacts


@attrs.frozen
class PreparedSource:
    """LLVM IR that already went through :func:`prepare` (possibly in another process).

    The pipeline parses it and continues at ``pre_ad``.
    """

    ir_text: str = attrs.field(repr=False)
    entry: str

    def fingerprint(self) -> Any:
        return {"prepared_llvm": hashlib.sha256(self.ir_text.encode()).hexdigest(), "entry": self.entry}

    def generate_ir(self, job: CompilerJob) -> str:
        return self.ir_text

EMIT_KINDS = emit.EMIT_KINDS


@attrs.frozen
class CompileResult:
    """What :func:`compile` returns."""

    job: CompilerJob
    artifacts: dict[str, str | bytes]
    """Emitted code by kind: ``"llvm"`` text, ``"bc"`` bytes, ``"asm"`` text, ``"obj"`` bytes."""
    module: IRModule
    """The final module (after validation)."""
    stage_times: dict[str, float]
    """Seconds spent per stage, in running order."""
    reports: dict[str, Any] = attrs.field(factory=dict)
    """What enabled plugins returned from ``report(job)``, by plugin name."""
    facts: ModuleFacts | None = None
    """The final module's facts as target validation found them (None without validation)."""


def compile(job: CompilerJob, emit: Sequence[str] = ("llvm",), *,
            settings: CompileSettings | None = None) -> CompileResult:
    """Compile ``job`` and emit each kind in ``emit``.

    ``settings`` defaults to :meth:`CompileSettings.from_env` (``GPUC_DUMP_DIR``). Cyclic garbage
    collection is paused while it runs, for the whole process (a compile in a background thread pauses
    it for the other threads too), and resumes after it unless the caller had paused it.
    """
    emit = (emit,) if isinstance(emit, str) else tuple(emit)
    unknown = [k for k in emit if k not in EMIT_KINDS]
    if unknown:
        raise ConfigError(f"unknown emit kind(s) {unknown}; known: {', '.join(EMIT_KINDS)}")
    with no_cyclic_gc():  # the modules a compile loads and the objects it builds live until it ends:
        # the collector's passes would only rescan them
        ctx = CompileContext(job, settings or CompileSettings.from_env(), plugins.enabled(job.config.plugins))
        emit_llvm(ctx)
        emit_code(ctx, emit)
    return CompileResult(job, dict(ctx.artifacts), ctx.ir, dict(ctx.stage_times), collect_reports(ctx),
                         ctx.facts)


def prepare(job: CompilerJob, *, settings: CompileSettings | None = None) -> IRModule:
    """The front half alone: IR generation, ``post_irgen`` and deferred linking.

    Its output holds no reference to this process (nested jobs are linked in,
    plugin markers stay), so a compile service can run the rest from the
    text: see :class:`PreparedSource`.
    """
    with no_cyclic_gc():  # as in compile
        ctx = CompileContext(job, settings or CompileSettings.from_env(), plugins.enabled(job.config.plugins))
        emit_front(ctx)
    return ctx.ir


def emit_llvm(ctx: CompileContext) -> None:
    """From the source to validated LLVM IR in ``ctx.module``."""
    if isinstance(ctx.job.source, PreparedSource):
        with stage(ctx, "irgen"):
            irgen.generate(ctx)
    else:
        emit_front(ctx)
    emit_back(ctx)


def emit_front(ctx: CompileContext) -> None:
    """Stages that need the source's process: IR generation, ``post_irgen``, deferred linking."""
    with stage(ctx, "irgen"):
        irgen.generate(ctx)
    with stage(ctx, "post_irgen"):
        run_hooks(ctx, "post_irgen")
    with stage(ctx, "link_deferred"):
        link_deferred.link(ctx)


def emit_back(ctx: CompileContext) -> None:
    """Stages that work on the IR alone: ``pre_ad``, optimisation, AD, ``post_ad``, lowering, validation."""
    with stage(ctx, "pre_ad"):
        run_hooks(ctx, "pre_ad")
    with stage(ctx, "optimize"):
        optimize.optimize(ctx)
    with stage(ctx, "ad"):
        ad.differentiate(ctx)
    with stage(ctx, "post_ad"):
        run_hooks(ctx, "post_ad")
    with stage(ctx, "finish"):
        finish.finish(ctx)
    with stage(ctx, "validate"):
        validate.validate(ctx)


def emit_code(ctx: CompileContext, kinds: Sequence[str]) -> None:
    """Emit each kind of code into ``ctx.artifacts``."""
    with stage(ctx, "emit"):
        emit.emit(ctx, kinds)


def collect_reports(ctx: CompileContext) -> dict[str, Any]:
    """``report(job, state)`` of every enabled plugin that returns something."""
    reports: dict[str, Any] = {}
    for p in ctx.plugins:
        try:
            report = plugins.call_hook(plugins.hook(p, "report"), ctx.job, state=ctx.plugin_state.get(p.name))
        except Exception as exc:
            raise PluginError(p.name, "report", "report", exc, at=plugins.plugin_location(exc, p)) from exc
        if report is not None:
            reports[p.name] = report
    return reports
