"""Plugins in job keys: each enabled plugin's ``[name, version, settings, code]``, found without importing it.

A key document (:mod:`.documents`) names the plugins its job enables by
these identities; this module (and the plugin registry it asks) loads only
for a job that names plugins. See docs/cache.md "Plugins in keys".
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
from typing import Any
from collections.abc import Callable, Iterable

from .. import plugin as gp
from ..hashing import canonical
from .codeprint import code_digest, files_under, memo_path, memoised_digest, publish, read_memo, source_files
from .entrypoints import Installed, installed
from .hookprobe import defines_no_settings
from .imports import import_closure
from ..interface import Plugin

_COMPILER = __name__.partition(".")[0]


def plugin_identity(names: Iterable[str]) -> list[list[Any]]:
    """The identities of the enabled plugins, sorted by name, importing none that is installed.

    Each is ``[name, version, settings, code]``. An installed plugin (an entry
    point of group ``gpucompiler.plugins``) has ``"distribution==version"`` read from its
    distribution's metadata and files (:func:`installed_identity`), the same
    whether or not this process has imported it. A plugin registered by hand
    (or one replacing an entry point's class) has its instance's ``version``
    and ``code`` the digest of the files its class's module runs (:func:`covered_files`).
    ``settings`` is what the plugin's optional ``cache_settings()`` returns
    (JSON-able data describing options that change its output), else None.
    """
    out = []
    for name in sorted(set(names)):
        ep = installed(name)
        p = gp.loaded(name)
        if ep is not None and (p is None or gp.loaded_from_entry_point(p)):
            out.append(installed_identity(ep, p))
            continue
        if p is None:
            p = gp.enabled([name])[0]  # registers it, or raises UnknownPluginError
        out.append([p.name, p.version, _settings(p), plugin_code(type(p).__module__)])
    return out


def _settings(plugin: Any) -> Any:
    settings = gp.hook(plugin, "cache_settings")()
    return None if settings is None else canonical(settings)


def installed_identity(ep: Installed, plugin: Any = None) -> list[Any]:
    """``[name, "distribution==version", settings, code]`` of the entry point ``ep`` (memoised with the
    distributions' stamp: :mod:`.entrypoints`).

    ``code`` is the digest of the files the entry point's module runs
    (:func:`covered_files`: not its package's other plugins), found on ``sys.path`` and hashed
    without importing anything (memoised in the cache directory: :func:`plugin_code`).
    ``settings`` needs the plugin's ``cache_settings()``: it is called when the
    plugin is loaded (``plugin``), or when the plugin's class defines one or may
    (a memo written the first time the plugin was loaded with these files says so,
    or, without a memo, the package's source does not show that it defines none:
    :mod:`.hookprobe`); otherwise None without importing it.
    """
    code = plugin_code(ep.module)
    defines = None if code is None else _defines_settings(ep.name, code)
    if plugin is None and code is not None and defines is None and _reads_no_settings(ep):
        defines = False
        _note_settings(ep.name, code, False)
    if plugin is None and defines is not False:
        plugin = gp.enabled([ep.name])[0]  # unknown yet: import it once
    settings = None if plugin is None else _settings(plugin)
    if plugin is not None and code is not None:
        _note_settings(ep.name, code, _has_settings_hook(plugin))
    return [ep.name, ep.dist, settings, code]


@functools.cache
def plugin_code(module: str) -> str | None:
    """The digest of the files :func:`covered_files` names for module ``module``, once per process
    (memoised in the cache directory with their stamp: :func:`.codeprint.memoised_digest`).

    A module of gpucompiler itself (a built-in plugin: the CPU grid emulation's) has the compiler's
    digest, which every key holds already: no import closure of the compiler's modules is found.
    """
    if module.partition(".")[0] == _COMPILER:
        return code_digest(_COMPILER)
    where = _located(module)
    if where is None:
        return None
    top, root, scan = where
    return memoised_digest(top, root, f"{module}::imports", scan)


def covered_files(module: str) -> list[str] | None:
    """The files a plugin's code digest covers when its class is in module ``module``, found without
    importing, relative to its top-level package's directory.

    For a module of a package: the files that module runs
    (:func:`.imports.import_closure`): its own, its packages' ``__init__`` files and the modules
    of its top-level package they import, not the package's other modules, so two plugins in one
    package key apart. For a top-level single-file module, that file. None when the module has no
    source (on ``sys.path``, or in ``sys.modules`` for a plugin defined in a script). For a module of
    gpucompiler: every file of the compiler (:func:`plugin_code`).
    """
    if module.partition(".")[0] == _COMPILER:
        files = source_files(_COMPILER)
        return None if files is None else [rel for rel, _ in files]
    where = _located(module)
    return None if where is None else [rel for rel, _ in where[2]()]


def _located(module: str) -> tuple[str, str, Callable[[], list[tuple[str, str]]]] | None:
    """``(top-level name, its directory or file, a function listing the covered files)`` of ``module``."""
    top = module.partition(".")[0]
    loaded = sys.modules.get(top)
    if loaded is not None and getattr(loaded, "__file__", None):
        paths, origin = list(getattr(loaded, "__path__", ()) or ()), str(loaded.__file__)
    else:
        try:
            spec = importlib.util.find_spec(top)  # a top-level name: found, not imported
        except (ImportError, ValueError):
            return None
        if spec is None or spec.origin is None or not spec.has_location:
            return None
        paths, origin = list(spec.submodule_search_locations or ()), spec.origin
    if not paths:  # a single-file module
        return (top, origin, lambda: [(os.path.basename(origin), origin)]) if module == top else None
    root, parts = paths[0], module.split(".")[1:]
    if not (os.path.isfile(os.path.join(root, *parts) + ".py") or os.path.isfile(os.path.join(root, *parts, "__init__.py"))):
        return None
    return top, root, functools.partial(import_closure, top, root, module)


def _reads_no_settings(ep: Installed) -> bool:
    """Whether the source of entry point ``ep``'s package shows that its class defines no
    ``cache_settings`` (:mod:`.hookprobe`; a single-file module is not read)."""
    where = _located(ep.module)
    if where is None or not ep.attr or "." in ep.attr or not os.path.isdir(where[1]):
        return False
    top, root, _ = where
    return defines_no_settings(top, root, files_under(root), ep.module, ep.attr)


def _has_settings_hook(plugin: Any) -> bool:
    fn = getattr(getattr(plugin, "cache_settings", None), "__func__", None)
    return fn is not None and fn is not Plugin.cache_settings


def _settings_memo(name: str, code: str) -> str | None:
    """The memo of whether plugin ``name`` at code digest ``code`` defines ``cache_settings``."""
    return memo_path(f"plugin-{name}", code)


def _defines_settings(name: str, code: str) -> bool | None:
    """Whether plugin ``name`` with code digest ``code`` defines ``cache_settings`` (None: not known)."""
    path = _settings_memo(name, code)
    memo = None if path is None else read_memo(path)
    value = None if memo is None else memo.get("cache_settings")
    return value if isinstance(value, bool) else None


def _note_settings(name: str, code: str, defines: bool) -> None:
    path = _settings_memo(name, code)
    if path is not None and _defines_settings(name, code) is not defines:
        publish(path, json.dumps({"cache_settings": defines}))
