"""Duplicated complex arrays: the gradient of a real-valued function is ``dL/dRe + i dL/dIm`` (Enzyme's
convention), a complex tangent in forward mode; checked against finite differences on each part."""

from __future__ import annotations

import numpy as np
import pytest

from enzyme_plugin import Active, Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError

P = ("enzyme",)


def real_of(a):
    s = 0.0
    for i in range(a.shape[0]):
        z = a[i] * a[i] + 2.0 * a[i]
        s += z.real * z.imag + abs(a[i])
    return s


def squares_times_i(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * a[i] * 1j


def fd_parts(fn, a, h):
    """``dfn/dRe(a_k) + i dfn/dIm(a_k)`` by central differences."""
    g = np.zeros(a.shape, complex)
    for k in range(a.size):
        for unit in (1.0, 1j):
            e = np.zeros(a.shape, complex)
            e[k] = unit
            g[k] += unit * (fn(a + h * e) - fn(a - h * e)) / (2 * h)
    return g


@pytest.mark.parametrize("dtype, rtol", [(np.complex128, 1e-8), (np.complex64, 1e-5)])
def test_reverse_gradient_of_a_real_function_is_d_re_plus_i_d_im(dtype, rtol):
    a = np.array([1 + 2j, 0.5 - 1j, -0.25 + 0.125j], dtype)
    da = np.zeros_like(a)
    assert autodiff(Reverse, real_of, Duplicated(a, da)) == ()
    np.testing.assert_allclose(da, fd_parts(real_of, a.astype(complex), 1e-6), rtol=rtol)  # FD in double
    assert np.all(da.imag != 0)  # not a silent zero imaginary part


def test_forward_tangent_of_a_complex_direction():
    a = np.array([1 + 2j, 0.5 - 1j])
    for direction in (np.array([1j, 0]), np.array([0.3, -0.7 + 2j])):
        (t,) = autodiff(Forward, real_of, Duplicated(a, direction))
        h = 1e-6
        assert t == pytest.approx((real_of(a + h * direction) - real_of(a - h * direction)) / (2 * h), rel=1e-8)


def test_complex_valued_results_tangent_and_cotangent():
    a = np.array([1 + 2j, 0.5 - 1j])
    out, dout = np.zeros(2, complex), np.zeros(2, complex)
    autodiff(Forward, squares_times_i, Duplicated(a, np.array([1.0, 1j])), Duplicated(out, dout))
    np.testing.assert_allclose(dout, 2j * a * np.array([1.0, 1j]), rtol=1e-15)  # holomorphic: f'(a) da
    seed = np.array([1.0, 0.5j])
    da = np.zeros_like(a)
    autodiff(Reverse, squares_times_i, Duplicated(a, da), Duplicated(out, seed.copy()))

    def loss(z):  # the cotangent seed: L = Re(sum(conj(seed) * out))
        return float(np.sum(np.conj(seed) * (z * z * 1j)).real)
    np.testing.assert_allclose(da, fd_parts(loss, a, 1e-6), rtol=1e-8)


def grad_in_jit(a, da):
    autodiff(Reverse, real_of, Duplicated(a, da))
    return da[0]


def test_complex_arrays_in_jit_functions():
    a, da = np.array([1 + 2j, 0.5 - 1j]), np.zeros(2, complex)
    assert jit(grad_in_jit, plugins=P)(a, da) == pytest.approx(fd_parts(real_of, a, 1e-6)[0], rel=1e-8)


def square(x):
    return x * x


def test_an_active_complex_scalar_is_a_typed_error_at_the_call():
    with pytest.raises(TypeInferenceError, match="one-element complex array") as info:
        autodiff(Reverse, square, Active(1 + 2j))
    assert info.value.filename == __file__


def cube_of_first(z):
    return z[0] * z[0] * z[0]


def test_a_complex_result_has_a_complex_tangent_and_no_silent_reverse_seed():
    """Reverse mode of a complex-valued function used to return zero gradients; forward mode an IR error."""
    z = np.array([1 + 2j, 0.5])
    for dz in (np.array([1.0, 0.0], complex), np.array([1j, 3.0])):
        (t,) = autodiff(Forward, cube_of_first, Duplicated(z, dz))
        assert t == pytest.approx(3 * z[0] ** 2 * dz[0], rel=1e-15)  # holomorphic: f'(z) dz
    with pytest.raises(TypeInferenceError, match="returns a complex number") as info:
        autodiff(Reverse, cube_of_first, Duplicated(z, np.zeros(2, complex)))
    assert info.value.filename == __file__
