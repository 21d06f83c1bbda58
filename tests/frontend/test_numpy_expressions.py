"""NumPy ufuncs, array operators, fused expressions, reductions and dot in @jit code, against NumPy."""

from __future__ import annotations

import inspect
import math

import tracemalloc

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError

from tests.frontend.numpy_data import DTYPES, LAYOUTS, array_of, assert_close


# -- elementwise -----------------------------------------------------------------
def unary_into(out, a):
    out[:] = np.sin(a) + np.sqrt(np.abs(a)) * np.exp(-a) - np.tanh(a) + np.floor(a)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_ufuncs_of_every_dtype_and_layout_match_numpy(dtype, layout):
    a = array_of(dtype, (6, 5), layout)
    want = np.sin(a) + np.sqrt(np.abs(a)) * np.exp(-a) - np.tanh(a) + np.floor(a)
    out = np.zeros_like(want)
    jit(unary_into)(out, a)
    assert_close(out, want)


def binary_into(out, a, b):
    out[:] = (a + b) * 2 - a / (np.abs(b) + 1) + np.maximum(a, b) - np.minimum(a, 1)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("da,db", [("int32", "int64"), ("int64", "float32"), ("float32", "float32"),
                                   ("float64", "int32"), ("bool", "float64"), ("uint8", "int8"),
                                   ("uint64", "int64"), ("int16", "uint32")])
def test_binary_operators_promote_like_numpy(da, db, layout):
    a, b = array_of(da, (4, 6), layout), array_of(db, (4, 6), "C", seed=1)
    want = (a + b) * 2 - a / (np.abs(b) + 1) + np.maximum(a, b) - np.minimum(a, 1)
    out = np.zeros_like(want)
    jit(binary_into)(out, a, b)
    assert_close(out, want)


def compare_into(out, a, b):
    out[:] = (a < b) | (a >= 2.5) & ~(b == a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_comparisons_and_logic_give_bools(dtype):
    a, b = array_of(dtype, (9,), "C"), array_of(dtype, (9,), "reversed", seed=3)
    out = np.zeros(9, dtype=bool)
    jit(compare_into)(out, a, b)
    np.testing.assert_array_equal(out, (a < b) | (a >= 2.5) & ~(b == a))


def inverted(a, b, m, out):
    out[:] = ~m
    return ~(a > 0.5), np.invert(m), np.bitwise_not(m & (a > 0.2)), ~b, ~m ^ True


def test_inverting_a_bool_array_is_numpys_logical_not():
    # ~ of a bool array gave all True: Python's ~True is -2, which is nonzero
    a, b = np.array([0.1, 0.6, 0.3, 0.9]), np.array([1, -2, 0, 127], np.int8)
    m = np.array([True, False, True, False])
    out, want_out = np.ones(4, bool), ~m
    for got, want in zip(jit(inverted)(a, b, m, out), inverted(a, b, m, np.ones(4, bool))):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(out, want_out)


def with_bools(a):
    return (a + True, a * False, np.maximum(a, True), np.minimum(False, a), a | True, a == True,  # noqa: E712
            np.where(a > 1, a, False), np.logical_and(a, True))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if not d.startswith("float")])
def test_python_bools_next_to_arrays_take_numpys_bool_type(dtype):
    # a Python bool in an array expression was a type error naming NumPy's resolver
    a = array_of(dtype, (5,), "strided")
    for k, (got, want) in enumerate(zip(jit(with_bools)(a), with_bools(a))):
        assert got.dtype == want.dtype, (k, got.dtype, want.dtype)
        assert_close(got, want)


def fused(out, a, b, c):
    out[:] = a * b + np.sin(c)


def test_fused_expression_into_an_existing_array():
    a, b, c = (array_of("float64", (100,), "C", seed=k) for k in range(3))
    out = np.zeros(100)
    jit(fused)(out, a, b, c)
    assert_close(out, a * b + np.sin(c))


