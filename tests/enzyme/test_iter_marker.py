"""``__enzyme_iter(n, k)`` (enzyme_plugin/ad/c_interface.py): ``n`` where the primal runs, ``n + k`` in
the derivatives (reverse and forward), through both routes at -O0 and -O2, against the exact
derivative of the longer truncated series."""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import C_DIR, compile_c, needs_clang
from enzyme_plugin.cc import clang_ir
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang
_P = ctypes.POINTER(ctypes.c_double)


def _partial(x: float, n: int) -> float:
    return sum(x ** i / math.factorial(i) for i in range(n + 1))


@pytest.mark.parametrize("route", ["O0", "O2", "pipeline"])
def test_iter_counts_n_in_the_primal_and_n_plus_k_in_the_derivatives(route):
    if route == "pipeline":
        text = differentiate_in_pipeline(clang_ir(C_DIR / "iter.c", 2, [
            f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", "-ffp-contract=off"]), 2)
    else:
        text = enzyme_plugin.differentiate(compile_c("iter.c", route))
    assert "__enzyme_" not in text and "enzyme.iter" not in text
    lib = CPULibrary.from_ir(text)
    primal = lib.function("iter_primal", ctypes.c_double, _P, ctypes.c_int)
    grad = lib.function("iter_grad", None, _P, _P, ctypes.c_int)
    fwd = lib.function("iter_fwd", ctypes.c_double, _P, _P, ctypes.c_int)
    for a in (0.6, -1.7, 2.3):
        x = np.array([a])
        assert primal(x.ctypes.data_as(_P), 1) == pytest.approx(_partial(a, 3), rel=1e-14)
        derivative = _partial(a, 4)  # d/dx of the sum up to 5 = the sum up to 4
        dx = np.zeros(1)
        grad(x.ctypes.data_as(_P), dx.ctypes.data_as(_P), 1)
        assert dx[0] == pytest.approx(derivative, rel=1e-13)
        v = np.array([-0.5])
        assert fwd(x.ctypes.data_as(_P), v.ctypes.data_as(_P), 1) == pytest.approx(-0.5 * derivative, rel=1e-13)


@pytest.mark.parametrize("level", ["O0", "O2"])
def test_iter_counts_k_more_per_derivative_level(level):
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(compile_c("iter.c", level)))
    grad2 = lib.function("iter2_grad", None, _P, _P, ctypes.c_int)
    for a in (0.6, -1.7):
        x, dx = np.array([a]), np.zeros(1)
        grad2(x.ctypes.data_as(_P), dx.ctypes.data_as(_P), 1)
        assert dx[0] == pytest.approx(_partial(a, 5), rel=1e-13)  # d2/dx2 of the sum up to 7
