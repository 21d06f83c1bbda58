"""The loops of :mod:`.npstats`: variance, median, quantiles, outer products, differences, triangles,
``unique`` and ``unravel_index``, written in Python and compiled like user code (the optimiser
vectorises them, the Enzyme plugin differentiates them).

``x`` is an array or a fused expression (``element`` reads it); ``dt`` is the result's scalar type,
chosen by NumPy's rules in :mod:`.npstats`.
"""

from ...pristine import math  # as imported (pristine.py: the rules key on its functions)

from ...frontend.intrinsics import check, getitem_unchecked, setitem_unchecked
from .npintrinsics import element, new_array


def flat(x, dt):
    """The elements of a 1-d or 2-d ``x`` in C order, as a new 1-d array of ``dt``."""
    if x.ndim == 1:
        n = x.shape[0]
        out = new_array((n,), dt)
        for i in range(n):
            setitem_unchecked(out, i, dt(element(x, i)))
        return out
    n, m = x.shape
    out = new_array((n * m,), dt)
    for i in range(n):
        for j in range(m):
            setitem_unchecked(out, i * m + j, dt(element(x, i, j)))
    return out


def _quotient(acc, div):
    """``acc / div`` as NumPy divides a sum of squares by ``max(n - ddof, 0)``: inf or NaN for 0."""
    if div <= 0:  # constants, not products of ``acc``: an infinite factor would make its derivative NaN
        return math.inf if acc > 0 else math.nan
    return acc / div


def _variance(v, dt, ddof):
    """The variance of the 1-d array ``v`` of ``dt``: the mean, then the mean square deviation."""
    n = v.shape[0]
    s = dt(0)
    for i in range(n):
        s += getitem_unchecked(v, i)
    mean = s / n if n > 0 else dt(math.nan)
    acc = dt(0)
    for i in range(n):
        d = getitem_unchecked(v, i) - mean
        acc += d * d
    return dt(_quotient(acc, n - ddof))


def var_all(x, dt, ddof):
    return _variance(flat(x, dt), dt, ddof)


def std_all(x, dt, ddof):
    return dt(math.sqrt(_variance(flat(x, dt), dt, ddof)))


def var_along(x, dt, ddof, axis, root):
    """The variance (its square root with ``root``) of each column (``axis`` 0) or row (1) of a 2-d ``x``."""
    n, m = x.shape
    lanes, count = (m, n) if axis == 0 else (n, m)
    out = new_array((lanes,), dt)
    column = new_array((count,), dt)
    for k in range(lanes):
        for i in range(count):
            setitem_unchecked(column, i, dt(element(x, i, k) if axis == 0 else element(x, k, i)))
        v = _variance(column, dt, ddof)
        setitem_unchecked(out, k, dt(math.sqrt(v)) if root else v)
    return out


def _sorted_flat(x, dt):
    v = flat(x, dt)
    v.sort()
    return v


def median_all(x, dt):
    """NumPy's median: the middle element of the sorted values, or the mean of the two middle ones; NaN
    when a NaN is among them (sorted last) and for no elements."""
    v = _sorted_flat(x, dt)
    n = v.shape[0]
    if n == 0:
        return dt(math.nan)
    last = getitem_unchecked(v, n - 1)
    if last != last:
        return last
    h = n // 2
    if n % 2 == 1:
        return getitem_unchecked(v, h)
    return (getitem_unchecked(v, h - 1) + getitem_unchecked(v, h)) / dt(2)


def _lerp(a, b, t):
    """NumPy's interpolation between neighbours (exact at both ends: from ``b`` back for ``t >= 0.5``)."""
    d = b - a
    if t >= 0.5:
        return b - d * (1.0 - t)
    return a + d * t


def _quantile(x, dt, q):
    """The ``q`` quantile of the values by NumPy's default (linear) method; NaN when a NaN is among them."""
    v = _sorted_flat(x, dt)
    n = v.shape[0]
    check(n > 0, "IndexError", "index -1 is out of bounds for axis 0 with size 0")
    last = getitem_unchecked(v, n - 1)
    if last != last:
        return last
    at = q * (n - 1)
    below = int(math.floor(at))
    above = below + 1 if below + 1 < n else n - 1
    below = below if below < n else n - 1
    return dt(_lerp(getitem_unchecked(v, below), getitem_unchecked(v, above), at - below))