def broadcast_into(out, row, col, s):
    out[:, :] = row * col - s


def test_broadcasting_rows_columns_and_scalars():
    row, col = array_of("float64", (1, 5), "C"), array_of("float64", (4, 1), "C", seed=2)
    out = np.zeros((4, 5))
    jit(broadcast_into)(out, row, col, 0.5)
    assert_close(out, row * col - 0.5)
    out = np.zeros((4, 5))
    jit(broadcast_into)(out, row[0], col, 2)  # a 1-d row broadcasts against the 2-d destination
    assert_close(out, row[0] * col - 2)


def test_shapes_that_do_not_broadcast_raise_value_error():
    with pytest.raises(ValueError, match="broadcast"):
        jit(broadcast_into)(np.zeros((4, 5)), np.ones((1, 3)), np.ones((4, 1)), 0.0)
    with pytest.raises(ValueError, match="broadcast"):
        jit(fused)(np.zeros(5), np.ones(5), np.ones(4), np.ones(5))


def where_into(out, a):
    out[...] = np.where(a > 1.0, a, -a) + np.where(a < 2.0, 1, 0)


def where_with_numbers(a, x):
    return np.where(a > 1, a, 0), np.where(a > 1, 2.5, a), np.where(a > 1, a, x)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.uint64, np.bool_])
def test_where_of_an_array_and_a_python_number_keeps_the_arrays_dtype(dtype):
    a = np.array([0, 1, 2, 3]).astype(dtype)
    for x in (300, -1, 1.5):
        for got, want in zip(jit(where_with_numbers)(a, x), where_with_numbers(a, x)):
            assert got.dtype == want.dtype and np.array_equal(got, want), (dtype, x, got, want)


def fmod_of(a, b):
    return np.fmod(a, b)


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint8, np.bool_, np.float32])
def test_fmod_of_integer_arrays_is_cs_remainder_and_zero_for_a_zero_divisor(dtype):
    a = np.array([7, -7, 0, -128, 5, 3, -1, 127]).astype(dtype)
    b = np.array([3, 3, 0, -1, -2, 0, 2, 1]).astype(dtype)
    with np.errstate(all="ignore"):
        want = np.fmod(a, b)
    got = jit(fmod_of)(a, b)
    assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True), (got, want)


def divided(a, b):
    return a / b, np.true_divide(a, 2.0)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_array_division_is_numpys_loop_with_ieee_results_for_zero(dtype):
    parts = [0.0, -0.0, 1.0, -2.5, math.inf, math.nan, 1e-310, 3e300, 7.0 / 3.0]
    z = np.array([complex(x, y) for x in parts for y in parts])
    a, b = np.repeat(z, z.size).astype(dtype), np.tile(z, z.size).astype(dtype)
    with np.errstate(all="ignore"):
        want = divided(a, b)
    for got, w in zip(jit(divided)(a, b), want):
        assert got.dtype == w.dtype
        np.testing.assert_array_equal(got, w)  # NaNs in the same places, else equal to the last bit


def test_where_selects_elementwise():
    a = array_of("float64", (11,), "strided")
    out = np.zeros(11)
    jit(where_into)(out, a)
    assert_close(out, np.where(a > 1.0, a, -a) + np.where(a < 2.0, 1, 0))


def scalar_into(out, a, k):
    out[:] = k


def test_a_scalar_fills_an_array():
    out = np.zeros((3, 4), dtype=np.int32)
    jit(scalar_into)(out, out, 7)
    np.testing.assert_array_equal(out, np.full((3, 4), 7))


def augment(a, b):
    c = a
    a += b
    a *= 2.0
    return c[0]


def test_augmented_assignment_updates_the_array_in_place():
    a, b = np.arange(4.0), np.ones(4)
    first = jit(augment)(a, b)
    np.testing.assert_array_equal(a, (np.arange(4.0) + 1) * 2)
    assert first == 2.0  # c is the same array as a, as in NumPy


