"""Arrays returned through the C-speed entry (NumPy's C API): the same arrays as NumPy's, nothing leaks.

A warm call of a function returning arrays runs the compiled entry, which
makes the NumPy arrays itself (codegen/pyresult.py). Every call here is made
at least twice, and the second goes through the entry (checked); the
reference is NumPy running the same Python function.
"""

from __future__ import annotations

import dataclasses
import gc
import sys
import tracemalloc
from typing import NamedTuple

import numpy as np
import pytest

from gpucompiler import jit
from test_array_lifetimes import _heap_in_use

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float32, np.float64, np.complex64, np.complex128]


def _warm(f, *args):
    """``f(*args)`` after a first call, checked to have run the compiled entry."""
    f(*args)
    assert type(type(f).__dict__.get("__call__")).__name__ == "builtin_function_or_method"
    return f(*args)


def _same(got, want):
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    assert got.strides == want.strides or got.size == 0  # (NumPy's strides of empty arrays vary)
    assert got.flags.c_contiguous == want.flags.c_contiguous
    assert got.flags.f_contiguous == want.flags.f_contiguous and got.flags.writeable == want.flags.writeable
    np.testing.assert_array_equal(got, want)


def ramp(n, dt):
    return np.arange(n).astype(dt)


def ones_of(n, dt):
    return np.ones(n, dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_new_arrays_of_every_dtype_come_back_as_numpy_makes_them(dt):
    def f(n):
        return np.ones(n, dt) * 3

    _same(_warm(jit(f), 5), f(5))


def shapes(n, m):
    a = np.arange(n * m * 1.0).reshape(n, m)
    return a, a.T, a[::2, 1:], np.zeros((n, 0)), np.empty(0, np.int8)


@pytest.mark.parametrize("n, m", [(3, 4), (1, 1), (0, 3), (4, 0)])
def test_layouts_and_empty_arrays_keep_their_strides_and_flags(n, m):
    got, want = _warm(jit(shapes), n, m), shapes(n, m)
    for g, w in zip(got, want):
        _same(g, w)
    assert got[1].base is not None and got[0].base is not None


def tail(a):
    return a[1:]


def same(a):
    return a


def mixed(a, n):
    return a[::-1], np.zeros(n, np.complex128), (n, np.arange(n), a)


def test_memory_of_an_argument_comes_back_as_a_view_of_it_or_as_the_argument():
    x = np.arange(5.0)
    f = jit(tail)
    v = _warm(f, x)
    _same(v, x[1:])
    v[0] = 42.0
    assert x[1] == 42.0
    assert _warm(jit(same), x) is x
    r, z, (n, k, y) = _warm(jit(mixed), x, 3)
    _same(r, x[::-1])
    _same(z, np.zeros(3, np.complex128))
    assert n == 3 and y is x
    _same(k, np.arange(3))


def test_a_view_of_a_readonly_argument_stays_readonly():
    x = np.arange(4.0)
    x.flags.writeable = False
    v = _warm(jit(tail), x)
    assert not v.flags.writeable
    np.testing.assert_array_equal(v, x[1:])


def pair(n):
    a = np.full(n, 7.0)
    return a, a[1:], n


def test_one_allocation_returned_twice_is_one_memory_freed_with_the_last_array():
    f = jit(pair)
    f(4)
    gc.collect()
    before = _heap_in_use()
    a, b, n = f(1 << 20)  # 8 MiB
    assert n == 1 << 20 and b.base is not a
    b[0] = -1.0
    assert a[1] == -1.0
    del a
    gc.collect()
    assert _heap_in_use() - before > 7 << 20  # b keeps it (the rest of the process frees a little meanwhile)
    del b
    gc.collect()
    assert _heap_in_use() - before < 1 << 20


def test_warm_calls_returning_arrays_leak_neither_objects_nor_memory():
    f = jit(pair)
    f(16)
    for _ in range(50):
        f(16)
    gc.collect()
    heap = _heap_in_use()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        refs = sys.getrefcount(np.dtype(np.float64))
        for _ in range(5000):
            f(16)
        gc.collect()
        grown = sum(d.size_diff for d in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024  # the arrays and capsules of 10000 results would be megabytes
    assert sys.getrefcount(np.dtype(np.float64)) - refs < 100  # the descriptor's reference is taken
    assert _heap_in_use() - heap < 1 << 20


def test_a_failed_allocation_in_a_warm_call_is_a_memory_error_and_the_next_call_works():
    def big(n):
        return np.zeros(n)

    f = jit(big)
    _warm(f, 3)
    with pytest.raises(MemoryError):
        f(1 << 60)
    _same(f(2), np.zeros(2))


def exprs(a):
    t = (a * 3, 1)
    return a + 1, np.sqrt(a) * a, t[0], (a > 1, -a)


def test_array_expressions_in_tuples_come_back_as_arrays():
    a = np.arange(4.0)
    got, want = _warm(jit(exprs), a), exprs(a)
    flat = lambda r: [x for it in r for x in (flat(it) if isinstance(it, tuple) else [it])]  # noqa: E731
    for g, w in zip(flat(got), flat(want)):
        _same(g, w)


FROZEN = np.arange(5.0)


class Pair(NamedTuple):
    x: np.ndarray
    k: int


@dataclasses.dataclass
class Box:
    x: np.ndarray
    w: float


def from_tuple(t):
    return t[0][1:]


def from_record(p):
    return p.x[::2]


def from_global():
    return FROZEN[1:]


def test_views_of_arrays_in_tuple_and_record_arguments_are_views_of_them():
    x = np.arange(6.0)
    for fn, arg, want in ((from_tuple, (x, 1), x[1:]), (from_record, Pair(x, 2), x[::2]),
                          (from_record, Box(x, 0.5), x[::2])):
        f = jit(fn)
        for _ in range(2):
            v = f(arg)
            _same(v, want)
            assert np.shares_memory(v, x)


def test_a_frozen_global_array_comes_back_read_only_with_its_values():
    f = jit(from_global)
    for _ in range(2):
        v = f()
        np.testing.assert_array_equal(v, FROZEN[1:])
        assert not v.flags.writeable and not np.shares_memory(v, FROZEN)


def zero_d(x):
    a = np.zeros(())
    a[()] = x
    return a, np.full((), 2, np.int8)


def test_zero_dimensional_arrays_come_back_as_zero_dimensional_arrays():
    got, want = _warm(jit(zero_d), 2.5), zero_d(2.5)
    for g, w in zip(got, want):
        _same(g, w)