def quantile_all(x, dt, q):
    check(q >= 0 and q <= 1, "ValueError", "Quantiles must be in the range [0, 1]")
    return _quantile(x, dt, q * 1.0)


def percentile_all(x, dt, q):
    check(q >= 0 and q <= 100, "ValueError", "Percentiles must be in the range [0, 100]")
    return _quantile(x, dt, q / 100.0)


def outer(a, b, dt):
    """``a[i] * b[j]`` over the flattened operands."""
    u, w = flat(a, dt), flat(b, dt)
    n, m = u.shape[0], w.shape[0]
    out = new_array((n, m), dt)
    for i in range(n):
        ui = getitem_unchecked(u, i)
        for j in range(m):
            setitem_unchecked(out, (i, j), ui * getitem_unchecked(w, j))
    return out


def _step(a, b, flag):
    """One difference; for booleans (``flag``) NumPy's ``not_equal``."""
    return (a != b) if flag else b - a


def diff1(x, dt, times, flag):
    check(times >= 0, "ValueError", "order must be non-negative")
    v = flat(x, dt)
    n = v.shape[0]
    for _ in range(times):
        if n == 0:
            break
        for i in range(n - 1):
            setitem_unchecked(v, i, dt(_step(getitem_unchecked(v, i), getitem_unchecked(v, i + 1), flag)))
        n -= 1
    out = new_array((n,), dt)
    for i in range(n):
        setitem_unchecked(out, i, getitem_unchecked(v, i))
    return out


def diff2(x, dt, times, axis, flag):
    """Differences of a 2-d ``x`` along ``axis`` (0: down the columns, 1: along the rows)."""
    check(times >= 0, "ValueError", "order must be non-negative")
    n, m = x.shape
    v = new_array((n, m), dt)
    for i in range(n):
        for j in range(m):
            setitem_unchecked(v, (i, j), dt(element(x, i, j)))
    rows, cols = n, m
    for _ in range(times):
        if (rows if axis == 0 else cols) == 0:
            break
        if axis == 0:
            rows -= 1
            for i in range(rows):
                for j in range(cols):
                    setitem_unchecked(v, (i, j), dt(_step(getitem_unchecked(v, (i, j)),
                                                          getitem_unchecked(v, (i + 1, j)), flag)))
        else:
            cols -= 1
            for i in range(rows):
                for j in range(cols):
                    setitem_unchecked(v, (i, j), dt(_step(getitem_unchecked(v, (i, j)),
                                                          getitem_unchecked(v, (i, j + 1)), flag)))
    out = new_array((rows, cols), dt)
    for i in range(rows):
        for j in range(cols):
            setitem_unchecked(out, (i, j), getitem_unchecked(v, (i, j)))
    return out


def triangle(x, dt, k, lower):
    """``np.tril`` (``lower``) or ``np.triu`` of a 2-d ``x``: the other side of diagonal ``k`` zeroed."""
    n, m = x.shape
    out = new_array((n, m), dt)
    for i in range(n):
        for j in range(m):
            keep = j - i <= k if lower else j - i >= k
            setitem_unchecked(out, (i, j), dt(element(x, i, j)) if keep else dt(0))
    return out


def unique(x, dt):
    """The sorted distinct values (one NaN for all NaNs, as NumPy's ``equal_nan=True``)."""
    v = _sorted_flat(x, dt)
    n = v.shape[0]
    kept = 0
    for i in range(n):
        e = getitem_unchecked(v, i)
        if kept > 0:
            prev = getitem_unchecked(v, kept - 1)
            if e == prev or (e != e and prev != prev):
                continue
        setitem_unchecked(v, kept, e)
        kept += 1
    out = new_array((kept,), dt)
    for i in range(kept):
        setitem_unchecked(out, i, getitem_unchecked(v, i))
    return out


def _check_index(index, size):
    check(index >= 0 and index < size, "ValueError", "index is out of bounds for the array's size")


def unravel1(index, shape):
    _check_index(index, shape[0])
    return (index,)


def unravel2(index, shape):
    _check_index(index, shape[0] * shape[1])
    return (index // shape[1], index % shape[1])


def unravel3(index, shape):
    _check_index(index, shape[0] * shape[1] * shape[2])
    rest = index // shape[2]
    return (rest // shape[1], rest % shape[1], index % shape[2])
