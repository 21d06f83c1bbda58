"""``sorted`` of tuples and 1-d arrays against CPython (order of equal items, signs of zeros), its
refusals, and NaN as a ValueError instead of an order CPython's algorithm alone defines."""

import math

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError

RNG = np.random.default_rng(5)


def four(a, b, c, d):
    return sorted((a, b, c, d))


def four_reversed(a, b, c, d):
    return sorted((a, b, c, d), reverse=True)


def of_array(x):
    return sorted(x)


def of_array_reversed(x):
    return sorted(x, reverse=True)


def of_expression(x):
    return sorted(x * 2.0 - 1.0)


def _same_items(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w and type(g) is type(w.item() if isinstance(w, np.generic) else w)
        if isinstance(w, float):
            assert math.copysign(1.0, g) == math.copysign(1.0, w)  # equal zeros keep CPython's order


_TUPLES = [(3, 1, 2, 1), (-5, 7, 0, -5), (2.5, -0.0, 0.0, -0.0), (0.0, -0.0, 1e300, -math.inf),
           (True, False, True, False), *[tuple(RNG.integers(-3, 3, 4).tolist()) for _ in range(6)],
           *[tuple((RNG.integers(-2, 2, 4) * 0.5).tolist()) for _ in range(6)]]


@pytest.mark.parametrize("fn", [four, four_reversed])
@pytest.mark.parametrize("k", range(len(_TUPLES)))
def test_tuples_as_cpython(fn, k):
    args = _TUPLES[k]
    got = jit(fn)(*args)
    assert isinstance(got, tuple)  # compiled code has no lists: the items, sorted, in a tuple
    _same_items(got, fn(*args))


_ARRAYS = [RNG.standard_normal(50), np.array([0.0, -0.0, 1.0, -0.0, 0.0]), RNG.integers(-9, 9, 70).astype(np.int32),
           RNG.integers(0, 255, 33).astype(np.uint8), np.arange(20.0)[::-3], np.zeros(0), np.array([7]),
           np.array([True, False, True])]


@pytest.mark.parametrize("fn", [of_array, of_array_reversed, of_expression])
@pytest.mark.parametrize("k", range(len(_ARRAYS)))
def test_arrays_as_cpython(fn, k):
    x = _ARRAYS[k]
    if fn is of_expression and x.dtype == bool:
        pytest.skip("bool * float is covered by the float arrays")
    got = jit(fn)(x)
    assert isinstance(got, np.ndarray) and got.ndim == 1  # an array of the sorted elements
    want = fn(x)
    assert got.dtype == (np.asarray(want).dtype if len(want) else got.dtype)
    _same_items(got.tolist(), want)


def mixed(a, b):
    return sorted((a, b))


def keyed(x):
    return sorted(x, key=abs)


def matrix(m):
    return sorted(m)


def test_refusals():
    with pytest.raises(ValueError, match="NaN"):
        jit(four)(1.0, math.nan, 0.0, 2.0)
    with pytest.raises(ValueError, match="NaN"):
        jit(of_array)(np.array([1.0, np.nan]))
    with pytest.raises(TypeInferenceError, match="one type"):
        jit(mixed)(1, 2.5)
    with pytest.raises(TypeInferenceError, match="'key'"):
        jit(keyed)(np.ones(3))
    with pytest.raises(TypeInferenceError, match="1-d"):
        jit(matrix)(np.ones((2, 2)))
