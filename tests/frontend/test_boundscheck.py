"""Bounds checks of @jit array indexing against NumPy's IndexError (on by default)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpucompiler.identity import job_key
from gpucompiler import jit, types as T


def _outcome(fn, *args):
    try:
        return fn(*args), None, None
    except IndexError as exc:
        return None, IndexError, str(exc)


def _same(fn, *args):
    """CPython/NumPy and the compiled function: same result or same IndexError, same arrays after."""
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want, got = _outcome(fn, *ref), _outcome(jit(fn), *mine)
    assert got == want
    for r, m in zip(ref, mine):
        if isinstance(r, np.ndarray):
            np.testing.assert_array_equal(m, r)
    return got


def read1(a, i):
    return a[i]


def write1(a, i, v):
    a[i] = v


def read2(a, i, j):
    return a[i, j]


def write2(a, i, j, v):
    a[i, j] = v


def add2(a, i, j, v):
    a[i, j] += v


def row_then_item(a, i, j):
    r = a[i]
    return r[j]


@pytest.mark.parametrize("i", [0, 9, -1, -10, 10, 11, -11, -25, 1 << 40])
def test_1d_read_and_write(i):
    a = np.arange(10.0)
    _same(read1, a, i)
    _same(write1, a, i, 7.5)


def test_message_is_numpys():
    assert _same(read1, np.arange(10.0), 10)[2] == "index 10 is out of bounds for axis 0 with size 10"
    assert _same(read1, np.arange(10.0), -11)[2] == "index -11 is out of bounds for axis 0 with size 10"


@pytest.mark.parametrize("i,j", [(0, 0), (2, 3), (-3, -4), (3, 0), (0, 4), (-4, 0), (0, -5), (5, 9), (-1, 4)])
def test_2d_every_axis(i, j):
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    _same(read2, a, i, j)
    _same(write2, a, i, j, 99)
    _same(add2, a, i, j, 5)
    _same(row_then_item, a, i, j)


def test_strided_view():
    a = np.arange(24.0).reshape(4, 6)[::2, 1::2]  # shape (2, 3), not contiguous
    for i, j in [(1, 2), (2, 0), (0, 3), (-2, -3), (-3, 0)]:
        _same(read2, a, i, j)


@settings(max_examples=60, deadline=None)
@given(st.integers(-14, 14), st.integers(-14, 14))
def test_differential_random_indices(i, j):
    a = np.arange(35, dtype=np.float64).reshape(5, 7)
    _same(read2, a, i, j)
    _same(write2, a, i, j, -1.0)


def shift_copy(a, out, k):
    for i in range(out.shape[0]):
        out[i] = a[i + k]
    return 0


def backwards(a, out):
    for i in range(a.shape[0], -3, -1):
        out[i] = a[i] * 2
    return 0


def inner_rows(a, out):
    for i in range(a.shape[0]):
        for j in range(1, a.shape[1]):
            out[i, j] = a[i, j] - a[i, j - 1]
    return 0


@pytest.mark.parametrize("k", [-3, 0, 1, 2, 5, 12])
def test_loops_stop_where_python_stops(k):
    # the range test before the loop fails for most k: the checked copy raises mid-loop
    _same(shift_copy, np.arange(10.0), np.zeros(8), k)


def test_negative_step_and_wrapping_in_a_loop():
    _same(backwards, np.arange(6.0), np.zeros(6))
    _same(backwards, np.arange(6.0), np.zeros(7))


def test_nested_loops_with_mismatched_shapes():
    a = np.random.default_rng(0).random((4, 6))
    _same(inner_rows, a, np.zeros((4, 6)))
    _same(inner_rows, a, np.zeros((4, 3)))
    _same(inner_rows, a, np.zeros((3, 6)))


def test_boundscheck_false_removes_the_checks():
    A = T.ArrayType(T.float64, 1, "C")
    assert "out of bounds" in jit(read1).inspect_llvm(A, T.int64)
    assert "out of bounds" not in jit(read1, boundscheck=False).inspect_llvm(A, T.int64)
    assert job_key(jit(read1)._job((A, T.int64))) != job_key(jit(read1, boundscheck=False)._job((A, T.int64)))
    assert jit(read1, boundscheck=False)(np.arange(4.0), -1) == 3.0


def test_loop_versioning_keeps_checks_out_of_the_loop():
    A = T.ArrayType(T.float64, 2, "C")
    text = jit(inner_rows).inspect_llvm(A, A)
    assert "vector" in text or "<2 x double>" in text or "<4 x double>" in text
