"""``gpuc enzyme`` end to end, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from enzyme_harness import CASES, Entry, assert_close, fixture_path
from gpucompiler.llvm.binding import parse_ir
from gpucompiler.runtime import CPULibrary

ROOT = Path(__file__).resolve().parents[2]


def gpuc(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpucompiler", "enzyme", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'plugins'}"})


def test_cli_output_verifies_and_runs(tmp_path):
    proc = gpuc(str(fixture_path("arrays", "O2")), "-o", "out.ll", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "out.ll").read_text()
    parse_ir(text)
    assert "@__enzyme_autodiff" not in text.replace("declare", "")
    case = next(c for c in CASES if c.id == "arrays:dot")
    entry = Entry(CPULibrary.from_ir(text), case)
    x = case.sample(10)
    assert_close(entry.grad(x), case.analytic(x), 1e-12, "gpuc enzyme: dot gradient")


def test_cli_writes_stdout_and_reads_stdin(tmp_path):
    src = fixture_path("math_sin", "O0").read_text()
    proc = gpuc("-", cwd=tmp_path, stdin=src)
    assert proc.returncode == 0, proc.stderr
    lib = CPULibrary.from_ir(proc.stdout)
    case = next(c for c in CASES if c.program == "math_sin")
    x = np.array([0.5, 1.3])
    assert_close(Entry(lib, case).grad(x), np.array([np.cos(0.5), 0.0]), 1e-12, "gpuc enzyme: sin")


def test_cli_reports_aderror(tmp_path):
    proc = gpuc(str(fixture_path("unsup_extern", "O2")), "-o", "out.ll", cwd=tmp_path)
    assert proc.returncode == 1
    assert "mystery_kernel" in proc.stderr and proc.stderr.startswith("gpuc: error:")
    assert not (tmp_path / "out.ll").exists()


def test_cli_reports_malformed_ir(tmp_path):
    (tmp_path / "bad.ll").write_text("define double @f(double %x) {\n  ret double %nope\n}\n")
    proc = gpuc("bad.ll", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "bad.ll" in proc.stderr and "nope" in proc.stderr


def test_cli_missing_file(tmp_path):
    proc = gpuc("absent.ll", cwd=tmp_path)
    assert proc.returncode == 1 and "absent.ll" in proc.stderr


def test_cli_target_is_parsed_like_compile_ir(tmp_path):
    proc = gpuc(str(fixture_path("arrays", "O2")), "--target", "ptx:sm_9x", "-o", "out.ptx", cwd=tmp_path)
    assert proc.returncode == 1 and "unknown target 'ptx:sm_9x'" in proc.stderr
    assert not (tmp_path / "out.ptx").exists()
