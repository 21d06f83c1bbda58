"""Installed plugins are isolated from each other at discovery: one whose entry point fails to load is
left out of the listing (with a warning) instead of breaking every listing, ``gpuc --help`` and the
misspelt-name error; a job that names it gets its error."""

from __future__ import annotations

import importlib
import json
import os
import re
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


# -- a plugin that imports but fails inside, a plugin whose add_commands fails, the gpuc commands -----------
BROKEN_INSIDE = '''
import gpucompiler.plugin as gp
import missing_dependency_of_the_plugin  # an uninstalled requirement


class Inside(gp.Plugin):
    name, version = "broken_inside", "1"
'''
BAD_COMMANDS = '''
import gpucompiler.plugin as gp


class BadCommands(gp.Plugin):
    name, version = "bad_commands", "1"

    def add_commands(self, subparsers):
        raise RuntimeError("add_commands of bad_commands is broken")
'''
IR = "define i32 @f(i32 %x) {\n  ret i32 %x\n}\n"


@pytest.fixture
def with_two_broken(tmp_path, fresh_registry, monkeypatch):
    site = install(tmp_path / "site", "broken_two", {"broken_inside": "broken_pkg.inside:Inside",
                                                     "bad_commands": "broken_pkg.commands:BadCommands",
                                                     "divsan": "author_plugins.divsan:DivSan"})
    (site / "broken_pkg").mkdir()
    (site / "broken_pkg" / "__init__.py").write_text("")
    (site / "broken_pkg" / "inside.py").write_text(BROKEN_INSIDE)
    (site / "broken_pkg" / "commands.py").write_text(BAD_COMMANDS)
    (tmp_path / "f.ll").write_text(IR)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(HERE))
    importlib.invalidate_caches()
    yield site
    for name in [m for m in sys.modules if m.startswith("broken_pkg")]:
        del sys.modules[name]


def gpuc(site, *args, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(HERE), *sys.path]))
    return subprocess.run([sys.executable, "-m", "gpucompiler", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=cwd)


def test_a_plugin_failing_inside_its_module_is_reported_with_its_file_line_and_import_error(with_two_broken):
    with pytest.raises(PluginError) as info:
        gp.enabled(("broken_inside",))
    error = info.value
    assert error.plugin == "broken_inside" and error.stage == "discovery"
    assert isinstance(error.cause, ModuleNotFoundError) and "missing_dependency_of_the_plugin" in str(error)
    assert error.at is not None and error.at[0].endswith("inside.py") and error.at[1] == 3
    with pytest.warns(RuntimeWarning, match="broken_inside"):
        failed = gp.failed()
    assert list(failed) == ["broken_inside"] and "missing_dependency_of_the_plugin" in str(failed["broken_inside"])


def test_every_gpuc_command_works_beside_two_broken_plugins(with_two_broken, tmp_path):
    helped = gpuc(with_two_broken, "--help")
    assert helped.returncode == 0, helped.stderr
    assert "enzyme" in helped.stdout  # the other plugins' subcommands are there
    assert "broken_inside" in helped.stderr and "add_commands of bad_commands is broken" in helped.stderr
    listed = gpuc(with_two_broken, "plugins", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {p["name"]: p for p in json.loads(listed.stdout)}
    assert "missing_dependency_of_the_plugin" in rows["broken_inside"]["error"]
    assert rows["divsan"]["callbacks"] and rows["bad_commands"]["version"] == "1"
    table = gpuc(with_two_broken, "plugins")
    assert table.returncode == 0 and "broken_inside: failed to load: " in table.stdout
    compiled = gpuc(with_two_broken, "compile-ir", "f.ll", "--plugin", "divsan", cwd=tmp_path)
    assert compiled.returncode == 0 and "define i32 @f" in compiled.stdout, compiled.stderr


def test_gpuc_names_the_broken_plugin_a_job_asks_for_and_keeps_the_misspelt_name_error(with_two_broken, tmp_path):
    asked = gpuc(with_two_broken, "compile-ir", "f.ll", "--plugin", "broken_inside", cwd=tmp_path)
    assert asked.returncode == 1 and "Traceback" not in asked.stderr
    assert re.search(r"gpuc: error: plugin 'broken_inside' failed in stage 'discovery'.*inside\.py:3.*"
                     r"ModuleNotFoundError: No module named 'missing_dependency_of_the_plugin'", asked.stderr)
    misspelt = gpuc(with_two_broken, "compile-ir", "f.ll", "--plugin", "divsn", cwd=tmp_path)
    assert misspelt.returncode == 1 and "Traceback" not in misspelt.stderr
    assert re.search(r"gpuc: error: unknown plugin 'divsn'.*failing to load: broken_inside", misspelt.stderr)