def numpy_on_scalars(x, n, d):
    return (np.sin(x), np.sqrt(-x), np.maximum(x, math.nan), np.floor_divide(n, d), np.remainder(n, d),
            np.exp(n), np.abs(n), np.where(x > 0, n, d))


@pytest.mark.parametrize("x,n,d", [(0.5, 7, 2), (-2.0, -7, 0), (3.0, 5, -3)])
def test_ufuncs_of_numbers_follow_numpy_not_math(x, n, d):
    got = jit(numpy_on_scalars)(x, n, d)
    with np.errstate(all="ignore"):
        want = numpy_on_scalars(x, n, d)
    for g, w in zip(got, want):
        assert (g == w) or (math.isnan(g) and math.isnan(w)), (got, want)


# -- reductions ---------------------------------------------------------------------
def reductions(a):
    return (np.sum(a), a.sum(), np.prod(a), np.min(a), a.max(), np.mean(a), a.argmin(), np.argmax(a),
            np.any(a > 2), a.all())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 4)])
def test_reductions_match_numpy(dtype, layout, shape):
    a = array_of(dtype, shape, layout)
    got = jit(reductions)(a)
    want = reductions(a)
    for g, w in zip(got, want):
        if isinstance(w, (np.floating, float)):
            assert g == pytest.approx(float(w), rel=1e-5 if a.dtype == np.float32 else 1e-13)
        else:
            assert g == w


def reduce_expression(a, b):
    return np.sum(np.sin(a) * b), (a - b).max(), np.argmin(a * b + 1)


def test_reductions_of_fused_expressions():
    a, b = array_of("float64", (4, 5), "F"), array_of("float64", (5,), "reversed", seed=4)
    got = jit(reduce_expression)(a, b)
    assert got[0] == pytest.approx(np.sum(np.sin(a) * b), rel=1e-13)
    assert got[1] == (a - b).max() and got[2] == np.argmin(a * b + 1)


def test_nan_propagates_through_min_and_argmax_finds_the_first_nan():
    a = np.array([1.0, np.nan, 5.0, np.nan])
    got = jit(reductions)(a)
    assert math.isnan(got[3]) and math.isnan(got[4]) and got[6] == 1 and got[7] == 1


def test_empty_reductions_raise_like_numpy():
    with pytest.raises(ValueError, match="zero-size array"):
        jit(reductions)(np.zeros(0))


def complex_reductions(a):
    return np.sum(a), a.mean(), np.prod(a)


def test_sum_mean_and_prod_of_complex_arrays():
    a = array_of("complex128", (6,), "strided")
    got, want = jit(complex_reductions)(a), complex_reductions(a)
    for g, w in zip(got, want):
        assert g == pytest.approx(complex(w), rel=1e-13)


def complex_max(a):
    return a.max()  # complex max line


def test_an_order_reduction_of_complex_numbers_is_a_typed_error_at_the_line():
    _, start = inspect.getsourcelines(complex_max)
    with pytest.raises(TypeInferenceError, match=r"np\.max") as info:
        jit(complex_max)(np.ones(3, dtype=complex))
    assert f":{start + 1}" in str(info.value)


def dots(a, b):
    return np.dot(a, b), a @ b


@pytest.mark.parametrize("da,db", [("float64", "float64"), ("float32", "float32"), ("int32", "int64"),
                                   ("float32", "float64")])
def test_dot_of_vectors(da, db):
    a, b = array_of(da, (9,), "strided"), array_of(db, (9,), "reversed", seed=5)
    d, m = jit(dots)(a, b)
    assert d == m == pytest.approx(float(np.dot(a, b)), rel=1e-5)


def test_dot_of_vectors_of_different_lengths_raises():
    with pytest.raises(ValueError, match="aligned"):
        jit(dots)(np.ones(3), np.ones(4))


