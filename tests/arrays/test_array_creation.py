"""NumPy's constructors inside ``@jit`` functions give what NumPy gives: values, dtype, shape."""

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float32, np.float64, np.complex64, np.complex128]


def _same(got, want):
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def zeros_ones_full(n, m):
    return np.zeros(n), np.ones((n, m)), np.full((m, n), 2.5), np.empty(n).shape, np.zeros((n,), order="C")


def test_zeros_ones_full_empty_with_int_and_tuple_shapes():
    got = jit(zeros_ones_full)(3, 2)
    want = zeros_ones_full(3, 2)
    for g, w in zip(got, want):
        if isinstance(w, tuple):
            assert g == w
        else:
            _same(g, w)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_keyword_by_numpy_type_python_type_and_string(dtype):
    name = np.dtype(dtype).name

    def f(n):
        return np.zeros(n, dtype=dtype), np.ones((n, 2), dtype), np.full(n, 1, dtype=name)

    got = jit(f)(4)
    _same(got[0], np.zeros(4, dtype))
    _same(got[1], np.ones((4, 2), dtype))
    _same(got[2], np.full(4, 1, dtype))


def full_default_dtypes(n):
    return np.full(n, 3), np.full(n, 3.5), np.full(n, True), np.zeros(n, float), np.zeros(n, int)


def test_full_takes_the_fill_values_type_and_python_types_name_dtypes():
    for g, w in zip(jit(full_default_dtypes)(3), full_default_dtypes(3)):
        _same(g, w)


def likes(a):
    return np.zeros_like(a), np.ones_like(a), np.full_like(a, 7), np.empty_like(a).shape, np.zeros_like(a, np.int32)


@pytest.mark.parametrize("make", [lambda: np.arange(6.0).reshape(2, 3), lambda: np.arange(6.0).reshape(2, 3).T,
                                  lambda: np.arange(12, dtype=np.int32)[::-3],
                                  lambda: np.asfortranarray(np.ones((3, 2), np.float32))],
                         ids=["C", "T", "negative-strides", "F"])
def test_like_constructors_on_every_layout(make):
    a = make()
    got, want = jit(likes)(a), likes(a)
    for g, w in zip(got, want):
        if isinstance(w, tuple):
            assert g == w
        else:
            _same(g, w)


def aranges(n, x):
    return np.arange(n), np.arange(2, n), np.arange(n, 1, -2), np.arange(x), np.arange(0.5, x, 0.25), \
        np.arange(n, dtype=np.float32), np.arange(1, n, 3)


@pytest.mark.parametrize("n,x", [(7, 2.2), (0, 0.0), (1, -1.0), (10, 3.0)])
def test_arange_matches_numpy(n, x):
    for g, w in zip(jit(aranges)(n, x), aranges(n, x)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w)


def spaces(a, b, n):
    return np.linspace(a, b, n), np.linspace(a, b), np.linspace(a, b, n, endpoint=False), \
        np.linspace(a, b, n, dtype=np.float32)


@pytest.mark.parametrize("a,b,n", [(0.0, 1.0, 5), (-2, 3, 7), (1.0, 1.0, 1), (0.0, 1.0, 0), (3.0, -1.0, 2)])
def test_linspace_matches_numpy_and_ends_exactly_at_stop(a, b, n):
    got = jit(spaces)(a, b, n)
    for g, w in zip(got, spaces(a, b, n)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)
    if n > 1:
        assert got[0][-1] == b


def negative(n):
    return np.zeros(n)


def test_negative_dimension_is_numpys_value_error():
    with pytest.raises(ValueError, match="negative dimensions"):
        jit(negative)(-1)


def bad_dtype(n):
    return np.zeros(n, dtype="float16")


def bad_keyword(n):
    return np.zeros(n, shape=3)


def bad_order(n):
    return np.ones(n, order="K")


def runtime_dtype(n, t):
    return np.zeros(n, t)


@pytest.mark.parametrize("fn,match", [(bad_dtype, "unsupported dtype"), (bad_keyword, "multiple values"),
                                      (bad_order, "order='K' is not supported")])
def test_unsupported_constructor_arguments_are_typed_errors_at_the_line(fn, match):
    with pytest.raises(TypeInferenceError, match=match) as info:
        jit(fn)(3)
    assert info.value.line == fn.__code__.co_firstlineno + 1
