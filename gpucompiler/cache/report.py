"""What the last compile of a ``@jit`` function or kernel did, and the compile's log records.

Records go through the standard :mod:`logging` module under ``gpucompiler.*``
loggers: ``gpucompiler.stages`` (each stage's time; at DEBUG its IR size),
``gpucompiler.plugins`` (each plugin callback that ran, where, how long),
``gpucompiler.cache`` (each hit with its tier, each miss and its compile).
``GPUC_LOG=info|debug`` (:class:`~gpucompiler.settings.LogSettings`) adds a
stderr handler to the ``gpucompiler`` logger at that level when this module
is first imported; otherwise the program's logging configuration decides. A
record costs nothing while its logger is disabled: every call site asks
``isEnabledFor`` first, and the stage's IR size is measured at DEBUG only.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs

from ..interface import STAGE_INDEX
from ..settings import LogSettings

STAGES = logging.getLogger("gpucompiler.stages")
PLUGINS = logging.getLogger("gpucompiler.plugins")
CACHE = logging.getLogger("gpucompiler.cache")

#: tiers (``CachedResult.origin``) that did not compile in this process's lookup
_COMPILED = ("compiled", "service")


_HANDLER = "gpucompiler.GPUC_LOG"
"""The name of the stderr handler ``GPUC_LOG`` installs (one per process)."""


def configure(settings: LogSettings) -> None:
    """Apply ``GPUC_LOG``: a stderr handler on the ``gpucompiler`` logger at ``settings.level``."""
    if settings.level is None:
        return
    root = logging.getLogger("gpucompiler")
    if not any(h.get_name() == _HANDLER for h in root.handlers):
        handler = logging.StreamHandler()
        handler.set_name(_HANDLER)
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(settings.level)


configure(LogSettings.from_env())


@attrs.frozen
class CompileReport:
    """The last compile of a dispatcher (``f.last_compile``): where its code came from, and what it cost."""

    name: str
    """The job's name (the function's)."""
    tier: str
    """Where the code came from: ``memory``, ``disk``, ``shared``, ``redis`` (cache hits), ``compiled``
    (compiled in this process) or ``service`` (compiled by the compile service)."""
    seconds: float
    """This lookup, or lookup and compile, in this process."""
    stage_times: dict[str, float]
    """Seconds per stage, in running order, of the compile that made the code: this one on a miss,
    the one recorded in the entry on a hit."""
    ir_sizes: dict[str, int]
    """Bytes of each artifact kind: ``llvm`` (the final LLVM IR's text), ``obj``, ``asm`` (PTX for PTX)..."""
    plugins: tuple[str, ...]
    """The plugins the job enabled."""
    key: str
    """The cache entry's key."""

    @property
    def hit(self) -> bool:
        """Whether the code came from a cache tier (no compile)."""
        return self.tier not in _COMPILED


def report(result: Any, seconds: float, plugins: tuple[str, ...]) -> CompileReport:
    """The :class:`CompileReport` of ``result`` (a ``CachedResult``) found in ``seconds``; logs the hit
    or miss on ``gpucompiler.cache`` at INFO."""
    order = sorted(result.stage_times.items(), key=lambda item: STAGE_INDEX.get(item[0], len(STAGE_INDEX)))
    made = CompileReport(result.job.name, result.origin, seconds, dict(order),
                         {k: len(v) for k, v in result.artifacts.items()}, tuple(plugins), result.key)
    if CACHE.isEnabledFor(logging.INFO):
        if made.hit:
            CACHE.info("%s: %s hit in %.2f ms (key %s)", made.name, made.tier, seconds * 1e3, made.key[:12])
        else:
            CACHE.info("%s: miss, %s in %.2f ms, plugins %s (key %s)", made.name, made.tier, seconds * 1e3,
                       ", ".join(made.plugins) or "none", made.key[:12])
    return made
