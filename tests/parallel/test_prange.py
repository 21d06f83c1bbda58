"""``@jit(parallel=True)`` with ``prange``: results against CPython and NumPy, errors, odd sizes."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import gpucompiler
from gpucompiler import jit, prange
from gpucompiler.errors import UnsupportedError


def _sum_max_prod(a):
    s = 0.0
    m = -1.0e300
    p = 1.0
    for i in prange(a.shape[0]):
        x = a[i] * 2.0
        s += x
        m = max(m, x)
        p *= 1.0 + a[i] * 1e-6
    return s, m, p


def _min_sub_div(a):
    lo = 1.0e300
    d = 0.0
    q = 1024.0
    for i in prange(a.shape[0]):
        lo = min(a[i], lo)
        d -= a[i]
        q /= 1.0 + a[i] * 1e-6
    return lo, d, q


def _strided_write(a, b):
    for i in prange(1, a.shape[0], 3):
        b[i] = a[i] * a[i] + 1.0


def _int_sum(n):
    s = 0
    for i in prange(n):
        s += i * i
    return s


def _nested(a, m):
    s = 0.0
    for i in prange(a.shape[0]):
        t = 0.0
        for j in prange(m):
            t += a[i] * j
        s += t
    return s


def _reads_index(a, k):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i + k]
    return s


@pytest.fixture(params=[1, 2, 3, 4])
def threads(request, monkeypatch):
    """Thread counts: 1, the machine's 2, and more threads than iterations for small ``n``."""
    monkeypatch.setenv("GPUC_NUM_THREADS", str(request.param))
    return request.param


@pytest.mark.parametrize("n", [0, 1, 2, 5, 7, 100, 1001])
def test_reductions_match_python_for_every_size_and_thread_count(threads, n):
    a = np.random.default_rng(n).random(n)
    for fn in (_sum_max_prod, _min_sub_div):
        got = jit(parallel=True)(fn)(a)
        want = fn(a)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 4, 10, 11, 12, 13])
def test_strided_prange_writes_exactly_the_iterations_of_range(threads, n):
    a = np.arange(float(n))
    b = np.full(n, -1.0)
    jit(parallel=True)(_strided_write)(a, b)
    want = np.full(n, -1.0)
    _strided_write(a, want)
    np.testing.assert_array_equal(b, want)


def test_integer_sum_is_exact(threads):
    for n in (0, 1, 3, 10_000):
        assert jit(parallel=True)(_int_sum)(n) == sum(i * i for i in range(n))


def test_nested_prange_runs_the_inner_loop_serially_with_the_right_result(threads):
    a = np.random.default_rng(1).random(37)
    got = jit(parallel=True)(_nested)(a, 9)
    assert got == pytest.approx(_nested(a, 9), rel=1e-12)


def test_without_parallel_prange_is_range_and_spawns_no_thread():
    a = np.random.default_rng(2).random(50)
    serial = jit(_sum_max_prod)
    np.testing.assert_allclose(serial(a), _sum_max_prod(a), rtol=1e-12)
    assert "gpuc_parallel_pool" not in serial.inspect_llvm(gpucompiler.types.ArrayType(gpucompiler.types.float64, 1))
    threaded = jit(parallel=True)(_sum_max_prod)
    assert "gpuc_parallel_pool" in threaded.inspect_llvm(gpucompiler.types.ArrayType(gpucompiler.types.float64, 1))


def test_prange_is_range_in_plain_python():
    assert list(prange(2, 9, 3)) == list(range(2, 9, 3))


@pytest.mark.parametrize("k", [1, 60])
def test_an_index_error_in_any_chunk_surfaces_as_index_error(threads, k):
    a = np.arange(100.0)
    f = jit(parallel=True)(_reads_index)
    with pytest.raises(IndexError, match="index 100 is out of bounds for axis 0 with size 100"):
        f(a, k)
    assert f(a, 0) == a.sum()  # the function stays usable after the error


def test_a_math_error_in_the_body_raises_the_python_exception(threads):
    @jit(parallel=True)
    def inverse_sum(a):
        s = 0.0
        for i in prange(a.shape[0]):
            s += 1.0 / a[i]
        return s

    with pytest.raises(ZeroDivisionError):
        inverse_sum(np.arange(10.0))
    assert inverse_sum(np.arange(1.0, 5.0)) == pytest.approx(1 + 1 / 2 + 1 / 3 + 1 / 4)


def test_parallel_calls_from_several_python_threads_agree(monkeypatch):
    monkeypatch.setenv("GPUC_NUM_THREADS", "3")
    f = jit(parallel=True)(_sum_max_prod)
    a = np.random.default_rng(3).random(10_000)
    want = f(a)
    results = []

    def work():
        for _ in range(20):
            results.append(f(a))

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results == [want] * 80


def test_prange_in_a_function_called_from_a_prange_body(threads):
    @jit(parallel=True)
    def outer(a):
        s = 0.0
        for i in prange(a.shape[0]):
            s += _row_total(a, i)
        return s

    a = np.random.default_rng(4).random((13, 7))
    assert outer(a) == pytest.approx(float(a.sum()), rel=1e-12)


def _row_total(a, i):
    t = 0.0
    for j in prange(a.shape[1]):
        t += a[i, j]
    return t


def test_math_in_the_body(threads):
    @jit(parallel=True)
    def f(a):
        s = 0.0
        for i in prange(a.shape[0]):
            s += math.sqrt(a[i]) * math.sin(a[i])
        return s

    a = np.random.default_rng(5).random(999)
    assert f(a) == pytest.approx(float(np.sum(np.sqrt(a) * np.sin(a))), rel=1e-12)


# -- refused forms: typed errors at the loop's line ----------------------------------------------