# -- what is not supported: typed errors at the user's line ------------------------------
def bad_ufunc_keyword(out, a):
    out[:] = np.sin(a, casting="unsafe")  # ufunc keyword line


def bad_axis(a):
    return np.sum(a, axis=2)  # axis line


def bad_three_d(a):
    return np.max(a)  # three-d line


def bad_truth(a):
    if a > 0:  # truth line
        return 1
    return 0


@pytest.mark.parametrize("fn,args,marker,words", [
    (bad_ufunc_keyword, (np.zeros(3), np.ones(3)), "ufunc keyword line", "casting"),
    (bad_axis, (np.ones((2, 3)),), "axis line", "axis"),
    (bad_three_d, (np.ones((2, 3, 4)),), "three-d line", "3-d"),
    (bad_truth, (np.ones(3),), "truth line", "ambiguous"),
])
def test_unsupported_numpy_uses_are_typed_errors_at_the_line(fn, args, marker, words):
    lines, start = inspect.getsourcelines(fn)
    line = start + next(k for k, text in enumerate(lines) if marker in text)
    with pytest.raises(TypeInferenceError) as info:
        jit(fn)(*args)
    assert f":{line}" in str(info.value) and words in str(info.value)


def test_assigning_into_a_read_only_array_is_refused():
    out = np.zeros(3)
    out.flags.writeable = False
    with pytest.raises(TypeInferenceError, match="read-only"):
        jit(fused)(out, np.ones(3), np.ones(3), np.ones(3))


def mask_fill(a, b, v):
    a[a > b] = v
    a[(a < 0.5) & (b > 0)] = 0


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(8,), (3, 5)])
def test_boolean_mask_assignment_of_a_number(layout, shape):
    a, b = array_of("float64", shape, layout), array_of("float64", shape, "C", seed=6)
    want = a.copy()
    mask_fill(want, b, 9)
    jit(mask_fill)(a, b, 9)
    np.testing.assert_array_equal(a, want)


def mask_set(a, m):
    a[m] = 1.0


def test_a_mask_of_another_shape_is_an_index_error():
    with pytest.raises(IndexError, match="boolean index"):
        mask_set(np.zeros(4), np.ones(3, dtype=bool))
    with pytest.raises(IndexError, match="boolean index"):
        jit(mask_set)(np.zeros(4), np.ones(3, dtype=bool))


def test_a_fused_expression_is_one_loop_body_without_temporaries():
    from gpucompiler import types as T

    a = np.zeros(16)
    text = jit(fused).inspect_llvm(*(T.typeof(a),) * 4)
    body = next(b for b in text.split("\n\n") if "@llvm.sin" in b and "phi i64" in b)
    # the product, the sine, their sum and the store into out happen in the same loop block
    assert "fmul" in body and "fadd" in body and "store" in body and body.count("load") >= 3
    assert "malloc" not in body and "= alloca" not in text  # a copy only where out overlaps an operand


def shifted(a):
    a[1:] = a[:-1] * 2.0


def in_place_view(a, b):
    v = a[::2]
    v[:] = v * 2.0 + b[::2]


def reversed_into(a, m):
    a[:] = a[::-1]
    m[:, 1:] = m[:, :-1] + m[::-1, 1:]
    m[0:2] = m[1, ::-1]  # broadcast, and overlapping


def test_an_expression_overlapping_its_destination_at_an_offset_reads_it_as_numpy_does_not_smeared():
    for a in (np.arange(6.0), np.arange(12)[::-2]):
        want = a.copy()
        shifted(want)
        jit(shifted)(a)
        np.testing.assert_array_equal(a, want)
    a, m = np.arange(7.0), np.arange(12.0).reshape(3, 4)
    want_a, want_m = a.copy(), m.copy()
    reversed_into(want_a, want_m)
    jit(reversed_into)(a, m)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(m, want_m)
    a, b = np.arange(8.0), np.ones(8)
    want = a.copy()
    in_place_view(want, b)
    jit(in_place_view)(a, b)  # the same elements read and written: fused is right
    np.testing.assert_array_equal(a, want)


