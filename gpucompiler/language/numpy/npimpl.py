"""NumPy functions written in Python over arrays and fused expressions, compiled by the frontend.

They are ordinary compiled code (plain loops), so the optimiser vectorises
them and the Enzyme plugin differentiates them like user code. ``x`` is an
array or an :class:`~gpucompiler.types.ArrayExpr` (``element`` evaluates
the fused expression at an index); ``dt`` is the result's scalar type
(``dt(0)`` its zero), chosen by NumPy's rules in :mod:`.reductions`.
argmin/argmax count in C order, as NumPy does.
"""

from ...pristine import math  # as imported (pristine.py: the rules key on its functions)

from ...frontend.intrinsics import check, setitem_unchecked
from .npintrinsics import broadcast_element, check_broadcast, element, exact, fmaximum, fminimum, new_array, overlaps, same_shape


def versioned(loop, x, dt):
    """``loop(x, dt)``, with the arrays of ``x`` indexed directly when none is broadcast (the loop
    then vectorises); the broadcasting copy runs only otherwise."""
    if same_shape(x):
        return loop(exact(x), dt)
    return loop(x, dt)


def versioned2(loop, a, b, dt):
    if same_shape(a, b):
        return loop(exact(a), exact(b), dt)
    return loop(a, b, dt)


def checked_mask(loop, out, mask, value):
    """``loop(out, mask, value)`` for a boolean ``mask`` of ``out``'s shape (else NumPy's IndexError)."""
    check(same_shape(out, mask), "IndexError", "boolean index did not match the indexed array")
    loop(out, exact(mask), value)


def versioned_assign(loop, out, src):
    """``loop(out, src)``; where an array of ``src`` overlaps ``out`` at an offset (kernels, which
    cannot allocate), a ValueError."""
    check(not overlaps(out, src), "ValueError", "the destination overlaps an array of the expression at an "
          "offset: evaluate it into a new array first (tmp = np.empty_like(out); tmp[...] = expression)")
    if same_shape(out, src):
        return loop(out, exact(src))
    return loop(out, src)


def copied_assign(loop, out, src, dt):
    """``loop(out, src)`` as NumPy computes it: where an array of ``src`` overlaps ``out`` at an offset
    (``a[:] = a[::-1]``, ``a[1:] = a[:-1] + a[1:]``), ``src`` is evaluated into a new array first."""
    if overlaps(out, src):
        return loop(out, exact(loop(new_array(out.shape, dt), src)))
    if same_shape(out, src):
        return loop(out, exact(src))
    return loop(out, src)


def assign1(out, src):
    """``out[...] = src`` (broadcast); returns ``out``."""
    check_broadcast(src, out.shape)
    for i in range(out.shape[0]):
        setitem_unchecked(out, i, broadcast_element(src, i))
    return out


def assign2(out, src):
    check_broadcast(src, out.shape)
    n, m = out.shape
    for i in range(n):
        for j in range(m):
            setitem_unchecked(out, (i, j), broadcast_element(src, i, j))
    return out


def assign3(out, src):
    check_broadcast(src, out.shape)
    n, m, p = out.shape
    for i in range(n):
        for j in range(m):
            for k in range(p):
                setitem_unchecked(out, (i, j, k), broadcast_element(src, i, j, k))
    return out


_ASSIGN = {1: assign1, 2: assign2, 3: assign3}


def mask_assign1(out, mask, value):
    """``out[mask] = value`` of a number: where the boolean ``mask`` (out's shape) holds."""
    for i in range(out.shape[0]):
        if element(mask, i):
            setitem_unchecked(out, i, value)


def mask_assign2(out, mask, value):
    n, m = out.shape
    for i in range(n):
        for j in range(m):
            if element(mask, i, j):
                setitem_unchecked(out, (i, j), value)


MASK_ASSIGN = {1: mask_assign1, 2: mask_assign2}


def assign(ndim: int):
    """The implementation of ``out[...] = src`` for ``ndim``-d arrays (None beyond 3-d)."""
    return _ASSIGN.get(ndim)


# -- reductions over all elements ----------------------------------------------------
def sum1(x, dt):
    s = dt(0)
    for i in range(x.shape[0]):
        s += element(x, i)
    return s


