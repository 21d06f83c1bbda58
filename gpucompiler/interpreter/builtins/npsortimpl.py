"""The sorting loops of ``np.sort``, ``np.argsort`` and ``a.sort()``, compiled like user code.

Runs of 32 sorted by insertion, then bottom-up merges: stable (``argsort`` gives NumPy's ``kind="stable"``
order; NumPy's default quicksort may order equal keys otherwise, their
values are the same), O(n log n) in the worst case, NaN last as NumPy sorts
it. The loops move values with plain loads and stores, so the Enzyme plugin
differentiates ``np.sort`` (each output is one input). ``x`` is an array or
a fused expression, ``dt`` its element type; the results are new C-ordered
arrays except for ``inplace*``.
"""

from ...frontend.intrinsics import getitem_unchecked, setitem_unchecked
from ... import types as T
from .npintrinsics import element, new_array

INDEX = T.int64


RUN = 32
"""the length of the runs sorted by insertion before the merges"""


def _less(a, b):
    """NumPy's sort order: ``a < b``, NaN after every number (no branch: merges choose by a select)."""
    return (a < b) | ((b != b) & (a == a))


def _insertion(v, lo, hi):
    for i in range(lo + 1, hi):
        x = getitem_unchecked(v, i)
        j = i
        while j > lo and _less(x, getitem_unchecked(v, j - 1)):
            setitem_unchecked(v, j, getitem_unchecked(v, j - 1))
            j -= 1
        setitem_unchecked(v, j, x)


def _merge(v, tmp, lo, mid, hi):
    """``v[lo:mid]`` and ``v[mid:hi]`` (each sorted) merged into ``tmp[lo:hi]``, equal items from the
    left first; the choice is a select, not a branch (random data would mispredict half of them)."""
    i, j, k = lo, mid, lo
    while i < mid and j < hi:
        a = getitem_unchecked(v, i)
        b = getitem_unchecked(v, j)
        right = int(_less(b, a))
        setitem_unchecked(tmp, k, b if right else a)
        j += right
        i += 1 - right
        k += 1
    for q in range(i, mid):
        setitem_unchecked(tmp, k, getitem_unchecked(v, q))
        k += 1
    for q in range(j, hi):
        setitem_unchecked(tmp, k, getitem_unchecked(v, q))
        k += 1


def merge_sort(v, tmp):
    """Sort the 1-d array ``v`` (any layout) in place, stably; ``tmp`` holds as many elements."""
    n = v.shape[0]
    for lo in range(0, n, RUN):
        _insertion(v, lo, min(lo + RUN, n))
    width = RUN
    while width < n:
        for lo in range(0, n, 2 * width):
            _merge(v, tmp, lo, min(lo + width, n), min(lo + 2 * width, n))
        for k in range(n):
            setitem_unchecked(v, k, getitem_unchecked(tmp, k))
        width *= 2


def _insertion_by(keys, idx, lo, hi):
    for i in range(lo + 1, hi):
        x = getitem_unchecked(idx, i)
        key = getitem_unchecked(keys, x)
        j = i
        while j > lo and _less(key, getitem_unchecked(keys, getitem_unchecked(idx, j - 1))):
            setitem_unchecked(idx, j, getitem_unchecked(idx, j - 1))
            j -= 1
        setitem_unchecked(idx, j, x)


def _merge_by(keys, idx, tmp, lo, mid, hi):
    i, j, k = lo, mid, lo
    while i < mid and j < hi:
        a = getitem_unchecked(idx, i)
        b = getitem_unchecked(idx, j)
        right = int(_less(getitem_unchecked(keys, b), getitem_unchecked(keys, a)))
        setitem_unchecked(tmp, k, b if right else a)
        j += right
        i += 1 - right
        k += 1
    for q in range(i, mid):
        setitem_unchecked(tmp, k, getitem_unchecked(idx, q))
        k += 1
    for q in range(j, hi):
        setitem_unchecked(tmp, k, getitem_unchecked(idx, q))
        k += 1


def merge_argsort(keys, idx, tmp):
    """Order the indices ``idx`` (int64, 1-d) by ``keys[idx]``, stably; ``tmp`` as long as ``idx``."""
    n = idx.shape[0]
    for lo in range(0, n, RUN):
        _insertion_by(keys, idx, lo, min(lo + RUN, n))
    width = RUN
    while width < n:
        for lo in range(0, n, 2 * width):
            _merge_by(keys, idx, tmp, lo, min(lo + width, n), min(lo + 2 * width, n))
        for k in range(n):
            setitem_unchecked(idx, k, getitem_unchecked(tmp, k))
        width *= 2


def copy1(x, dt):
    n = x.shape[0]
    out = new_array((n,), dt)
    for i in range(n):
        setitem_unchecked(out, i, element(x, i))
    return out


def copy2(x, dt):
    n, m = x.shape
    out = new_array((n, m), dt)
    for i in range(n):
        for j in range(m):
            setitem_unchecked(out, (i, j), element(x, i, j))
    return out


def flat2(x, dt):
    """The elements of a 2-d ``x`` in C order, in a new 1-d array."""
    n, m = x.shape
    out = new_array((n * m,), dt)
    for i in range(n):
        for j in range(m):
            setitem_unchecked(out, i * m + j, element(x, i, j))
    return out


def inplace1(a, dt):
    merge_sort(a, new_array((a.shape[0],), dt))


def inplace_rows(a, dt):
    """Each row of a 2-d ``a`` sorted in place (axis 1, NumPy's default -1)."""
    tmp = new_array((a.shape[1],), dt)
    for i in range(a.shape[0]):
        merge_sort(a[i], tmp)


def inplace_columns(a, dt):
    tmp = new_array((a.shape[0],), dt)
    for j in range(a.shape[1]):
        merge_sort(a[:, j], tmp)


def sort1(x, dt):
    out = copy1(x, dt)
    inplace1(out, dt)
    return out


def sort_flat(x, dt):
    out = flat2(x, dt)
    inplace1(out, dt)
    return out


def sort_rows(x, dt):
    out = copy2(x, dt)
    inplace_rows(out, dt)
    return out


def sort_columns(x, dt):
    out = copy2(x, dt)
    inplace_columns(out, dt)
    return out


def _indices(keys):
    n = keys.shape[0]
    idx = new_array((n,), INDEX)
    for i in range(n):
        setitem_unchecked(idx, i, i)
    merge_argsort(keys, idx, new_array((n,), INDEX))
    return idx


def argsort1(x, dt):
    return _indices(copy1(x, dt))


def argsort_flat(x, dt):
    return _indices(flat2(x, dt))


def argsort_rows(x, dt):
    keys = copy2(x, dt)
    n, m = x.shape
    out = new_array((n, m), INDEX)
    for i in range(n):
        row = _indices(keys[i])
        for j in range(m):
            setitem_unchecked(out, (i, j), getitem_unchecked(row, j))
    return out


def argsort_columns(x, dt):
    keys = copy2(x, dt)
    n, m = x.shape
    out = new_array((n, m), INDEX)
    for j in range(m):
        column = _indices(keys[:, j])
        for i in range(n):
            setitem_unchecked(out, (i, j), getitem_unchecked(column, i))
    return out
