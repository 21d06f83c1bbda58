"""The sorting loops of ``np.sort``, ``np.argsort`` and ``a.sort()``, compiled like user code.

NumPy's default kind (``quicksort``, also ``heapsort``) is an introsort:
NaN moved after the numbers first, then quicksort (median of three, or of
three medians past ``NINTHER``; a branch-free partition) down to runs of
``SMALL`` sorted by insertion, heapsort where the depth passes twice the
log of the length (O(n log n) in the worst case); an input found ascending
(or descending: reversed) in one pass is not sorted again. Keys equal to the pivot
with nothing below it are set aside in one more pass, so many equal keys
stay O(n log n). The stable kinds (``stable``, ``mergesort``) are a merge
sort: NaN moved last in their order, runs of ``RUN`` by insertion, then
bottom-up merges that go back and forth between the array and one buffer
(at most one copy back at the end), equal keys from the left first.
``argsort`` sorts a contiguous copy of the keys and the indices together
(no indirect loads), so the stable kind gives NumPy's ``kind="stable"``
order exactly; the unstable kind may order equal keys otherwise than NumPy
(whose order of them is its own algorithm's). Keys and indices are moved
inline, not by a helper: a call taking a new array (reference counted)
counts a reference in and out each time. The loops move values with plain
loads and stores, so the
Enzyme plugin differentiates ``np.sort`` (each output is one input). ``x``
is an array or a fused expression, ``dt`` its element type, ``stable``
the kind; the results are new C-ordered arrays except for ``inplace*``.
"""

from ....frontend.intrinsics import getitem_unchecked as get, setitem_unchecked as put
from .... import types as T
from ..npintrinsics import element, new_array

INDEX = T.int64

SMALL = 16
"""quicksort leaves ranges this short to insertion"""
NINTHER = 128
"""from this length the pivot is the median of three medians of three"""
RUN = 32
"""the merge sort's runs sorted by insertion before the merges"""
STACK = 64
"""the quicksort's stack of pending ranges (it holds the larger side: at most log2(n) of them)"""


def _log2(n):
    k = 0
    while n > 1:
        n >>= 1
        k += 1
    return k


# --- introsort of values ---------------------------------------------------------------------


def _nans_last(v, n):
    """NaN moved after the numbers of ``v[:n]``; the count of numbers (``n`` for integers)."""
    j = 0
    for i in range(n):
        x = get(v, i)
        if x == x:
            put(v, i, get(v, j))
            put(v, j, x)
            j += 1
    return j


def _insertion(v, lo, hi):
    for i in range(lo + 1, hi):
        x = get(v, i)
        j = i
        while j > lo and x < get(v, j - 1):
            put(v, j, get(v, j - 1))
            j -= 1
        put(v, j, x)


def _median3(a, b, c):
    return max(min(a, b), min(max(a, b), c))


def _pivot(v, lo, hi):
    """The median of the first, middle and last keys (of three such medians for long ranges)."""
    n = hi - lo
    mid = lo + n // 2
    if n < NINTHER:
        return _median3(get(v, lo), get(v, mid), get(v, hi - 1))
    s = n // 8
    return _median3(_median3(get(v, lo), get(v, lo + s), get(v, lo + 2 * s)),
                    _median3(get(v, mid - s), get(v, mid), get(v, mid + s)),
                    _median3(get(v, hi - 1 - 2 * s), get(v, hi - 1 - s), get(v, hi - 1)))


def _below(v, lo, hi, p):
    """The keys of ``v[lo:hi]`` below ``p`` moved to the front, without a branch; where they end."""
    j = lo
    for i in range(lo, hi):
        x = get(v, i)
        put(v, i, get(v, j))
        put(v, j, x)
        j += int(x < p)
    return j


def _not_above(v, lo, hi, p):
    j = lo
    for i in range(lo, hi):
        x = get(v, i)
        put(v, i, get(v, j))
        put(v, j, x)
        j += int(not p < x)
    return j


def _sift(v, lo, root, n):
    x = get(v, lo + root)
    child = 2 * root + 1
    while child < n:
        if child + 1 < n and get(v, lo + child) < get(v, lo + child + 1):
            child += 1
        if not x < get(v, lo + child):
            break
        put(v, lo + root, get(v, lo + child))
        root = child
        child = 2 * root + 1
    put(v, lo + root, x)


