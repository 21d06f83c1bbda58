"""Installed plugins are isolated from each other at discovery: one whose entry point fails to load is
left out of the listing (with a warning) instead of breaking every listing, ``gpuc --help`` and the
misspelt-name error; a job that names it gets its error."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

import gpucompiler.plugin as gp
from gpucompiler.errors import PluginError, UnknownPluginError

from installing import HERE, install

BROKEN = {"broken_plugin": "author_plugins.broken:Broken", "divsan": "author_plugins.divsan:DivSan"}


@pytest.fixture
def with_broken(tmp_path, fresh_registry, monkeypatch):
    site = install(tmp_path, "broken_dist", BROKEN)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(HERE))
    importlib.invalidate_caches()
    return site


def test_listing_every_plugin_leaves_a_broken_one_out(with_broken):
    with pytest.warns(RuntimeWarning, match=r"plugin 'broken_plugin' failed in stage 'discovery'.*ModuleNotFoundError"):
        found = gp.discovered()
    assert "divsan" in found and "broken_plugin" not in found and "enzyme" in found


def test_a_misspelt_name_is_still_an_unknown_plugin_error(with_broken):
    with pytest.warns(RuntimeWarning), pytest.raises(UnknownPluginError,
                                                     match=r"unknown plugin 'divsn'.*failing to load: broken_plugin"):
        gp.enabled(("divsn",))


def test_a_job_naming_the_broken_plugin_gets_its_error(with_broken):
    with pytest.raises(PluginError, match=r"broken_plugin.*discovery.*author_plugins\.broken"):
        gp.enabled(("broken_plugin",))
    with pytest.warns(RuntimeWarning):
        gp.discovered()
    with pytest.raises(PluginError, match="broken_plugin"):  # after the listing too
        gp.enabled(("broken_plugin",))


def test_gpuc_help_works_with_a_broken_plugin_installed(with_broken):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(with_broken), str(HERE), *sys.path]))
    done = subprocess.run([sys.executable, "-m", "gpucompiler", "--help"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout.lower() and "broken_plugin" in done.stderr
