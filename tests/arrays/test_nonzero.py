"""``np.nonzero``, ``a.nonzero()`` and one-argument ``np.where`` against NumPy."""

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError

RNG = np.random.default_rng(11)


def nonzero(a):
    return np.nonzero(a)


def where(a):
    return np.where(a)


def method(a):
    return a.nonzero()


def positive(a):
    return np.where(a > 0.5)


def selected(a):
    idx = np.nonzero(a > 0.5)[0]
    return a[idx], idx.shape[0]


def rows_sum(a):
    r, c = np.where(a != 0)
    s = 0
    for k in range(r.shape[0]):
        s += r[k] * 10 + c[k]
    return s


_ARRAYS = [np.array([1.0, -1.0, 0.0, np.nan, -0.0, 2.0]), RNG.integers(-1, 2, 30).astype(np.int8),
           np.array([True, False, True]), np.zeros(0), np.zeros(5), np.array([0j, 1j, 2.0 + 0j]),
           RNG.integers(0, 2, (4, 5)), np.asfortranarray(RNG.integers(0, 3, (3, 4)).astype(np.float32)),
           RNG.standard_normal((6, 6))[::2, ::-1] > 0, np.zeros((0, 3)), np.arange(30.0)[::4]]


def _same(got, want):
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.int64
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("fn", [nonzero, where, method])
@pytest.mark.parametrize("k", range(len(_ARRAYS)))
def test_indices_as_numpy(fn, k):
    a = _ARRAYS[k]
    _same(jit(fn)(a), fn(a))


@pytest.mark.parametrize("a", [RNG.random(40), RNG.random((5, 8)), np.zeros(3)])
def test_expressions_and_use_in_compiled_code(a):
    _same(jit(positive)(a), positive(a))
    if a.ndim == 1:
        (got, n), (want, m) = jit(selected)(a), selected(a)
        np.testing.assert_array_equal(got, want)
        assert n == m
    else:
        assert jit(rows_sum)(a) == rows_sum(a)


def three_d(a):
    return np.nonzero(a)


def number(x):
    return np.nonzero(x)


def test_refusals():
    with pytest.raises(TypeInferenceError, match="3-d"):
        jit(three_d)(np.ones((2, 2, 2)))
    with pytest.raises(TypeInferenceError, match="pass an array"):
        jit(number)(1.0)
