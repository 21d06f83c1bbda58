"""The default cache directory: ``GPUC_CACHE_DIR``, else an absolute ``XDG_CACHE_HOME``, else ``~/.cache``,
``gpucompiler`` under it: platformdirs' ``user_cache_dir`` on Linux (compared with it when installed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpucompiler.settings import CacheSettings, default_cache_dir

HOME = "/home/someone"
CASES = [
    ({"XDG_CACHE_HOME": "/var/cache/me"}, "/var/cache/me/gpucompiler"),
    ({"XDG_CACHE_HOME": ""}, f"{HOME}/.cache/gpucompiler"),
    ({}, f"{HOME}/.cache/gpucompiler"),
    # relative: not a base directory (the XDG spec: such a value is invalid and ignored), else the cache
    # would move with the working directory
    ({"XDG_CACHE_HOME": "cache"}, f"{HOME}/.cache/gpucompiler"),
    ({"XDG_CACHE_HOME": "./here/"}, f"{HOME}/.cache/gpucompiler"),
    ({"XDG_CACHE_HOME": "   "}, f"{HOME}/.cache/gpucompiler"),
]


@pytest.fixture
def home(monkeypatch):
    monkeypatch.setenv("HOME", HOME)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("GPUC_CACHE_DIR", raising=False)
    return monkeypatch


@pytest.mark.parametrize("environ, want", CASES)
def test_default_cache_dir(home, environ, want):
    assert default_cache_dir({"HOME": HOME, **environ}) == Path(want)
    assert default_cache_dir({"GPUC_CACHE_DIR": "/elsewhere", **environ}) == Path("/elsewhere")
    assert CacheSettings.from_env({"HOME": HOME, **environ}).directory == Path(want)


@pytest.mark.parametrize("environ, want", CASES)
def test_the_same_as_platformdirs(home, environ, want):
    platformdirs = pytest.importorskip("platformdirs")
    for name, value in environ.items():
        home.setenv(name, value)
    assert platformdirs.user_cache_dir("gpucompiler") == want == str(default_cache_dir(os.environ))
