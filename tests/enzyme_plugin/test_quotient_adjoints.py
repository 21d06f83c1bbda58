"""The adjoints of a quotient taken by the reciprocal (``rules/arith.py``: where ``a / b`` itself is not at hand
in the reverse sweep, ``d / b`` becomes ``d * (1 / b)``): right for every finite ``b``, subnormal ones
included, whose reciprocal would overflow (it is taken of ``b * 2^64``, the products scaled back)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import jit, kernel
from gpucompiler import types as T

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import ad_kernels as K

A = T.ArrayType(T.float64, 1, "C")
X = np.array([1.0, 1.5, 0.75, 3.0])


def ratio_sum(x, alpha, beta, c, n):
    """``sum c * (x[k] alpha) / (x[k] beta)``: the ratio does not depend on ``x``, the gradient is 0."""
    s = 0.0
    for k in range(n):
        s += c * ((x[k] * alpha) / (x[k] * beta))
    return s


def scaled_sum(x, beta, c, n):
    """``sum c * (1e-20 x[k]) / beta``: the gradient is ``c * 1e-20 / beta`` in every element."""
    s = 0.0
    for k in range(n):
        s += c * ((x[k] * 1e-20) / beta)
    return s


@jit(plugins=("enzyme",))
def ratio_grad(x, dx, alpha, beta, c, n):
    autodiff(Reverse, ratio_sum, Duplicated(x, dx), Const(alpha), Const(beta), Const(c), Const(n))


@jit(plugins=("enzyme",))
def scaled_grad(x, dx, beta, c, n):
    autodiff(Reverse, scaled_sum, Duplicated(x, dx), Const(beta), Const(c), Const(n))


# (alpha, beta, c): each term's two partial derivatives are c * alpha / beta in size, and finite; the
# quotient alpha / beta is a normal number except in the first two (subnormal operands: 1e-10 and 0.033)
CASES = [(1e-320, 1e-310, 1e-300), (1e-318, 3e-309, 1e-300), (1e-300, 1e-290, 1.0), (2.0, 3.0, 0.5),
         (1e300, 1e290, 1e-10), (1e200, 1e300, 1e90)]


#: 2^64, the scale of a denominator whose reciprocal would overflow
SCALE = "0x43F0000000000000"


def test_the_loops_take_the_reciprocal():
    """The quotient is needed in the loop's reverse, where it is not at hand: the IR divides 1 by it, scaling
    a denominator that may be tiny."""
    text = ratio_grad.inspect_llvm(A, A, T.float64, T.float64, T.float64, T.int64)
    assert "fdiv double 1.000000e+00" in text and SCALE in text, text


def test_a_denominator_at_least_one_is_not_scaled():
    """The Newton step's ``3 y² + 1`` is never below 1: its reciprocal is taken as it is."""
    text = kernel(K.newton_grad, plugins=("enzyme",)).inspect_llvm(A, A)
    assert "fdiv double 1.000000e+00" in text and SCALE not in text, text


@pytest.mark.parametrize("alpha, beta, c", CASES)
def test_a_ratio_independent_of_x_has_a_zero_gradient(alpha, beta, c):
    dx = np.zeros_like(X)
    ratio_grad(X.copy(), dx, alpha, beta, c, len(X))
    size = abs(c * alpha / beta)
    assert np.all(np.isfinite(dx)), dx
    assert np.all(np.abs(dx) <= 1e-13 * size + 1e-300), (dx, size)  # two partials of this size cancel


@pytest.mark.parametrize("beta", [1e-310, 4e-309, 1e-300, 0.5, 1e300])
def test_division_by_a_constant_of_any_size(beta):
    c = 1e-300 if beta < 1e-200 else 1.0
    dx = np.zeros_like(X)
    scaled_grad(X.copy(), dx, beta, c, len(X))
    np.testing.assert_allclose(dx, np.full_like(X, c * (1e-20 / beta)), rtol=1e-13)  # CPython's


BOUNDED_IR = """
declare double @llvm.sqrt.f64(double)
declare double @llvm.fmuladd.f64(double, double, double)

define double @f(double %dx, double %dy, double %dz, double %m) {
  %yy = fmul double %dy, %dy
  %s1 = call double @llvm.fmuladd.f64(double %dx, double %dx, double %yy)
  %s2 = call double @llvm.fmuladd.f64(double %dz, double %dz, double %s1)
  %r2 = fadd double %s2, 1.000000e-02
  %r = call double @llvm.sqrt.f64(double %r2)
  %q = fdiv double %m, %r
  %mixed = call double @llvm.fmuladd.f64(double %dx, double %dy, double %yy)
  %r2m = fadd double %mixed, 1.000000e-02
  %rm = call double @llvm.sqrt.f64(double %r2m)
  %qm = fdiv double %m, %rm
  %sum = fadd double %q, %qm
  ret double %sum
}
"""


def test_a_distance_from_contracted_squares_is_bounded_below():
    """``m / sqrt(dx*dx + dy*dy + dz*dz + 0.01)`` as clang -O2 writes it (``fmuladd``): the distance is at least
    0.1, so its reciprocal needs no scaling (an n-body gradient's inner loop); ``dx*dy + ...`` may be negative."""
    from enzyme_plugin.ad.rules.arith import _at_least
    from gpucompiler.llvm import parse

    fn = parse(BOUNDED_IR).functions["f"]
    named = {i.name: i for i in fn.instructions()}
    assert _at_least(named["r"]) == pytest.approx(0.1) and _at_least(named["rm"]) == 0.0
