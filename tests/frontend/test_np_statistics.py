"""np.var/std (and the methods), median, percentile/quantile, outer, diff, tril/triu, unique and
unravel_index in compiled code: NumPy's values and dtypes over random arrays, the edge cases NumPy
defines (NaN, empty, ddof past the count, booleans, unsigned wrap-around), typed errors for what stays
unsupported, and derivatives against central differences."""

from __future__ import annotations

import numpy as np
import pytest

from gpucompiler import errors, jit
from enzyme_plugin import Duplicated, Reverse, autodiff

from numpy_reference import central, check, function


def stats(a):
    return (np.var(a), np.std(a), np.var(a, ddof=1), np.std(a, ddof=2), a.var(), a.std(ddof=1),
            np.median(a), np.percentile(a, 37.5), np.quantile(a, 0.9), np.percentile(a, 0), np.quantile(a, 1),
            np.quantile(a, 0.0))


def bool_stats(a):
    return np.var(a), np.std(a), np.var(a, ddof=1), a.var(), a.std(ddof=1), np.median(a)


def stats_along(m):
    return (np.var(m, axis=0), np.std(m, axis=1), m.var(axis=-1, ddof=1), m.std(axis=0, ddof=1), np.var(m),
            np.median(m), np.percentile(m, 50.5))


def shapes(a, b):
    return np.outer(a, b), np.diff(a), np.diff(a, 2), np.diff(a, 0), np.unique(a)


def shapes2(m):
    return (np.diff(m), np.diff(m, axis=0), np.diff(m, 2, axis=1), np.tril(m), np.triu(m), np.tril(m, 1),
            np.triu(m, -1), np.unique(m), np.outer(m, m[0]))


def unravel(m, k):
    return np.unravel_index(np.argmax(m), m.shape), np.unravel_index(k, (4, 3, 2)), np.unravel_index(k, (24,))


DTYPES = [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_]


@pytest.mark.slow  # the dtype and size sweep: with the slow set
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 2, 7, 64])
def test_one_dimension_as_numpy(dtype, n):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 50).astype(dtype) if dtype is not np.bool_ else rng.random(n) > 0.5
    rtol = 2e-6 if dtype is np.float32 else 1e-12
    check(bool_stats if dtype is np.bool_ else stats, a, rtol=rtol)
    check(shapes, a, a[: max(n // 2, 1)][::-1].copy(), rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (6, 2)])
@pytest.mark.slow
def test_two_dimensions_as_numpy(dtype, shape):
    rng = np.random.default_rng(sum(shape))
    m = (rng.standard_normal(shape) * 20).astype(dtype)
    rtol = 2e-6 if dtype is np.float32 else 1e-12
    check(stats_along, m, rtol=rtol)
    check(shapes2, m, rtol=rtol)


def test_expressions_and_views():
    rng = np.random.default_rng(3)
    m = rng.standard_normal((5, 4))
    check(lambda m: (np.std(m * 2.0 + 1.0), np.median(m[:, 1] - 3.0), np.var(m.T, axis=0), np.unique(m[1:3] > 0)),
           m)


def test_nan_infinities_and_duplicates():
    a = np.array([3.0, np.nan, -1.0, 2.0, np.nan])
    check(lambda a: (np.median(a), np.percentile(a, 10), np.var(a), np.unique(a)), a)
    b = np.array([2.0, -np.inf, 2.0, 0.0, -0.0, np.inf, 2.0])
    check(lambda b: (np.median(b), np.unique(b), np.diff(b), np.quantile(b, 0.5)), b)
    check(lambda k: np.unique(k), np.array([5, 1, 5, 5, 0, 1], dtype=np.int32))


def test_empty_and_degenerate_counts():
    e = np.zeros(0)
    check(lambda e: (np.var(e), np.std(e), np.median(e), np.diff(e), np.unique(e), np.outer(e, e)), e)
    one = np.array([4.0])
    check(lambda a: (np.var(a, ddof=1), np.std(a, ddof=3), np.var(a, ddof=0)), one)  # 0/0: NaN
    two = np.array([1.0, 3.0])
    check(lambda a: (np.var(a, ddof=2), np.var(a, ddof=5)), two)  # sum of squares over 0: inf
    check(lambda a: np.diff(a, 5), np.arange(3.0))


def test_unravel_index_as_numpy():
    m = np.random.default_rng(0).standard_normal((4, 6))
    for k in (0, 5, 23):
        check(unravel, m, k)


@pytest.mark.parametrize("source,error", [
    ("np.median(a, axis=0)", errors.TypeInferenceError),
    ("np.var(a, keepdims=True)", errors.TypeInferenceError),
    ("np.var(a, dtype=np.float32)", errors.TypeInferenceError),
    ("np.percentile(a, np.array([10.0, 20.0]))", errors.TypeInferenceError),
    ("np.unique(a, return_counts=True)", errors.TypeInferenceError),
    ("np.var(a.reshape(1, 2, 3))", errors.TypeInferenceError),
    ("np.var(a, axis=1)", errors.AxisError),
    ("np.var(a + 1j)", errors.TypeInferenceError),
    ("np.tril(a)", errors.TypeInferenceError),
    ("np.unravel_index(a, (2, 3))", errors.TypeInferenceError),
    ("np.unravel_index(1, (2, 3), order='F')", errors.TypeInferenceError),
    ("np.percentile(a > 1.0, 50.0)", errors.TypeInferenceError),
])
def test_unsupported_forms_are_typed_errors_at_the_line(source, error, tmp_path):
    f = function(tmp_path, source)
    with pytest.raises(error) as info:
        jit(f)(np.arange(6.0))
    assert f"{f.__code__.co_filename}:4" in str(info.value)


@pytest.mark.parametrize("source,message", [
    ("np.percentile(a, 101.0)", "Percentiles must be in the range [0, 100]"),
    ("np.quantile(a, -0.5)", "Quantiles must be in the range [0, 1]"),
    ("np.diff(a, -1)", "order must be non-negative"),
    ("np.unravel_index(6, (2, 3))", "out of bounds"),
    ("np.unravel_index(-1, (6,))", "out of bounds"),
])
def test_run_time_errors_are_numpys(source, message, tmp_path):
    f = function(tmp_path, source)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        jit(f)(np.arange(6.0))
    with pytest.raises(ValueError):
        f(np.arange(6.0))


def _spread(a):
    m = a.reshape(2, 3)
    return np.std(a) * np.var(a, ddof=1) + np.sum(m.std(axis=0)) + np.sum(np.var(m, axis=1))


def _order_statistics(a):
    return np.median(a) + np.percentile(a * a, 30.0) + np.quantile(a, 0.75)


def _shapes(a):
    m = a.reshape(2, 3)
    return (np.sum(np.outer(a, a) * np.tril(np.outer(a, a), -1)) + np.sum(np.diff(a) ** 2)
            + np.sum(np.triu(m) * m) + np.sum(np.diff(m, axis=0) ** 3))


@pytest.mark.parametrize("f", [_spread, _order_statistics, _shapes])
def test_gradients_against_central_differences(f):
    a = np.random.default_rng(7).standard_normal(6)
    da = np.zeros(6)
    autodiff(Reverse, f, Duplicated(a.copy(), da))
    np.testing.assert_allclose(da, central(f, a), rtol=1e-6, atol=1e-8)
