"""``__enzyme_virtualreverse(f)`` (enzyme_plugin/ad/splitmode.py): the pair {augmented forward, reverse}
of a function of floats, called through its pointers at -O0 and -O2 and through ``gpuc cc``, against
the exact derivative; any other argument is an ADError naming the marker and the C line."""

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


def _lib(route: str):
    if route == "pipeline":
        text = differentiate_in_pipeline(clang_ir(C_DIR / "virtual_reverse.c", 2, [
            f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", "-ffp-contract=off"]), 2)
    else:
        text = enzyme_plugin.differentiate(compile_c("virtual_reverse.c", route))
    assert "__enzyme_" not in text
    return CPULibrary.from_ir(text)


def _call(lib, name: str, x: np.ndarray) -> np.ndarray:
    dx = np.zeros_like(x)
    lib.function(name, None, _P, _P, ctypes.c_int)(x.ctypes.data_as(_P), dx.ctypes.data_as(_P), len(x))
    return dx


@pytest.mark.parametrize("route", ["O0", "O2", "pipeline"])
def test_virtual_reverse_pair_gives_the_exact_adjoint(route):
    lib = _lib(route)
    for a in (0.7, -1.3, 2.2):
        x = np.array([a, 0.0])
        dx = _call(lib, "one_grad", x)
        assert x[1] == pytest.approx(a ** 3 + math.sin(a) * a, rel=1e-14)
        assert dx[0] == pytest.approx(2.5 * (3 * a * a + math.cos(a) * a + math.sin(a)), rel=1e-13)
        y = np.array([a, 0.4 - a, 0.0])
        u, v = y[0], y[1]
        dy = _call(lib, "two_grad", y)
        assert y[2] == pytest.approx(u * u * v + v / u, rel=1e-14)
        np.testing.assert_allclose(dy[:2], [-1.5 * (2 * u * v - v / (u * u)), -1.5 * (u * u + 1 / u)], rtol=1e-13)


def test_virtual_reverse_of_a_pointer_function_is_refused_with_the_line():
    text = compile_c("virtual_reverse.c", "O0", True, ("-DREFUSED",))
    with pytest.raises(enzyme_plugin.ADError, match=r"virtual_reverse\.c:35:.*__enzyme_virtualreverse.*arguments and result are floats"):
        enzyme_plugin.differentiate(text)
