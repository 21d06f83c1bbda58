"""The plugin registry: discover plugins, enable them per job, hand out their callbacks in order.

The hooks a plugin implements are declared in :mod:`gpucompiler.interface`
(re-exported here: ``gp.Plugin``, ``gp.callback``, ``gp.listener``)::

    import gpucompiler.plugin as gp

    class Square(gp.Plugin):
        name = "square"; version = "1.0"

        @gp.callback("ad", markers=("__autodiff",))
        def rewrite(self, job, module):   # module: gpucompiler.module.IRModule
            ...

Plugins come from the entry-point group ``gpucompiler.plugins`` (read from the
installed distributions once per registry and ``sys.path``: :mod:`.discovery`,
shared with the cache keys) or from :func:`register`; a job runs only the
plugins its ``CompilerConfig.plugins`` names. Callbacks of one hook point run
in a fixed order: by ``order`` (lower first), then plugin name, then
declaration order in the class.

pluggy carries the registry: one hookspec per hook point and validation of
callback signatures against the hookspecs (not its entry-point loading, which
reads every distribution's entry points again for each plugin). The pipeline
does *not* call ``pm.hook.<name>(...)``: it reads the hook implementations,
keeps the enabled plugins, sorts them as above and calls them one by one, so
that marker gating, ordering and error attribution are ours (pluggy's own
order is registration LIFO).
"""

from __future__ import annotations

import inspect
import sys
import threading
import warnings
from typing import Any, TypeVar, overload
from collections.abc import Callable, Iterable

import attrs
import pluggy

from . import discovery
from .errors import ConfigError, PluginError, UnknownPluginError
from .interface import (CALLBACK_ATTR as _ATTR, EVENTS, HOOK_ARGS, HOOK_POINTS, PROJECT, Callback, Plugin,
                        call_hook, callback, hook, hook_spec_name, listener, plugin_location)

ENTRY_POINT_GROUP = "gpucompiler.plugins"
P = TypeVar("P")
_hookspec = pluggy.HookspecMarker(PROJECT)


def _make_specs() -> type:
    def spec(args: tuple[str, ...], name: str) -> Callable[..., Any]:
        namespace: dict[str, Any] = {}
        exec(f"def {name}({', '.join(args)}): pass", namespace)  # a signature pluggy can inspect
        return _hookspec(namespace[name])

    table: dict[str, tuple[str, ...]] = {hook_spec_name(p): HOOK_ARGS for p in HOOK_POINTS}
    table.update({"gpuc_" + e: args for e, args in EVENTS.items()})
    return type("HookSpecs", (), {n: staticmethod(spec(a, n)) for n, a in table.items()})


@attrs.frozen
class BoundCallback:
    """A callback of one registered plugin, ready to call."""

    plugin: Any
    info: Callback
    function: Callable[..., Any]
    argnames: tuple[str, ...]
    rank: int
    """Declaration index in the plugin's class."""

    @property
    def plugin_name(self) -> str:
        return self.plugin.name

    def sort_key(self) -> tuple[int, str, int]:
        return (self.info.order, self.plugin.name, self.rank)

    def __call__(self, **kwargs: Any) -> Any:
        return self.function(**{n: kwargs[n] for n in self.argnames})


def declared_callbacks(plugin: Any) -> list[Callback]:
    """The callbacks and listeners of the plugin instance ``plugin`` in declaration order."""
    return [getattr(fn, _ATTR) for fn in _declared_functions(plugin).values()]


def _declared_functions(plugin: Any) -> dict[str, Callable[..., Any]]:
    """Attribute name -> marked function, base classes first, in definition order."""
    seen: dict[str, Callable[..., Any]] = {}
    for holder in (*reversed(type(plugin).__mro__), plugin):
        for attr, value in getattr(holder, "__dict__", {}).items():
            fn = getattr(value, "__func__", value)
            if hasattr(fn, _ATTR):
                seen[attr] = fn
            else:
                seen.pop(attr, None)
    return seen


class _Manager(pluggy.PluginManager):
    """pluggy's manager that instantiates plugin classes and checks identity and signatures."""

    def __init__(self, project_name: str):
        super().__init__(project_name)
        self.tried: set[str] = set()
        """names whose entry points were looked for (each is loaded at most once per process)"""
        self.complete = False
        """whether every installed entry point was looked at"""
        self.broken: dict[str, PluginError] = {}
        """installed entry points that failed to load while every plugin was listed, by name: left out
        of the listing (a warning), their error raised when a job names them"""
        self.found: discovery.Found | None = None
        """the installed entry points, read (not loaded) once: :func:`installed_entry_points`"""
        self.installed: dict[str, Any] = {}
        """the instances loaded from installed entry points, by name (:func:`loaded_from_entry_point`)"""

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        instance = plugin() if inspect.isclass(plugin) else plugin
        pname, version = getattr(instance, "name", ""), getattr(instance, "version", None)
        if not isinstance(pname, str) or not pname.isidentifier():
            raise ConfigError(f"plugin {instance!r} needs a `name` that is an identifier, got {pname!r}")
        if not isinstance(version, str):
            raise ConfigError(f"plugin {pname!r} needs a string `version`, got {version!r}")
        if name is not None and name != pname:
            raise ConfigError(f"entry point {name!r} loads plugin named {pname!r}; the names must match")
        _check_signatures(instance)
        return super().register(instance, name=pname)


