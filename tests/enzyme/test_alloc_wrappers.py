"""Memory from malloc reached through a wrapper (c/alloc_wrappers.c): a function returning what malloc gave it
(two levels deep, at an offset) and a call through a function pointer a global was initialised with
(Enzyme's ``metamalloc.c`` idiom), in reverse and forward mode, both routes, every level, against exact
derivatives. If the global's pointer holds another function when the derivative runs, the program stops
with a message naming the call's C line (never a derivative of the wrong function)."""

from __future__ import annotations

import ctypes
import functools
import signal
import subprocess
import sys

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import C_DIR, LEVELS, compile_c, needs_clang
from enzyme_plugin.cc import clang_ir
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang
_P = ctypes.POINTER(ctypes.c_double)
_ROUTES = [(route, level) for route in ("optimised", "pipeline") for level in LEVELS]


@functools.cache
def _text(route: str, level: str, debug: bool = False) -> str:
    if route == "pipeline":
        n = int(level[1])
        return differentiate_in_pipeline(clang_ir(C_DIR / "alloc_wrappers.c", n, [
            f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", "-ffp-contract=off", *(["-g"] if debug else [])]), n)
    return enzyme_plugin.differentiate(compile_c("alloc_wrappers.c", level, debug))


def _pooled_gradient(x: np.ndarray) -> np.ndarray:
    n, g = len(x), np.zeros(len(x))
    for i in range(n):
        j = (i + 1) % n
        g[i] += 2 * x[i] * x[j]
        g[j] += x[i] ** 2
    return g


@pytest.mark.parametrize(("route", "level"), _ROUTES)
def test_allocations_behind_wrappers_have_shadows(route, level):
    text = _text(route, level)
    assert "__enzyme_" not in text
    lib = CPULibrary.from_ir(text)
    cube_d = lib.function("cube_d", ctypes.c_double, ctypes.c_double)
    cube_fwd = lib.function("cube_fwd", ctypes.c_double, ctypes.c_double)
    square_d = lib.function("square_d", ctypes.c_double, ctypes.c_double)
    for a in (0.7, -1.9):
        assert cube_d(a) == pytest.approx(3 * a * a, rel=1e-15)
        assert cube_fwd(a) == pytest.approx(3 * a * a, rel=1e-15)
        assert square_d(a) == pytest.approx(2 * a, rel=1e-15)
    grad = lib.function("pooled_grad", None, _P, _P, ctypes.c_int)
    fwd = lib.function("pooled_fwd", ctypes.c_double, _P, _P, ctypes.c_int)
    rng = np.random.default_rng(30)
    for n in (1, 4, 9):
        x = rng.uniform(-2, 2, n)
        dx = np.zeros(n)
        grad(x.ctypes.data_as(_P), dx.ctypes.data_as(_P), n)
        np.testing.assert_allclose(dx, _pooled_gradient(x), rtol=1e-13)
        v = rng.uniform(-1, 1, n)
        assert fwd(x.ctypes.data_as(_P), v.ctypes.data_as(_P), n) == pytest.approx(_pooled_gradient(x) @ v, rel=1e-12)


_SWAPPED = """
import ctypes, sys
from gpucompiler.runtime import CPULibrary
lib = CPULibrary.from_ir(sys.stdin.read())
print(lib.function("square_d_after_swap", ctypes.c_double, ctypes.c_double)(1.5))
"""


@pytest.mark.parametrize("route", ["optimised", "pipeline"])
def test_a_replaced_pool_allocator_stops_the_derivative_naming_the_call(route):
    run = subprocess.run([sys.executable, "-c", _SWAPPED], input=_text(route, "O2", debug=True),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == -signal.SIGABRT, run.stdout + run.stderr
    assert run.stdout == ""
    assert "alloc_wrappers.c:15: a call through a function pointer, differentiated as a call of malloc" in run.stderr
