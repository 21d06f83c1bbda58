"""Visible compiles: a log record per stage, cache hits with their tier, plugin callbacks; ``last_compile``.

The records go through :mod:`logging` under ``gpucompiler.*``; ``GPUC_LOG``
turns them on from the shell (checked in fresh processes, which also hold
the disk tier's hit).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpucompiler.plugin as gp
from gpucompiler import jit, kernel
from gpucompiler import types as gpuc_types
from gpucompiler.targets import parse_target
from gpucompiler.cache import report as report_module
from gpucompiler.errors import ConfigError
from gpucompiler.interface import STAGE_NAMES
from gpucompiler.settings import LogSettings
from gpucompiler.stages import context

STAGE_RECORD = re.compile(r"^(\S+): stage (\w+) ([0-9.]+) ms$")


def _fresh(offset: float):
    """A function whose key no other test shares (its captured constant): compiled, not found."""
    def poly(x, n):
        s = offset
        for i in range(n):
            s = s * x + i
        return s

    return poly


def test_a_record_per_stage_and_the_report_of_a_miss(caplog):
    caplog.set_level(logging.INFO, logger="gpucompiler")
    f = jit(_fresh(0.0), cache=False)  # no disk tier: a compile
    assert f.last_compile is None
    assert f(2.0, 4) == _fresh(0.0)(2.0, 4) == ((0.0 * 2 + 1) * 2 + 2) * 2 + 3
    rep = f.last_compile
    assert rep is not None and rep.tier == "compiled" and not rep.hit
    stages = [STAGE_RECORD.match(r.getMessage()) for r in caplog.records if r.name == "gpucompiler.stages"]
    assert all(stages)
    assert [m.group(2) for m in stages if m] == list(STAGE_NAMES) == list(rep.stage_times)
    for m in stages:
        assert m and m.group(1).endswith("poly")
        assert float(m.group(3)) == pytest.approx(rep.stage_times[m.group(2)] * 1e3, abs=0.006)
    assert rep.seconds >= sum(rep.stage_times.values()) > 0
    assert rep.ir_sizes["llvm"] > 0 and rep.ir_sizes["obj"] > 0
    misses = [r.getMessage() for r in caplog.records if r.name == "gpucompiler.cache"]
    assert len(misses) == 1 and "miss, compiled" in misses[0] and rep.key[:12] in misses[0]


def test_a_kernel_in_the_grid_emulation_reports_too(caplog):
    caplog.set_level(logging.INFO, logger="gpucompiler")

    @kernel
    def bump(a):
        a[0] = a[0] * 3.0 + 1.0

    a = np.full(2, 2.0)
    bump[1, 1, "cpu"](a)  # pyright: ignore[reportIndexIssue]
    assert a[0] == 7.0
    rep = bump.last_compile
    assert rep is not None and rep.plugins == ("gpuc_grid",) and list(rep.stage_times) == list(STAGE_NAMES)
    assert rep.tier in ("compiled", "memory", "disk")
    assert any(r.name == "gpucompiler.cache" and rep.tier in r.getMessage() for r in caplog.records)


def test_plugin_callbacks_are_logged_with_the_plugin_and_the_point(caplog, register):
    ran = []

    class Watch(gp.Plugin):
        name = "log_watch"
        version = "1"

        @gp.callback("optimize.late")
        def look(self, module):
            ran.append(module.function_names())

    register(Watch)
    caplog.set_level(logging.INFO, logger="gpucompiler")
    f = jit(_fresh(1.0), cache=False, plugins=("log_watch",))
    assert f(3.0, 2) == _fresh(1.0)(3.0, 2) == 10.0
    assert len(ran) == 1
    found = [r.getMessage() for r in caplog.records if r.name == "gpucompiler.plugins"]
    assert len(found) == 1
    assert re.fullmatch(r"\S+poly: plugin log_watch ran look at optimize\.late in [0-9.]+ ms", found[0])
    assert f.last_compile is not None and f.last_compile.plugins == ("log_watch",)


def test_no_records_and_no_work_when_logging_is_off(caplog, monkeypatch):
    caplog.set_level(logging.WARNING, logger="gpucompiler")
    calls = []
    for level in ("info", "debug"):
        real = getattr(logging.Logger, level)

        def spy(self, *a, _real=real, **k):
            if self.name.startswith("gpucompiler"):
                calls.append(self.name)
            return _real(self, *a, **k)

        monkeypatch.setattr(logging.Logger, level, spy)

    def never(*a, **k):
        raise AssertionError("a stage record was prepared with logging off")

    monkeypatch.setattr(context, "_log_stage", never)
    f = jit(_fresh(2.0), cache=False)
    assert f(2.0, 3) == _fresh(2.0)(2.0, 3) == 20.0
    assert calls == []  # not even a call that logging would drop: no message formatted, no IR sized
    assert [r for r in caplog.records if r.name.startswith("gpucompiler")] == []
    assert f.last_compile is not None and f.last_compile.tier == "compiled"  # the report is kept regardless


SCRIPT = textwrap.dedent('''
    import json
    from gpucompiler import jit

    def poly(x, n):
        s = 0.0
        for i in range(n):
            s = s * x + i
        return s

    f = jit(poly)
    value = f(2.0, 4)
    again = jit(poly)  # a second dispatcher of the same function: the process's memory tier
    again(2.0, 4)
    print(json.dumps({"value": value, "tier": f.last_compile.tier, "again": again.last_compile.tier,
                      "stages": f.last_compile.stage_times, "sizes": f.last_compile.ir_sizes}))
''')


def _run(tmp_path, level: str) -> tuple[dict, list[str]]:
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache"), "GPUC_LOG": level}
    env.pop("GPUC_SERVICE_URL", None)
    env.pop("GPUC_CACHE_URL", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr.splitlines()


def test_gpuc_log_from_the_shell_names_the_tier_of_each_hit(tmp_path):
    cold, cold_log = _run(tmp_path, "info")
    assert cold["value"] == 11.0 and cold["tier"] == "compiled" and cold["again"] == "memory"
    stage_lines = [ln for ln in cold_log if ln.startswith("gpucompiler.stages INFO: ")]
    assert [ln.split(" stage ")[1].split()[0] for ln in stage_lines] == list(STAGE_NAMES)
    assert sum("gpucompiler.cache INFO: " in ln and "miss, compiled" in ln for ln in cold_log) == 1
    assert sum("gpucompiler.cache INFO: " in ln and ": memory hit in" in ln for ln in cold_log) == 1
    warm, warm_log = _run(tmp_path, "info")
    assert warm["value"] == 11.0 and warm["tier"] == "disk" and warm["again"] == "memory"
    assert not any(ln.startswith("gpucompiler.stages") for ln in warm_log)  # nothing compiled
    assert sum(": disk hit in" in ln for ln in warm_log) == 1
    assert list(warm["stages"]) == list(STAGE_NAMES)  # the recorded compile's, in running order
    # the entry's shared object is linked after the cold call returned (a later process's hit loads it)
    assert warm["stages"] == pytest.approx(cold["stages"]) and "so" not in cold["sizes"]
    assert {kind: size for kind, size in warm["sizes"].items() if kind != "so"} == cold["sizes"]
    quiet, quiet_log = _run(tmp_path, "off")
    assert quiet["tier"] == "disk" and not any(ln.startswith("gpucompiler") for ln in quiet_log)


def test_gpuc_log_debug_adds_each_stages_ir_size(tmp_path):
    _, log = _run(tmp_path, "debug")
    sizes = [re.search(r"stage (\w+) [0-9.]+ ms, IR (\d+) bytes$", ln) for ln in log
             if ln.startswith("gpucompiler.stages DEBUG: ")]
    assert [m.group(1) for m in sizes if m] == list(STAGE_NAMES)
    assert all(m and int(m.group(2)) > 0 for m in sizes)


def test_gpuc_log_values():
    assert LogSettings.from_env({}).level is None
    assert LogSettings.from_env({"GPUC_LOG": "off"}).level is None
    assert LogSettings.from_env({"GPUC_LOG": "info"}).level == "INFO"
    assert LogSettings.from_env({"GPUC_LOG": " DEBUG "}).level == "DEBUG"
    with pytest.raises(ConfigError, match="GPUC_LOG='verbose': write info, debug"):
        LogSettings.from_env({"GPUC_LOG": "verbose"})


def test_configure_adds_one_handler(monkeypatch):
    root = logging.getLogger("gpucompiler")
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", root.level)
    report_module.configure(LogSettings("DEBUG"))
    report_module.configure(LogSettings("INFO"))
    assert len(root.handlers) == 1 and root.level == logging.INFO
    report_module.configure(LogSettings(None))
    assert len(root.handlers) == 1 and root.level == logging.INFO


def test_a_kernel_compiled_for_ptx_reports_the_size_of_its_ptx(caplog):
    caplog.set_level(logging.INFO, logger="gpucompiler")

    @kernel
    def scale(a, k):
        a[0] = a[0] * k + 0.25

    argtypes = (gpuc_types.ArrayType(gpuc_types.float64, 1, "C"), gpuc_types.float64)
    ptx, _ = scale.compile(argtypes, parse_target("ptx:sm_80"))
    rep = scale.last_compile
    assert rep is not None and rep.ir_sizes["asm"] == len(ptx) and ".entry" in ptx  # PTX: the "asm" kind
    assert list(rep.stage_times) == list(STAGE_NAMES) or rep.hit
    assert any(r.name == "gpucompiler.cache" and rep.key[:12] in r.getMessage() for r in caplog.records)
