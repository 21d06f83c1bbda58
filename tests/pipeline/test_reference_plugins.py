"""The reference plugins (``mock_enzyme``, ``instrumentation``) are not registered by installing gpucompiler:
the test run installs them (tests/conftest.py), a user registers them by hand."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gpucompiler.plugin as gp

TESTS = Path(__file__).resolve().parents[1]
REFERENCE = {"mock_enzyme", "instrumentation"}


def plain_env() -> dict[str, str]:
    """The environment of a user's shell: nothing of the test run's on the path (the project imports through
    its installed distribution, an editable install here)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUC_TEST_PLUGIN_SITE")}


def run_plain(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        importlib.metadata.distribution("gpucompiler")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("gpucompiler is not installed (only on PYTHONPATH): no plain environment to start")
    return subprocess.run([sys.executable, *args], cwd=cwd, env=plain_env(), capture_output=True, text=True,
                          timeout=120)


def test_gpuc_plugins_in_a_plain_environment_lists_no_reference_plugin(tmp_path):
    proc = run_plain(["-m", "gpucompiler", "plugins", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    names = {p["name"] for p in json.loads(proc.stdout)}
    assert "enzyme" in names  # the project's own plugin stays registered
    assert not names & REFERENCE
    dist = importlib.metadata.distribution("gpucompiler")
    assert {ep.name for ep in dist.entry_points if ep.group == gp.ENTRY_POINT_GROUP} == {"enzyme"}


def test_a_user_enables_mock_enzyme_by_registering_it(tmp_path):
    """docs/plugins.md's spelling: unknown until ``gp.register(MockEnzymePlugin)``, then it runs."""
    script = textwrap.dedent("""
        import gpucompiler.plugin as gp
        from gpucompiler import jit
        from gpucompiler.errors import UnknownPluginError
        from gpucompiler_plugins.mock_autodiff import mock_autodiff
        from gpucompiler_plugins.mock_enzyme import MockEnzymePlugin

        def cube(x):
            return x * x * x

        def f(x):
            return mock_autodiff(cube, x) + 1.0

        try:
            jit(f, plugins=("mock_enzyme",))(2.0)
        except UnknownPluginError as exc:
            print("unknown:", "gpucompiler.plugin.register" in str(exc))
        gp.register(MockEnzymePlugin)
        print(jit(f, plugins=("mock_enzyme",))(2.0))
    """)
    proc = run_plain(["-c", script], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["unknown:", "True", "9.0"]


def test_the_test_run_installs_them_once_for_itself_and_its_subprocesses(request, monkeypatch):
    site = os.environ["GPUC_TEST_PLUGIN_SITE"]
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=gp.ENTRY_POINT_GROUP)}
    assert set(eps) >= REFERENCE
    assert {getattr(eps[n].dist, "name", None) for n in REFERENCE} == {"gpucompiler_reference_plugins"}
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == site and site in sys.path
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "plugins", "--json"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert {p["name"] for p in json.loads(proc.stdout)} >= REFERENCE
    conftest = next(p for p in request.config.pluginmanager.get_plugins()
                    if getattr(p, "__file__", None) == str(TESTS / "conftest.py"))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != site])  # a worker started without it
    for _ in range(2):  # idempotent: xdist's workers run it again, with the controller's environment
        conftest.pytest_configure(request.config)
    assert os.environ["GPUC_TEST_PLUGIN_SITE"] == site
    assert os.environ["PYTHONPATH"].split(os.pathsep).count(site) == 1 and sys.path.count(site) == 1