def _check_signatures(plugin: Any) -> None:
    for attr, fn in _declared_functions(plugin).items():
        info: Callback = getattr(fn, _ATTR)
        allowed = EVENTS.get(info.point, HOOK_ARGS)
        params = list(inspect.signature(getattr(plugin, attr)).parameters)
        extra = [p for p in params if p not in allowed]
        if extra:
            cause = TypeError(f"arguments {extra} are not among {list(allowed)}")
            raise PluginError(plugin.name, info.point, info.name, cause)


_manager: _Manager | None = None
_BUILDING = threading.RLock()


#: plugins the framework itself provides (e.g. the CPU grid emulation's rules), registered with
#: the registry when it is first built: declaring one costs no entry-point discovery at import
_BUILTIN: list[Any] = []


def builtin(plugin: Any) -> Any:
    """Declare a plugin the framework provides; registered when the registry is first used."""
    if _manager is not None:
        register(plugin, replace=True)
    else:
        _BUILTIN.append(plugin)
    return plugin


def _registry() -> _Manager:
    """The process's manager: the built-in plugins, and the entry points loaded so far."""
    global _manager
    if _manager is not None:
        return _manager
    with _BUILDING:  # threads compiling at once in a fresh process must share one manager (its instances)
        if _manager is None:
            _manager = _build()
    return _manager


def _build() -> _Manager:
    """A manager with the built-in plugins; installed entry points load when asked for (:func:`_load`)."""
    manager = _Manager(PROJECT)
    manager.add_hookspecs(_make_specs())
    for plugin in _BUILTIN:
        manager.register(plugin() if inspect.isclass(plugin) else plugin)
    return manager


def _load(names: Iterable[str] | None = None) -> _Manager:
    """The manager, with the installed entry points named ``names`` (every one when None) loaded.

    A job pays only for the plugins it enables: a kernel on the CPU grid emulation (a built-in
    plugin) or a plain ``@jit`` function imports no installed plugin (the Enzyme plugin's modules
    cost a first launch more than its compile).
    """
    manager = _registry()
    if manager.complete:
        return manager
    wanted = None if names is None else {n for n in names if manager.get_plugin(n) is None} - manager.tried
    if wanted == set():
        return manager
    found = installed_entry_points()
    with _BUILDING:  # one instance per plugin however many threads ask at once
        for ep in sorted(found.first().values(), key=lambda e: e.name):
            if ep.name in manager.tried or (wanted is not None and ep.name not in wanted):
                continue
            if manager.get_plugin(ep.name) is None:  # not registered by hand first
                try:
                    manager.register(ep.load(), name=ep.name)
                    manager.installed[ep.name] = manager.get_plugin(ep.name)
                except Exception as exc:  # an installed plugin that does not load
                    error = exc if isinstance(exc, PluginError) else PluginError(
                        ep.name, "discovery", ep.value, exc, at=plugin_location(exc, ep.value.partition(":")[0]))
                    if wanted is not None:
                        raise error from exc  # a job names it (asked again: raises again)
                    manager.broken[ep.name] = error  # listing every plugin: the others stay usable
                    warnings.warn(f"{error}; left out of the installed plugins", RuntimeWarning, stacklevel=3)
            manager.tried.add(ep.name)
        if wanted is None:
            manager.complete = True
        else:
            manager.tried |= wanted  # not installed: not looked for again
    return manager


@overload
def register(plugin: type[P], *, replace: bool = False) -> P: ...
@overload
def register(plugin: P, *, replace: bool = False) -> P: ...


def register(plugin: Any, *, replace: bool = False) -> Any:
    """Register a plugin class or instance programmatically; returns the instance.

    A name already taken (an installed plugin's included) raises :class:`ConfigError` unless
    ``replace=True`` (handy when a notebook cell that defines a plugin runs again).
    """
    instance = plugin() if inspect.isclass(plugin) else plugin
    name = getattr(instance, "name", None) or ""
    manager = _load([name])
    old = manager.get_plugin(name)
    if old is not None:
        if not replace:
            raise ConfigError(f"a plugin named {name!r} is already registered; pass replace=True")
        manager.unregister(old)
    manager.register(instance)
    return instance


def unregister(name: str) -> None:
    """Remove the plugin registered as ``name``."""
    manager = _load([name])
    if manager.get_plugin(name) is None:
        raise UnknownPluginError(name, discovered())
    manager.unregister(name=name)


def discovered() -> dict[str, Any]:
    """Every known plugin (entry points and :func:`register`), by name, sorted."""
    return dict(sorted((n, p) for n, p in _load().list_name_plugin() if p is not None))