def sum2(x, dt):
    n, m = x.shape
    s = dt(0)
    for i in range(n):
        for j in range(m):
            s += element(x, i, j)
    return s


def prod1(x, dt):
    s = dt(1)
    for i in range(x.shape[0]):
        s *= element(x, i)
    return s


def prod2(x, dt):
    n, m = x.shape
    s = dt(1)
    for i in range(n):
        for j in range(m):
            s *= element(x, i, j)
    return s


def mean(x, dt, total):
    """``total`` is the sum in ``dt``; NaN for no elements (NumPy warns; ``nan+nanj`` for complex numbers:
    the empty sum, 0, times NaN)."""
    n = x.size
    if n == 0:
        return total * math.nan
    return total / dt(n)


def min1(x, dt):
    n = x.shape[0]
    check(n > 0, "ValueError", "zero-size array to reduction operation minimum which has no identity")
    m = element(x, 0)
    for i in range(1, n):
        m = fminimum(m, element(x, i))
    return m


def max1(x, dt):
    n = x.shape[0]
    check(n > 0, "ValueError", "zero-size array to reduction operation maximum which has no identity")
    m = element(x, 0)
    for i in range(1, n):
        m = fmaximum(m, element(x, i))
    return m


def min2(x, dt):
    n, p = x.shape
    check(n * p > 0, "ValueError", "zero-size array to reduction operation minimum which has no identity")
    m = element(x, 0, 0)
    for i in range(n):
        for j in range(p):
            m = fminimum(m, element(x, i, j))
    return m


def max2(x, dt):
    n, p = x.shape
    check(n * p > 0, "ValueError", "zero-size array to reduction operation maximum which has no identity")
    m = element(x, 0, 0)
    for i in range(n):
        for j in range(p):
            m = fmaximum(m, element(x, i, j))
    return m


def argmin1(x, dt):
    n = x.shape[0]
    check(n > 0, "ValueError", "attempt to get argmin of an empty sequence")
    k = 0
    m = element(x, 0)
    for i in range(1, n):
        v = element(x, i)
        if v < m or (v != v and m == m):  # the first NaN wins
            m = v
            k = i
    return k


def argmax1(x, dt):
    n = x.shape[0]
    check(n > 0, "ValueError", "attempt to get argmax of an empty sequence")
    k = 0
    m = element(x, 0)
    for i in range(1, n):
        v = element(x, i)
        if v > m or (v != v and m == m):
            m = v
            k = i
    return k


def argmin2(x, dt):
    n, p = x.shape
    check(n * p > 0, "ValueError", "attempt to get argmin of an empty sequence")
    k = 0
    m = element(x, 0, 0)
    for i in range(n):
        for j in range(p):
            v = element(x, i, j)
            if v < m or (v != v and m == m):
                m = v
                k = i * p + j
    return k


def argmax2(x, dt):
    n, p = x.shape
    check(n * p > 0, "ValueError", "attempt to get argmax of an empty sequence")
    k = 0
    m = element(x, 0, 0)
    for i in range(n):
        for j in range(p):
            v = element(x, i, j)
            if v > m or (v != v and m == m):
                m = v
                k = i * p + j
    return k


def any1(x, dt):
    for i in range(x.shape[0]):  # noqa: SIM110  (compiled code has no generators)
        if element(x, i) != 0:  # complex numbers have no truth value in compiled code: compared
            return True
    return False


def all1(x, dt):
    for i in range(x.shape[0]):  # noqa: SIM110  (compiled code has no generators)
        if element(x, i) == 0:
            return False
    return True


def any2(x, dt):
    n, m = x.shape
    for i in range(n):
        for j in range(m):
            if element(x, i, j) != 0:
                return True
    return False


def all2(x, dt):
    n, m = x.shape
    for i in range(n):
        for j in range(m):
            if element(x, i, j) == 0:
                return False
    return True


# -- products ------------------------------------------------------------------
def dot11(a, b, dt):
    """``np.dot`` of two vectors."""
    n = a.shape[0]
    check(n == b.shape[0], "ValueError", "shapes of the vectors in dot are not aligned")
    s = dt(0)
    for i in range(n):
        s = dt(s + element(a, i) * element(b, i))  # in dt: bools give NumPy's "or" of "and"s
    return s
