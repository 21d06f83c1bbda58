"""Reference counts through control flow: every program runs as CPython runs it, and the C heap
in use (glibc's ``mallinfo2``) is the same after many calls as before: nothing leaks, nothing is
freed while a value or a view still needs it."""

import ctypes
import gc

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.cache import later

N = 1 << 14  # 128 KiB of float64 per array: a leak of one array per call is megabytes


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _heap_in_use() -> int:
    """The C heap's bytes in use, once the work compiles left for after their calls (an entry's link and
    publish, on a thread) has ended: that thread's allocations are not the code's under test."""
    later.wait()
    libc = ctypes.CDLL(None)
    try:
        fn = libc.mallinfo2
    except AttributeError:
        pytest.skip("glibc's mallinfo2 is needed to measure the C heap")
    fn.restype = _MallInfo2
    info = fn()
    return info.uordblks + info.hblkhd


def carried(n, m):
    u = np.zeros(n)
    for k in range(m):
        v = np.empty(n)
        for i in range(n):
            v[i] = u[i] + k
        u = v
    return u[n - 1]


def early_view(n, m):
    for k in range(m):
        t = np.full(n, float(k))
        if k == m - 2:
            return t[1:4]
    return np.zeros(3)


def breaks(n, m):
    keep = np.ones(n)
    s = 0.0
    for k in range(m):
        t = np.arange(n)
        if k % 3 == 0:
            continue
        if k > 7:
            break
        s += t[k] * keep[0]
    return s


def whiles(n):
    a = np.ones(n)
    b = a
    k = 0
    while k < 5:
        if k % 2:
            b = np.zeros(n)
        else:
            b = a[::2]
        k += 1
    return b[0] + a.size


def helper(x, flag):
    if flag:
        return x[::-1]
    return np.full(x.shape[0], 3.0)


def calls(n):
    a = np.arange(n, dtype=np.float64)
    b = helper(a, True)
    c = helper(a, False)
    return b[0] + c[0], b


def tuples(n, m):
    pair = (np.zeros(n), np.ones(n))
    for k in range(m):
        pair = (pair[1], np.full(n, float(k)))
    x, y = pair
    return x[0] + y[0]


CASES = [(carried, (N, 4)), (early_view, (N, 5)), (breaks, (N, 12)), (whiles, (N,)), (calls, (N,)),
         (tuples, (N, 6))]


def _same(got, want):
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn,args", CASES, ids=[c[0].__name__ for c in CASES])
def test_control_flow_keeps_values_alive_and_frees_everything(fn, args):
    f = jit(fn)
    _same(f(*args), fn(*args))
    gc.collect()
    before = _heap_in_use()
    for _ in range(30):
        out = f(*args)
        del out
    gc.collect()
    assert _heap_in_use() - before < 2 * N * 8  # 30 leaked arrays would be 30x that


def rows_in_a_loop(n):
    a = np.ones((n, 2))
    s = 0.0
    for i in range(a.shape[0]):
        r = a[i]
        t = r[::-1]
        s += r[0] + t[0]
    return s


def test_views_of_a_live_array_update_no_counts():
    f = jit(rows_in_a_loop)
    assert f(5) == rows_in_a_loop(5)
    ir_text = f.inspect_llvm(*[__import__("gpucompiler").types.int64])
    # the new array's own reference taken and given back, and once more where the name binds it
    # (materialize, outside the loop); the views in the loop borrow it (each would add two)
    assert ir_text.count("atomicrmw") == 4


def _scaled_new(n):
    return np.ones(n, np.bool_) * 3, np.arange(n) + np.ones(n, np.int8)


def _expr_kept(n):
    e = np.full(n, 2.0) * np.arange(n)
    t = np.zeros(n)  # reuses the freed block if the expression's arrays were given back early
    t[:] = 5.0
    return e + t


def test_an_expression_over_new_arrays_keeps_them_alive_until_it_is_evaluated():
    f, g = jit(_scaled_new), jit(_expr_kept)
    for n in (1, 7, 1000):
        for got, want in zip(f(n), _scaled_new(n)):
            np.testing.assert_array_equal(got, want)
            assert got.dtype == want.dtype
        np.testing.assert_array_equal(g(n), _expr_kept(n))
