"""Zero adjoints cost nothing and stay zero. A value that only comparisons use (``abs(r) > tol``, through
any arithmetic) has no reverse: run with its zero adjoint, its rules added ``copysign(0, r)`` on the
reverse sweep's chain of dependent operations, and ``0 * inf`` = NaN into a gradient when a factor was
infinite. Adjoint slots of instructions start at ``-0.0``, which LLVM folds out of ``-0.0 + d``; an
argument's adjoint nothing reached is still ``+0.0``. (Leaving those reverses out once made a float32
Newton loop's batch gradient NaN on Vulkan: lavapipe read a divergent loop's values after it wrong, which
the SPIR-V target now avoids, ``tests/spirv/test_spirv_loop_exits.py``.) Below, values that reach comparisons
through chains (abs, min/max, a select's condition, math calls, a loop's early exit), with infinite, NaN
and overflowing factors, in reverse, split, batch and forward modes, against exact derivatives that central
differences of the CPython function confirm."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from enzyme_plugin import (Active, BatchDuplicated, Const, Duplicated, Forward, Reverse, ReverseSplit, autodiff,
                           autodiff_thunk)
from gpucompiler import jit
from gpucompiler import types as T

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")


def scaled_guard(x, w):
    s = x
    for _ in range(4):
        if abs(s * w) > 100.0:
            break
        s = s * 1.5
    return s


def compared_product(x, w):
    if x * w > 1.0:
        return x * 2.0
    return x * 3.0


@pytest.mark.parametrize(("w", "dx"), [(math.inf, 1.0), (-math.inf, 1.0), (1.0, 1.5 ** 4), (100.0, 1.5 ** 2)])
def test_value_reaching_only_comparisons_leaves_the_gradient_exact(w, dx):
    """``s * w`` reaches only ``abs(...) > 100``: with an infinite ``w`` its reverse multiplied a zero
    adjoint by it (NaN for ``dx``)."""
    got = autodiff(Reverse, scaled_guard, Active(0.5), Active(w))
    assert got == (dx, 0.0)


@pytest.mark.parametrize("w", [math.inf, 0.5, 4.0])
def test_compared_product(w):
    ref = 2.0 if 0.5 * w > 1.0 else 3.0
    assert autodiff(Reverse, compared_product, Active(0.5), Active(w)) == (ref, 0.0)
    assert autodiff(Reverse, compared_product, Active(0.5), Const(w)) == (ref,)


def newton(x, i):
    a = x[i]
    y = a
    r = y * y * y + y - a
    it = 0
    while abs(r) > 1e-13 and it < 60:
        y = y - r / (3.0 * y * y + 1.0)
        r = y * y * y + y - a
        it += 1
    return y * y


@jit(plugins=P)
def newton_grad(x, dx):
    for i in range(x.shape[0]):
        autodiff(Reverse, newton, Duplicated(x, dx), Const(i))


def test_newton_reverse_has_no_sign_of_the_residual():
    """The residual's ``abs`` only decides the loop's exit: no ``copysign`` in the reverse."""
    assert "copysign" not in newton_grad.inspect_llvm(A, A)


def test_newton_reverse_has_no_zero_additions_and_is_exact():
    """No ``0.0 + d`` in the reverse (slots start at ``-0.0``); the gradient against the implicit function's."""
    text = newton_grad.inspect_llvm(A, A)
    assert not re.search(r"fadd (?:[a-z]+ )*double (?:[^,\n]+, 0\.000000e\+00|0\.000000e\+00,)", text), text
    x = np.linspace(-2.0, 2.0, 101)
    dx = np.zeros_like(x)
    newton_grad(x, dx)
    y = np.array([newton(x, i) for i in range(len(x))]) ** 0.5 * np.sign(x)
    np.testing.assert_allclose(dx, 2.0 * y / (3.0 * y * y + 1.0), rtol=1e-10, atol=1e-14)


def _unused(x, y):
    return x * 2.0


def test_an_argument_nothing_reached_gets_positive_zero():
    dx, dy = autodiff(Reverse, _unused, Active(1.0), Active(3.0))
    assert dx == 2.0 and dy == 0.0 and math.copysign(1.0, dy) == 1.0


