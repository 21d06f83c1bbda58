"""autodiff in @jit functions and from plain Python: gradients against analytic values and finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ez_funcs as F
from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.errors import GPUCompilerError

P = ("enzyme",)


def fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("x,y", [(0.3, 2.0), (-1.2, 0.7), (2.5, -3.0)])
def test_reverse_two_actives_in_jit(x, y):
    dx, dy = jit(F.grad_f2, plugins=P)(x, y)
    ax, ay = F.df2(x, y)
    assert dx == pytest.approx(ax, rel=1e-14) and dy == pytest.approx(ay, rel=1e-14)
    assert dx == pytest.approx(fd(lambda t: F.f2(t, y), x), rel=1e-7)
    assert dy == pytest.approx(fd(lambda t: F.f2(x, t), y), rel=1e-7)


def test_forward_agrees_with_reverse_along_a_direction():
    x, y, vx, vy = 0.4, 1.7, 0.3, -1.1
    (t,) = jit(F.tangent_f2, plugins=P)(x, vx, y, vy)
    dx, dy = jit(F.grad_f2, plugins=P)(x, y)
    assert t == pytest.approx(dx * vx + dy * vy, rel=1e-14)


def test_const_argument_gets_no_derivative():
    (dx,) = jit(F.grad_f2_const_y, plugins=P)(0.9, 3.0)
    assert dx == pytest.approx(F.df2(0.9, 3.0)[0], rel=1e-14)


def test_duplicated_array_accumulates_and_active_scalar_returned():
    a = np.array([1.0, -2.0, 3.0, 0.5])
    da = np.full(4, 10.0)  # shadows accumulate: the gradient is added
    (ds,) = jit(F.grad_sumsq, plugins=P)(a, da, 1.5, 4)
    np.testing.assert_allclose(da, 10.0 + 2 * 1.5 * a, rtol=1e-15)
    assert ds == pytest.approx(float(np.sum(a * a)), rel=1e-15)


def test_duplicated_noneed_and_bare_argument_as_const():
    a, da = np.array([1.0, 2.0, 3.0]), np.zeros(3)
    out = jit(F.grad_sumsq_noneed, plugins=P)(a, da, 2.0, 3)
    assert out == ()
    np.testing.assert_allclose(da, 4.0 * a, rtol=1e-15)


def test_forward_tangent_of_array_function():
    a, va = np.array([0.5, -1.5, 2.0]), np.array([1.0, 0.25, -2.0])
    (t,) = jit(F.tangent_sumsq, plugins=P)(a, va, 3.0, 3)
    assert t == pytest.approx(float(np.sum(2 * 3.0 * a * va)), rel=1e-14)


def test_matrix_function_gradient_against_finite_differences():
    rng = np.random.default_rng(0)
    m, v = rng.normal(size=(3, 4)), rng.normal(size=4)
    w = rng.normal(size=3)  # seed of the output: gradient of w . out
    dm, dv, out, dout = np.zeros_like(m), np.zeros_like(v), np.zeros(3), w.copy()
    jit(F.grad_matvec, plugins=P)(m, dm, v, dv, out, dout)
    np.testing.assert_allclose(out, m @ np.tanh(v), rtol=1e-14)
    np.testing.assert_allclose(dm, np.outer(w, np.tanh(v)), rtol=1e-14)
    np.testing.assert_allclose(dv, (w @ m) * (1 - np.tanh(v) ** 2), rtol=1e-13)
    np.testing.assert_allclose(dout, 0.0)  # the adjoint of an overwritten output is consumed


def test_from_plain_python():
    dx, dy = autodiff(Reverse, F.f2, Active(0.7), Active(-0.4))
    assert (dx, dy) == pytest.approx(F.df2(0.7, -0.4), rel=1e-14)
    (t,) = autodiff(Forward, F.f2, Duplicated(0.7, 1.0), Const(-0.4))
    assert t == pytest.approx(dx, rel=1e-14)
    a, da = np.array([2.0, 3.0]), np.zeros(2)
    (ds,) = autodiff(Reverse, F.sumsq_scaled, Duplicated(a, da), Active(0.5), 2)
    assert ds == pytest.approx(13.0) and list(da) == [2.0, 3.0]


@pytest.mark.parametrize("fn,args,words", [
    (F.active_int, (3,), "Active takes a float"),
    (F.dup_scalar_reverse, (1.0, 1.0), "reverse mode Duplicated takes arrays"),
    (F.active_forward, (1.0,), "Active is for reverse mode"),
    (F.not_a_function, (1.0,), "needs a Python function"),
])
def test_unsupported_uses_are_typed_errors(fn, args, words):
    with pytest.raises(GPUCompilerError, match=words):
        jit(fn, plugins=P)(*args)


def test_custom_rule_applies_only_in_ad_jobs():
    # d/dx of clip(x)*3 + x^2 with a straight-through clip: 3 + 2x, also where clip is flat
    for x in (0.25, 5.0, -4.0):
        (g,) = jit(F.grad_uses_clip, plugins=P)(x)
        (t,) = jit(F.tangent_uses_clip, plugins=P)(x)
        assert g == pytest.approx(3.0 + 2 * x, rel=1e-15) and t == pytest.approx(g, rel=1e-15)
    assert jit(F.plain_uses_clip, plugins=P)(5.0) == 28.0  # the primal is untouched
    assert math.isclose(F.uses_clip(5.0), 28.0)
