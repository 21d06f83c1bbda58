"""Reductions along an axis, matrix products and selection by masks or index arrays in @jit code,
against NumPy: values, result dtypes, shapes (sizes 0 and 1 included) and NumPy's exceptions at the
user's line."""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import AxisError, TypeInferenceError

from tests.frontend.numpy_data import DTYPES, LAYOUTS, array_of, assert_close

ALL_DTYPES = [*DTYPES, "int16", "uint16", "uint32", "complex128"]
SHAPES = [(3, 4), (1, 5), (4, 1), (2, 2)]
EMPTY_SHAPES = [(0, 3), (3, 0), (0, 0)]


def _line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, text in enumerate(lines) if marker in text)


def _same(got, want):
    """Same dtype, shape and values (within rounding for floats); a number returns as a Python number."""
    if isinstance(want, np.generic):
        assert not isinstance(got, np.ndarray)
        assert type(got) is type(want.item()), (type(got), want.dtype)  # a bool comes back as a bool
        assert_close(np.asarray(got, dtype=want.dtype), np.asarray(want))
        return
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    assert_close(got, want)


# -- reductions along an axis ---------------------------------------------------------
def folds(a):
    return (np.sum(a, axis=0), a.sum(axis=1), np.sum(a, -1), a.prod(axis=0), np.prod(a, axis=-2),
            np.mean(a, axis=0), a.mean(axis=1))


def orders(a):
    return (np.min(a, axis=0), a.min(axis=1), np.max(a, 0), a.max(axis=-1), np.argmin(a, axis=0),
            a.argmin(axis=1), np.argmax(a, axis=-2), a.argmax(axis=1), np.amin(a, axis=1), np.amax(a, axis=0))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reductions_along_an_axis_match_numpy(dtype, layout):
    f, g = jit(folds), jit(orders)
    for shape in SHAPES:
        a = array_of(dtype, shape, layout)
        for got, want in zip(f(a), folds(a)):
            _same(got, want)
        if dtype != "complex128":
            for got, want in zip(g(a), orders(a)):
                _same(got, want)


@pytest.mark.parametrize("shape", EMPTY_SHAPES)
def test_empty_axes_sum_to_zero_and_average_to_nan_like_numpy(shape):
    a = np.zeros(shape, dtype=np.int32)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = folds(a)
    for got, w in zip(jit(folds)(a), want):
        _same(got, w)


def means(a):
    return np.mean(a), np.mean(a, axis=0), a.mean(axis=1)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64, np.float32, np.int8])
def test_the_mean_of_nothing_is_nan_and_nan_nanj_for_complex_numbers_like_numpy(dtype):
    for shape in EMPTY_SHAPES:
        a = np.zeros(shape, dtype=dtype)
        with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
            want = means(a)
        for got, w in zip(jit(means)(a), want):
            _same(got, w)
            for part in ("real", "imag"):  # nan+nanj, not nan+0j
                np.testing.assert_array_equal(getattr(np.asarray(got), part), getattr(np.asarray(w), part))


def min_rows(a):
    return np.min(a, axis=1), np.argmax(a, axis=1)  # min rows line


@pytest.mark.parametrize("shape,raises", [((0, 3), False), ((3, 0), True), ((0, 0), True)])
def test_min_of_an_empty_axis_is_numpys_value_error_at_the_line(shape, raises):
    a = np.ones(shape)
    if not raises:
        got, want = jit(min_rows)(a), min_rows(a)
        _same(got[0], want[0])
        _same(got[1], want[1])
        return
    with pytest.raises(ValueError, match="zero-size array to reduction operation minimum") as info:
        jit(min_rows)(a)
    assert f":{_line_of(min_rows, 'min rows line')}" in str(info.value.__notes__)


def whole_min(a):
    return a.min()  # whole min line


def test_min_of_an_empty_array_names_the_users_line():
    with pytest.raises(ValueError, match="zero-size array") as info:
        jit(whole_min)(np.zeros(0))
    assert f":{_line_of(whole_min, 'whole min line')}" in str(info.value.__notes__)


def along_1d(a):
    return np.sum(a, axis=0), a.max(axis=-1), np.argmin(a, 0), a.mean(axis=0)