def into_new(a, b):
    out = np.empty_like(a)
    out[:] = a * b + 1.0
    return out, np.sum(out[1:] * 2.0)


def test_expressions_into_arrays_made_in_compiled_code_and_views_of_them():
    a, b = array_of("float64", (7,), "reversed"), array_of("float64", (7,), "C", seed=7)
    out, s = jit(into_new)(a, b)
    np.testing.assert_allclose(out, a * b + 1.0, rtol=1e-15)
    assert s == pytest.approx(np.sum((a * b + 1.0)[1:] * 2.0), rel=1e-14)


# -- expressions bound to a name or returned: a new array ---------------------------------

def bind_and_index(a, b):
    c = a + b
    c[0] = -1.0
    return c, c[1]


def returned_expression(a, b, c):
    return a * b + np.sin(c)


def bound_then_reduced(a):
    d = 2.0 * a - 1
    return d.sum() + d[-1]


@pytest.mark.parametrize("fn,args", [
    (bind_and_index, (np.arange(4.0), np.ones(4))),
    (returned_expression, (np.arange(6.0).reshape(2, 3), np.arange(3.0), 1.5)),
    (returned_expression, (np.arange(12.0).reshape(3, 4)[:, ::2], np.arange(2.0)[::-1], np.ones((3, 1)))),
    (returned_expression, (np.arange(5, dtype=np.uint8), np.arange(5, dtype=np.int8), 0.5)),
    (bound_then_reduced, (np.arange(7, dtype=np.int32),)),
])
def test_an_expression_bound_to_a_name_is_a_new_array_as_numpy_makes(fn, args):
    got, want = jit(fn)(*args), fn(*args)
    pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
    for g, w in pairs:
        assert np.asarray(g).dtype == np.asarray(w).dtype and np.array_equal(g, w)


def test_a_new_array_from_operands_that_do_not_broadcast_is_numpys_value_error():
    with pytest.raises(ValueError, match="broadcast"):
        jit(returned_expression)(np.ones((3, 4)), np.ones(3), 0.0)


def test_new_arrays_from_expressions_are_freed():
    f = jit(bound_then_reduced)
    a = np.arange(1000.0)
    f(a)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(3000):
        f(a)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 100_000


def energy_of_bound_expression(x):
    y = x * x + np.sin(x)
    return np.sum(y * y)


def test_gradient_through_an_expression_bound_to_a_name_matches_finite_differences():
    from enzyme_plugin import Duplicated, Reverse, autodiff
    x = np.linspace(-1.0, 1.0, 9)
    dx = np.zeros_like(x)

    @jit
    def grad(x, dx):
        autodiff(Reverse, energy_of_bound_expression, Duplicated(x, dx))

    grad(x, dx)
    y = x * x + np.sin(x)
    assert np.allclose(dx, 2.0 * y * (2.0 * x + np.cos(x)), rtol=1e-12, atol=1e-12)


def expression_casts(a, m):
    return ((a * 10).astype(np.int32), (m > 0.5).astype(np.float64), (a - 0.5).astype(dtype=np.float32),
            np.abs(m - 1.0).astype(np.uint8), (m * 2).astype(np.float64).sum())


def test_astype_of_an_expression_as_numpy():
    rng = np.random.default_rng(5)
    a, m = rng.random(11) * 3, rng.random((3, 4)) * 4
    got, want = jit(expression_casts)(a, m), expression_casts(a, m)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype or np.ndim(w) == 0
        np.testing.assert_allclose(g, w, rtol=1e-7)
    with pytest.raises(ValueError, match="NaN"):  # astype's rule for arrays too: NaN to an integer raises
        jit(lambda a: (a * np.nan).astype(np.int64))(a)
