"""Plugins registered for one test only."""

from __future__ import annotations

import pytest

import gpucompiler.plugin as gp


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