@pytest.mark.parametrize("dtype", ["int8", "float32", "uint64"])
def test_a_1d_array_along_its_axis_reduces_to_a_number(dtype):
    a = array_of(dtype, (7,), "reversed")
    for got, want in zip(jit(along_1d)(a), along_1d(a)):
        assert type(got) is type(want.item()) and got == pytest.approx(want.item(), rel=1e-6)


def kept(a, v):
    return (np.sum(a, axis=0, keepdims=True), a.max(axis=1, keepdims=True), np.mean(a, axis=-1, keepdims=True),
            a.sum(keepdims=True), np.min(v, keepdims=True), v.sum(axis=0, keepdims=True))


def test_keepdims_keeps_the_reduced_axes_with_extent_one():
    a, v = array_of("float64", (3, 4), "F"), array_of("int32", (5,), "strided")
    for got, want in zip(jit(kept)(a, v), kept(a, v)):
        _same(got, want)


def truths(a):
    return (np.any(a, axis=0), a.any(axis=1), np.all(a, axis=-1), a.all(0), a.any(), np.all(a),
            np.any(a, axis=1, keepdims=True), a.all(keepdims=True))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_any_and_all_along_an_axis_match_numpy(dtype, layout):
    # np.any(a, axis=0) was an internal KeyError; any() of a complex array a type error
    f = jit(truths)
    for shape in [*SHAPES, *EMPTY_SHAPES]:
        a = array_of(dtype, shape, layout) if 0 not in shape else np.zeros(shape, dtype)
        if a.size and dtype != "bool":
            a.flat[0] = 0  # a zero among nonzeros: all() is False somewhere
        for got, want in zip(f(a), truths(a)):
            _same(got, want)


def test_any_counts_nan_as_nonzero_along_an_axis():
    a = np.array([[0.0, np.nan], [0.0, 0.0]])
    for got, want in zip(jit(truths)(a), truths(a)):
        _same(got, want)


def whole_orders(a, m):
    return (a.min(), a.max(), np.min(a), np.amax(a), a.min(keepdims=True), np.max(a, axis=0, keepdims=True),
            np.min(m), m.max(), np.max(m, axis=1, keepdims=True), np.minimum(a, a[::-1]), np.maximum(a, True))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_min_and_max_of_bool_arrays_are_bools_like_numpys(layout):
    # the elements were compared as integers: a.min() of a bool array came back as the int 0
    f = jit(whole_orders)
    for values in ([True, False, True], [True, True], [False], [False, True]):
        a = np.array(values)
        m = array_of("bool", (3, 2), layout)
        for got, want in zip(f(a, m), whole_orders(a, m)):
            _same(got, want)


def reduce_expression_along(a, b):
    return np.sum(a * b + 1, axis=0), (a - b).max(axis=1), np.argmin(np.sin(a), axis=1)


def test_fused_expressions_reduce_along_an_axis_with_broadcasting():
    a, b = array_of("float64", (4, 5), "reversed"), array_of("float64", (5,), "strided", seed=3)
    for got, want in zip(jit(reduce_expression_along)(a, b), reduce_expression_along(a, b)):
        _same(got, want)


def nan_columns(a):
    return np.min(a, axis=0), np.argmax(a, axis=0)


def test_nan_propagates_along_an_axis_and_argmax_finds_the_first_nan():
    a = np.array([[1.0, 2.0], [np.nan, 5.0], [3.0, np.nan]])
    got, want = jit(nan_columns)(a), nan_columns(a)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def axis_too_big(a):
    return a.sum(axis=-3)  # axis too big line


def axis_not_constant(a, k):
    return np.sum(a, axis=k)  # axis variable line


def axis_of_complex_max(a):
    return a.max(axis=0)  # complex max line


def reduce_3d(a):
    return np.sum(a, axis=1)  # three-d line


