"""ForwardWithPrimal / ReverseWithPrimal, gradient, jacobian, hvp against analytic results and central differences."""

import math

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import ArgumentTypeError, TypeInferenceError
from enzyme_plugin import (Active, Const, Duplicated, Forward, ForwardWithPrimal, Reverse, ReverseWithPrimal,
                           autodiff, gradient, hvp, jacobian)


def f2(x, y):
    return math.sin(x) * y * y


def expx(t):
    return math.exp(t) * t


def cubes(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * a[i] * a[i]
    return acc


def softish(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += math.log(1.0 + math.exp(a[i])) * (i + 1.0)
    return acc * acc


def sin_weighted(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += math.sin(a[i]) * a[i]
    return acc


def mixed(a):
    return a[0] * a[1] * math.exp(a[2]) + math.sin(a[0] * a[2])


def mat_energy(m):
    acc = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            acc += math.cos(m[i, j]) * m[i, j]
    return acc


def vec_map(x, y):
    y[0] = x[0] * x[1]
    y[1] = math.sin(x[2]) * x[0]
    y[2] = x[1] * x[1]
    y[3] = math.exp(x[0] - x[2])


def accumulate(a, out):
    out[0] += a[0] * a[0]
    return out[0]


def writes_only(a):
    a[0] = a[0] * 2.0


def returns_int(a):
    return a.shape[0]


def central(fun, x, h=1e-6):
    """The central difference gradient of a Python function of a float array."""
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        g[k] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


def test_reverse_with_primal_returns_derivatives_and_primal():
    (dx, dy), primal = autodiff(ReverseWithPrimal, f2, Active(0.5), Active(3.0))
    assert primal == pytest.approx(math.sin(0.5) * 9.0, rel=1e-15)
    assert dx == pytest.approx(math.cos(0.5) * 9.0, rel=1e-14) and dy == pytest.approx(6.0 * math.sin(0.5))


def test_forward_with_primal_returns_tangent_and_primal():
    df, primal = autodiff(ForwardWithPrimal, f2, Duplicated(0.5, 1.0), Const(3.0))
    assert primal == pytest.approx(math.sin(0.5) * 9.0, rel=1e-15)
    assert df == pytest.approx(math.cos(0.5) * 9.0, rel=1e-14)


def test_with_primal_runs_the_writes_of_f_once():
    a, da, out, dout = np.array([3.0]), np.zeros(1), np.array([1.0]), np.array([1.0])
    (), primal = autodiff(ReverseWithPrimal, accumulate, Duplicated(a, da), Duplicated(out, dout))
    assert primal == 10.0 and out[0] == 10.0  # the primal sees out as it was before the call
    assert da[0] == pytest.approx(2 * 3.0 * 2.0)  # seed 1.0 on the result and 1.0 in dout (out[0] is the result)


def test_with_primal_modes_in_jit_functions_return_the_primal_of_the_same_sweep():
    def h(x):
        return autodiff(ReverseWithPrimal, expx, Active(x))

    (g,), y = jit(h, plugins=("enzyme",))(1.0)
    assert y == pytest.approx(expx(1.0), rel=1e-15) and g == pytest.approx(2 * math.e, rel=1e-14)


def test_with_primal_of_a_function_returning_nothing_in_jit_is_a_typed_error():
    def h(a, da):
        return autodiff(ReverseWithPrimal, writes_only, Duplicated(a, da))

    with pytest.raises(TypeInferenceError, match="needs a function returning a float"):
        jit(h, plugins=("enzyme",))(np.ones(1), np.zeros(1))


@pytest.mark.parametrize("x", [0.3, -1.2, 2.0])
def test_gradient_of_a_scalar_function(x):
    assert gradient(expx, x) == pytest.approx(math.exp(x) * (1 + x), rel=1e-14)


@pytest.mark.parametrize("fun", [cubes, softish])
def test_gradient_of_a_vector_function_matches_central_differences(fun):
    x = np.array([0.4, -1.1, 2.3, 0.7])
    g = gradient(fun, x)
    assert g.shape == x.shape
    np.testing.assert_allclose(g, central(fun, x), rtol=1e-6, atol=1e-7)
    if fun is cubes:
        np.testing.assert_allclose(g, 3 * x * x, rtol=1e-15)


def test_gradient_keeps_the_shape_of_a_matrix_argument():
    m = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    g = gradient(mat_energy, m)
    assert g.shape == (2, 3)
    np.testing.assert_allclose(g, np.cos(m) - m * np.sin(m), rtol=1e-14)


def test_jacobian_of_a_scalar_function_is_its_gradient():
    x = np.array([0.4, -1.1, 2.3])
    np.testing.assert_allclose(jacobian(softish, x), central(softish, x), rtol=1e-6)


def test_jacobian_of_an_in_place_vector_function():
    x = np.array([0.5, 2.0, -0.3])
    y = np.zeros(4)
    jac = jacobian(vec_map, x, y)
    e = math.exp(x[0] - x[2])
    expected = np.array([[x[1], x[0], 0.0],
                         [math.sin(x[2]), 0.0, x[0] * math.cos(x[2])],
                         [0.0, 2 * x[1], 0.0],
                         [e, 0.0, -e]])
    np.testing.assert_allclose(jac, expected, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(y, [1.0, math.sin(-0.3) * 0.5, 4.0, e], rtol=1e-15)

    def vec_map_py(xx):
        yy = np.zeros(4)
        vec_map(xx, yy)
        return yy
    fd = np.stack([(vec_map_py(x + h) - vec_map_py(x - h)) / 2e-6 for h in np.eye(3) * 1e-6], axis=1)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("x", [0.3, -0.8])
def test_hvp_of_a_scalar_function(x):
    assert hvp(expx, x, 2.0) == pytest.approx(2.0 * math.exp(x) * (2 + x), rel=1e-14)


def test_hvp_of_a_vector_function():
    x, v = np.array([1.0, 2.0, 3.0]), np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(hvp(cubes, x, v), 6 * x * v, rtol=1e-15)
    np.testing.assert_allclose(hvp(sin_weighted, x, v), (2 * np.cos(x) - x * np.sin(x)) * v, rtol=1e-14)
    y = np.array([0.4, -1.1, 2.3])
    for fun in (sin_weighted, mixed):
        fd = (gradient(fun, y + 1e-6 * v) - gradient(fun, y - 1e-6 * v)) / 2e-6
        np.testing.assert_allclose(hvp(fun, y, v), fd, rtol=1e-6)


@pytest.mark.parametrize("n", [3, 37])
def test_hvp_of_loops_the_vectorizers_would_mask(n):
    """Between AD levels the vectorizers stay off: their masked loads/stores/scatters (host-dependent:
    one x86 host masked the reverse loop, another did not) have no derivative rules."""
    rng = np.random.default_rng(n)
    y, v = rng.uniform(-1.5, 1.5, n), rng.uniform(-1.0, 1.0, n)
    for fun in (softish, cubes, sin_weighted):
        fd = (gradient(fun, y + 1e-6 * v) - gradient(fun, y - 1e-6 * v)) / 2e-6
        np.testing.assert_allclose(hvp(fun, y, v), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("call, name", [
    (lambda: gradient(cubes, np.arange(3)), "'x'"),
    (lambda: gradient(expx, 1), "'x'"),
    (lambda: gradient(len, 1.0), "'f'"),
    (lambda: jacobian(cubes, 1.0), "'x'"),
    (lambda: jacobian(vec_map, np.zeros(3), [0.0]), "'y'"),
    (lambda: hvp(cubes, np.zeros(3), np.zeros(2)), "'v'"),
    (lambda: hvp(expx, 1.0, np.zeros(1)), "'v'"),
    (lambda: gradient(writes_only, np.ones(2)), "'f'.*returning NoneType"),
    (lambda: jacobian(writes_only, np.ones(2)), "'f'.*returning NoneType"),
    (lambda: hvp(returns_int, np.ones(2), np.ones(2)), "'f'.*returning int"),
])
def test_unsupported_arguments_are_typed_errors_naming_them(call, name):
    with pytest.raises(ArgumentTypeError, match=name):
        call()


def test_forward_reverse_modes_unchanged():
    (dx,) = autodiff(Reverse, expx, Active(0.3))
    (t,) = autodiff(Forward, expx, Duplicated(0.3, 1.0))
    assert dx == t == pytest.approx(math.exp(0.3) * 1.3, rel=1e-14)
