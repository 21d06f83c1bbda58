"""Comparisons within rounding for results NumPy computes too: a compiled loop, NumPy and the BLAS under
``np.dot`` may add the same terms in different orders (or fuse a multiply and an add), so their results
may differ in the last bits. The bound is what summation order can change: a few units of rounding of
the terms' magnitudes, not of the result's (which a cancellation makes small)."""

from __future__ import annotations

import math

import numpy as np

EPS = float(np.finfo(np.float64).eps)


def assert_sum_close(got, terms, ulps: float = 2.0) -> None:
    """``got`` is the sum of ``terms`` in some order: within ``ulps * n * eps * sum |terms|`` of the exact sum."""
    t = np.asarray(terms, dtype=np.float64).ravel()
    exact = math.fsum(t.tolist())
    bound = ulps * max(len(t), 1) * EPS * math.fsum(np.abs(t).tolist())
    assert abs(float(got) - exact) <= bound, f"{got!r} is not the sum {exact!r} of its terms within rounding ({bound:.3g})"


def assert_terms_close(got, *terms, ulps: float = 2.0) -> None:
    """Element by element, ``got`` is ``sum(terms)`` (arrays of one shape) in some order, fused or not."""
    stack = np.stack([np.broadcast_to(np.asarray(t, dtype=np.float64), np.shape(got)) for t in terms])
    want = np.sum(stack, axis=0)
    bound = ulps * len(terms) * EPS * np.sum(np.abs(stack), axis=0)
    bad = np.abs(np.asarray(got, dtype=np.float64) - want) > bound
    assert not bad.any(), f"{np.asarray(got)[bad]!r} are not {want[bad]!r} within rounding ({bound[bad]!r})"