def _heapsort(v, lo, hi):
    n = hi - lo
    for root in range(n // 2 - 1, -1, -1):
        _sift(v, lo, root, n)
    for end in range(n - 1, 0, -1):
        x = get(v, lo)
        put(v, lo, get(v, lo + end))
        put(v, lo + end, x)
        _sift(v, lo, 0, end)


def _ordered(v, n):
    """1 if ``v[:n]`` is ascending, -1 if it is descending (and not ascending), else 0; a random
    array answers within its first few elements."""
    up = True
    down = True
    for i in range(1, n):
        a = get(v, i - 1)
        b = get(v, i)
        up = up and not b < a
        down = down and not a < b
        if not (up or down):
            return 0
    return 1 if up else -1


def _reverse(v, n):
    for i in range(n // 2):
        x = get(v, i)
        put(v, i, get(v, n - 1 - i))
        put(v, n - 1 - i, x)


def introsort(v):
    """Sort the 1-d array ``v`` (any layout) in place, NaN last; not stable. An ascending input is left
    as it is, a descending one reversed."""
    hi = _nans_last(v, v.shape[0])
    order = _ordered(v, hi)
    if order != 0:
        if order < 0:
            _reverse(v, hi)
        return
    lo = 0
    stack = new_array((3 * STACK,), INDEX)
    top = 0
    depth = 2 * _log2(hi)
    while True:
        if hi - lo > SMALL and depth > 0:
            depth -= 1
            p = _pivot(v, lo, hi)
            j = _below(v, lo, hi, p)
            if j == lo:  # nothing below the pivot: its equals set aside, the rest sorted
                lo = _not_above(v, lo, hi, p)
            elif j - lo < hi - j:  # the smaller side first, the larger one pending
                put(stack, top, j)
                put(stack, top + 1, hi)
                put(stack, top + 2, depth)
                top += 3
                hi = j
            else:
                put(stack, top, lo)
                put(stack, top + 1, j)
                put(stack, top + 2, depth)
                top += 3
                lo = j
        else:
            if hi - lo > SMALL:
                _heapsort(v, lo, hi)
            else:
                _insertion(v, lo, hi)
            if top == 0:
                break
            top -= 3
            lo = get(stack, top)
            hi = get(stack, top + 1)
            depth = get(stack, top + 2)


# --- introsort of keys with their indices ----------------------------------------------------


def _nans_last_by(k, ix, n):
    j = 0
    for i in range(n):
        x = get(k, i)
        if x == x:
            y = get(ix, i)
            put(k, i, get(k, j))
            put(ix, i, get(ix, j))
            put(k, j, x)
            put(ix, j, y)
            j += 1
    return j


def _insertion_by(k, ix, lo, hi):
    for i in range(lo + 1, hi):
        x = get(k, i)
        y = get(ix, i)
        j = i
        while j > lo and x < get(k, j - 1):
            put(k, j, get(k, j - 1))
            put(ix, j, get(ix, j - 1))
            j -= 1
        put(k, j, x)
        put(ix, j, y)


def _below_by(k, ix, lo, hi, p):
    j = lo
    for i in range(lo, hi):
        x = get(k, i)
        y = get(ix, i)
        put(k, i, get(k, j))
        put(ix, i, get(ix, j))
        put(k, j, x)
        put(ix, j, y)
        j += int(x < p)
    return j


def _not_above_by(k, ix, lo, hi, p):
    j = lo
    for i in range(lo, hi):
        x = get(k, i)
        y = get(ix, i)
        put(k, i, get(k, j))
        put(ix, i, get(ix, j))
        put(k, j, x)
        put(ix, j, y)
        j += int(not p < x)
    return j


def _sift_by(k, ix, lo, root, n):
    x = get(k, lo + root)
    y = get(ix, lo + root)
    child = 2 * root + 1
    while child < n:
        if child + 1 < n and get(k, lo + child) < get(k, lo + child + 1):
            child += 1
        if not x < get(k, lo + child):
            break
        put(k, lo + root, get(k, lo + child))
        put(ix, lo + root, get(ix, lo + child))
        root = child
        child = 2 * root + 1
    put(k, lo + root, x)
    put(ix, lo + root, y)


def _heapsort_by(k, ix, lo, hi):
    n = hi - lo
    for root in range(n // 2 - 1, -1, -1):
        _sift_by(k, ix, lo, root, n)
    for end in range(n - 1, 0, -1):
        x = get(k, lo)
        y = get(ix, lo)
        put(k, lo, get(k, lo + end))
        put(ix, lo, get(ix, lo + end))
        put(k, lo + end, x)
        put(ix, lo + end, y)
        _sift_by(k, ix, lo, 0, end)


def introsort_by(k, ix):
    """Sort the keys ``k`` and reorder the indices ``ix`` (both 1-d, as long) with them; not stable."""
    hi = _nans_last_by(k, ix, k.shape[0])
    order = _ordered(k, hi)
    if order != 0:
        if order < 0:
            _reverse(k, hi)
            _reverse(ix, hi)
        return
    lo = 0
    stack = new_array((3 * STACK,), INDEX)
    top = 0
    depth = 2 * _log2(hi)
    while True:
        if hi - lo > SMALL and depth > 0:
            depth -= 1
            p = _pivot(k, lo, hi)
            j = _below_by(k, ix, lo, hi, p)
            if j == lo:
                lo = _not_above_by(k, ix, lo, hi, p)
            elif j - lo < hi - j:
                put(stack, top, j)
                put(stack, top + 1, hi)
                put(stack, top + 2, depth)
                top += 3
                hi = j
            else:
                put(stack, top, lo)
                put(stack, top + 1, j)
                put(stack, top + 2, depth)
                top += 3
                lo = j
        else:
            if hi - lo > SMALL:
                _heapsort_by(k, ix, lo, hi)
            else:
                _insertion_by(k, ix, lo, hi)
            if top == 0:
                break
            top -= 3
            lo = get(stack, top)
            hi = get(stack, top + 1)
            depth = get(stack, top + 2)


# --- stable merge sort ----------------------------------------------------------------------


def _nans_after(v, tmp, n):
    """NaN moved after the numbers of ``v[:n]``, both in their order (through ``tmp``); the count of
    numbers (``n`` for integers)."""
    j = 0
    m = 0
    for i in range(n):
        x = get(v, i)
        if x == x:
            put(v, j, x)
            j += 1
        else:
            put(tmp, m, x)
            m += 1
    for q in range(m):
        put(v, j + q, get(tmp, q))
    return j


def _runs(v, n):
    for lo in range(0, n, RUN):
        hi = min(lo + RUN, n)
        for i in range(lo + 1, hi):
            x = get(v, i)
            j = i
            while j > lo and x < get(v, j - 1):
                put(v, j, get(v, j - 1))
                j -= 1
            put(v, j, x)


def _merge(src, dst, lo, mid, hi):
    """``src[lo:mid]`` and ``src[mid:hi]`` (each sorted) merged into ``dst[lo:hi]``, equal items from
    the left first; the choice is a select, not a branch (random data would mispredict half of them)."""
    i, j, k = lo, mid, lo
    while i < mid and j < hi:
        a = get(src, i)
        b = get(src, j)
        right = int(b < a)
        put(dst, k, b if right else a)
        j += right
        i += 1 - right
        k += 1
    for q in range(i, mid):
        put(dst, k, get(src, q))
        k += 1
    for q in range(j, hi):
        put(dst, k, get(src, q))
        k += 1


def _pass(src, dst, n, width):
    for lo in range(0, n, 2 * width):
        _merge(src, dst, lo, min(lo + width, n), min(lo + 2 * width, n))


def merge_sort(v, tmp):
    """Sort the 1-d array ``v`` (any layout) in place, stably, NaN last; ``tmp`` holds as many
    elements."""
    n = _nans_after(v, tmp, v.shape[0])
    _runs(v, n)
    width = RUN
    back = False  # whether the sorted runs are in tmp
    while width < n:
        if back:
            _pass(tmp, v, n, width)
        else:
            _pass(v, tmp, n, width)
        back = not back
        width *= 2
    if back:
        for i in range(n):
            put(v, i, get(tmp, i))


def _nans_after_by(k, ix, tk, tix, n):
    j = 0
    m = 0
    for i in range(n):
        x = get(k, i)
        y = get(ix, i)
        if x == x:
            put(k, j, x)
            put(ix, j, y)
            j += 1
        else:
            put(tk, m, x)
            put(tix, m, y)
            m += 1
    for q in range(m):
        put(k, j + q, get(tk, q))
        put(ix, j + q, get(tix, q))
    return j


def _runs_by(k, ix, n):
    for lo in range(0, n, RUN):
        hi = min(lo + RUN, n)
        for i in range(lo + 1, hi):
            x = get(k, i)
            y = get(ix, i)
            j = i
            while j > lo and x < get(k, j - 1):
                put(k, j, get(k, j - 1))
                put(ix, j, get(ix, j - 1))
                j -= 1
            put(k, j, x)
            put(ix, j, y)


def _merge_by(k, ix, dk, dix, lo, mid, hi):
    i, j, q = lo, mid, lo
    while i < mid and j < hi:
        a = get(k, i)
        b = get(k, j)
        right = int(b < a)
        put(dk, q, b if right else a)
        put(dix, q, get(ix, j) if right else get(ix, i))
        j += right
        i += 1 - right
        q += 1
    for s in range(i, mid):
        put(dk, q, get(k, s))
        put(dix, q, get(ix, s))
        q += 1
    for s in range(j, hi):
        put(dk, q, get(k, s))
        put(dix, q, get(ix, s))
        q += 1


def _pass_by(k, ix, dk, dix, n, width):
    for lo in range(0, n, 2 * width):
        _merge_by(k, ix, dk, dix, lo, min(lo + width, n), min(lo + 2 * width, n))


def merge_sort_by(k, ix, dt):
    """Sort the keys ``k`` (contiguous) stably, NaN last, reordering the indices ``ix`` with them."""
    tk = new_array((k.shape[0],), dt)
    tix = new_array((k.shape[0],), INDEX)
    n = _nans_after_by(k, ix, tk, tix, k.shape[0])
    _runs_by(k, ix, n)
    width = RUN
    back = False
    while width < n:
        if back:
            _pass_by(tk, tix, k, ix, n, width)
        else:
            _pass_by(k, ix, tk, tix, n, width)
        back = not back
        width *= 2
    if back:
        for i in range(n):
            put(k, i, get(tk, i))
            put(ix, i, get(tix, i))


# --- the entry points ------------------------------------------------------------------------


def _sort_in_place(v, dt, stable):
    if stable:
        merge_sort(v, new_array((v.shape[0],), dt))
    else:
        introsort(v)


def copy1(x, dt):
    n = x.shape[0]
    out = new_array((n,), dt)
    for i in range(n):
        put(out, i, element(x, i))
    return out


def copy2(x, dt):
    n, m = x.shape
    out = new_array((n, m), dt)
    for i in range(n):
        for j in range(m):
            put(out, (i, j), element(x, i, j))
    return out


def flat2(x, dt):
    """The elements of a 2-d ``x`` in C order, in a new 1-d array."""
    n, m = x.shape
    out = new_array((n * m,), dt)
    for i in range(n):
        for j in range(m):
            put(out, i * m + j, element(x, i, j))
    return out


def inplace1(a, dt, stable):
    _sort_in_place(a, dt, stable)


def inplace_rows(a, dt, stable):
    """Each row of a 2-d ``a`` sorted in place (axis 1, NumPy's default -1)."""
    for i in range(a.shape[0]):
        _sort_in_place(a[i], dt, stable)


def inplace_columns(a, dt, stable):
    for j in range(a.shape[1]):
        _sort_in_place(a[:, j], dt, stable)


def sort1(x, dt, stable):
    out = copy1(x, dt)
    _sort_in_place(out, dt, stable)
    return out


def sort_flat(x, dt, stable):
    out = flat2(x, dt)
    _sort_in_place(out, dt, stable)
    return out


def sort_rows(x, dt, stable):
    out = copy2(x, dt)
    inplace_rows(out, dt, stable)
    return out


def sort_columns(x, dt, stable):
    out = copy2(x, dt)
    inplace_columns(out, dt, stable)
    return out


def _indices(keys, dt, stable):
    """The order of the 1-d ``keys`` (a copy the sort may reorder)."""
    n = keys.shape[0]
    idx = new_array((n,), INDEX)
    for i in range(n):
        put(idx, i, i)
    if stable:
        merge_sort_by(keys, idx, dt)
    else:
        introsort_by(keys, idx)
    return idx


def argsort1(x, dt, stable):
    return _indices(copy1(x, dt), dt, stable)


def argsort_flat(x, dt, stable):
    return _indices(flat2(x, dt), dt, stable)


def argsort_rows(x, dt, stable):
    keys = copy2(x, dt)
    n, m = x.shape
    out = new_array((n, m), INDEX)
    for i in range(n):
        row = _indices(keys[i], dt, stable)
        for j in range(m):
            put(out, (i, j), get(row, j))
    return out


def argsort_columns(x, dt, stable):
    keys = copy2(x, dt)
    n, m = x.shape
    out = new_array((n, m), INDEX)
    for j in range(m):
        column = _indices(copy1(keys[:, j], dt), dt, stable)
        for i in range(n):
            put(out, (i, j), get(column, i))
    return out
