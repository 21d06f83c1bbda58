"""``for`` over arrays, tuples, ``enumerate`` and ``zip`` in ``@jit`` functions, against CPython."""

import numpy as np
import pytest

from gpucompiler import device as gd, jit, kernel
from gpucompiler.errors import TypeInferenceError


def over_array(a):
    s = 0.0
    for v in a:
        s = s * 0.5 + v
    return s


def over_rows(m):
    s = 0.0
    for row in m:
        for v in row:
            s = s * 0.5 + v
    return s


def enumerated(a, start):
    s = 0.0
    for i, v in enumerate(a, start):
        s += i * v
    for i, _v in enumerate(a):
        s -= i
    return s


def zipped(a, b, n):
    s = 0.0
    for x, y, k in zip(a, b, range(n, 0, -3)):
        s += x * y + k
    for k, (x, j) in enumerate(zip(a, range(2, 40, 5))):
        s += k * x - j
    return s


def over_tuple(x):
    t = (x, 2.5, x * x)
    s = 0.0
    for v in t:
        s = s * 3.0 + v
    for v in (1, 2, 3):
        s += v
    return s


def with_break(a, limit):
    last = -1
    for i, v in enumerate(a):
        if v > limit:
            break
        if v < 0:
            continue
        last = i
    return last


def empty_loops(a):
    n = 0
    for _v in a:
        n += 1
    for _v in ():
        n += 100
    for _k in zip(a, range(0)):
        n += 1000
    return n


CASES = [
    (over_array, lambda r: (r.standard_normal(9),)),
    (over_array, lambda r: (r.integers(0, 255, 9).astype(np.uint8),)),
    (over_array, lambda r: (r.standard_normal(12)[::-3],)),
    (over_rows, lambda r: (r.standard_normal((4, 3)),)),
    (over_rows, lambda r: (np.asfortranarray(r.standard_normal((3, 5))),)),
    (enumerated, lambda r: (r.standard_normal(7), 3)),
    (zipped, lambda r: (r.standard_normal(8), r.standard_normal(6), 20)),
    (zipped, lambda r: (r.standard_normal(8), r.standard_normal(9), 5)),
    (over_tuple, lambda r: (1.5,)),
    (with_break, lambda r: (r.standard_normal(20), 1.0)),
    (empty_loops, lambda r: (np.zeros(0),)),
    (empty_loops, lambda r: (np.zeros(4),)),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_loops_over_iterables_match_cpython(k):
    fn, make = CASES[k]
    args = make(np.random.default_rng(k))
    assert jit(fn)(*args) == fn(*args)


def test_a_tuple_of_mixed_types_cannot_be_iterated_and_the_error_says_why():
    def mixed(x):
        s = 0.0
        for v in (1, x):
            s += v
        return s

    with pytest.raises(TypeInferenceError, match="items of one type"):
        jit(mixed)(2.0)


def test_a_tuple_indexed_at_run_time_raises_indexerror_out_of_range():
    def pick(x, i):
        return (x, x + 1.0, x + 2.0)[i]

    f = jit(pick)
    assert [f(1.0, i) for i in (0, 2, -1, -3)] == [pick(1.0, i) for i in (0, 2, -1, -3)]
    with pytest.raises(IndexError, match="tuple index out of range"):
        f(1.0, 3)


def test_a_zero_dimensional_array_is_not_iterable_as_in_numpy():
    with pytest.raises(TypeError):
        over_array(np.array(1.0))
    with pytest.raises(TypeInferenceError, match="no implementation of len"):
        jit(over_array)(np.array(1.0))


def test_a_tuple_returned_after_a_loop_that_widens_a_variable_has_the_widened_type():
    def widened(a, x):
        s = x  # an int64 that becomes a float64 in the loop
        for v in a:
            s = s + v
        return (s, 1)

    a = np.arange(3.0)
    got = jit(widened)(a, 2)
    assert got == widened(a, 2) and isinstance(got[0], float)


@kernel
def weighted_rows(m, w, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        s = 0.0
        for k, (x, y) in enumerate(zip(m[i], w)):
            s += (k + 1) * x * y
        for v in (1.0, 2.0):
            s += v
        out[i] = s


def test_loops_over_iterables_in_a_kernel_on_the_emulation_and_in_ptx(check_ptx):
    m, w, out = np.arange(12.0).reshape(3, 4), np.array([0.5, -1.0, 2.0]), np.zeros(3)
    weighted_rows[1, 4, "cpu"](m, w, out)
    want = [sum((k + 1) * x * y for k, (x, y) in enumerate(zip(m[i], w))) + 3.0 for i in range(3)]
    np.testing.assert_array_equal(out, want)
    check_ptx(weighted_rows.inspect_asm(m, w, out))
