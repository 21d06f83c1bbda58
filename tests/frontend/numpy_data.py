"""Arrays of every dtype and layout for the tests of NumPy in compiled code, and their comparison."""

from __future__ import annotations

import numpy as np

DTYPES = ["bool", "int8", "uint8", "int32", "int64", "uint64", "float32", "float64"]
LAYOUTS = ["C", "F", "strided", "reversed"]


def array_of(dtype, shape, layout, seed=0):
    """Small numbers of ``dtype`` in ``shape``, laid out C, F, strided (every other element of a larger
    array) or reversed (negative strides)."""
    rng = np.random.default_rng(seed)
    big = tuple(2 * s for s in shape)
    raw = rng.uniform(0.25, 3.0, size=big)
    if dtype == "bool":
        raw = raw > 1.5
    elif dtype.startswith("int"):
        raw = np.floor(raw * 4) - 5
    elif dtype.startswith("uint"):
        raw = np.floor(raw * 4)
    elif dtype.startswith("complex"):
        raw = raw + 1j * raw[::-1]
    return laid_out(raw.astype(dtype), shape, layout)


def laid_out(raw, shape, layout: str):
    """An array of ``shape`` taken from ``raw`` (twice as large along each axis) in ``layout``: a C or F
    copy, every other element (``strided``) or both ends swapped (``reversed``)."""
    if layout == "strided":
        return raw[tuple(slice(None, None, 2) for _ in shape)]
    if layout == "reversed":
        return raw[tuple(slice(s - 1, None, -1) for s in shape)]
    a = np.ascontiguousarray(raw[tuple(slice(0, s) for s in shape)])
    return np.asfortranarray(a) if layout == "F" else a


def assert_close(got, want, dtype=None):
    """Equal for integers and bools; within rounding for floating and complex results."""
    dt = np.dtype(dtype or want.dtype)
    if dt.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=2e-6 if dt in (np.float32, np.complex64) else 1e-13, atol=1e-300)
    else:
        np.testing.assert_array_equal(got, want)
