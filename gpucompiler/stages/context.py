"""The typed context handed from stage to stage, and the ``stage`` block that times, labels and dumps.

Environment switches that change how stages run arrive in
:class:`gpucompiler.settings.CompileSettings`, read once per compile; stages
never read the environment.
"""

from __future__ import annotations

import logging
import re
import time
from contextlib import contextmanager
from typing import Any
from collections.abc import Generator

import attrs

from .. import plugin as plugins
from ..cache.report import PLUGINS as PLUGIN_LOG, STAGES as STAGE_LOG
from ..errors import CompileError, ConfigError, PluginError
from ..core import CompilerJob, PluginOptions
from ..module import IRModule
from ..settings import CompileSettings
from ..core.facts import ModuleFacts
from . import HOOK_POINTS, STAGE_INDEX, STAGE_OF_HOOK


@attrs.define
class CompileContext:
    """Everything one compile carries between stages."""

    job: CompilerJob
    settings: CompileSettings
    plugins: tuple[Any, ...]
    """Enabled plugin instances, sorted by name."""
    module: IRModule | None = None
    """The module under compilation (None before IR generation)."""
    parent: CompileContext | None = None
    """The compile that deferred this one (a nested job's), None for a top-level job."""
    stage_times: dict[str, float] = attrs.field(factory=dict)
    """Seconds per stage name, in running order."""
    artifacts: dict[str, str | bytes] = attrs.field(factory=dict)
    """What the emit stage produced, by kind."""
    facts: ModuleFacts | None = None
    """What the ``validate`` stage found in the module (None before it, or with ``validate=False``);
    the IR does not change after it (code is emitted from clones)."""
    plugin_state: dict[str, Any] = attrs.field(init=False)
    """Each enabled plugin's state for this compile (its ``new_state(job)``), by plugin name."""
    markers_seen: set[str] = attrs.field(init=False, factory=set)
    """The marker names (of the enabled plugins' callbacks and ``markers``) the module has had at a hook
    point so far: facts of the job that optimisation deleting a declaration does not undo."""
    marker_names: frozenset[str] = attrs.field(init=False)
    """Every marker name of the enabled plugins."""

    def __attrs_post_init__(self) -> None:
        check_options(self.job, self.plugins)
        self.marker_names = frozenset(
            {m for point in HOOK_POINTS for cb in plugins.callbacks(self.plugins, point) for m in cb.info.markers}
            | {m for p in self.plugins for m in plugins.hook(p, "markers")})
        self.plugin_state = {}
        for p in self.plugins:
            try:
                parent = None if self.parent is None else self.parent.plugin_state.get(p.name)
                self.plugin_state[p.name] = plugins.call_hook(plugins.hook(p, "new_state"), self.job, parent=parent)
            except Exception as exc:
                raise PluginError(p.name, "start", "new_state", exc, at=plugins.plugin_location(exc, p)) from exc

    def note_markers(self) -> set[str]:
        """Add the marker names in the module now to :attr:`markers_seen`; returns it."""
        if self.marker_names and self.module is not None:
            self.markers_seen |= self.module.function_names() & self.marker_names
        return self.markers_seen

    @property
    def ir(self) -> IRModule:
        """The module; a stage that needs it before IR generation is a driver bug."""
        if self.module is None:
            raise CompileError(f"no module yet for {self.job.name!r}: IR generation has not run")
        return self.module

    def dump(self, stage: str, suffix: str, text: str | None = None) -> None:
        """Write the IR (or ``text``) to ``<dump_dir>/<job>.<nn>.<stage>.<suffix>.ll`` when dumping."""
        if self.settings.dump_dir is None:
            return
        if text is None:
            if self.module is None:
                return
            text = self.module.text
        self.settings.dump_dir.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^\w.-]", "_", self.job.name)
        path = self.settings.dump_dir / f"{name}.{STAGE_INDEX[stage]:02d}.{stage}.{suffix}.ll"
        path.write_text(text)


