"""The sorting loops of ``np.sort``, ``np.argsort`` and ``a.sort()``, compiled like user code.

A bottom-up merge sort: stable (``argsort`` gives NumPy's ``kind="stable"``
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


def _less(a, b):
    """NumPy's sort order: ``a < b``, NaN after every number."""
    return a < b or (b != b and a == a)


def merge_sort(v, tmp):
    """Sort the 1-d array ``v`` (any layout) in place; ``tmp`` holds as many elements."""
    n = v.shape[0]
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j >= hi or (i < mid and not _less(getitem_unchecked(v, j), getitem_unchecked(v, i))):
                    setitem_unchecked(tmp, k, getitem_unchecked(v, i))
                    i += 1
                else:
                    setitem_unchecked(tmp, k, getitem_unchecked(v, j))
                    j += 1
        for k in range(n):
            setitem_unchecked(v, k, getitem_unchecked(tmp, k))
        width *= 2


def merge_argsort(keys, idx, tmp):
    """Order the indices ``idx`` (int64, 1-d) by ``keys[idx]``, stably; ``tmp`` as long as ``idx``."""
    n = idx.shape[0]
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j >= hi or (i < mid and not _less(getitem_unchecked(keys, getitem_unchecked(idx, j)),
                                                     getitem_unchecked(keys, getitem_unchecked(idx, i)))):
                    setitem_unchecked(tmp, k, getitem_unchecked(idx, i))
                    i += 1
                else:
                    setitem_unchecked(tmp, k, getitem_unchecked(idx, j))
                    j += 1
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
