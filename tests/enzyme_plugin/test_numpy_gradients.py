"""Gradients through NumPy expressions, reductions and dot (they lower to loops) against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import np_funcs as F
from gpucompiler import jit
from rounding import assert_sum_close, assert_terms_close

P = ("enzyme",)


def _fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        g[idx] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_gradient_of_sum_of_a_fused_product():
    x, dx = np.linspace(-1.0, 2.0, 7), np.zeros(7)
    jit(F.grad_sum_sin_times, plugins=P)(x, dx)
    np.testing.assert_allclose(dx, np.cos(x) * x + np.sin(x), rtol=1e-14)
    np.testing.assert_allclose(dx, _fd(F.sum_sin_times, x), rtol=1e-7)


def test_gradient_of_dot_and_matmul():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=5), rng.normal(size=5)
    da, db = np.zeros(5), np.zeros(5)
    (ds,) = jit(F.grad_dot_scaled, plugins=P)(a, da, b, db, 1.5)
    assert_terms_close(da, 1.5 * b, 2 * a)
    assert_terms_close(db, 1.5 * a)
    assert_sum_close(ds, a * b)  # np.dot's BLAS may sum in another order than the loop


def test_gradient_through_an_assigned_expression_and_reductions():
    rng = np.random.default_rng(2)
    a, b, c = rng.uniform(0.5, 2.0, size=(3, 6))
    out = np.zeros(6)
    da, db, dc, dout = np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6)
    jit(F.grad_fused_into, plugins=P)(out, dout, a, da, b, db, c, dc)

    def f(a, b, c):
        o = a * b + np.exp(-c) / (1.0 + c * c)
        return np.sum(o * o) + np.max(a) + a.mean()
    np.testing.assert_allclose(da, _fd(lambda t: f(t, b, c), a), rtol=1e-6)
    np.testing.assert_allclose(db, _fd(lambda t: f(a, t, c), b), rtol=1e-6)
    np.testing.assert_allclose(dc, _fd(lambda t: f(a, b, t), c), rtol=1e-6)


def test_gradient_of_a_two_d_expression_and_a_row_product():
    m = np.random.default_rng(3).uniform(-1.0, 1.0, size=(3, 4))
    dm = np.zeros_like(m)
    jit(F.grad_rows_norm, plugins=P)(m, dm)
    np.testing.assert_allclose(dm, _fd(F.rows_norm, m), rtol=1e-6)


def test_two_calls_of_a_loop_with_partial_sums():
    # was zero gradients: helpers taking arrays by value are now inlined before AD
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=8), rng.normal(size=8)
    da, db = np.zeros(8), np.zeros(8)
    jit(F.grad_two_dot4, plugins=P)(a, da, b, db, 1.5)
    np.testing.assert_allclose(da, 1.5 * b + 2 * a, rtol=1e-14)
    np.testing.assert_allclose(db, 1.5 * a, rtol=1e-14)


def test_gradient_of_two_reductions_of_products():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=11), rng.normal(size=11)
    da, db = np.zeros(11), np.zeros(11)
    (ds,) = jit(F.grad_two_sums, plugins=P)(a, da, b, db, 1.5)
    assert_terms_close(da, 1.5 * b, 2 * a)
    assert_terms_close(db, 1.5 * a)
    assert_sum_close(ds, a * b)


def test_gradient_of_max_and_min_goes_to_one_of_the_tied_elements():
    x = np.tile(np.array([1.0, 3.0, 3.0, -2.0, 0.5]), 8)  # long enough for the vectorised loop, ties
    dx = np.zeros_like(x)
    jit(F.grad_extremes, plugins=P)(x, dx)
    assert dx.sum() == 3.0
    assert dx[x == 3.0].sum() == 2.0 and dx[x == -2.0].sum() == 1.0 and np.count_nonzero(dx) == 2
    (t,) = jit(F.tangent_extremes, plugins=P)(x, np.ones_like(x))
    assert t == 3.0
    (t,) = jit(F.tangent_extremes, plugins=P)(x, np.where(x == 3.0, 1.0, 0.0))
    assert t == 2.0


def test_gradient_of_a_squared_matrix_vector_product_matches_finite_differences():
    rng = np.random.default_rng(4)
    a, x = rng.normal(size=(4, 3)), rng.normal(size=3)
    da, dx = np.zeros_like(a), np.zeros_like(x)
    jit(F.grad_residual_energy, plugins=P)(a, da, x, dx)
    r = a @ x
    np.testing.assert_allclose(dx, 2 * a.T @ r, rtol=1e-13)
    np.testing.assert_allclose(da, 2 * np.outer(r, x), rtol=1e-13)
    np.testing.assert_allclose(dx, _fd(lambda t: F.residual_energy(a, t), x), rtol=1e-7)


def test_gradient_through_matmul_axis_reductions_and_a_mask_matches_finite_differences():
    rng = np.random.default_rng(5)
    a, b = rng.uniform(-1.0, 1.0, size=(3, 4)), np.asfortranarray(rng.uniform(-1.0, 1.0, size=(4, 5)))
    da, db = np.zeros_like(a), np.zeros_like(b)
    jit(F.grad_gram_columns, plugins=P)(a, da, b, db)
    np.testing.assert_allclose(da, _fd(lambda t: F.gram_columns(t, b), a), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(db, _fd(lambda t: F.gram_columns(a, t), b), rtol=1e-6, atol=1e-9)


def test_the_rounding_comparison_takes_any_order_of_the_terms_and_nothing_more():
    """A BLAS summing in another order than the loop gives another last bit (the exact comparison failed so
    on a machine whose OpenBLAS kernel differs); any order passes, a value beyond rounding does not."""
    terms = np.random.default_rng(3).normal(size=64) * np.logspace(0, 8, 64)
    forward, backward = 0.0, 0.0
    for t in terms:
        forward += t
    for t in terms[::-1]:
        backward += t
    assert forward != backward  # the orders differ in the last bits here
    for got in (forward, backward, float(np.dot(terms, np.ones(64))), float(np.sum(terms))):
        assert_sum_close(got, terms)
    with pytest.raises(AssertionError, match="within rounding"):
        assert_sum_close(forward + 1e-6 * float(np.sum(np.abs(terms))), terms)
    with pytest.raises(AssertionError, match="within rounding"):
        assert_terms_close(np.array([1.0 + 1e-12]), np.array([1.0]))
