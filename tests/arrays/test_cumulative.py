"""``np.cumsum`` / ``np.cumprod`` and their methods against NumPy (values, dtypes, axes, layouts,
errors), and their derivatives against finite differences."""

import numpy as np
import pytest

from enzyme_plugin import Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.errors import AxisError, TypeInferenceError


def cumsum_flat(a):
    return np.cumsum(a)


def cumprod_flat(a):
    return np.cumprod(a)


def method_sum(a):
    return a.cumsum()


def method_prod(a):
    return a.cumprod()


def sum_axis0(a):
    return np.cumsum(a, axis=0)


def sum_axis1(a):
    return a.cumsum(1)


def prod_last(a):
    return np.cumprod(a, axis=-1)


def prod_axis0(a):
    return a.cumprod(axis=0)


def sum_f32(a):
    return np.cumsum(a, dtype=np.float32)


def sum_expr(a):
    return np.cumsum(a * 2 - 1, axis=0)


_FLAT = [cumsum_flat, cumprod_flat, method_sum, method_prod, sum_f32]
_2D = [sum_axis0, sum_axis1, prod_last, prod_axis0, sum_expr]
_M = np.linspace(-1.3, 2.2, 12).reshape(3, 4)
_ARRAYS = [np.linspace(-2.0, 3.0, 7), np.array([-0.0, np.nan, 1.5]), np.arange(1, 9, dtype=np.int32),
           np.array([200, 100, 7], dtype=np.uint8), np.array([True, False, True, True]),
           np.arange(1.0, 9.0, dtype=np.float32) / 3, np.arange(0.0), np.arange(20.0)[::-3] / 7,
           np.array([1 + 2j, -0.5j, 3.0])]
_MATRICES = [_M, np.asfortranarray(_M), _M[::-1, ::2], np.arange(1, 13, dtype=np.int64).reshape(4, 3),
             np.zeros((0, 3)), np.zeros((3, 0)), (np.arange(6) % 2 == 0).reshape(2, 3)]


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # the same order of operations: exactly NumPy's
    assert np.array_equal(np.signbit(got.real), np.signbit(want.real))


@pytest.mark.parametrize("fn", _FLAT)
@pytest.mark.parametrize("k", range(len(_ARRAYS)))
def test_1d_as_numpy(fn, k):
    a = _ARRAYS[k]
    if fn is sum_f32 and a.dtype.kind == "c":
        pytest.skip("complex to float32: refused (test_refusals)")
    _same(jit(fn)(a), fn(a))


@pytest.mark.parametrize("fn", _FLAT + _2D)
@pytest.mark.parametrize("k", range(len(_MATRICES)))
def test_2d_as_numpy(fn, k):
    m = _MATRICES[k]
    got, want = jit(fn)(m), fn(m)
    _same(got, want)
    assert not np.shares_memory(got, m)


def bad_axis(a):
    return np.cumsum(a, axis=2)


def three_d(a):
    return np.cumsum(a)


def with_out(a, out):
    return np.cumsum(a, out=out)


def runtime_axis(a, k):
    return np.cumsum(a, axis=k)


def test_refusals():
    with pytest.raises(AxisError, match="axis 2 is out of bounds"):
        jit(bad_axis)(np.ones((2, 2)))
    with pytest.raises(TypeInferenceError, match="3-d"):
        jit(three_d)(np.ones((2, 2, 2)))
    with pytest.raises(TypeInferenceError, match="out="):
        jit(with_out)(np.ones(2), np.ones(2))
    with pytest.raises(TypeInferenceError, match="constant"):
        jit(runtime_axis)(np.ones((2, 2)), 0)
    with pytest.raises(TypeInferenceError, match="imaginary part"):
        jit(sum_f32)(np.ones(2, dtype=np.complex128))


def energy(a):
    s = np.cumsum(a)
    p = np.cumprod(a)
    c = np.cumsum(a.reshape((2, 3)), axis=0)
    return np.sum(s * s) + np.sum(p) + np.sum(c * a.reshape((2, 3)))


def reverse(a, da):
    autodiff(Reverse, energy, Duplicated(a, da))


def forward(a, ta):
    return autodiff(Forward, energy, Duplicated(a, ta))


def test_derivatives_against_finite_differences():
    a = np.array([0.7, -1.2, 0.4, 1.5, -0.3, 0.9])
    h = 1e-6
    fd = np.array([(energy(a + h * e) - energy(a - h * e)) / (2 * h) for e in np.eye(a.size)])
    da = np.zeros(a.size)
    jit(reverse, plugins=("enzyme",))(a, da)
    np.testing.assert_allclose(da, fd, rtol=1e-6, atol=1e-9)
    t = np.linspace(-1.0, 1.0, a.size)
    (dt,) = jit(forward, plugins=("enzyme",))(a, t)
    assert dt == pytest.approx(fd @ t, rel=1e-6)
