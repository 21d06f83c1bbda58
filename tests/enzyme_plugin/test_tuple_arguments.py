"""Tuples (and NamedTuples) as arguments and results of differentiated functions, with tuple shadows,
from Python and in ``@jit`` functions; what records cannot do is a typed error."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pytest

from enzyme_plugin import (Active, BatchDuplicated, Const, Duplicated, Forward, ForwardWithPrimal, Reverse,
                           ReverseWithPrimal, autodiff)
from gpucompiler import jit
from gpucompiler.errors import ArgumentTypeError, GPUCompilerError

P = ("enzyme",)


class Point(NamedTuple):
    x: float
    y: float


def model(p, a):
    return p[0] * a[0] + math.sin(p[1]) * a[1]


def model_grad(p, a):
    return (a[0], math.cos(p[1]) * a[1])


def pair_of_arrays(p, q):
    return p[0] * q[0][0] + p[1] * q[1][1] * q[1][1]


def polar(r, t):
    return (r * math.cos(t), r * math.sin(t))


def fd(fn, x, h=1e-6):
    return (fn(x + h) - fn(x - h)) / (2 * h)


@pytest.mark.parametrize("p", [(0.5, 2.0), Point(-1.5, 0.25)])
def test_active_tuple_gets_a_tuple_of_derivatives(p):
    a = np.array([3.0, 4.0])
    (g,) = autodiff(Reverse, model, Active(p), Const(a))
    assert g == pytest.approx(model_grad(p, a), rel=1e-14)
    assert type(g) is type(p)  # a NamedTuple comes back as one of its type
    assert g[1] == pytest.approx(fd(lambda t: model((p[0], t), a), p[1]), rel=1e-7)


def test_duplicated_tuple_of_arrays_has_a_tuple_shadow():
    a, b = np.array([3.0, 1.0]), np.array([5.0, 7.0])
    da, db = np.zeros(2), np.zeros(2)
    (g,) = autodiff(Reverse, pair_of_arrays, Active((0.5, 2.0)), Duplicated((a, b), (da, db)))
    assert g == (3.0, 49.0)
    np.testing.assert_array_equal(da, [0.5, 0.0])
    np.testing.assert_array_equal(db, [0.0, 2 * 2.0 * 7.0])


def test_forward_tuple_tangent_and_tuple_result():
    a = np.array([3.0, 4.0])
    (t,) = autodiff(Forward, model, Duplicated((0.5, 2.0), (1.0, -2.0)), Const(a))
    g = model_grad((0.5, 2.0), a)
    assert t == pytest.approx(g[0] - 2.0 * g[1], rel=1e-14)
    (dr,) = autodiff(Forward, polar, Duplicated(2.0, 1.0), Const(0.3))  # a tuple result: a tuple tangent
    assert dr == pytest.approx((math.cos(0.3), math.sin(0.3)), rel=1e-15)
    (dt, value) = autodiff(ForwardWithPrimal, polar, Const(2.0), Duplicated(0.3, 1.0))
    assert value == polar(2.0, 0.3) and dt == pytest.approx((-2 * math.sin(0.3), 2 * math.cos(0.3)), rel=1e-15)


def test_with_primal_and_batches_of_tuples():
    a = np.array([3.0, 4.0])
    (g,), value = autodiff(ReverseWithPrimal, model, Active((0.5, 2.0)), Const(a))
    assert value == model((0.5, 2.0), a) and g == pytest.approx(model_grad((0.5, 2.0), a), rel=1e-14)
    b = np.array([5.0, 7.0])
    lanes = ((np.zeros(2), np.zeros(2)), (np.zeros(2), np.zeros(2)))
    ((g1, g2),) = autodiff(Reverse, pair_of_arrays, Active(Point(0.5, 2.0)), BatchDuplicated((a, b), lanes))
    assert g1 == g2 == Point(3.0, 49.0)
    for da, db in lanes:
        np.testing.assert_array_equal(da, [0.5, 0.0])
        np.testing.assert_array_equal(db, [0.0, 28.0])


def grad_in_jit(x, y, a, b, da, db):
    return autodiff(Reverse, pair_of_arrays, Active((x, y)), Duplicated((a, b), (da, db)))


def tangent_in_jit(r, t):
    return autodiff(Forward, polar, Duplicated(r, 1.0), Const(t))


def test_tuples_in_jit_functions():
    a, b = np.array([3.0, 1.0]), np.array([5.0, 7.0])
    da, db = np.zeros(2), np.zeros(2)
    ((gx, gy),) = jit(grad_in_jit, plugins=P)(0.5, 2.0, a, b, da, db)
    assert (gx, gy) == (3.0, 49.0) and da[0] == 0.5 and db[1] == 28.0
    ((c, s),) = jit(tangent_in_jit, plugins=P)(2.0, 0.3)
    assert (c, s) == pytest.approx((math.cos(0.3), math.sin(0.3)), rel=1e-15)


def test_reverse_of_a_tuple_result_is_a_typed_error_not_zeros():
    """It used to return zero derivatives: a reverse sweep needs one seed per element."""
    with pytest.raises(GPUCompilerError, match=r"(?s)in reverse mode each element needs its own seed.*seed=") as info:
        autodiff(Reverse, polar, Active(2.0), Active(0.3))
    assert info.value.filename == __file__  # the call, not the generated entry


def test_a_seed_per_element_differentiates_a_tuple_result():
    """``seed=``: the cotangent of each element; the derivatives are the seeded rows of the Jacobian."""
    r, t = 2.0, 0.3
    jac = ((math.cos(t), -r * math.sin(t)), (math.sin(t), r * math.cos(t)))
    for seed in ((1.0, 0.0), (0.0, 1.0), (0.5, -2.0)):
        d = autodiff(Reverse, polar, Active(r), Active(t), seed=seed)
        expect = tuple(seed[0] * jac[0][k] + seed[1] * jac[1][k] for k in range(2))
        assert d == pytest.approx(expect, rel=1e-14)
    derivs, value = autodiff(ReverseWithPrimal, polar, Active(r), Active(t), seed=(1, 0))  # ints are floats here
    assert value == polar(r, t) and derivs == pytest.approx((jac[0][0], jac[0][1]), rel=1e-14)
    assert autodiff(Reverse, model, Active(Point(0.5, 2.0)), Const(np.array([3.0, 4.0])), seed=2.0)[0] == \
        pytest.approx(tuple(2.0 * g for g in model_grad((0.5, 2.0), (3.0, 4.0))), rel=1e-14)


def point_and_array(r, a):
    return Point(r * a[0], r * r * a[1])


def test_a_record_result_takes_a_seed_of_its_structure():
    a, da = np.array([2.0, 3.0]), np.zeros(2)
    (dr,) = autodiff(Reverse, point_and_array, Active(1.5), Duplicated(a, da), seed=Point(1.0, 0.5))
    assert dr == pytest.approx(2.0 + 0.5 * 2 * 1.5 * 3.0, rel=1e-15)
    np.testing.assert_allclose(da, [1.5, 0.5 * 1.5**2], rtol=1e-15)


@pytest.mark.parametrize("mode, seed, match", [
    (Reverse, (1.0,), "polar's result tuple"),
    (Reverse, 1.0, "polar's result tuple"),
    (Reverse, ("a", 1.0), "polar's result tuple"),
    (Forward, (1.0, 0.0), "forward mode takes tangents"),
])
def test_a_seed_that_does_not_fit_is_a_typed_error_at_the_call(mode, seed, match):
    x = Active(2.0) if mode is Reverse else Duplicated(2.0, 1.0)
    with pytest.raises(ArgumentTypeError, match=match) as info:
        autodiff(mode, polar, x, Const(0.3), seed=seed)
    assert info.value.filename == __file__
