"""What the last compile of a ``@jit`` function or kernel did, what a cache entry keeps of the plugins'
reports and warnings, and the compile's log records.

Reports travel through an entry as JSON data: each plugin's ``save_report`` makes it, its
``load_report`` rebuilds the report when ``CachedResult.reports`` (or ``f.last_compile.reports``) is
read, which imports the plugin then, not on the hit. Warnings emitted while a job compiles are kept in
its entry as plain fields (category, message, file, line: never objects, entries of other users are
untrusted data) and shown again on every hit, as a compile would show them (:func:`replay`).

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

import builtins
import functools
import logging
import sys
import threading
import warnings
from types import TracebackType
from typing import Any, cast

from ..errors import PluginError
from ..interface import STAGE_INDEX, hook, plugin_location
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


class CompileReport:
    """The last compile of a dispatcher (``f.last_compile``): where its code came from, and what it cost.
    (A plain class: an attrs class costs ~0.2 ms to create, on the path of a fresh process's cache hit.)"""

    __slots__ = ("name", "tier", "seconds", "stage_times", "ir_sizes", "plugins", "key", "result")

    def __init__(self, name: str, tier: str, seconds: float, stage_times: dict[str, float], ir_sizes: dict[str, int],
                 plugins: tuple[str, ...], key: str, result: Any = None):
        self.name = name
        """The job's name (the function's)."""
        self.tier = tier
        """Where the code came from: ``memory``, ``disk``, ``shared``, ``redis`` (cache hits), ``compiled``
        (compiled in this process) or ``service`` (compiled by the compile service)."""
        self.seconds = seconds
        """This lookup, or lookup and compile, in this process."""
        self.stage_times = stage_times
        """Seconds per stage, in running order, of the compile that made the code: this one on a miss,
        the one recorded in the entry on a hit."""
        self.ir_sizes = ir_sizes
        """Bytes of each artifact kind: ``llvm`` (the final LLVM IR's text), ``obj``, ``asm`` (PTX for PTX)..."""
        self.plugins = plugins
        """The plugins the job enabled."""
        self.key = key
        """The cache entry's key."""
        self.result = result
        """The ``CachedResult`` (its reports are read on first use)."""

    def _fields(self) -> tuple[Any, ...]:
        return (self.name, self.tier, self.seconds, self.stage_times, self.ir_sizes, self.plugins, self.key)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._fields() == cast("CompileReport", other)._fields()

    def __repr__(self) -> str:
        return (f"CompileReport(name={self.name!r}, tier={self.tier!r}, seconds={self.seconds!r}, "
                f"stage_times={self.stage_times!r}, ir_sizes={self.ir_sizes!r}, plugins={self.plugins!r}, "
                f"key={self.key!r})")

    @property
    def reports(self) -> dict[str, Any]:
        """The plugins' reports by name: the objects on a compile, rebuilt by ``load_report`` on a hit."""
        return {} if self.result is None else self.result.reports

    @property
    def warnings(self) -> tuple[dict[str, Any], ...]:
        """The warnings the compile emitted (``category`` as ``module:qualname``, ``message``, ``filename``,
        ``lineno``), shown again on every hit."""
        rows: list[Any] = _rows(None if self.result is None else self.result.meta.get("warnings"))
        return tuple(r for r in rows if _valid(r))

    @property
    def hit(self) -> bool:
        """Whether the code came from a cache tier (no compile)."""
        return self.tier not in _COMPILED


def report(result: Any, seconds: float, plugins: tuple[str, ...]) -> CompileReport:
    """The :class:`CompileReport` of ``result`` (a ``CachedResult``) found in ``seconds``; logs the hit
    or miss on ``gpucompiler.cache`` at INFO."""
    order = sorted(result.stage_times.items(), key=lambda item: STAGE_INDEX.get(item[0], len(STAGE_INDEX)))
    made = CompileReport(result.job.name, result.origin, seconds, dict(order),
                         {k: len(v) for k, v in result.artifacts.items()}, tuple(plugins), result.key, result)
    if CACHE.isEnabledFor(logging.INFO):
        if made.hit:
            CACHE.info("%s: %s hit in %.2f ms (key %s)", made.name, made.tier, seconds * 1e3, made.key[:12])
        else:
            CACHE.info("%s: miss, %s in %.2f ms, plugins %s (key %s)", made.name, made.tier, seconds * 1e3,
                       ", ".join(made.plugins) or "none", made.key[:12])
    return made


# -- reports in entries ------------------------------------------------------------------------
def stored_reports(reports: dict[str, Any]) -> dict[str, Any]:
    """What an entry keeps of a compile's ``reports``: each plugin's ``save_report`` (JSON data); a report
    it gives None for is not kept."""
    from .. import plugin as gp  # import time: the plugin registry (~0.8 ms), for a compile, not a hit

    out: dict[str, Any] = {}
    for name, report in reports.items():
        plugin = gp.loaded(name)
        data = _hooked(plugin, name, "save_report", report)
        if data is not None:
            out[name] = data
    return out


def loaded_reports(stored: Any) -> dict[str, Any]:
    """The reports rebuilt from an entry's ``stored`` data by each plugin's ``load_report`` (importing it)."""
    from .. import plugin as gp  # import time: the registry, when a report is read, not on the hit

    table: dict[str, Any] = cast("dict[str, Any]", stored) if isinstance(stored, dict) else {}
    return {name: _hooked(gp.enabled([name])[0], name, "load_report", data) for name, data in table.items()}


def _hooked(plugin: Any, name: str, point: str, value: Any) -> Any:
    try:
        return hook(plugin, point)(value)
    except Exception as exc:
        raise PluginError(name, "report", point, exc, at=plugin_location(exc, plugin)) from exc


# -- warnings in entries -----------------------------------------------------------------------
_STATE = threading.Lock()
"""Guards the two below (held for a few statements, never while compiling)."""
_RECORDERS: dict[int, list[list[dict[str, Any]]]] = {}
"""Thread id -> the row lists of its open recordings, innermost last."""
_ACTIVE: list[warnings.catch_warnings] = []
"""The warning filters' state saved while any thread records (they are the process's)."""


class recorded_warnings:
    """``with recorded_warnings() as rows:`` the warnings this thread emits inside, as rows of plain fields
    (``category`` as ``module:qualname``, ``message``, ``filename``, ``lineno``), each shown when the
    block ends (raising or not), as without the recording. Other threads' warnings are shown as they
    come, or recorded by their own recordings: threads record at once, none waits for another. The
    program's filters apply (an ignored warning is not recorded, ``error`` raises in the compile);
    what a filter shows once per location is shown, and recorded, once per recording."""

    def __enter__(self) -> list[dict[str, Any]]:
        self.rows: list[dict[str, Any]] = []
        with _STATE:
            if not _RECORDERS:  # the first recording: route warnings by thread until the last one ends
                catch = warnings.catch_warnings()
                catch.__enter__()  # the filters stay; "shown once already" is forgotten, as for every entry
                warnings.showwarning = functools.partial(_route, warnings.showwarning)
                _ACTIVE.append(catch)
            else:
                with warnings.catch_warnings():  # nothing changes but that: a warning shown in an earlier
                    pass  # compile is shown (and recorded) again in this one
            _RECORDERS.setdefault(threading.get_ident(), []).append(self.rows)
        return self.rows

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        me = threading.get_ident()
        with _STATE:
            stack = _RECORDERS[me]
            stack.pop()
            if not stack:
                del _RECORDERS[me]
            if not _RECORDERS:
                _ACTIVE.pop().__exit__(None, None, None)  # the filters and showwarning as they were
        replay(self.rows)  # recorded by an enclosing recording of this thread, if any


def _route(shown: Any, message: Warning | str, category: type[Warning], filename: str, lineno: int,
           file: Any = None, line: str | None = None) -> None:
    """``warnings.showwarning`` while recordings are open: into this thread's innermost one, else shown."""
    stack = _RECORDERS.get(threading.get_ident())
    if not stack:
        shown(message, category, filename, lineno, file, line)
        return
    stack[-1].append({"category": f"{category.__module__}:{category.__qualname__}", "message": str(message),
                      "filename": str(filename), "lineno": int(lineno or 0)})


def _rows(rows: Any) -> list[Any]:
    return cast("list[Any]", rows) if isinstance(rows, list) else []


def _valid(row: Any) -> bool:
    if not isinstance(row, dict):
        return False
    fields = cast("dict[str, Any]", row)
    return all(isinstance(fields.get(k), str) for k in ("category", "message", "filename")) and \
        type(fields.get("lineno")) is int


def _category(name: str) -> type[Warning]:
    """The warning class ``module:qualname`` names, looked up among the builtins and the modules this process
    imported (nothing is imported, no attribute hook runs); UserWarning when it is not a Warning class."""
    module, _, qualname = name.partition(":")
    holder = builtins if module == "builtins" else sys.modules.get(module)
    cls = vars(holder).get(qualname) if holder is not None else None
    return cls if isinstance(cls, type) and issubclass(cls, Warning) else UserWarning


def replay(rows: Any) -> None:
    """Show each warning of ``rows`` (an entry's, untrusted: malformed rows are skipped) at its file and line,
    through the program's warning filters."""
    row: Any
    for row in _rows(rows):
        if _valid(row):
            warnings.warn_explicit(row["message"], _category(row["category"]), row["filename"], row["lineno"])
