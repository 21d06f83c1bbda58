"""Basic slicing, ``.T``, ``.reshape``, ``.copy()`` and the array attributes, against NumPy,
on arguments of every layout (C, F, strided, negative strides) and every dtype."""

import gc
import inspect

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float32, np.float64, np.complex64, np.complex128]


def _line(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _layouts(dtype, rows=6, cols=7):
    base = (np.arange(1, rows * cols + 1) % 7).astype(dtype).reshape(rows, cols)
    return {"C": base.copy(), "F": np.asfortranarray(base), "strided": base[::2, 1::2],
            "negative": base[::-1, ::-2], "transposed": base.T}


LAYOUTS = ["C", "F", "strided", "negative", "transposed"]


def slices_1d(a):
    return a[1:3], a[::2], a[::-1], a[-3:], a[5:1:-2], a[10:], a[:-1], a[3:1]


def test_1d_slices_match_numpy_as_returned_views():
    a = np.arange(8.0)
    for got, want in zip(jit(slices_1d)(a), slices_1d(a)):
        assert got.shape == want.shape and got.strides == want.strides
        np.testing.assert_array_equal(got, want)
        assert got.size == 0 or np.shares_memory(got, a)


def slices_2d(a, i, j):
    return a[:, j], a[i], a[1:-1, 1:-1], a[::-1, ::2], a[i, 1:], a[-1, ::-1], a[1:3][0]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_2d_views_on_every_layout_and_dtype(layout, dtype):
    a = _layouts(dtype)[layout]
    for got, want in zip(jit(slices_2d)(a, 1, 2), slices_2d(a, 1, 2)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def sum_interior(a):
    b = a[1:-1, 1:-1]
    s = 0.0
    for i in range(b.shape[0]):
        for j in range(b.shape[1]):
            s += b[i, j]
    return s, b.shape, b.size, b.ndim


@pytest.mark.parametrize("layout", LAYOUTS)
def test_reading_through_a_view_of_every_layout(layout):
    a = _layouts(np.float64)[layout]
    s, shape, size, ndim = jit(sum_interior)(a)
    assert s == a[1:-1, 1:-1].sum() and shape == a[1:-1, 1:-1].shape and size == a[1:-1, 1:-1].size and ndim == 2


def write_column(a, j, v):
    col = a[:, j]
    for i in range(col.shape[0]):
        col[i] = v
    row = a[0]
    row[0] = -v


@pytest.mark.parametrize("layout", LAYOUTS)
def test_writes_through_views_reach_the_argument(layout):
    a = _layouts(np.float64)[layout]
    want = a.copy()
    want[:, 2] = 9.0
    want[0][0] = -9.0
    jit(write_column)(a, 2, 9.0)
    np.testing.assert_array_equal(a, want)


def transposes(a):
    return a.T, a.T.T, a.transpose(), a.T[0]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_transpose(layout):
    a = _layouts(np.int64)[layout]
    for got, want in zip(jit(transposes)(a), transposes(a)):
        np.testing.assert_array_equal(got, want)
        assert got.strides == want.strides


def reshapes(a, n):
    return a.reshape(n, -1), a.reshape((2, 3, -1)), a.reshape(a.size), a.reshape(-1)[::2]


def test_reshape_of_contiguous_arrays_is_a_view():
    a = np.arange(24.0).reshape(4, 6)
    for got, want in zip(jit(reshapes)(a, 3), reshapes(a, 3)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert np.shares_memory(got, a)


def bad_size(a):
    return a.reshape(5, 5)


def test_reshape_to_another_size_is_numpys_value_error():
    with pytest.raises(ValueError, match="cannot reshape array of size 24"):
        jit(bad_size)(np.zeros(24))


def reshape_view(a):
    return a[::2].reshape(3, 2)


def test_reshape_of_a_possibly_strided_array_is_a_typed_error_at_the_line():
    with pytest.raises(TypeInferenceError, match="reshape of an array that may not be C-contiguous") as info:
        jit(reshape_view)(np.zeros(12))
    assert info.value.line == _line(reshape_view, "reshape(3, 2)")


def copies(a):
    c = a.copy()
    c[0, 0] = 100
    return c, a[::-1].copy(), a.T.copy()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_owns_c_contiguous_memory(layout, dtype):
    a = _layouts(dtype)[layout]
    before = a.copy()
    got, want = jit(copies)(a), copies(before.copy())
    np.testing.assert_array_equal(a, before)  # the argument is untouched
    for g, w in zip(got, want):
        assert g.flags.c_contiguous and g.flags.owndata is False and not np.shares_memory(g, a)
        np.testing.assert_array_equal(g, w)


def dtype_of(a, n):
    return np.zeros(n, a.dtype), np.empty_like(a, a.dtype).dtype == a.dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_attribute_names_the_element_type(dtype):
    z, _ = jit(dtype_of)(np.ones(3, dtype), 2)
    assert z.dtype == np.dtype(dtype)


def view_of_temporary(n):
    a = np.arange(n)
    return a[2:5]


def test_a_returned_view_keeps_its_allocation_alive():
    v = jit(view_of_temporary)(10)
    gc.collect()
    np.testing.assert_array_equal(jit(view_of_temporary)(10), [2, 3, 4])
    np.testing.assert_array_equal(v, [2, 3, 4])


def row_of_argument(a, i):
    return a[i]


def test_a_returned_view_of_an_argument_keeps_the_argument_alive():
    a = np.arange(12.0).reshape(3, 4)
    r = jit(row_of_argument)(a, 1)
    assert np.shares_memory(r, a)
    del a
    gc.collect()
    np.testing.assert_array_equal(r, [4.0, 5.0, 6.0, 7.0])
    ro = np.arange(4.0)
    ro.flags.writeable = False
    assert not jit(row_of_argument)(ro.reshape(2, 2), 0).flags.writeable


def zero_step(a, s):
    return a[::s]


def test_slice_step_zero_is_a_value_error():
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        jit(zero_step)(np.zeros(3), 0)


def fancy(a, idx):
    return a[idx]


def too_many(a):
    return a[1:, 2:, 3]


def unknown_method(a):
    return a.frobnicate()


@pytest.mark.parametrize("fn,args,match,text", [
    (fancy, (np.zeros((2, 2)), np.array([0, 1])), "not supported", "a[idx]"),  # rows by index: not yet
    (too_many, (np.zeros((2, 2)),), "too many indices", "a[1:, 2:, 3]"),
    (unknown_method, (np.zeros(2),), "no method 'frobnicate'", "frobnicate"),
])
def test_unsupported_indexing_and_methods_are_typed_errors_at_the_line(fn, args, match, text):
    with pytest.raises(TypeInferenceError, match=match) as info:
        jit(fn)(*args)
    assert info.value.line == _line(fn, text)


def assign(a, b):
    a[1:3] = 7
    a[:, 0] = b[::-1, 1]
    a[0] = b[0]
    a[1:-1, 1:-1] = 0.5
    a[-1, ::2] = b[0, 1:3]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64])
def test_assignment_into_views_of_every_layout(layout, dtype):
    a = _layouts(dtype, 10, 9)[layout][:5, :4]
    b = np.arange(20, 40).reshape(5, 4)
    want = a.copy()
    assign(want, b)
    jit(assign)(a, b)
    np.testing.assert_array_equal(a, want)


def shift(a):
    a[1:] = a[:-1]
    a[::-1][1:] = a[:-1]


def test_overlapping_assignment_reads_the_source_as_numpy_does():
    a, want = np.arange(8.0), np.arange(8.0)
    shift(want)
    jit(shift)(a)
    np.testing.assert_array_equal(a, want)


def mismatched(a, b):
    a[1:3] = b


def test_assigning_an_array_of_another_shape_is_a_value_error():
    with pytest.raises(ValueError, match="could not broadcast"):
        mismatched(np.zeros(5), np.zeros(3))
    with pytest.raises(ValueError, match="could not broadcast"):
        jit(mismatched)(np.zeros(5), np.zeros(3))


def broadcast_into(a, m, r):
    a[0:3] = a[4:5]          # (1,) into (3,)
    a[5:5] = a[0:1]          # (1,) into (0,)
    m[0:2, :] = r            # a row into two rows
    m[:, 1:] = m[:, 0:1]     # a column into three, overlapping


def test_an_array_assigned_into_a_view_broadcasts_as_in_numpy():
    a, m, r = np.arange(6.0), np.arange(12.0).reshape(3, 4), np.array([-1.0, -2.0, -3.0, -4.0])
    want_a, want_m = a.copy(), m.copy()
    broadcast_into(want_a, want_m, r)
    jit(broadcast_into)(a, m, r)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(m, want_m)


def rows_of_new(n):
    a = np.arange(n * 3).reshape(n, 3)
    r = a[1]
    return r, a[n - 1][::-1]


def test_a_row_of_a_new_array_keeps_it_alive():
    r, last = jit(rows_of_new)(4)
    gc.collect()
    np.testing.assert_array_equal(r, [3, 4, 5])
    np.testing.assert_array_equal(last, [11, 10, 9])


def flats(a):
    return a.ravel(), a.flatten(), np.copy(a), a.T.ravel()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ravel_flatten_and_np_copy(layout):
    a = _layouts(np.float32)[layout]
    got, want = jit(flats)(a), flats(a)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    assert not np.shares_memory(got[1], a) and not np.shares_memory(got[2], a)
    assert np.shares_memory(got[0], a) == (layout == "C")
