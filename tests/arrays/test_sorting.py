"""``np.sort``, ``np.argsort``, ``a.sort()``, ``a.argsort()`` against NumPy, and the derivatives of
``np.sort`` against finite differences.

The sort is stable: indices are compared with NumPy's ``kind="stable"``
(with ties, NumPy's default quicksort may order them otherwise; the sorted
values are the same).
"""

import numpy as np
import pytest

from enzyme_plugin import Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.errors import AxisError, ReadOnlyArrayError, TypeInferenceError

RNG = np.random.default_rng(2026)


def sort(a):
    return np.sort(a)


def sort0(a):
    return np.sort(a, axis=0)


def sort_flat(a):
    return np.sort(a, axis=None)


def sort_kind(a):
    return np.sort(a, kind="mergesort")


def in_place(a):
    b = a.copy()
    r = b.sort()
    return b, r is None


def in_place0(a):
    b = a.copy()
    b.sort(axis=0)
    return b


def argsort(a):
    return np.argsort(a, kind="stable")


def argsort_default(a):
    return np.argsort(a)


def argsort0(a):
    return a.argsort(axis=0, kind="stable")


def argsort_flat(a):
    return np.argsort(a, axis=None, kind="stable")


def argsort_expr(a):
    return np.argsort(a * 3, kind="stable")


_1D = [RNG.standard_normal(37), np.array([3.0, np.nan, -1.0, np.inf, -np.inf, np.nan, 0.5]),
       RNG.integers(-5, 5, 40).astype(np.int32), RNG.integers(0, 4, 33).astype(np.uint8), np.array([True, False] * 9),
       np.zeros(0), np.array([2.5]), RNG.standard_normal(64).astype(np.float32), np.arange(100.0)[::-7],
       RNG.integers(-(2 ** 62), 2 ** 62, 50)]
_2D = [RNG.standard_normal((5, 7)), np.asfortranarray(RNG.integers(0, 3, (6, 4))), RNG.standard_normal((8, 6))[::2, ::-1],
       np.zeros((0, 3)), np.zeros((3, 0)), np.array([[np.nan, 1.0], [0.0, np.nan]])]


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn", [sort, sort_flat, sort_kind, argsort, argsort_flat, argsort_expr])
@pytest.mark.parametrize("k", range(len(_1D)))
def test_1d_as_numpy(fn, k):
    a = _1D[k]
    _same(jit(fn)(a), fn(a))


@pytest.mark.parametrize("fn", [sort, sort0, sort_flat, argsort, argsort0, argsort_flat, in_place0])
@pytest.mark.parametrize("k", range(len(_2D)))
def test_2d_as_numpy(fn, k):
    a = _2D[k]
    _same(jit(fn)(a), fn(a))


@pytest.mark.parametrize("k", range(len(_1D)))
def test_in_place_sorts_the_array_and_returns_none(k):
    a = _1D[k]
    (got, none), (want, _) = jit(in_place)(a), in_place(a)
    _same(got, want)
    assert none


def test_default_argsort_on_distinct_keys_is_numpy_quicksort():
    a = RNG.permutation(200).astype(np.float64) * 0.5 - 7  # distinct keys: one answer for every kind
    _same(jit(argsort_default)(a), argsort_default(a))


def test_sort_of_argument_in_place_is_seen_by_the_caller():
    def sort_it(a):
        a.sort()

    a = RNG.standard_normal(20)
    want = np.sort(a)
    jit(sort_it)(a)
    _same(a, want)


G = np.array([3.0, 1.0])


def sort_global():
    G.sort()


def complex_sort(z):
    return np.sort(z)


def runtime_axis(a, k):
    return np.sort(a, axis=k)


def structured(a):
    return np.sort(a, order="x")


def test_refusals():
    with pytest.raises(ReadOnlyArrayError, match="read-only"):
        jit(sort_global)()
    with pytest.raises(TypeInferenceError, match="complex"):
        jit(complex_sort)(np.ones(3, dtype=np.complex128))
    with pytest.raises(TypeInferenceError, match="constant"):
        jit(runtime_axis)(np.ones((2, 2)), 0)
    with pytest.raises(AxisError, match="axis 2 is out of bounds"):
        jit(lambda_axis2)(np.ones((2, 2)))
    with pytest.raises(TypeInferenceError, match="order="):
        jit(structured)(np.ones(3))


def lambda_axis2(a):
    return np.sort(a, axis=2)


def energy(x):
    s = np.sort(x * x - x)
    return np.sum(s * np.arange(1.0, 7.0))


def reverse(x, dx):
    autodiff(Reverse, energy, Duplicated(x, dx))


def forward(x, tx):
    return autodiff(Forward, energy, Duplicated(x, tx))


def test_sort_derivatives_against_finite_differences():
    x = np.array([0.3, -1.1, 0.8, 1.4, -0.6, 2.2])  # distinct values of x*x - x: no kink nearby
    h = 1e-6
    fd = np.array([(energy(x + h * e) - energy(x - h * e)) / (2 * h) for e in np.eye(x.size)])
    dx = np.zeros(x.size)
    jit(reverse, plugins=("enzyme",))(x, dx)
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-9)
    t = np.linspace(1.0, -1.0, x.size)
    (dt,) = jit(forward, plugins=("enzyme",))(x, t)
    assert dt == pytest.approx(fd @ t, rel=1e-6)
