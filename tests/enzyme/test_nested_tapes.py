"""Reverse mode over reverse mode over code with tapes (c/nested_tapes.c), through both routes at every level:
the outer levels differentiate the inner levels' tapes. The fourth derivative of a truncated series whose
loop runs one more time per level (``__enzyme_iter``) against its exact value, and a table of pointers grown
by ``realloc`` (its new shadow keeps the old shadow's pointers)."""

from __future__ import annotations

import ctypes
import math

import pytest

import enzyme_plugin
from clang_levels import C_DIR, LEVELS, compile_c, needs_clang
from enzyme_plugin.ad.errors import ADError
from enzyme_plugin.cc import clang_ir
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

_ROUTES = [(route, level) for route in ("optimised", "pipeline") for level in LEVELS]


def _library(route: str, level: str) -> CPULibrary:
    if route == "pipeline":
        n = int(level[1])
        text = differentiate_in_pipeline(clang_ir(C_DIR / "nested_tapes.c", n, [
            f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", "-ffp-contract=off"]), n)
    else:
        text = enzyme_plugin.differentiate(compile_c("nested_tapes.c", level))
    assert "__enzyme_" not in text
    return CPULibrary.from_ir(text)


def _cos_part_derivative(x: float, n: int, m: int) -> float:
    """The m-th derivative of the sum over k <= n (k even, not a multiple of 3) of +-x^k/k!."""
    return sum((1.0 if k % 4 == 0 else -1.0) * math.perm(k, m) * x ** (k - m) / math.factorial(k)
               for k in range(m, n + 1) if k % 2 == 0 and k % 3 != 0)


@pytest.mark.parametrize(("route", "level"), _ROUTES)
def test_fourth_derivative_through_nested_tapes(route, level):
    lib = _library(route, level)
    for m in (1, 2, 3, 4):  # level m runs the loop to 14 + m
        f = lib.function(f"cos_d{m}", ctypes.c_double, ctypes.c_double)
        for x in (0.6, -1.3):
            assert f(x) == pytest.approx(_cos_part_derivative(x, 14 + m, m), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize(("route", "level"), _ROUTES)
def test_pointers_survive_a_realloc_of_their_table(route, level):
    f = _library(route, level).function("grown_table_d1", ctypes.c_double, ctypes.c_double)
    for x in (0.5, -2.0, 3.25):
        assert f(x) == pytest.approx(3 * x * x + 2 * x, rel=1e-15)


@pytest.mark.parametrize("level", list(LEVELS))
def test_realloc_of_floats_beside_pointers_is_refused_with_its_line(level):
    with pytest.raises(ADError, match="realloc of memory holding both floating-point values and pointers") as info:
        enzyme_plugin.differentiate(compile_c("realloc_mixed.c", level, debug=True))
    assert info.value.location is not None and info.value.location.endswith("realloc_mixed.c:16")
