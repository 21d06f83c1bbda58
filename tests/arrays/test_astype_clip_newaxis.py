"""``a.astype``, ``np.clip`` / ``a.clip`` and ``np.newaxis`` against NumPy: values, dtypes, orders,
views and copies, errors; clip's derivatives against finite differences."""

import numpy as np
import pytest

from enzyme_plugin import Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError

RNG = np.random.default_rng(7)


def _check(got, want):
    """Equal values, dtype, shape and contiguity (NumPy's order)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert (got.flags.c_contiguous, got.flags.f_contiguous) == (want.flags.c_contiguous, want.flags.f_contiguous)


# -- astype -------------------------------------------------------------------------------
def to_f32(a):
    return a.astype(np.float32)


def to_i64(a):
    return a.astype(np.int64)


def to_u8(a):
    return a.astype("uint8")


def to_bool(a):
    return a.astype(bool)


def to_c128(a):
    return a.astype(np.complex128)


def to_float_kw(a):
    return a.astype(dtype=float)


def same_nocopy(a):
    return a.astype(a.dtype, copy=False)


def same_copy(a):
    return a.astype(a.dtype)


_SOURCES = [np.linspace(-3.7, 3.7, 11), np.arange(-5, 7, dtype=np.int32), np.array([0.0, -0.0, 2.5, 1e-300]),
            np.array([True, False, True]), np.arange(12.0).reshape(3, 4) * 1.5 - 4,
            np.asfortranarray(np.arange(12.0).reshape(3, 4) - 6.25), np.arange(24.0).reshape(4, 6)[::-1, ::2] - 9.5,
            np.arange(30, dtype=np.int64)[::3]]


@pytest.mark.parametrize("fn", [to_f32, to_i64, to_u8, to_bool, to_c128, to_float_kw, same_copy])
@pytest.mark.parametrize("k", range(len(_SOURCES)))
def test_astype_as_numpy(fn, k):
    a = _SOURCES[k]
    got, want = jit(fn)(a), fn(a)
    _check(got, want)
    assert not np.shares_memory(got, a)


def test_astype_copy_false_is_the_array_and_a_copy_is_not():
    a = np.arange(5.0)
    assert jit(same_nocopy)(a) is a  # an argument returned unchanged is that argument
    c = jit(same_copy)(a)
    c[0] = 99.0
    assert a[0] == 0.0


def nan_to_int(a):
    return a.astype(np.int64)


def complex_to_real(z):
    return z.astype(np.float64)


def order_keyword(a):
    return a.astype(np.float32, order="C")


def test_astype_refusals():
    with pytest.raises(ValueError):  # NumPy writes an undefined integer (and warns): refused here
        jit(nan_to_int)(np.array([1.0, np.nan]))
    with pytest.raises(TypeInferenceError, match="imaginary part"):
        jit(complex_to_real)(np.ones(2, dtype=np.complex128))
    with pytest.raises(TypeInferenceError, match="'order'"):
        jit(order_keyword)(np.ones(2))


# -- clip ---------------------------------------------------------------------------------
def clip_fn(a, lo, hi):
    return np.clip(a, lo, hi)


def clip_method(a, lo, hi):
    return a.clip(lo, hi)


def clip_low(a, lo, hi):
    return np.clip(a, lo, None)


def clip_high(a, lo, hi):
    return a.clip(None, hi)


def clip_keywords(a, lo, hi):
    return np.clip(a, min=lo, max=hi)


def clip_none(a, lo, hi):
    return np.clip(a, None, None)


def clip_expr(a, lo, hi):
    return np.clip(a * 2.0 + 1.0, lo, hi)


_CLIPS = [clip_fn, clip_method, clip_low, clip_high, clip_keywords, clip_none, clip_expr]
_CASES = [(np.array([-2.0, np.nan, 0.5, 3.0, -0.0]), -1.0, 1.0), (np.linspace(-2, 2, 9), 0.5, -0.5),
          (np.arange(-6, 6, dtype=np.int32), -2, 3), (np.arange(-6, 6, dtype=np.int64), -1.5, 2.5),
          (np.arange(12.0).reshape(3, 4)[:, ::-1], 2.0, 8.0), (np.array([1.5, -7.25, 0.0], dtype=np.float32), np.float32(-1), 1.0),
          (np.linspace(-1, 1, 4), np.array([-0.5, 0.0, 0.2, 0.9]), np.array([0.5])),
          (np.array([0.3, 2.0]), np.nan, 1.0)]


@pytest.mark.parametrize("fn", _CLIPS)
@pytest.mark.parametrize("k", range(len(_CASES)))
def test_clip_as_numpy(fn, k):
    a, lo, hi = _CASES[k]
    got, want = jit(fn)(a, lo, hi), fn(a, lo, hi)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert not np.shares_memory(got, a)


def clip_numbers(x, lo, hi):
    return np.clip(x, lo, hi)


@pytest.mark.parametrize("x", [-3.0, 0.25, 7.5, np.nan])
def test_clip_of_numbers(x):
    got, want = jit(clip_numbers)(x, 0.0, 1.0), clip_numbers(x, 0.0, 1.0)
    assert got == want or (np.isnan(got) and np.isnan(want))


def clip_wide_constants(a):
    return np.clip(a, -1, 300)


def test_clip_constant_bounds_outside_the_dtype_compare_by_value():
    a = np.array([0, 5, 200, 255], dtype=np.uint8)
    got, want = jit(clip_wide_constants)(a), clip_wide_constants(a)
    assert got.dtype == want.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


def clip_out(a, out):
    return np.clip(a, 0.0, 1.0, out=out)


def test_clip_out_is_refused():
    with pytest.raises(TypeInferenceError, match="out="):
        jit(clip_out)(np.ones(3), np.ones(3))


def clipped_energy(a, lo, hi):
    c = np.clip(a, lo, hi)
    return np.sum(c * c * a)


def grad_clipped(a, da, lo, hi):
    autodiff(Reverse, clipped_energy, Duplicated(a, da), lo, hi)


def tangent_clipped(a, ta, lo, hi):
    return autodiff(Forward, clipped_energy, Duplicated(a, ta), lo, hi)


def test_clip_derivatives_against_finite_differences():
    a = np.array([-1.7, -0.3, 0.2, 0.9, 1.6])  # away from the kinks at +-1
    lo, hi, h = -1.0, 1.0, 1e-6
    fd = np.empty(a.size)
    for k in range(a.size):
        e = np.zeros(a.size)
        e[k] = h
        fd[k] = (clipped_energy(a + e, lo, hi) - clipped_energy(a - e, lo, hi)) / (2 * h)
    da = np.zeros(a.size)
    jit(grad_clipped, plugins=("enzyme",))(a, da, lo, hi)
    np.testing.assert_allclose(da, fd, rtol=1e-6)
    t = RNG.standard_normal(a.size)
    (dt,) = jit(tangent_clipped, plugins=("enzyme",))(a, t, lo, hi)
    assert dt == pytest.approx(fd @ t, rel=1e-6)


# -- np.newaxis ---------------------------------------------------------------------------
def col(a):
    return a[:, None]


def row(a):
    return a[None, :]


def lead(a):
    return a[None]


def outer(a, b):
    return a[:, np.newaxis] * b[np.newaxis, :]


def middle(m):
    return m[:, None, 1:]


def picked(m):
    return m[1, None]


def trailing(m):
    return m[::-1, :, None]


@pytest.mark.parametrize("fn", [col, row, lead])
@pytest.mark.parametrize("a", [np.arange(5.0), np.arange(10.0)[::-3], np.arange(0.0)])
def test_newaxis_views_as_numpy(fn, a):
    got, want = jit(fn)(a), fn(a)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert got.size == 0 or np.shares_memory(got, a)  # a view, as NumPy's


@pytest.mark.parametrize("fn", [middle, picked, trailing])
def test_newaxis_in_2d_indices(fn):
    m = np.arange(12.0).reshape(3, 4)
    for x in (m, np.asfortranarray(m), m[:, ::-1]):
        got, want = jit(fn)(x), fn(x)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert np.shares_memory(got, x)


def test_newaxis_broadcasts_into_an_outer_product():
    a, b = np.linspace(-1, 1, 4), np.arange(3.0)
    np.testing.assert_array_equal(jit(outer)(a, b), outer(a, b))


def too_many(a):
    return a[:, None, 0]


def assign_newaxis(a):
    a[:, None] = 1.0


def test_newaxis_errors():
    with pytest.raises(TypeInferenceError, match="too many indices"):
        jit(too_many)(np.ones(3))
    with pytest.raises(TypeInferenceError, match=r"test_astype_clip_newaxis\.py"):
        jit(assign_newaxis)(np.ones(3))