def _carried(a):
    t = 0.0
    for i in prange(a.shape[0]):
        a[i] = t
        t = a[i] + 1.0
    return t


def _read_reduction(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i]
        a[i] = s
    return s


def _mixed(a):
    s = 1.0
    for i in prange(a.shape[0]):
        s += a[i]
        s *= 2.0
    return s


def _breaks(a):
    s = 0.0
    for i in prange(a.shape[0]):
        if a[i] > 3.0:
            break
        s += a[i]
    return s


def _returns(a):
    for i in prange(a.shape[0]):
        if a[i] > 3.0:
            return 1.0
    return 0.0


def _last_value(a):
    t = 0.0
    for i in prange(a.shape[0]):
        t = a[i] * 2.0
        a[i] = t
    return t


def _index_after(a):
    for i in prange(a.shape[0]):
        a[i] = 1.0
    return a[i]


def _read_in_a_branch_after(a):
    t = 0.0
    for i in prange(a.shape[0]):
        t = a[i]
        a[i] = t + 1.0
    if a[0] > 0.0:
        t = 1.0
    return t


def _read_on_the_next_outer_iteration(a):
    t = 0.0
    for k in range(3):
        a[0] = t
        for i in prange(a.shape[0]):
            t = a[i] + k
            a[i] = t
    return a[0]


@pytest.mark.parametrize("fn, words", [
    (_last_value, "'t' assigned in a prange loop and read after it"),
    (_index_after, "'i' assigned in a prange loop and read after it"),
    (_read_in_a_branch_after, "'t' assigned in a prange loop"),
    (_read_on_the_next_outer_iteration, "'t' assigned in a prange loop"),
    (_carried, "reads 't' before assigning it"),
    (_read_reduction, "read of the prange reduction variable 's'"),
    (_mixed, "with both"),
    (_breaks, "break out of a prange loop"),
    (_returns, "return inside a prange loop"),
])
def test_unsupported_loops_raise_a_typed_error_at_the_line(fn, words):
    with pytest.raises(UnsupportedError, match=words) as info:
        jit(parallel=True)(fn)(np.arange(5.0))
    assert f"test_prange.py:{fn.__code__.co_firstlineno}" not in str(info.value)  # the loop's line, not the def's
    assert "test_prange.py:" in str(info.value)


def test_complex_and_unsigned_reductions_keep_their_types(threads):
    @jit(parallel=True)
    def csum(a):
        s = complex(0.0, 0.0)
        for i in prange(a.shape[0]):
            s += complex(a[i], -a[i])
        return s

    @jit(parallel=True)
    def usum(a):
        s = np.uint8(0)
        for i in prange(a.shape[0]):
            s += a[i]
        return s

    a = np.arange(37.0)
    assert csum(a) == complex(a.sum(), -a.sum())
    u = np.arange(100, dtype=np.uint8)
    assert usum(u) == int(u.sum(dtype=np.uint8))  # wraps modulo 256 as NumPy's uint8 does


def test_prange_in_a_kernel_runs_serially_in_each_thread():
    from gpucompiler import device as gd, kernel, types as T

    @kernel
    def rowsum(a, out):
        i = gd.grid(1)
        if i < a.shape[0]:
            s = 0.0
            for j in prange(a.shape[1]):
                s += a[i, j]
            out[i] = s

    a = np.random.default_rng(6).random((10, 7))
    out = np.zeros(10)
    rowsum[1, 32, "cpu"](a, out)
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-12)
    assert "pthread" not in rowsum.inspect_llvm(T.ArrayType(T.float64, 2), T.ArrayType(T.float64, 1))


def test_a_zero_step_is_value_error_as_in_range():
    @jit(parallel=True)
    def stepped(a, step):
        s = 0.0
        for i in prange(0, a.shape[0], step):
            s += a[i]
        return s

    a = np.arange(10.0)
    assert stepped(a, 3) == a[::3].sum() and stepped(a, -1) == 0.0
    with pytest.raises(ValueError, match="must not be zero"):
        stepped(a, 0)


def test_raise_assert_and_print_in_a_parallel_body(threads, capsys):
    @jit(parallel=True)
    def checked(a):
        s = 0.0
        for i in prange(a.shape[0]):
            assert a[i] >= 0.0, "negative entry"
            if a[i] > 100.0:
                raise ValueError("entry too large")
            s += a[i]
        return s

    assert checked(np.arange(10.0)) == 45.0
    with pytest.raises(AssertionError, match="negative entry"):
        checked(np.array([1.0, 2.0, -1.0, 3.0, 4.0]))
    with pytest.raises(ValueError, match="entry too large"):
        checked(np.array([1.0, 2.0, 3.0, 300.0]))

    @jit(parallel=True)
    def shout(n):
        for i in prange(n):
            print("item", i)

    shout(3)
    assert sorted(capsys.readouterr().out.splitlines()) == ["item 0", "item 1", "item 2"]


def _temporaries_named_alike(a, b):
    for i in prange(a.shape[0]):
        t = a[i] * 2.0
        b[i] = t
    for i in prange(a.shape[0]):
        t = b[i] + 1.0
        a[i] = t
    t = 3.0
    for i in range(2):
        t = t + a[i]
    return t


def test_names_a_prange_loop_assigns_may_be_assigned_again_after_it(threads):
    # a variable assigned in a prange body kept its value from before the loop (Python's is the last
    # iteration's): reading it after the loop is refused, assigning it again first is not
    a, b = np.arange(6.0), np.zeros(6)
    want = _temporaries_named_alike(a.copy(), b.copy())
    got = jit(parallel=True)(_temporaries_named_alike)(a, b)
    assert got == want