def failed() -> dict[str, PluginError]:
    """The installed plugins whose entry points fail to load, by name, sorted, each with its error
    (``PluginError`` at stage ``discovery``: the plugin's name, the entry point and the import error)."""
    return dict(sorted(_load().broken.items()))


def installed_entry_points() -> discovery.Found:
    """The installed entry points of group ``gpucompiler.plugins``, read from the distributions' metadata once
    per registry and ``sys.path`` (:func:`.discovery.scan`), loading no plugin (cache keys: no imports)."""
    manager = _registry()
    found = manager.found
    if found is None or found.sys_path != tuple(sys.path):
        with _BUILDING:
            found = manager.found
            if found is None or found.sys_path != tuple(sys.path):  # a directory added since: read again
                found = manager.found = discovery.scan(ENTRY_POINT_GROUP)
    return found


def read_entry_points() -> discovery.Found | None:
    """The registry's :func:`installed_entry_points` of the current ``sys.path`` if read already, else None;
    reads nothing."""
    found = _registry().found
    return found if found is not None and found.sys_path == tuple(sys.path) else None


def entry_point(name: str) -> discovery.EntryPoint | None:
    """The installed entry point named ``name`` (the first on ``sys.path`` when several are), None if none."""
    return installed_entry_points().first().get(name)


def loaded(name: str) -> Any:
    """The plugin registered as ``name`` in this process so far, None if none yet; loads nothing.

    Before the registry is built (every registration builds it) only a built-in plugin can answer: a
    name none of them has is None without building it (~0.5 ms of a cached gradient's first call)."""
    if _manager is None and all(isinstance(getattr(p, "name", None), str) and p.name != name for p in _BUILTIN):
        return None
    return _registry().get_plugin(name)


def loaded_from_entry_point(plugin: Any) -> bool:
    """Whether ``plugin`` is the instance its installed entry point loaded (not one registered by hand)."""
    return _registry().installed.get(str(getattr(plugin, "name", ""))) is plugin


def enabled(names: Iterable[str]) -> tuple[Any, ...]:
    """The plugins named by ``names``, sorted by name; an unknown name raises."""
    names = tuple(names)
    if not names:
        return ()  # no discovery (entry-point loading) for jobs without plugins
    manager = _load(names)
    for n in names:
        if manager.get_plugin(n) is None:
            if n in manager.broken:
                raise manager.broken[n]
            known = discovered()
            broken = f"; installed but failing to load: {', '.join(sorted(manager.broken))}" if manager.broken else ""
            raise UnknownPluginError(n, known, hint="install it (entry point group "
                                     f"{ENTRY_POINT_GROUP!r}) or call gpucompiler.plugin.register{broken}")
    return tuple(manager.get_plugin(n) for n in sorted(set(names)))


def callbacks(plugins: Iterable[Any], point: str) -> list[BoundCallback]:
    """The callbacks of ``plugins`` at hook point or event ``point``, in running order."""
    plugins = tuple(plugins)
    if not plugins:
        return []
    caller = getattr(_registry().hook, hook_spec_name(point) if point in HOOK_POINTS else "gpuc_" + point)
    chosen = {id(p) for p in plugins}
    bound: list[BoundCallback] = []
    for impl in caller.get_hookimpls():
        if id(impl.plugin) in chosen:
            fn = getattr(impl.function, "__func__", impl.function)
            rank = list(_declared_functions(impl.plugin).values()).index(fn)
            bound.append(BoundCallback(impl.plugin, getattr(fn, _ATTR), impl.function, tuple(impl.argnames), rank))
    return constrained(sorted(bound, key=BoundCallback.sort_key), point)


def constrained(ranked: list[BoundCallback], point: str) -> list[BoundCallback]:
    """``ranked`` reordered as little as needed for every ``before`` / ``after`` of its callbacks: each
    step takes the first callback whose predecessors have all run; a cycle raises ConfigError."""
    def precedes(a: BoundCallback, b: BoundCallback) -> bool:
        return a.plugin_name != b.plugin_name and (
            b.plugin_name in a.info.before or a.plugin_name in b.info.after)

    out: list[BoundCallback] = []
    rest = list(ranked)
    while rest:
        ready = next((c for c in rest if not any(precedes(o, c) for o in rest if o is not c)), None)
        if ready is None:
            cycle = ", ".join(f"{c.plugin_name}.{c.info.name}" for c in rest)
            raise ConfigError(f"callbacks at {point!r} order each other in a cycle (before=/after=): {cycle}")
        out.append(ready)
        rest.remove(ready)
    return out


__all__ = ["ENTRY_POINT_GROUP", "EVENTS", "HOOK_ARGS", "BoundCallback", "Callback", "Plugin", "builtin", "callback",
           "call_hook", "callbacks", "constrained", "declared_callbacks", "discovered", "enabled", "entry_point", "failed", "hook", "installed_entry_points", "listener", "loaded", "loaded_from_entry_point", "plugin_location", "read_entry_points", "register", "unregister"]
