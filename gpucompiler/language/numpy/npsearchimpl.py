"""The loops of :mod:`.npsearch`: ``searchsorted``, ``bincount``, ``histogram``, ``interp``, ``roll``,
``count_nonzero``, ``isclose``/``allclose`` and the NaN-ignoring reductions, written in Python and
compiled like user code.

Orders are NumPy's sort order: NaN after every number. ``it``, ``ft`` and ``bt`` are the scalar types
int64, float64 and bool (the results' types, given by :mod:`.npsearch`).
"""

from ...pristine import math  # as imported (pristine.py: the rules key on its functions)

from ...frontend.intrinsics import check, getitem_unchecked, setitem_unchecked
from .npintrinsics import element, new_array
from .npstatsimpl import flat


def _before(x, y):
    """``x`` sorts before ``y``: NaN after every number."""
    return x < y or (y != y and x == x)


def _insertion(a, v, right):
    """Where ``v`` goes in the sorted 1-d ``a``: before equal elements, or after them (``right``)."""
    lo = 0
    hi = a.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        e = element(a, mid)
        if (not _before(v, e)) if right else _before(e, v):
            lo = mid + 1
        else:
            hi = mid
    return lo


def search_one(a, v, right):
    return _insertion(a, v, right)


def search_many(a, v, right, it):
    n = v.shape[0]
    out = new_array((n,), it)
    for i in range(n):
        setitem_unchecked(out, i, _insertion(a, element(v, i), right))
    return out


def bincount(x, minlength, it):
    check(minlength >= 0, "ValueError", "'minlength' must not be negative")
    n = x.shape[0]
    size = minlength
    for i in range(n):
        k = element(x, i)
        check(k >= 0, "ValueError", "'list' argument must have no negative elements")
        if k + 1 > size:
            size = k + 1
    out = new_array((size,), it)
    for i in range(size):
        setitem_unchecked(out, i, 0)
    for i in range(n):
        k = element(x, i)
        setitem_unchecked(out, k, getitem_unchecked(out, k) + 1)
    return out


def bincount_weighted(x, weights, minlength, ft):
    check(minlength >= 0, "ValueError", "'minlength' must not be negative")
    n = x.shape[0]
    check(weights.shape[0] == n, "ValueError", "The weights and list don't have the same length.")
    size = minlength
    for i in range(n):
        k = element(x, i)
        check(k >= 0, "ValueError", "'list' argument must have no negative elements")
        if k + 1 > size:
            size = k + 1
    out = new_array((size,), ft)
    for i in range(size):
        setitem_unchecked(out, i, 0.0)
    for i in range(n):
        k = element(x, i)
        setitem_unchecked(out, k, getitem_unchecked(out, k) + element(weights, i))
    return out


def _histogram(v, bins, first, last, it, ft):
    """NumPy's equal-width histogram of the 1-d float64 ``v`` over ``[first, last]``: each value's bin
    from its scaled offset, corrected by comparing with the edges (so that it agrees with them)."""
    check(bins > 0, "ValueError", "`bins` must be positive, when an integer")
    check(math.isfinite(first) and math.isfinite(last), "ValueError", "autodetected range is not finite")
    check(first <= last, "ValueError", "max must be larger than min in range parameter.")
    if first == last:
        first -= 0.5
        last += 0.5
    step = (last - first) / bins
    edges = new_array((bins + 1,), ft)
    for i in range(bins):  # NumPy's linspace: i * step + first, the last edge exactly
        setitem_unchecked(edges, i, float(i) * step + first)
    setitem_unchecked(edges, bins, last)
    counts = new_array((bins,), it)
    for i in range(bins):
        setitem_unchecked(counts, i, 0)
    norm = bins / (last - first)
    for i in range(v.shape[0]):
        x = getitem_unchecked(v, i)
        if x >= first and x <= last:
            k = int((x - first) * norm)
            if k == bins:
                k -= 1
            if x < getitem_unchecked(edges, k):
                k -= 1
            elif k != bins - 1 and x >= getitem_unchecked(edges, k + 1):
                k += 1
            setitem_unchecked(counts, k, getitem_unchecked(counts, k) + 1)
    return counts, edges


def histogram(a, bins, it, ft):
    v = flat(a, ft)
    n = v.shape[0]
    first = 0.0
    last = 1.0
    if n > 0:
        first = getitem_unchecked(v, 0)
        last = first
        for i in range(n):
            x = getitem_unchecked(v, i)
            if x != x or x < first:  # a NaN: the range check names it
                first = x
            elif x > last:
                last = x
    return _histogram(v, bins, first, last, it, ft)


def histogram_range(a, bins, bounds, it, ft):
    return _histogram(flat(a, ft), bins, float(bounds[0]), float(bounds[1]), it, ft)


