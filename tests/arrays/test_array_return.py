"""Arrays made by compiled code come back as NumPy arrays owning their memory; nothing leaks."""

import gc
import tracemalloc

import numpy as np

from gpucompiler import jit


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1e6


def fill(n):
    a = np.empty(n)
    for i in range(n):
        a[i] = i * 0.5
    return a


def test_returned_array_owns_memory_that_stays_valid_after_the_call():
    a = jit(fill)(1000)
    b = jit(fill)(1000)  # a second call must not reuse or free the first result's memory
    np.testing.assert_array_equal(a, np.arange(1000) * 0.5)
    np.testing.assert_array_equal(b, a)
    assert a.flags.writeable and a.flags.c_contiguous and a.base is not None
    a[:] = -1.0
    np.testing.assert_array_equal(b, np.arange(1000) * 0.5)


def test_memory_is_freed_when_numpy_drops_the_array():
    from test_array_lifetimes import _heap_in_use

    f = jit(fill)
    f(10)
    gc.collect()
    before = _heap_in_use()
    a = f(1 << 20)  # 8 MiB
    view = a[::2]
    del a
    assert _heap_in_use() - before > 7 << 20  # the view keeps it (the rest of the process frees a little meanwhile)
    del view
    gc.collect()
    assert _heap_in_use() - before < 1 << 20


def temporaries(n, m):
    s = 0.0
    for i in range(m):
        t = np.ones(n)
        u = t
        if i % 2 == 0:
            u = np.zeros(n)
        s += u[i % n] + t[0]
    return s


def returned(n):
    a = np.ones((n, 2))
    return a, a, np.zeros(n)


def test_many_calls_do_not_leak():
    f, g = jit(temporaries), jit(returned)
    assert f(10, 6) == temporaries(10, 6)
    g(2)
    before = _rss_mb()
    for _ in range(100):  # 100 x (20 + 3) MiB if nothing were freed
        f(1 << 17, 20)
        x = g(1 << 16)
        del x
    gc.collect()
    assert _rss_mb() - before < 200


def test_the_python_side_of_returned_arrays_is_released():
    g = jit(returned)
    g(3)
    tracemalloc.start()
    try:
        for _ in range(50):
            g(4)
        gc.collect()
        before = tracemalloc.take_snapshot()
        for _ in range(2000):
            g(4)
        gc.collect()
        grown = sum(d.size_diff for d in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024  # the Block, interface and array objects of 6000 arrays would be megabytes


def shapes_of(a):
    return np.zeros(a.shape), np.ones(a.shape[1:], np.int32)


def test_a_shape_tuple_of_an_array_shapes_a_new_one():
    z, o = jit(shapes_of)(np.empty((2, 3)))
    assert z.shape == (2, 3) and o.shape == (3,) and o.dtype == np.int32


def pair(n):
    a = np.arange(n)
    return a, a


def test_one_array_returned_twice_is_one_memory():
    a, b = jit(pair)(4)
    a[0] = 9
    assert b[0] == 9


def ident(a):
    return a


def first_or_new(a, c):
    b = a
    if c:
        b = np.zeros(a.shape[0])
    return b


def test_returning_an_argument_is_the_argument_and_joins_with_new_arrays():
    x = np.arange(3.0)
    assert jit(ident)(x) is x
    assert jit(first_or_new)(x, False) is x
    np.testing.assert_array_equal(jit(first_or_new)(x, True), np.zeros(3))


def helper(n):
    return np.full(n, 2.0)


def caller(n):
    a = helper(n)
    b = helper(n + 1)
    return a[0] + b[n], b


def test_arrays_returned_by_compiled_callees():
    s, b = jit(caller)(3)
    assert s == 4.0
    np.testing.assert_array_equal(b, np.full(4, 2.0))
