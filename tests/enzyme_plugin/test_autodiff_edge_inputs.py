"""Odd but legal inputs of the API: a batch of width 1 (one lane), empty arrays, constant arrays, nested tuples, float32
scalars; each gives the analytic result."""

from __future__ import annotations

import numpy as np
import pytest

from enzyme_plugin import (Active, BatchDuplicated, Const, Duplicated, Forward, ForwardWithPrimal, Reverse, autodiff,
                           gradient, hvp, jacobian)
from gpucompiler import jit


def weighted(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i] * (i + 1)
    return s


def weighted_grad(a):
    return 2 * a * np.arange(1, a.size + 1)


def scaled(x, a):
    return x * weighted(a)


def test_a_batch_of_width_one_returns_one_lane():
    """As any batch (and Enzyme.jl): per lane; it used to return a plain call's results."""
    a = np.array([1.0, -2.0, 0.5])
    da = np.zeros(3)
    assert autodiff(Reverse, scaled, Active(2.0), BatchDuplicated(a, (da,))) == ((weighted(a),),)
    np.testing.assert_array_equal(da, 2.0 * weighted_grad(a))
    ((t,),) = autodiff(Forward, weighted, BatchDuplicated(a, (np.ones(3),)))
    assert t == pytest.approx(weighted_grad(a).sum(), rel=1e-15)
    ((t2,), value) = autodiff(ForwardWithPrimal, weighted, BatchDuplicated(a, (np.ones(3),)))
    assert t2 == t and value == weighted(a)
    ((p,),) = autodiff(Reverse, point_scale, Active((2.0, 3.0)), BatchDuplicated(a, (np.zeros(3),)))
    assert p == pytest.approx((3.0 * weighted(a), 2.0 * weighted(a)), rel=1e-15)
    assert jit(width_one_in_jit, plugins=("enzyme",))(2.0, a, np.zeros(3)) == ((weighted(a),),)


def point_scale(p, a):
    return p[0] * p[1] * weighted(a)


def width_one_in_jit(x, a, da):
    return autodiff(Reverse, scaled, Active(x), BatchDuplicated(a, (da,)))


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