def _interp_at(x, xp, fp, left, right):
    """NumPy's ``interp`` at one point: the neighbours by bisection, the exact value at a sample point,
    the slope from the other side when one side gives NaN."""
    n = xp.shape[0]
    if x != x:
        return float(x)
    lo = 0
    hi = n
    while lo < hi:  # the number of sample points <= x
        mid = (lo + hi) >> 1
        if element(xp, mid) <= x:
            lo = mid + 1
        else:
            hi = mid
    j = lo - 1
    if j < 0:
        return left
    if j == n - 1:
        return right if x > element(xp, j) else float(element(fp, j))
    xj = float(element(xp, j))
    if xj == x:
        return float(element(fp, j))
    slope = (float(element(fp, j + 1)) - float(element(fp, j))) / (float(element(xp, j + 1)) - xj)
    r = slope * (x - xj) + float(element(fp, j))
    if r != r:
        r = slope * (x - float(element(xp, j + 1))) + float(element(fp, j + 1))
        if r != r and element(fp, j) == element(fp, j + 1):
            r = float(element(fp, j))
    return r


def _checked_samples(xp, fp):
    check(xp.shape[0] == fp.shape[0], "ValueError", "fp and xp are not of the same length.")
    check(xp.shape[0] > 0, "ValueError", "array of sample points is empty")


def interp_one(x, xp, fp, left, right, defaults):
    _checked_samples(xp, fp)
    lo = float(element(fp, 0)) if defaults & 1 else float(left)
    hi = float(element(fp, fp.shape[0] - 1)) if defaults & 2 else float(right)
    return _interp_at(float(x), xp, fp, lo, hi)


def interp_many(x, xp, fp, left, right, defaults, ft):
    _checked_samples(xp, fp)
    lo = float(element(fp, 0)) if defaults & 1 else float(left)
    hi = float(element(fp, fp.shape[0] - 1)) if defaults & 2 else float(right)
    n = x.shape[0]
    out = new_array((n,), ft)
    for i in range(n):
        setitem_unchecked(out, i, _interp_at(float(element(x, i)), xp, fp, lo, hi))
    return out


def roll(a, shift, dt):
    """The elements moved ``shift`` places along the flattened array, those past the end coming round."""
    v = flat(a, dt)
    n = v.shape[0]
    out = new_array((n,), dt)
    if n > 0:
        s = shift % n
        for i in range(n):
            setitem_unchecked(out, (i + s) % n, getitem_unchecked(v, i))
    return out.reshape(a.shape)


def count_nonzero(a, dt):
    v = flat(a, dt)
    c = 0
    for i in range(v.shape[0]):
        if getitem_unchecked(v, i) != 0:
            c += 1
    return c


def _close(x, y, rtol, atol, nan):
    if x == y:
        return True
    if nan and x != x and y != y:
        return True
    return math.isfinite(y) and abs(x - y) <= atol + rtol * abs(y)


def isclose(a, b, rtol, atol, nan, ft, bt):
    u, w = flat(a, ft), flat(b, ft)
    n = u.shape[0]
    check(w.shape[0] == n, "ValueError", "operands could not be broadcast together")
    out = new_array((n,), bt)
    for i in range(n):
        setitem_unchecked(out, i, _close(getitem_unchecked(u, i), getitem_unchecked(w, i), rtol, atol, nan))
    return out.reshape(a.shape)


def isclose_scalar(a, y, rtol, atol, nan, ft, bt):
    u = flat(a, ft)
    n = u.shape[0]
    out = new_array((n,), bt)
    for i in range(n):
        setitem_unchecked(out, i, _close(getitem_unchecked(u, i), float(y), rtol, atol, nan))
    return out.reshape(a.shape)


def allclose(a, b, rtol, atol, nan, ft):
    u, w = flat(a, ft), flat(b, ft)
    n = u.shape[0]
    check(w.shape[0] == n, "ValueError", "operands could not be broadcast together")
    for i in range(n):  # noqa: SIM110  (compiled code has no generators)
        if not _close(getitem_unchecked(u, i), getitem_unchecked(w, i), rtol, atol, nan):
            return False
    return True


def allclose_scalar(a, y, rtol, atol, nan, ft):
    u = flat(a, ft)
    for i in range(u.shape[0]):  # noqa: SIM110  (compiled code has no generators)
        if not _close(getitem_unchecked(u, i), float(y), rtol, atol, nan):
            return False
    return True


def nansum(a, dt):
    v = flat(a, dt)
    s = dt(0)
    for i in range(v.shape[0]):
        x = getitem_unchecked(v, i)
        if x == x:
            s += x
    return s


def nanmean(a, dt):
    v = flat(a, dt)
    s = dt(0)
    c = 0
    for i in range(v.shape[0]):
        x = getitem_unchecked(v, i)
        if x == x:
            s += x
            c += 1
    return dt(s / c) if c > 0 else dt(math.nan)


def _nanextreme(a, dt, larger):
    v = flat(a, dt)
    n = v.shape[0]
    check(n > 0, "ValueError", "zero-size array to reduction operation fmax which has no identity")
    best = getitem_unchecked(v, 0)  # NaN stays only when every value is
    for i in range(1, n):
        x = getitem_unchecked(v, i)
        if x == x and (best != best or (x > best if larger else x < best)):
            best = x
    return best


def nanmax(a, dt):
    return _nanextreme(a, dt, True)


def nanmin(a, dt):
    return _nanextreme(a, dt, False)
