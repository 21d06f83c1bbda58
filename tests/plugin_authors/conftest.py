"""Plugins registered for one test, and the author plugins installed through entry points.

``installed`` writes a ``*.dist-info`` with an ``entry_points.txt`` (group ``gpucompiler.plugins``) into
a temporary directory on ``sys.path``, as ``pip install`` of a package would, and gives the tests a
fresh plugin registry, so the plugins are found and loaded like any installed plugin (gpucompiler/discovery.py).
"""

from __future__ import annotations

import importlib
import sys

import pytest

import gpucompiler.plugin as gp

from installing import AUTHOR_PLUGINS, HERE, install


@pytest.fixture
def fresh_registry():
    """A registry built anew for the test (entry points looked up again), the old one back after it."""
    saved = gp._manager  # pyright: ignore[reportPrivateUsage]
    gp._manager = None  # pyright: ignore[reportPrivateUsage]
    try:
        yield
    finally:
        gp._manager = saved  # pyright: ignore[reportPrivateUsage]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A directory on ``sys.path`` holding the author plugins' distribution (and their package's)."""
    directory = install(tmp_path_factory.mktemp("site"), "author_plugins", AUTHOR_PLUGINS)
    sys.path[:0] = [str(directory), str(HERE)]
    importlib.invalidate_caches()
    yield directory
    for p in (str(directory), str(HERE)):
        sys.path.remove(p)
    importlib.invalidate_caches()


@pytest.fixture
def installed(site, fresh_registry):
    """The author plugins installed (entry points), in a fresh registry."""
    return site


@pytest.fixture
def register():
    """``register(PluginClass)`` for the duration of one test."""
    names: list[str] = []

    def add(plugin, **kwargs):
        instance = gp.register(plugin, replace=True, **kwargs)
        names.append(instance.name)
        return instance

    yield add
    for name in reversed(names):
        if name in gp.discovered():
            gp.unregister(name)
