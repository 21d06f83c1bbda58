"""The plugin interface, in one place: every hook a plugin can implement, with its default.

In the style of GPUCompiler.jl's ``interface.jl``: :class:`Plugin` is the
base class whose attributes and methods *are* the defaults, each with a
one-line docstring saying when it is used. A plugin overrides what it needs::

    import gpucompiler.plugin as gp

    class Square(gp.Plugin):
        name = "square"; version = "1.0"

        @gp.callback("ad", markers=("__autodiff",))
        def rewrite(self, job, module, state):   # module: gpucompiler.module.IRModule
            ...

The hooks:

* identity: :attr:`Plugin.name`, :attr:`Plugin.version`, :meth:`Plugin.cache_settings`
  (all three are part of the key of every job that enables the plugin);
* typed options: :attr:`Plugin.options` (a ``PluginOptions`` class users set from
  ``@jit`` / ``@kernel``; part of the job key);
* interpreter rules: :attr:`Plugin.rules` (one rule set or a tuple: method tables,
  call handlers, ``overload`` routes, inlining policy; a rule set with a ``target``
  applies on that target only);
* markers: :attr:`Plugin.markers`, the functions its marker calls use (one left at
  ``validate`` is the plugin's error);
* per-job state: :meth:`Plugin.new_state` (linked to the deferring job's), handed to
  callbacks that take ``state``;
* pipeline callbacks: methods marked :func:`callback` at a hook point of
  :data:`STAGES` (arguments any of :data:`HOOK_ARGS`; ``markers`` gate on the job's
  facts, ``before`` / ``after`` order around other plugins);
* listeners: methods marked :func:`listener`, named after an event of
  :data:`EVENTS`;
* :meth:`Plugin.report`: a result in ``CompileResult.reports`` after a compile (with
  the compile's state); :meth:`Plugin.save_report` / :meth:`Plugin.load_report` carry it
  through a cache entry as JSON data (``CachedResult.reports``, ``f.last_compile.reports``);
* :meth:`Plugin.add_commands`: subcommands of the ``gpuc`` command line.

An exception in any of them is a ``PluginError`` naming the plugin, the hook and,
by default, the plugin's own ``file:line`` (:func:`plugin_location`).

A plugin may be any object with these attributes (plain classes work);
:func:`hook` reads one, falling back to the default here.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, TypeVar, cast
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs
import pluggy

from .errors import ConfigError, UnknownStageError

if TYPE_CHECKING:
    import argparse

    from .core import CompilerJob, PluginOptions, Rules

PROJECT = "gpucompiler"

JSONData: TypeAlias = "bool | int | float | str | Sequence[JSONData] | Mapping[str, JSONData] | None"
"""JSON data, as a plugin gives it (``cache_settings``, ``save_report``); ``load_report`` gets it back untrusted
(typed ``Any``: the plugin checks its shape)."""


# -- the stages and their hook points ------------------------------------------------
@attrs.frozen
class Stage:
    """One row of the stage table."""

    name: str
    """Stage name: timing key, dump file component, instrumentation label."""
    hooks: tuple[str, ...]
    """Hook points callbacks may name, in the order they run within the stage."""
    summary: str
    """When the hook points run, for docs and ``gpuc plugins``."""


STAGES: tuple[Stage, ...] = (
    Stage("irgen", (), "source -> LLVM IR; then target.prepare (triple, data layout)"),
    Stage("post_irgen", ("post_irgen",), "callbacks on the freshly generated module"),
    Stage("link_deferred", ("link_deferred",), "deferred jobs linked (callbacks run after linking)"),
    Stage("pre_ad", ("pre_ad",), "callbacks before anything changes what AD sees: linked, not yet optimised"),
    Stage("optimize", ("optimize.early", "optimize.late", "optimize.last"),
          "early callbacks; default O-level pipeline; late callbacks + cleanup; last callbacks"),
    Stage("ad", ("ad", "ad.late"), "AD engines (ad callbacks); ad.late callbacks; the O-level pipeline again "
          "when an ad callback ran"),
    Stage("post_ad", ("post_ad",), "callbacks after automatic differentiation and its re-optimisation"),
    Stage("finish", ("finish",), "target.finish (lowering), then callbacks"),
    Stage("validate", ("validate",), "callbacks, then target.validate (raises InvalidIRError)"),
    Stage("emit", ("emit",), "callbacks, then target.emit for each requested kind"),
)
"""The pipeline's stages in running order (the driver, ``gpuc plugins`` and the docs read it)."""

STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)
HOOK_POINTS: tuple[str, ...] = tuple(h for s in STAGES for h in s.hooks)
STAGE_INDEX: dict[str, int] = {s.name: i for i, s in enumerate(STAGES)}
STAGE_OF_HOOK: dict[str, str] = {h: s.name for s in STAGES for h in s.hooks}

HOOK_ARGS: tuple[str, ...] = ("job", "module", "state")
"""Arguments a callback may take: the job, the :class:`~gpucompiler.module.IRModule`, the plugin's per-job state."""
EVENTS: dict[str, tuple[str, ...]] = {
    "stage_started": ("job", "stage", "module"),
    "stage_finished": ("job", "stage", "module", "seconds"),
}
"""Events a :func:`listener` can observe, with the arguments it may take."""


def hook_spec_name(point: str) -> str:
    """The pluggy hook name of a hook point: ``optimize.late`` -> ``gpuc_optimize_late``."""
    return "gpuc_" + point.replace(".", "_")


# -- the plugin base class: every attribute and method is a hook with its default ---
class Plugin:
    """Base class of plugins; each attribute and method below is a hook, its value here the default."""

    name: ClassVar[str] = ""
    """Identity (required): an identifier; ``CompilerConfig.plugins`` enables the plugin by it."""
    version: ClassVar[str] = "0"
    """Part of the key of every job that enables the plugin: bump it when the output changes."""
    rules: Rules | tuple[Rules, ...] | None = None
    """Interpreter rules used in the jobs that enable the plugin: one rule set or a tuple of them (a rule
    set with a target applies there only, and wins there over the plugin's sets for every target)."""
    options: ClassVar[type[PluginOptions] | None] = None
    """The plugin's typed options (a :class:`~gpucompiler.core.PluginOptions` subclass naming it): users
    set an instance with ``@jit(options=...)``, ``@kernel(options=...)`` or ``CompilerConfig(params=...)``;
    part of the job key; callbacks read ``job.config.options(cls)`` (the defaults when none is given)."""
    markers: ClassVar[tuple[str, ...]] = ()
    """Names of the functions the plugin's marker calls use (``("__autodiff",)``): its own stages lower
    them all; one still in the module at ``validate`` is a PluginError naming the plugin."""

    def cache_settings(self) -> JSONData:
        """JSON data describing options that change the plugin's output (part of job keys); None: none."""
        return None

    def new_state(self, job: CompilerJob, parent: Any = None) -> Any:
        """The plugin's state for one compile of ``job``, made when it starts; callbacks taking ``state`` get it.
        ``parent`` (when declared): the state of the job that deferred ``job``, None for a top-level job."""
        return None

    def report(self, job: CompilerJob, state: Any = None) -> Any:
        """A result to put in ``CompileResult.reports[self.name]`` after ``job``; None for none.
        ``state`` (when declared): the plugin's state of this compile."""
        return None

    def save_report(self, report: Any) -> JSONData:
        """``report`` as JSON data, stored in the cache entry of the compile (None: not stored, so a cache
        hit has none). Default: JSON data as it is, an ``attrs`` instance as ``attrs.asdict``, else None."""
        return report_data(report)

    def load_report(self, data: Any) -> Any:
        """The report rebuilt from what :meth:`save_report` stored (a cache hit's, untrusted: JSON data only).
        Default: the data itself."""
        return data

    def add_commands(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:  # pyright: ignore[reportPrivateUsage]
        """Add ``gpuc`` subcommands (``subparsers.add_parser(...)``, setting ``func``); default: none."""
        return None


_HOOKS = ("name", "version", "rules", "options", "markers", "cache_settings", "new_state", "report", "save_report",
          "load_report", "add_commands")


def report_data(report: Any) -> JSONData:
    """The default of :meth:`Plugin.save_report`: ``report`` when it is JSON data (dicts with string keys,
    lists, tuples as lists, strings, numbers, booleans, None), ``attrs.asdict(report)`` when that is, else None."""
    if attrs.has(cast("type[Any]", report.__class__)):
        report = attrs.asdict(report)
    try:
        return json.loads(json.dumps(report, allow_nan=True))
    except (TypeError, ValueError):
        return None


def call_hook(fn: Callable[..., Any], *args: Any, **optional: Any) -> Any:
    """``fn(*args)`` with those of the keyword arguments ``optional`` that ``fn`` declares (hooks that
    gained an argument keep working with plugins written before it)."""
    params = inspect.signature(fn).parameters
    varkw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return fn(*args, **{k: v for k, v in optional.items() if varkw or k in params})


def plugin_location(exc: BaseException, plugin: Any) -> tuple[str, int] | None:
    """``(file, line)`` where ``exc`` left the code of ``plugin`` (an instance, a function of it, or its
    module's name): the innermost frame of its traceback inside the plugin's top-level package (its
    module's file when it has none); None when no frame is there. PluginError shows it by default."""
    name = plugin if isinstance(plugin, str) else getattr(plugin, "__module__", None) or type(plugin).__module__
    top = sys.modules.get(name.partition(".")[0]) or sys.modules.get(name)  # a module that failed to import
    if top is None:  # is gone, its package stays
        return None
    paths = list(getattr(top, "__path__", ())) or [os.path.dirname(getattr(top, "__file__", "") or "")]
    roots = tuple(os.path.join(p, "") for p in paths if p)
    found, tb = None, exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if roots and filename.startswith(roots):
            found = (filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


def hook(plugin: Any, name: str) -> Any:
    """``plugin``'s hook ``name`` (an attribute or bound method), else the default of :class:`Plugin`."""
    if name not in _HOOKS:
        raise ConfigError(f"{name!r} is not a plugin hook; hooks: {', '.join(_HOOKS)}")
    value = getattr(plugin, name, None)
    if value is not None:
        return value
    default = getattr(Plugin, name)
    return default.__get__(plugin) if callable(default) else default


# -- callbacks and listeners ---------------------------------------------------------
_hookimpl = pluggy.HookimplMarker(PROJECT)
CALLBACK_ATTR = "__gpuc_callback__"
F = TypeVar("F", bound=Callable[..., Any])


@attrs.frozen
class Callback:
    """What a :func:`callback` or :func:`listener` decorator recorded."""

    point: str
    """Hook point (``"ad"``, ``"optimize.late"``...) or event (``"stage_finished"``)."""
    name: str
    """The method's name, used in errors and ``gpuc plugins``."""
    markers: tuple[str, ...] = ()
    """Function names; when non-empty the callback runs only in a job whose module has had one of them
    (a fact of the job from the first hook point on: still true once optimisation deleted it)."""
    order: int = 0
    """Lower runs first; ties go by plugin name, then declaration order."""
    before: tuple[str, ...] = ()
    """Plugin names: this callback runs before every callback of theirs at the same hook point."""
    after: tuple[str, ...] = ()
    """Plugin names: this callback runs after every callback of theirs at the same hook point."""


def _names(value: str | Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def callback(stage: str, *, markers: str | Iterable[str] = (), order: int = 0, before: str | Iterable[str] = (),
             after: str | Iterable[str] = ()) -> Callable[[F], F]:
    """Mark a method ``fn(self, job, module, state)`` (any of :data:`HOOK_ARGS`) to run at hook point ``stage``.

    ``markers``: run only in a job whose module has had a function of one of
    these names at a hook point so far (kept when optimisation later deletes
    a dead declaration: look them up with ``.get``). ``order``: lower runs first (default 0). ``before`` / ``after``:
    plugin names whose callbacks at this hook point this one precedes /
    follows when they are enabled (``after="enzyme"``); they win over ``order``.
    """
    if stage not in HOOK_POINTS:
        raise UnknownStageError(stage, HOOK_POINTS,
                                hint="optimize has the points optimize.early, optimize.late, optimize.last")
    names = (_names(markers), int(order), _names(before), _names(after))

    def mark(fn: F) -> F:
        setattr(fn, CALLBACK_ATTR, Callback(stage, fn.__name__, *names))
        return _hookimpl(specname=hook_spec_name(stage))(fn)

    return mark


def listener(fn: F) -> F:
    """Mark a method named after an event of :data:`EVENTS` (``stage_started``, ``stage_finished``)."""
    if fn.__name__ not in EVENTS:
        raise ConfigError(f"listener {fn.__name__!r} is not an event; events: {', '.join(EVENTS)}")
    setattr(fn, CALLBACK_ATTR, Callback(fn.__name__, fn.__name__))
    return _hookimpl(specname="gpuc_" + fn.__name__)(fn)


__all__ = ["EVENTS", "HOOK_ARGS", "HOOK_POINTS", "STAGES", "STAGE_INDEX", "STAGE_NAMES", "STAGE_OF_HOOK",
           "Callback", "JSONData", "Plugin", "Stage", "call_hook", "callback", "hook", "hook_spec_name", "listener",
           "plugin_location", "report_data"]
