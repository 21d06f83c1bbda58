"""The corpus itself, without the engine: fixtures parse under LLVM, regenerate
byte for byte (where clang-19 is installed), and every analytic gradient the
AD tests use agrees with finite differences of the primal."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from enzyme_corpus import fixture_names
from enzyme_harness import (CASES, HERE, LEVEL_NAMES, Entry, assert_close, central_fd, fd_tolerance,
                            fixture_path, fixture_text, primal_library)
from gpucompiler.llvm.binding import parse_ir


@pytest.mark.parametrize("level", LEVEL_NAMES)
@pytest.mark.parametrize("name", fixture_names())
def test_fixture_parses_and_is_deterministic(name, level):
    text = fixture_text(name, level)
    ref = parse_ir(text)
    assert ref.triple == "x86_64-pc-linux-gnu"
    assert "llvm.ident" not in text and "clang version" not in text
    assert not re.search(r"/(work|home|tmp|usr)/", text), "fixture holds an absolute path"
    callees = set(re.findall(r"@(__enzyme_\w+)\(", text))
    if not name.startswith("unsup"):
        assert any(c.startswith("__enzyme_fwddiff") for c in callees), callees
    reverse = ("__enzyme_autodiff", "__enzyme_reverse")
    assert any(c.startswith(reverse) for c in callees), callees


def test_every_fixture_exists():
    names = {p.name for p in (HERE / "fixtures").glob("*.ll")}
    expected = {fixture_path(n, lv).name for n in fixture_names() for lv in LEVEL_NAMES}
    assert names == expected


def test_o2_fixtures_hold_the_constructs_the_issue_lists():
    o2 = {n: fixture_text(n, "O2") for n in ("vec", "math_float", "math_fmuladd", "structret", "arrays")}
    assert re.search(r"call (fast|reassoc)[^\n]*@llvm\.vector\.reduce\.fadd", o2["vec"])
    for intr in ("sqrt", "exp", "log", "sin", "cos", "pow", "fma", "maxnum", "copysign", "fabs", "powi"):
        assert f"@llvm.{intr}.f32" in o2["math_float"], intr
    assert "@llvm.fmuladd.f64" in fixture_text("math_fmuladd", "O0")
    assert re.search(r"call void \(ptr, ptr, \.\.\.\) @__enzyme_autodiff_d3\(ptr[^,]*sret", o2["structret"])
    for fn in ("@malloc", "@free", "@llvm.memcpy", "@llvm.memset"):
        assert fn in o2["arrays"] or fn in fixture_text("arrays", "O0"), fn
    assert "@realloc" in fixture_text("realloc", "O2")


@pytest.mark.slow  # clang over the whole corpus: with the slow set
@pytest.mark.skipif(shutil.which("clang-19") is None,
                    reason="clang-19 is not installed (CI reads the committed fixtures)")
def test_regeneration_is_byte_identical():
    proc = subprocess.run([sys.executable, str(HERE / "regen_fixtures.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("level", LEVEL_NAMES)
@pytest.mark.parametrize("case", [c for c in CASES if c.analytic is not None and c.fd], ids=lambda c: c.id)
def test_analytic_gradient_matches_finite_differences(case, level):
    entry = Entry(primal_library(case.program, level), case, with_derivatives=False)
    for n in case.ns():
        x = case.sample(n)
        mask = case.inactive(n) if case.inactive else np.zeros(n, bool)
        fd = np.where(mask, 0.0, central_fd(entry.primal, x, mask))
        assert_close(case.analytic(x.astype("f8")), fd, fd_tolerance(case), f"{case.id} n={n}")
