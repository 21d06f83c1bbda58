"""Higher order from C (c/nested.c): functions that call ``__enzyme_autodiff`` /
``__enzyme_fwddiff`` are differentiated again, innermost calls first. Second and
third derivatives of x^3 sin x and Hessian-vector products of the Rosenbrock
function against analytic values, at -O0 and -O2."""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from enzyme_harness import LEVEL_NAMES, library

P = ctypes.POINTER(ctypes.c_double)


def d2(x):
    return 6 * x * math.sin(x) + 6 * x * x * math.cos(x) - x ** 3 * math.sin(x)


def d3(x):
    return 6 * math.sin(x) + 18 * x * math.cos(x) - 9 * x * x * math.sin(x) - x ** 3 * math.cos(x)


def hess_rosenbrock(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] -= 400 * x[i]
        h[i + 1, i] -= 400 * x[i]
    return h


@pytest.mark.parametrize("level", LEVEL_NAMES)
@pytest.mark.parametrize("entry", ["d2_fwd_rev", "d2_rev_rev", "d2_fwd_fwd", "d2_rev_fwd"])
def test_second_derivative_in_every_nesting(entry, level):
    f = library("nested", level).function(entry, ctypes.c_double, ctypes.c_double)
    for x in (0.7, -1.3, 2.4):
        assert f(x) == pytest.approx(d2(x), rel=1e-12)


@pytest.mark.parametrize("level", LEVEL_NAMES)
def test_third_derivative_forward_over_forward_over_reverse(level):
    f = library("nested", level).function("d3_fwd_fwd_rev", ctypes.c_double, ctypes.c_double)
    for x in (0.4, 1.7):
        assert f(x) == pytest.approx(d3(x), rel=1e-12)


@pytest.mark.parametrize("level", LEVEL_NAMES)
@pytest.mark.parametrize("entry", ["hvp_fwd_rev", "hvp_rev_rev"])
def test_rosenbrock_hessian_vector_product(entry, level):
    f = library("nested", level).function(entry, None, P, P, P, ctypes.c_int)
    for n in (2, 6, 17):
        x = np.linspace(-0.5, 1.3, n)
        v = np.cos(np.arange(n) + 0.5)
        hv = np.zeros(n)
        f(x.ctypes.data_as(P), v.ctypes.data_as(P), hv.ctypes.data_as(P), n)
        np.testing.assert_allclose(hv, hess_rosenbrock(x) @ v, rtol=1e-12, atol=1e-12 * np.abs(hv).max())
