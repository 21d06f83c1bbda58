"""Derivatives through globals that clang's optimiser splits (``static double g[2]`` becomes ``@g.0`` and
``@g.1``) or reads in a function without arguments: the gradient matches finite differences at -O0..-O3,
in reverse and forward mode (c/global_split.c). A reader such as ``total()`` was a call with nothing
varied, so it counted as inactive and the gradient through the global was 0."""

from __future__ import annotations

import math

import pytest

from clang_levels import LEVELS, central_difference, compile_c, library, needs_clang, scalar

pytestmark = needs_clang

CASES = ("split_pair", "split_inlined", "split_reset", "split_struct", "split_pointer", "split_bytes")
POINTS = (-1.3, 0.4, 2.1)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", CASES)
def test_gradient_through_split_global_matches_finite_differences(case, level):
    lib = library("global_split.c", level)
    primal, grad, fwd = (scalar(lib, f"{case}_{k}") for k in ("primal", "grad", "fwd"))
    for x in POINTS:
        want = central_difference(primal, x)
        assert want != 0.0
        for mode, got in (("reverse", grad(x)), ("forward", fwd(x))):
            assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-8), f"{case} {level} {mode} at {x}: {got} != {want}"


def test_optimiser_split_the_globals():
    """The -O2 module really holds the split pieces (else the tests above would not test splits)."""
    text = compile_c("global_split.c", "O2")
    assert "@pair.0 =" in text and "@pair.1 =" in text and "@rec.2 =" in text


@pytest.mark.parametrize("level", ["O0", "O2"])
def test_repeated_calls_start_from_zero_adjoints(level):
    """Each differentiation call zeroes the shadows of the globals it reaches: the same gradient twice."""
    grad = scalar(library("global_split.c", level), "split_reset_grad")
    assert grad(0.7) == grad(0.7)
