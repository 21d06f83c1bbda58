"""NumPy reductions along an axis of a 2-d array, matrix products and selections by a boolean mask or
an integer array, written in Python and compiled.

Like :mod:`.npimpl`, these are plain loops (vectorised by the optimiser,
differentiated by the Enzyme plugin like user code) over an array or a fused
expression ``x``; ``dt`` is the result's scalar type. Each returns a new
C-ordered array. The callers (:mod:`.reductions`) check the preconditions
NumPy checks (an empty axis of ``min``, aligned shapes of a product, a
mask's shape, indices in bounds) at the user's call, so these loops assume
them. Loop orders follow the C layout of
the results: a row of ``x`` (or ``b``) is the inner loop wherever it can be.
"""

import math

from ...frontend.intrinsics import getitem_unchecked, setitem_unchecked
from ... import types as T
from .npintrinsics import element, fmaximum, fminimum, new_array, zeroed_array

INDEX = T.int64
"""the type of argmin's and argmax's indices"""


def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _or_nonzero(acc, v):
    return acc | (v != 0)  # NaN is nonzero, as NumPy's any() has it


def _and_nonzero(acc, v):
    return acc & (v != 0)


def _better(v, best, smallest):
    """``v`` replaces ``best`` in argmin (``smallest``) or argmax: it is smaller (larger), or the
    first NaN."""
    return (v < best if smallest else v > best) or (v != v and best == best)


# -- folds: axis 0 accumulates into the result row by row; axis 1 keeps a running value per row
def _fold0(x, dt, op, start):
    n, m = x.shape
    out = new_array((m,), dt)
    for j in range(m):
        setitem_unchecked(out, j, start)
    for i in range(n):
        for j in range(m):
            setitem_unchecked(out, j, dt(op(getitem_unchecked(out, j), element(x, i, j))))
    return out


def _fold1(x, dt, op, start):
    """Each row in four partial results (independent chains run four times as fast as one; NumPy's
    pairwise sums reorder too), joined at the row's end."""
    n, m = x.shape
    out = new_array((n,), dt)
    m4 = m - m % 4
    for i in range(n):
        s0, s1, s2, s3 = start, start, start, start
        for j in range(0, m4, 4):
            s0 = dt(op(s0, element(x, i, j)))
            s1 = dt(op(s1, element(x, i, j + 1)))
            s2 = dt(op(s2, element(x, i, j + 2)))
            s3 = dt(op(s3, element(x, i, j + 3)))
        s = dt(op(dt(op(s0, s1)), dt(op(s2, s3))))
        for j in range(m4, m):
            s = dt(op(s, element(x, i, j)))
        setitem_unchecked(out, i, s)
    return out


def _extreme0(x, dt, op):
    """``op`` (fminimum/fmaximum) over each column, from its first element (the axis is not empty)."""
    n, m = x.shape
    out = new_array((m,), dt)
    for j in range(m):
        setitem_unchecked(out, j, dt(element(x, 0, j)))
    for i in range(1, n):
        for j in range(m):
            setitem_unchecked(out, j, dt(op(getitem_unchecked(out, j), element(x, i, j))))
    return out


def _extreme1(x, dt, op):
    n, m = x.shape
    out = new_array((n,), dt)
    for i in range(n):
        s = dt(element(x, i, 0))
        for j in range(1, m):
            s = dt(op(s, element(x, i, j)))
        setitem_unchecked(out, i, s)
    return out


def _arg0(x, dt, smallest):
    """The index of the best element of each column (the first of equals, or the first NaN): the
    columns' best values so far kept in a row, updated a row of ``x`` at a time (no loop-carried
    dependence along the row: it vectorises). ``dt`` is the type of ``x``'s elements."""
    n, m = x.shape
    out = zeroed_array((m,), INDEX)
    best = new_array((m,), dt)
    for j in range(m):
        setitem_unchecked(best, j, element(x, 0, j))
    for i in range(1, n):
        for j in range(m):
            v = element(x, i, j)
            b = getitem_unchecked(best, j)
            take = _better(v, b, smallest)
            setitem_unchecked(best, j, v if take else b)
            setitem_unchecked(out, j, i if take else getitem_unchecked(out, j))
    return out


def _extreme_of_row(x, i, m, smallest):
    e = element(x, i, 0)
    if smallest:
        for j in range(1, m):
            e = fminimum(e, element(x, i, j))
    else:
        for j in range(1, m):
            e = fmaximum(e, element(x, i, j))
    return e


