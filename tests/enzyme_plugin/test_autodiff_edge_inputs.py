"""Odd but legal inputs of the API: a batch of width 1, empty arrays, constant arrays, nested tuples, float32
scalars; each gives the analytic result."""

from __future__ import annotations

import numpy as np
import pytest

from enzyme_plugin import (Active, BatchDuplicated, Const, Duplicated, Forward, Reverse, autodiff, gradient, hvp,
                           jacobian)


def weighted(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i] * (i + 1)
    return s


def weighted_grad(a):
    return 2 * a * np.arange(1, a.size + 1)


def scaled(x, a):
    return x * weighted(a)


def test_a_batch_of_width_one_is_duplicated():
    """Its results are a plain call's (docs/autodiff.md, batch mode)."""
    a = np.array([1.0, -2.0, 0.5])
    da = np.zeros(3)
    assert autodiff(Reverse, scaled, Active(2.0), BatchDuplicated(a, (da,))) == (weighted(a),)
    np.testing.assert_array_equal(da, 2.0 * weighted_grad(a))
    (t,) = autodiff(Forward, weighted, BatchDuplicated(a, (np.ones(3),)))
    assert t == pytest.approx(weighted_grad(a).sum(), rel=1e-15)


def test_empty_arrays_have_empty_gradients():
    a, da = np.zeros(0), np.zeros(0)
    assert autodiff(Reverse, weighted, Duplicated(a, da)) == ()
    assert autodiff(Forward, weighted, Duplicated(a, np.zeros(0))) == (0.0,)
    assert gradient(weighted, a).shape == (0,) and jacobian(weighted, a).shape == (0,)
    assert hvp(weighted, a, a).shape == (0,)


def test_constant_arrays_are_untouched_and_get_no_derivative():
    a = np.array([1.0, 2.0])
    before = a.copy()
    assert autodiff(Reverse, weighted, Const(a)) == ()
    assert autodiff(Reverse, weighted, a) == ()  # a bare value is Const
    np.testing.assert_array_equal(a, before)


def nested(t):
    return t[0][0] * t[0][1] * t[1]


def test_nested_tuples_and_float32_scalars():
    assert autodiff(Reverse, nested, Active(((1.0, 2.0), 3.0))) == (((6.0, 3.0), 2.0),)
    (g,) = autodiff(Reverse, lambda x: x * x, Active(np.float32(3.0)))
    assert g == 6.0
