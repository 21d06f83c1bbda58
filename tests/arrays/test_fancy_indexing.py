"""Integer-array indexing of NumPy's kinds: ``a[rows, cols]`` and the assignments ``a[index] = v`` and
``a[rows, cols] = v``, against NumPy running the same functions."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from enzyme_plugin import gradient
from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError


@jit
def pick(a, rows, cols):
    return a[rows, cols]


@jit
def put(a, index, v):
    a[index] = v
    return a


@jit
def put2(a, rows, cols, v):
    a[rows, cols] = v
    return a


def _same(fn, *args):
    try:
        want = fn.py_func(*copy.deepcopy(args))
    except Exception as exc:  # NumPy's error is the reference
        with pytest.raises(type(exc)):
            fn(*copy.deepcopy(args))
        return exc
    got = fn(*copy.deepcopy(args))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    return got


def test_reads_of_a_matrix_by_two_index_arrays_are_numpys():
    rng = np.random.default_rng(7)
    m = rng.normal(size=(4, 5))
    for _ in range(60):
        n, k = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        rows, cols = rng.integers(-5, 6, size=n), rng.integers(-6, 7, size=k)  # some out of bounds, some not broadcast
        _same(pick, m, rows, cols)
    assert pick(np.arange(12).reshape(3, 4), np.array([0, 2, -1]), np.array([3, 0, 1])).tolist() == [3, 8, 9]


def test_assignments_through_index_arrays_are_numpys():
    rng = np.random.default_rng(8)
    for _ in range(60):
        n = int(rng.integers(1, 5))
        index = rng.integers(-6, 6, size=n)  # repeats: the last write stays
        value = rng.normal(size=int(rng.choice([1, n, n + 1])))
        _same(put, np.zeros(5), index, value)
        _same(put, np.zeros(5, dtype=np.int64), index, 7)
        rows, cols = rng.integers(-3, 3, size=n), rng.integers(-4, 4, size=int(rng.choice([1, n])))
        _same(put2, np.zeros((3, 4)), rows, cols, value)
        _same(put2, np.zeros((3, 4)), rows, cols, -1.5)


def test_index_arrays_the_compiler_does_not_take_are_typed_errors_at_the_line():
    @jit
    def three(a, i):
        return a[i, i, i]

    @jit
    def unsigned(a, i):
        a[i] = 1.0
        return a

    with pytest.raises(TypeInferenceError) as info:
        three(np.zeros((2, 2)), np.array([0]))
    assert info.value.filename == __file__ and info.value.line == three.py_func.__code__.co_firstlineno + 2
    with pytest.raises(TypeInferenceError):
        unsigned(np.zeros(2), np.array([0], dtype=np.uint64))


ROWS, COLS, SLOTS = np.array([0, 1, 1, 0]), np.array([2, 0, 2, 2]), np.array([3, 0])


def gathered(x):
    m = x[:, None] * x
    return np.sum(m[ROWS, COLS] ** 2)


def scattered(x):
    out = np.zeros(4)
    out[SLOTS] = x[:2] * 2.0
    return np.sum(out * np.array([1.0, 2.0, 3.0, 4.0]))


@pytest.mark.parametrize("fn", [gathered, scattered])
def test_gradients_through_index_arrays_match_finite_differences(fn):
    x = np.array([0.7, -1.3, 2.1])
    got = gradient(fn, x)
    h = 1e-6
    fd = np.array([(fn(x + h * e) - fn(x - h * e)) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)