def _arg1(x, dt, smallest):
    """The index of the best element of each row: the row's extreme first (a reduction that
    vectorises; NaN if the row holds one), then the first element equal to it (or the first NaN)."""
    n, m = x.shape
    out = new_array((n,), INDEX)
    for i in range(n):
        e = _extreme_of_row(x, i, m, smallest)
        k = 0
        for j in range(m):
            v = element(x, i, j)
            if v == e or (e != e and v != v):
                k = j
                break
        setitem_unchecked(out, i, k)
    return out


def _averaged(out, dt, count):
    """``out / count`` in place; NaN for a count of 0 (NumPy warns and gives NaN, ``nan+nanj`` for complex
    numbers: the empty sum, 0, times NaN)."""
    for i in range(out.shape[0]):
        if count == 0:
            setitem_unchecked(out, i, getitem_unchecked(out, i) * math.nan)
        else:
            setitem_unchecked(out, i, getitem_unchecked(out, i) / dt(count))
    return out


def sum0(x, dt):
    return _fold0(x, dt, _add, dt(0))


def sum1(x, dt):
    return _fold1(x, dt, _add, dt(0))


def prod0(x, dt):
    return _fold0(x, dt, _mul, dt(1))


def prod1(x, dt):
    return _fold1(x, dt, _mul, dt(1))


def min0(x, dt):
    return _extreme0(x, dt, fminimum)


def min1(x, dt):
    return _extreme1(x, dt, fminimum)


def max0(x, dt):
    return _extreme0(x, dt, fmaximum)


def max1(x, dt):
    return _extreme1(x, dt, fmaximum)


def argmin0(x, dt):
    return _arg0(x, dt, True)


def argmin1(x, dt):
    return _arg1(x, dt, True)


def argmax0(x, dt):
    return _arg0(x, dt, False)


def argmax1(x, dt):
    return _arg1(x, dt, False)


def any0(x, dt):
    return _fold0(x, dt, _or_nonzero, False)


def any1(x, dt):
    return _fold1(x, dt, _or_nonzero, False)


def all0(x, dt):
    return _fold0(x, dt, _and_nonzero, True)


def all1(x, dt):
    return _fold1(x, dt, _and_nonzero, True)


def mean0(x, dt):
    return _averaged(_fold0(x, dt, _add, dt(0)), dt, x.shape[0])


def mean1(x, dt):
    return _averaged(_fold1(x, dt, _add, dt(0)), dt, x.shape[1])


def keep0(r):
    """A reduction along axis 0 with ``keepdims``: ``(m,)`` as ``(1, m)``."""
    return r.reshape((1, r.shape[0]))


def keep1(r):
    return r.reshape((r.shape[0], 1))


def keep_all1(s, dt):
    """A reduction of every element with ``keepdims``: the number in a ``(1,)`` array."""
    out = new_array((1,), dt)
    setitem_unchecked(out, 0, s)
    return out


def keep_all2(s, dt):
    out = new_array((1, 1), dt)
    setitem_unchecked(out, (0, 0), s)
    return out


