"""The sort kinds of ``np.sort``/``np.argsort``/``a.sort()`` against NumPy over sweeps of hard inputs.

The default kind (``quicksort``, also ``heapsort``) is an introsort, the
stable kinds a merge sort (gpucompiler/language/numpy/sort/npsortimpl.py).
Sorted values equal NumPy's (NaN last); the output is a permutation of the
input bit for bit (NumPy's own vectorised quicksort may return ``-0.0``
for a ``0.0``, so its signs of zero are not the reference); the stable
kinds equal NumPy's ``kind="stable"`` bit for bit, indices included; the
default ``argsort`` is a permutation that sorts the keys (the order of
equal keys is the algorithm's, NumPy's included).
"""


import numpy as np
import pytest

from enzyme_plugin import Duplicated, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.language.numpy.sort import npsortimpl

RNG = np.random.default_rng(28)
_SIZES = [*range(0, 41), 63, 64, 65, 127, 128, 129, 500, 1000, 2000]


def _inputs(n: int) -> dict:
    r = RNG.standard_normal(n)
    special = RNG.choice(np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0]), n)
    return {
        "random": r,
        "specials": np.where(RNG.random(n) < 0.5, special, r),
        "duplicates": RNG.integers(-3, 3, n).astype(np.float64),
        "signed zeros": RNG.choice(np.array([0.0, -0.0]), n),
        "sorted": np.sort(r),
        "reversed": np.sort(r)[::-1].copy(),
        "reversed with ties": np.sort(RNG.integers(0, 3, n))[::-1].astype(np.float64),
        "sorted then one out": np.concatenate([np.sort(r)[1:], r[:1]]),
        "equal": np.full(n, 2.5),
        "nan": np.full(n, np.nan),
        "organ pipe": np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]).astype(np.float64),
        "float32": r.astype(np.float32),
        "int64": RNG.integers(-(2 ** 62), 2 ** 62, n),
        "int8": RNG.integers(-128, 128, n).astype(np.int8),
        "uint8 few": RNG.integers(0, 3, n).astype(np.uint8),
        "bool": RNG.random(n) < 0.3,
    }


def sort_default(a):
    return np.sort(a)


def sort_heap(a):
    return np.sort(a, kind="heapsort")


def sort_stable(a):
    return np.sort(a, kind="stable")


def sort_merge(a):
    return np.sort(a, kind="mergesort")


def argsort_default(a):
    return np.argsort(a)


def argsort_stable(a):
    return np.argsort(a, kind="stable")


def argsort_stable_kw(a):
    return np.argsort(a, stable=True)


def in_place(a):
    b = a.copy()
    b.sort()
    return b


_SORT = [jit(sort_default), jit(sort_heap), jit(in_place)]
_STABLE = [jit(sort_stable), jit(sort_merge)]
_ARGSTABLE = [jit(argsort_stable), jit(argsort_stable_kw)]
_ARGSORT = jit(argsort_default)


def _bits(x):
    return x.view(np.dtype(f"u{x.itemsize}")) if x.dtype.kind == "f" else x


def _check_sorted(got, a, what):
    want = np.sort(a, kind="stable")
    assert got.dtype == a.dtype and got.shape == a.shape, what
    np.testing.assert_array_equal(got, want, err_msg=what)  # NaN equals NaN here; -0.0 equals 0.0
    np.testing.assert_array_equal(np.sort(_bits(got)), np.sort(_bits(a)), err_msg=f"{what}: not a permutation")


def _check_order(idx, a, what):
    assert idx.dtype == np.int64 and idx.shape == a.shape, what
    np.testing.assert_array_equal(np.sort(idx), np.arange(a.size), err_msg=f"{what}: not a permutation")
    np.testing.assert_array_equal(a[idx], np.sort(a, kind="stable"), err_msg=what)


@pytest.mark.parametrize("n", _SIZES)
def test_sweep_as_numpy(n):
    for name, a in _inputs(n).items():
        what = f"{name}, n={n}"
        for f in _SORT:
            _check_sorted(f(a), a, f"{f.__name__}: {what}")
        for f in _STABLE:  # bit for bit: the signs of equal zeros in the input's order
            np.testing.assert_array_equal(_bits(f(a)), _bits(np.sort(a, kind="stable")), err_msg=what)
        for f in _ARGSTABLE:
            np.testing.assert_array_equal(f(a), np.argsort(a, kind="stable"), err_msg=what)
        _check_order(_ARGSORT(a), a, f"argsort: {what}")


@pytest.mark.parametrize("name", list(_inputs(0)))
def test_large_as_numpy(name):
    a = _inputs(100_000)[name]
    _check_sorted(_SORT[0](a), a, name)
    np.testing.assert_array_equal(_bits(_STABLE[0](a)), _bits(np.sort(a, kind="stable")))
    np.testing.assert_array_equal(_ARGSTABLE[0](a), np.argsort(a, kind="stable"))
    _check_order(_ARGSORT(a), a, name)


def sort_axes(a):
    return np.sort(a, axis=0), np.sort(a), np.argsort(a, axis=0), np.argsort(a, kind="stable"), \
        np.sort(a, axis=None, kind="stable")


def test_axes_and_strided_views():
    a = np.where(RNG.random((300, 70)) < 0.1, np.nan, RNG.integers(0, 9, (300, 70)).astype(np.float64))[::2, ::-1]
    s0, s1, i0, i1, flat = jit(sort_axes)(a)
    np.testing.assert_array_equal(s0, np.sort(a, axis=0))
    np.testing.assert_array_equal(s1, np.sort(a))
    np.testing.assert_array_equal(np.take_along_axis(a, i0, axis=0), np.sort(a, axis=0))
    np.testing.assert_array_equal(i1, np.argsort(a, kind="stable"))
    np.testing.assert_array_equal(flat, np.sort(a, axis=None))

    def columns_in_place(b):
        b[:, 1:].sort(axis=0)

    b = a.copy()
    jit(columns_in_place)(b)
    want = a.copy()
    want[:, 1:].sort(axis=0)
    np.testing.assert_array_equal(b, want)


def heapsort(v, lo, hi):
    npsortimpl._heapsort(v, lo, hi)  # the introsort's fallback, hard to reach with median-of-3 pivots


@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 100, 1001])
def test_heapsort_fallback(n):
    for a in (RNG.standard_normal(n), RNG.integers(0, 4, n).astype(np.float64), np.arange(n, 0.0, -1.0)):
        v = np.concatenate([[9.0], a, [-9.0]])
        jit(heapsort)(v, 1, n + 1)
        np.testing.assert_array_equal(v, np.concatenate([[9.0], np.sort(a), [-9.0]]))


def energy(x):
    s = np.sort(x * x - x)
    return np.sum(s * np.linspace(1.0, 2.0, s.shape[0]))


def reverse(x, dx):
    autodiff(Reverse, energy, Duplicated(x, dx))


def test_sort_gradient_through_the_quicksort():
    x = RNG.permutation(300) * 0.01 + 0.6  # x*x - x increasing and distinct: no kink nearby
    dx = np.zeros(x.size)
    jit(reverse, plugins=("enzyme",))(x, dx)
    s = x * x - x
    weights = np.linspace(1.0, 2.0, x.size)[np.argsort(np.argsort(s))]  # each input's place in the sort
    np.testing.assert_allclose(dx, weights * (2 * x - 1), rtol=1e-12)

