"""New arrays in NumPy's memory order: ``*_like`` and ``np.copy`` follow the prototype, ``order=`` is NumPy's.

Reference: NumPy on the same arguments; strides, dtype, shape, flags and
values are compared (strides of empty arrays are left out: NumPy's vary).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError

BASE = np.arange(24.0).reshape(4, 6)
LAYOUTS = {
    "C": BASE,
    "F": np.asfortranarray(BASE),
    "strided": BASE[:, ::2],
    "reversed": BASE[::-1, ::2],
    "transposed-strided": BASE.T[:, ::2],
    "steps-transposed": np.ones((4, 4))[::2, ::2].T,
    "3-d axes swapped": np.arange(24.0).reshape(2, 3, 4).transpose(1, 0, 2),
    "3-d reversed middle": np.arange(24.0).reshape(2, 3, 4)[:, ::-1, :].transpose(2, 1, 0),
    "1-d reversed": BASE[0, ::-2],
    "extent 1, odd stride": np.lib.stride_tricks.as_strided(np.ones(3), (3, 1), (8, 80)),
    "equal strides": np.lib.stride_tricks.as_strided(np.ones(4), (2, 2), (8, 8)),
    "empty": BASE[:, :0],
}
DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float32, np.float64, np.complex64, np.complex128]


def zeros_like(a):
    return np.zeros_like(a)


def empty_like(a):
    return np.empty_like(a, np.float32)


def ones_like(a):
    return np.ones_like(a, dtype=np.int8)


def full_like(a):
    return np.full_like(a, 3)


def copy(a):
    return np.copy(a)


def method_copy(a):
    return a.copy()


def like_c(a):
    return np.zeros_like(a, order="C")


def like_f(a):
    return np.ones_like(a, order="F")


def like_a(a):
    return np.full_like(a, 2.5, order="A")


def like_k(a):
    return np.empty_like(a, order="k")


def _same(got, want, values=True):
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.size:
        assert got.strides == want.strides
        assert (got.flags.c_contiguous, got.flags.f_contiguous) == (want.flags.c_contiguous, want.flags.f_contiguous)
    if values:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn", [zeros_like, empty_like, ones_like, full_like, copy, method_copy, like_c, like_f,
                                like_a, like_k])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_new_arrays_take_numpys_order_for_every_layout(fn, layout):
    a = LAYOUTS[layout]
    f = jit(fn)
    for _ in range(2):  # the first call and the compiled entry
        _same(f(a), fn(a), values=fn not in (empty_like, like_k))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", ["C", "F", "reversed", "3-d axes swapped"])
def test_every_dtype_keeps_the_prototypes_order(dtype, layout):
    a = LAYOUTS[layout].astype(dtype)
    _same(jit(zeros_like)(a), zeros_like(a))
    _same(jit(copy)(a), copy(a))


def zeros_f(n):
    return np.zeros((n, 3), order="F"), np.full((2, n, 2), 1.5, order="F"), np.ones(n, order="F")


def test_constructors_take_f_order():
    for n in (0, 1, 4):
        for got, want in zip(jit(zeros_f)(n), zeros_f(n)):
            _same(got, want)


def loop_sum(a):
    b = np.zeros_like(a)
    b[:] = a  # written through the new strides
    s = 0.0
    for i in range(b.shape[0]):
        for j in range(b.shape[1]):
            s += b[i, j] * (i + 1) - j
    return s, b


def test_compiled_code_indexes_an_f_ordered_result_by_its_strides():
    for layout in ("F", "transposed-strided", "reversed"):
        a = LAYOUTS[layout]
        s, b = jit(loop_sum)(a)
        t, c = loop_sum(a)
        assert s == t
        _same(b, c)


def bad_order(a):
    return np.zeros_like(a, order="X")


def runtime_order(a, o):
    return np.zeros_like(a, order=o)


def k_plain(n):
    return np.zeros(n, order="A")


@pytest.mark.parametrize("fn, args, match", [(bad_order, (BASE,), "order='X' is not supported"),
                                             (runtime_order, (BASE, 1), "order=a value of type int64"),
                                             (k_plain, (3,), "order='A' is not supported")])
def test_unsupported_orders_are_typed_errors_at_the_line(fn, args, match):
    with pytest.raises(TypeInferenceError, match=match) as info:
        jit(fn)(*args)
    assert info.value.line == fn.__code__.co_firstlineno + 1