def check_options(job: CompilerJob, enabled: tuple[Any, ...]) -> None:
    """Each plugin options value in ``job``'s params is for an enabled plugin, of that plugin's class."""
    by_name = {p.name: p for p in enabled}
    for _, value in job.config.params:
        if not isinstance(value, PluginOptions):
            continue
        p = by_name.get(value.plugin)
        if p is None:
            raise ConfigError(f"options {value!r} are for plugin {value.plugin!r}, which job {job.name!r} does not "
                              f"enable: add it to plugins (enabled: {', '.join(sorted(by_name)) or 'none'})")
        cls = plugins.hook(p, "options")
        if cls is not None and not isinstance(value, cls):
            raise ConfigError(f"plugin {p.name!r} takes {cls.__qualname__} options, got {value!r}")


@contextmanager
def stage(ctx: CompileContext, name: str) -> Generator[CompileContext, None, None]:
    """Run the body as stage ``name``: dump before/after, time it, log it (``gpucompiler.stages``),
    tell listeners."""
    ctx.dump(name, "before")
    notify(ctx, "stage_started", name)
    start = time.perf_counter()
    yield ctx
    ctx.stage_times[name] = time.perf_counter() - start
    if STAGE_LOG.isEnabledFor(logging.INFO):
        _log_stage(ctx, name)
    ctx.dump(name, "after")
    notify(ctx, "stage_finished", name, seconds=ctx.stage_times[name])


def _log_stage(ctx: CompileContext, name: str) -> None:
    """The stage's record: its time; at DEBUG also the size of the module's IR text after it."""
    ms = ctx.stage_times[name] * 1e3
    if STAGE_LOG.isEnabledFor(logging.DEBUG) and ctx.module is not None:
        STAGE_LOG.debug("%s: stage %s %.2f ms, IR %d bytes", ctx.job.name, name, ms, len(ctx.module.text))
    else:
        STAGE_LOG.info("%s: stage %s %.2f ms", ctx.job.name, name, ms)


def run_hooks(ctx: CompileContext, point: str) -> int:
    """Run the enabled callbacks of hook point ``point`` in order; returns how many ran.

    A callback with markers runs only in a job whose module has had a function
    of one of those names at a hook point so far (:meth:`CompileContext.note_markers`).
    """
    ran = 0
    ctx.note_markers()  # at every hook point, gated callbacks or not: the optimiser may delete them later
    for cb in plugins.callbacks(ctx.plugins, point):
        if cb.info.markers and not ctx.note_markers().intersection(cb.info.markers):
            continue
        _call(ctx, cb, point, verify=True, job=ctx.job, module=ctx.ir, state=ctx.plugin_state.get(cb.plugin_name))
        ran += 1
    return ran


def notify(ctx: CompileContext, event: str, stage_name: str, **extra: Any) -> None:
    """Tell the enabled listeners of ``event`` about stage ``stage_name``."""
    for cb in plugins.callbacks(ctx.plugins, event):
        _call(ctx, cb, stage_name, job=ctx.job, stage=stage_name, module=ctx.module, **extra)


def _call(ctx: CompileContext, cb: plugins.BoundCallback, where: str, verify: bool = False, **kwargs: Any) -> None:
    """Call ``cb``; a failure becomes a PluginError naming ``where`` (hook point or stage). ``verify``:
    a module the callback leaves as the Python model or text must parse and verify now (LLVM reads it
    back), so that IR a plugin broke is its error, not the next stage's."""
    received = ctx.module.text if ctx.settings.dump_dir is not None and ctx.module is not None else None
    start = time.perf_counter() if PLUGIN_LOG.isEnabledFor(logging.INFO) else None
    try:
        cb(**kwargs)
        if verify and not ctx.ir.parsed:
            _ = ctx.ir.ref  # LLVM parses and verifies what the callback left as model or text
        if start is not None:
            PLUGIN_LOG.info("%s: plugin %s ran %s at %s in %.2f ms", ctx.job.name, cb.plugin_name, cb.info.name,
                            where, (time.perf_counter() - start) * 1e3)
    except PluginError:
        raise
    except Exception as exc:
        if received is not None:
            ctx.dump(STAGE_OF_HOOK.get(where, where), f"{cb.plugin_name}.{cb.info.name}.failed", received)
        raise PluginError(cb.plugin_name, where, cb.info.name, exc, at=plugins.plugin_location(exc, cb.plugin)) from exc