@pytest.mark.parametrize("fn,args,marker,error,words", [
    (axis_too_big, (np.ones((2, 3)),), "axis too big line", AxisError, "axis -3 is out of bounds for array of dimension 2"),
    (axis_not_constant, (np.ones((2, 3)), 1), "axis variable line", TypeInferenceError, "constant"),
    (axis_of_complex_max, (np.ones((2, 3), complex),), "complex max line", TypeInferenceError, "np.max"),
    (reduce_3d, (np.ones((2, 3, 4)),), "three-d line", TypeInferenceError, "3-d"),
])
def test_unsupported_axis_reductions_are_typed_errors_at_the_line(fn, args, marker, error, words):
    with pytest.raises(error) as info:
        jit(fn)(*args)
    assert f":{_line_of(fn, marker)}" in str(info.value) and words in str(info.value)


def test_an_axis_out_of_bounds_is_caught_as_numpy_catches_its_axis_error():
    with pytest.raises(ValueError):
        jit(axis_too_big)(np.ones((2, 3)))
    with pytest.raises(IndexError):
        jit(axis_too_big)(np.ones((2, 3)))


# -- products ------------------------------------------------------------------------
def products(a, b, v, w):
    return a @ b, np.dot(a, b), a @ v, np.dot(w, b), np.dot(a, v), w @ b, np.dot(w, v), v @ w


@pytest.mark.parametrize("da,db", [("float64", "float64"), ("float32", "float32"), ("float32", "float64"),
                                   ("int32", "int64"), ("int8", "uint8"), ("int8", "int8"), ("bool", "bool"),
                                   ("uint64", "uint64"), ("int16", "float32"), ("complex128", "float64")])
@pytest.mark.parametrize("la,lb", [("C", "C"), ("F", "reversed"), ("strided", "F")])
def test_matrix_products_match_numpy(da, db, la, lb):
    f = jit(products)
    for n, k, p in [(3, 4, 5), (1, 1, 1), (2, 3, 1), (1, 4, 3), (0, 3, 2), (2, 0, 3), (3, 2, 0)]:
        a, b = array_of(da, (n, k), la), array_of(db, (k, p), lb, seed=1)
        v, w = array_of(db, (k,), lb, seed=2), array_of(da, (k,), la, seed=3)
        for got, want in zip(f(a, b, v, w), products(a, b, v, w)):
            _same(got, want)


def expression_products(a, b, v):
    return (a * 2 - 1) @ b, a @ np.sin(v), np.dot(a.T, a)


def test_products_of_expressions_and_views():
    a, b, v = array_of("float64", (3, 4), "C"), array_of("float64", (4, 2), "F", seed=1), np.linspace(0, 1, 4)
    for got, want in zip(jit(expression_products)(a, b, v), expression_products(a, b, v)):
        _same(got, want)


def matmul_mismatch(a, b):
    return a @ b  # matmul line


def dot_mismatch(a, b):
    return np.dot(a, b)  # dot line


@pytest.mark.parametrize("fn,marker,sa,sb", [
    (matmul_mismatch, "matmul line", (2, 3), (2, 3)), (matmul_mismatch, "matmul line", (2, 3), (4,)),
    (matmul_mismatch, "matmul line", (3,), (2, 4)), (dot_mismatch, "dot line", (2, 3), (2, 3)),
    (dot_mismatch, "dot line", (2,), (3, 2)), (dot_mismatch, "dot line", (2, 3), (2,)),
])
def test_products_of_unaligned_shapes_raise_numpys_value_error_at_the_line(fn, marker, sa, sb):
    a, b = np.ones(sa), np.ones(sb)
    with pytest.raises(ValueError) as numpy_error:
        fn(a, b)
    with pytest.raises(ValueError) as info:
        jit(fn)(a, b)
    assert str(info.value) == str(numpy_error.value)
    assert f":{_line_of(fn, marker)}" in str(info.value.__notes__)


def product_3d(a, b):
    return a @ b  # product 3d line


def test_products_of_other_ranks_are_typed_errors_at_the_line():
    with pytest.raises(TypeInferenceError, match="3-d") as info:
        jit(product_3d)(np.ones((2, 2, 2)), np.ones((2, 2)))
    assert f":{_line_of(product_3d, 'product 3d line')}" in str(info.value)


# -- a[mask] and a[index] as values -------------------------------------------------------
def selections(a, b):
    c = a[a > b]
    return c, np.sum(a[a > 1]), a[(a < 2) | (b > 2)], (a * 2)[b <= 1], a[a != a]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float32", "float64"])
