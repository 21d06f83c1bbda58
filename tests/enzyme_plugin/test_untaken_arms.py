"""A select's arm not taken gives its operands a zero adjoint: a product of it with a constant
infinity or NaN (``x * math.inf`` in that arm) must stay zero, never NaN the gradient."""

import math

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Reverse, autodiff


def _guarded_variance(a):
    """A variance written defensively: NaN and inf arms for no elements (NumPy's results there)."""
    n = a.shape[0]
    s = 0.0
    for i in range(n):
        s += a[i]
    mean = s / n if n > 0 else s * math.nan
    acc = 0.0
    for i in range(n):
        d = a[i] - mean
        acc += d * d
    if n <= 0:
        return acc * math.inf if acc > 0 else acc * math.nan
    return acc / n


def _capped(a):
    """Elementwise arms the vectorizer turns into a vector select: ``* inf`` above 5, ``* 2`` below."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * math.inf if a[i] > 5.0 else a[i] * 2.0
    return s


def _scaled(x, c):
    return x * -math.inf if c > 5.0 else x * 3.0


@pytest.mark.parametrize("n", [1, 3, 17])
def test_guarded_variance_gradient_is_finite_and_exact(n):
    a = np.random.default_rng(n).standard_normal(n)
    da = np.zeros(n)
    autodiff(Reverse, _guarded_variance, Duplicated(a.copy(), da))
    np.testing.assert_allclose(da, 2.0 * (a - a.mean()) / n, rtol=1e-12, atol=1e-15)


def test_vector_select_arm_not_taken_stays_zero():
    a = np.linspace(-3.0, 4.0, 37)  # every element takes the finite arm
    da = np.zeros_like(a)
    autodiff(Reverse, _capped, Duplicated(a.copy(), da))
    np.testing.assert_array_equal(da, np.full_like(a, 2.0))


def test_taken_infinite_arm_keeps_its_derivative():
    (dx,) = autodiff(Reverse, _scaled, Active(1.5), Const(9.0))
    assert dx == -math.inf
    (dx,) = autodiff(Reverse, _scaled, Active(1.5), Const(1.0))
    assert dx == 3.0