# -- products (shapes checked by the caller) ----------------------------------------------
def matmul22(a, b, dt):
    """``a @ b`` of two matrices: i-k-j (the inner loop along a row of ``b`` and of the result),
    two rows of the result and four of ``b`` at a time so that each load of a result element
    serves eight products. Every element is summed in the order of k, as a plain i-k-j loop sums."""
    n, k = a.shape
    p = b.shape[1]
    out = zeroed_array((n, p), dt)
    k4 = k - k % 4
    for i2 in range(n // 2):
        i = 2 * i2
        for q in range(0, k4, 4):
            a0, a1, a2, a3 = element(a, i, q), element(a, i, q + 1), element(a, i, q + 2), element(a, i, q + 3)
            c0, c1 = element(a, i + 1, q), element(a, i + 1, q + 1)
            c2, c3 = element(a, i + 1, q + 2), element(a, i + 1, q + 3)
            for j in range(p):
                b0, b1, b2, b3 = element(b, q, j), element(b, q + 1, j), element(b, q + 2, j), element(b, q + 3, j)
                setitem_unchecked(out, (i, j), dt(dt(dt(dt(getitem_unchecked(out, (i, j)) + a0 * b0) + a1 * b1)
                                                     + a2 * b2) + a3 * b3))
                setitem_unchecked(out, (i + 1, j), dt(dt(dt(dt(getitem_unchecked(out, (i + 1, j)) + c0 * b0)
                                                             + c1 * b1) + c2 * b2) + c3 * b3))
        for q in range(k4, k):
            aq, cq = element(a, i, q), element(a, i + 1, q)
            for j in range(p):
                bq = element(b, q, j)
                setitem_unchecked(out, (i, j), dt(getitem_unchecked(out, (i, j)) + aq * bq))
                setitem_unchecked(out, (i + 1, j), dt(getitem_unchecked(out, (i + 1, j)) + cq * bq))
    if n % 2:
        i = n - 1
        for q in range(k):
            aq = element(a, i, q)
            for j in range(p):
                setitem_unchecked(out, (i, j), dt(getitem_unchecked(out, (i, j)) + aq * element(b, q, j)))
    return out


def matmul22_packed(a, b, dt, bt):
    """``a @ b`` where ``b`` is not known to be C-contiguous (a view, F order, an expression): ``b``
    copied into C order first (``k * p`` elements against the ``n * k * p`` products), so that the
    inner loop runs along contiguous rows."""
    k, p = b.shape
    packed = new_array((k, p), bt)
    for q in range(k):
        for j in range(p):
            setitem_unchecked(packed, (q, j), element(b, q, j))
    return matmul22(a, packed, dt)


def matmul21(a, b, dt):
    """A matrix times a vector: one dot product per row of ``a``, in four partial sums (independent
    chains: four times the throughput of one running sum; NumPy's BLAS reorders its sums too)."""
    n, k = a.shape
    out = new_array((n,), dt)
    k4 = k - k % 4
    for i in range(n):
        s0, s1, s2, s3 = dt(0), dt(0), dt(0), dt(0)
        for q in range(0, k4, 4):
            s0 = dt(s0 + element(a, i, q) * element(b, q))
            s1 = dt(s1 + element(a, i, q + 1) * element(b, q + 1))
            s2 = dt(s2 + element(a, i, q + 2) * element(b, q + 2))
            s3 = dt(s3 + element(a, i, q + 3) * element(b, q + 3))
        s = dt(dt(s0 + s1) + dt(s2 + s3))
        for q in range(k4, k):
            s = dt(s + element(a, i, q) * element(b, q))
        setitem_unchecked(out, i, s)
    return out


def matmul12(a, b, dt):
    """A vector times a matrix: rows of ``b`` scaled by the elements of ``a``, summed."""
    k, p = b.shape
    out = zeroed_array((p,), dt)
    for q in range(k):
        aq = element(a, q)
        for j in range(p):
            setitem_unchecked(out, j, dt(getitem_unchecked(out, j) + aq * element(b, q, j)))
    return out


# -- selection (the caller checked the mask's shape and the indices' bounds) --------------------------
def masked1(x, mask, dt):
    """``x[mask]`` of a boolean ``mask`` of ``x``'s shape: the selected elements, in order. The
    elements are stored whether selected or not, the next one over the last if not (no branch on
    the mask: a random mask costs no mispredictions), into one spare element."""
    n = x.shape[0]
    count = 0
    for i in range(n):
        count += int(element(mask, i))
    out = new_array((count + 1,), dt)
    k = 0
    for i in range(n):
        setitem_unchecked(out, k, element(x, i))
        k += int(element(mask, i))
    return out[:count]


def masked2(x, mask, dt):
    """``x[mask]`` of a 2-d ``x``: the selected elements in C order."""
    n, m = x.shape
    count = 0
    for i in range(n):
        for j in range(m):
            count += int(element(mask, i, j))
    out = new_array((count + 1,), dt)
    k = 0
    for i in range(n):
        for j in range(m):
            setitem_unchecked(out, k, element(x, i, j))
            k += int(element(mask, i, j))
    return out[:count]


def first_out_of_bounds(index, n):
    """``(found, value)``: the first entry of the integer array ``index`` outside ``-n <= v < n``."""
    for k in range(index.shape[0]):
        v = int(element(index, k))
        if v < -n or v >= n:
            return True, v
    return False, 0


def taken1(x, index, dt):
    """``x[index]`` of a 1-d ``x`` and a 1-d integer array ``index`` (negative entries count from the end)."""
    n = x.shape[0]
    out = new_array((index.shape[0],), dt)
    for k in range(index.shape[0]):
        v = int(element(index, k))
        if v < 0:
            v += n
        setitem_unchecked(out, k, element(x, v))
    return out