# -- values reaching only comparisons through chains, in every mode -------------------------------------
def via_min(x, w):
    if min(x * w, 5.0) > 1.0:
        return x * 2.0
    return x * 3.0


def via_max_abs(x, w):
    if max(abs(x * w), abs(x)) > 4.0:
        return x * x
    return x * 3.0


def via_select_condition(x, w):
    t = x * w
    return x * 2.0 if t * t > 1.0 else x * 3.0


def overflowing_cube(x, w):
    t = x * w
    if t * t * t + t > 10.0:  # inf for w = 1e308 too: 0 * t * t was NaN
        return x * x
    return x


def via_sqrt(x, w):
    if math.sqrt(abs(x * w)) > 3.0:
        return math.sin(x)
    return math.cos(x)


def halving_until_close(x, w):
    y = x
    k = 0
    while abs((y - 1.0) * w) > 1e-3 and k < 20:  # (y - 1) * w only decides the exit
        y = 0.5 * (y + 1.0)
        k += 1
    return y * y


def _halving_derivative(x, w):
    y, k = x, 0
    while abs((y - 1.0) * w) > 1e-3 and k < 20:
        y, k = 0.5 * (y + 1.0), k + 1
    return 2.0 * y * 0.5 ** k


#: each function's derivative in x, by CPython: w only picks a branch or the loop's trip count
EXACT = {
    via_min: lambda x, w: 2.0 if min(x * w, 5.0) > 1.0 else 3.0,
    via_max_abs: lambda x, w: 2.0 * x if max(abs(x * w), abs(x)) > 4.0 else 3.0,
    via_select_condition: lambda x, w: 2.0 if (x * w) * (x * w) > 1.0 else 3.0,
    overflowing_cube: lambda x, w: 2.0 * x if (x * w) * (x * w) * (x * w) + x * w > 10.0 else 1.0,
    via_sqrt: lambda x, w: math.cos(x) if math.sqrt(abs(x * w)) > 3.0 else -math.sin(x),
    halving_until_close: _halving_derivative,
}
FACTORS = [math.inf, -math.inf, 1e308, -1e308, math.nan, 2.0, 0.0]
X = 0.7  # x * w is 1.4 for w = 2: away from every branch's edge
CASES = [pytest.param(f, w, id=f"{f.__name__}-{w}") for f in EXACT for w in FACTORS]


@pytest.mark.parametrize(("f", "w"), CASES)
def test_exact_derivatives_agree_with_central_differences(f, w):
    h = 1e-6
    assert EXACT[f](X, w) == pytest.approx((f(X + h, w) - f(X - h, w)) / (2 * h), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize(("f", "w"), CASES)
def test_reverse_and_split_gradients_of_compared_values_are_exact(f, w):
    ref = EXACT[f](X, w)
    dx, dw = autodiff(Reverse, f, Active(X), Active(w))
    assert dx == pytest.approx(ref, rel=1e-15) and dw == 0.0
    fwd, rev = autodiff_thunk(ReverseSplit, f, Active, Const)
    tape, y = fwd(Active(X), Const(w))
    assert y == f(X, w)
    assert rev(Active(X), Const(w), 1.0, tape)[0] == pytest.approx(ref, rel=1e-15)


def _first(f):
    def first(a, w):
        return f(a[0], w)
    return first


BATCHED = {f: _first(f) for f in EXACT}


@pytest.mark.parametrize(("f", "w"), CASES)
def test_batch_gradients_and_tangents_of_compared_values_are_exact(f, w):
    ref = EXACT[f](X, w)
    a, d1, d2 = np.array([X]), np.zeros(1), np.zeros(1)
    autodiff(Reverse, BATCHED[f], BatchDuplicated(a, (d1, d2)), Const(w))
    assert d1[0] == pytest.approx(ref, rel=1e-15) and d2[0] == pytest.approx(ref, rel=1e-15)
    ((t1, t2),) = autodiff(Forward, f, BatchDuplicated(X, (1.0, -2.0)), Const(w))
    assert t1 == pytest.approx(ref, rel=1e-15) and t2 == pytest.approx(-2.0 * ref, rel=1e-15)
    (t,) = autodiff(Forward, f, Duplicated(X, 1.0), Const(w))
    assert t == pytest.approx(ref, rel=1e-15)
