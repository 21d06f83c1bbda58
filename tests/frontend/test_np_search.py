"""np.searchsorted, bincount, histogram, interp, roll, count_nonzero, isclose/allclose and the NaN-ignoring
reductions in compiled code: NumPy's values and dtypes over random data (NaN, ties, ends, constant data,
integers), NumPy's errors, typed errors for what stays unsupported, derivatives against central differences."""

from __future__ import annotations

import numpy as np
import pytest

from gpucompiler import errors, jit
from enzyme_plugin import Duplicated, Reverse, autodiff

from numpy_reference import central, check, function


def searches(s, v, vs):
    return (np.searchsorted(s, v), np.searchsorted(s, v, side="right"), np.searchsorted(s, vs),
            np.searchsorted(s, vs, "right"), np.searchsorted(s, 2))


def counts(k, w):
    return np.bincount(k), np.bincount(k, minlength=20), np.bincount(k, weights=w), np.count_nonzero(k)


def histograms(a):
    return np.histogram(a), np.histogram(a, bins=7), np.histogram(a, 5, (0.25, 0.75)), np.histogram(a, 3, (-1, 2))


def interpolations(x, xp, fp):
    return (np.interp(x, xp, fp), np.interp(x[0], xp, fp), np.interp(x, xp, fp, left=-1.0, right=99),
            np.interp(xp, xp, fp))


def closeness(a, b):
    return (np.isclose(a, b), np.allclose(a, b), np.isclose(a, b, rtol=0.1, atol=0.0), np.allclose(a, a + 1e-10),
            np.isclose(a, 0.5, atol=0.2), np.isclose(a, a, equal_nan=True), np.allclose(a, a, equal_nan=True),
            np.allclose(a, a))


def nan_reductions(a):
    return np.nansum(a), np.nanmean(a), np.nanmax(a), np.nanmin(a), np.roll(a, 3), np.roll(a, -11)


@pytest.mark.parametrize("seed", range(4))
def test_random_data_as_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    a = np.round(rng.standard_normal(n), 1)  # ties
    if seed % 2:
        a[rng.integers(0, n, 2)] = np.nan
    s = np.sort(a)
    check(searches, s, float(a[0]), rng.standard_normal(9))
    k = rng.integers(0, 15, n)
    check(counts, k, rng.random(n))
    check(histograms, rng.random(n) if seed % 2 else rng.standard_normal(n) * 3)
    xp = np.cumsum(rng.random(8) + 0.01)
    check(interpolations, rng.uniform(-0.5, xp[-1] + 0.5, 13), xp, rng.standard_normal(8))
    b = a + rng.standard_normal(n) * 1e-6
    check(closeness, a, b)
    check(nan_reductions, a)
    check(nan_reductions, rng.standard_normal(n).astype(np.float32), rtol=2e-6)


def test_integers_and_two_dimensions():
    rng = np.random.default_rng(9)
    m = rng.integers(-5, 5, (4, 6))
    check(lambda m: (np.roll(m, 5), np.count_nonzero(m), np.nansum(m), np.nanmax(m), np.nanmean(m),
                     np.histogram(m, 4), np.isclose(m, m.T.copy().T)), m)
    check(lambda m: (np.histogram(m * 0, 3), np.count_nonzero(m > 0)), m)  # constant data: NumPy's ±0.5 range


def test_edge_values():
    xp, fp = np.array([0.0, 1.0, 2.0]), np.array([0.0, 10.0, 5.0])
    check(lambda x: (np.interp(x, xp, fp), np.interp(np.nan, xp, fp), np.interp(2.0, xp, fp)), np.array([1.0, 2.0]))
    check(lambda a: (np.nanmax(a), np.nanmean(a), np.nansum(a)), np.full(3, np.nan))
    check(lambda a: (np.searchsorted(a, np.nan), np.searchsorted(a, np.inf), np.searchsorted(a, -np.inf)),
          np.array([-1.0, 0.0, np.inf, np.nan]))
    check(lambda a: (np.isclose(a, a), np.isclose(a, np.inf)), np.array([np.inf, -np.inf, 1.0, np.nan]))
    check(lambda k: np.bincount(k), np.zeros(0, dtype=np.int64))


@pytest.mark.parametrize("body,message", [
    ("np.bincount(a.astype(np.int64) - 3)", "no negative elements"),
    ("np.bincount(a.astype(np.int64), minlength=-1)", "must not be negative"),
    ("np.interp(1.0, a, a[:2])", "not of the same length"),
    ("np.histogram(a, 0)", "must be positive"),
    ("np.histogram(a, 3, (2.0, 1.0))", "max must be larger than min"),
    ("np.nanmax(a[:0])", "zero-size array"),
    ("np.allclose(a, a[:2])", "could not be broadcast"),
])
def test_numpys_value_errors(body, message, tmp_path):
    f = function(tmp_path, body)
    with pytest.raises(ValueError, match=message):
        jit(f)(np.arange(6.0))
    with pytest.raises(ValueError):
        f(np.arange(6.0))


def test_histogram_of_nan_is_a_value_error_as_numpy():
    a = np.array([1.0, np.nan])
    with pytest.raises(ValueError, match="range"):
        jit(lambda a: np.histogram(a, 3))(a)
    with pytest.raises(ValueError):
        np.histogram(a, 3)


@pytest.mark.parametrize("body,error", [
    ("np.searchsorted(a, 1.0, sorter=a)", errors.TypeInferenceError),
    ("np.searchsorted(a, 1.0, side='middle')", errors.TypeInferenceError),
    ("np.bincount(a)", errors.TypeInferenceError),
    ("np.histogram(a, bins=a)", errors.TypeInferenceError),
    ("np.histogram(a, 3, density=True)", errors.TypeInferenceError),
    ("np.interp(1.0, a, a, period=2.0)", errors.TypeInferenceError),
    ("np.roll(a, 1, axis=0)", errors.TypeInferenceError),
    ("np.nansum(a, axis=0)", errors.TypeInferenceError),
    ("np.isclose(a, a.reshape(2, 3))", errors.TypeInferenceError),
    ("np.count_nonzero(a, axis=0)", errors.TypeInferenceError),
])
def test_unsupported_forms_are_typed_errors_at_the_line(body, error, tmp_path):
    f = function(tmp_path, body)
    with pytest.raises(error) as info:
        jit(f)(np.arange(6.0))
    assert f"{f.__code__.co_filename}:4" in str(info.value)


def _interpolated(a):
    xp = np.array([0.0, 1.0, 2.5, 4.0])
    return np.sum(np.interp(a, xp, a[:4] * a[:4])) + np.nansum(a * a) + np.nanmean(np.sin(a)) + np.nanmax(a)


def test_gradients_against_central_differences():
    a = np.array([0.3, 1.7, 2.2, 3.1, 0.9, 2.8])
    da = np.zeros(6)
    autodiff(Reverse, _interpolated, Duplicated(a.copy(), da))
    np.testing.assert_allclose(da, central(_interpolated, a), rtol=1e-6, atol=1e-8)