@pytest.mark.parametrize("shape", [(7,), (3, 4), (0,), (1, 1), (0, 2)])
def test_boolean_masks_select_like_numpy(dtype, layout, shape):
    a, b = array_of(dtype, shape, layout), array_of(dtype, shape, "C", seed=7)
    for got, want in zip(jit(selections)(a, b), selections(a, b)):
        _same(got, want)


def complex_mask(z, m):
    return z[m], np.sum(z[m])


def test_complex_arrays_select_by_a_mask_array():
    z = array_of("complex128", (3, 4), "F")
    m = array_of("bool", (3, 4), "reversed", seed=2)
    for got, want in zip(jit(complex_mask)(z, m), complex_mask(z, m)):
        _same(got, want)


def mask_of(a, m):
    return a[m]  # mask line


@pytest.mark.parametrize("sa,sm", [((3,), (4,)), ((2, 3), (2, 4)), ((2, 3), (3, 3))])
def test_a_mask_of_another_shape_is_numpys_index_error_at_the_line(sa, sm):
    a, m = np.ones(sa), np.ones(sm, dtype=bool)
    with pytest.raises(IndexError) as numpy_error:
        mask_of(a, m)
    with pytest.raises(IndexError) as info:
        jit(mask_of)(a, m)
    assert str(info.value) == str(numpy_error.value)
    assert f":{_line_of(mask_of, 'mask line')}" in str(info.value.__notes__)


def test_a_mask_of_fewer_dimensions_is_a_typed_error():
    with pytest.raises(TypeInferenceError, match="boolean mask of 1 dimensions") as info:
        jit(mask_of)(np.ones((2, 3)), np.ones(2, dtype=bool))
    assert f":{_line_of(mask_of, 'mask line')}" in str(info.value)


def taken(a, i):
    return a[i], np.sum(a[i])  # take line


@pytest.mark.parametrize("idt", ["int8", "int32", "int64", "uint8", "uint32"])
@pytest.mark.parametrize("layout", ["C", "reversed"])
def test_integer_arrays_pick_elements_like_numpy(idt, layout):
    a = array_of("float64", (6,), layout)
    for index in ([0, 5, 2, 2], [], [3]) + (([-1, -6, 4],) if idt[0] == "i" else ()):
        i = np.array(index, dtype=idt)
        for got, want in zip(jit(taken)(a, i), taken(a, i)):
            _same(got, want)


@pytest.mark.parametrize("index", [[0, 6], [-7], [100, 0]])
def test_an_index_out_of_bounds_is_numpys_index_error_at_the_line(index):
    a, i = np.arange(6.0), np.array(index)
    with pytest.raises(IndexError) as numpy_error:
        taken(a, i)
    with pytest.raises(IndexError) as info:
        jit(taken)(a, i)
    assert str(info.value) == str(numpy_error.value)
    assert f":{_line_of(taken, 'take line')}" in str(info.value.__notes__)


@pytest.mark.parametrize("a,i,words", [(np.ones((2, 2)), np.array([0]), "1-d array"),
                                       (np.ones(3), np.array([0], np.uint64), "signed"),
                                       (np.ones(3), np.array([0.0]), "booleans or integers")])
def test_unsupported_index_arrays_are_typed_errors_at_the_line(a, i, words):
    with pytest.raises(TypeInferenceError, match=words) as info:
        jit(taken)(a, i)
    assert f":{_line_of(taken, 'take line')}" in str(info.value)


def selected_many(a):
    b = a * 2.0  # a bound expression: a new array
    return np.sum(a[a > 0.5]) + np.sum(a @ b.T, axis=0)[0] + b[0, 0]


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident size from /proc")
def test_the_temporaries_of_selections_and_products_are_freed():
    f = jit(selected_many)
    a = np.random.default_rng(0).uniform(size=(60, 60))
    assert f(a) == pytest.approx(selected_many(a), rel=1e-12)
    for _ in range(200):
        f(a)
    before = _resident_bytes()
    for _ in range(3000):  # 3000 x (2 x 28 KiB of b and a @ b.T + 14 KiB of a[a > 0.5]) if nothing were freed
        f(a)
    assert _resident_bytes() - before < 20 * 2**20
