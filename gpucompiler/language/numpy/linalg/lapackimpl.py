"""``np.linalg`` through LAPACKE (NumPy's OpenBLAS): the implementations :mod:`.nplinalg` calls.

Each takes its operands as NumPy gives them (arrays of any layout or expressions), copies them
into new arrays of the working precision (LAPACK overwrites its inputs), calls LAPACKE in
column-major layout where a transposed copy costs no more than a copy (LAPACKE's row-major layout
would copy twice more), and returns its results followed by LAPACK's ``info``, which the caller
turns into NumPy's ``LinAlgError`` at the user's line. ``solve``, ``inv`` and ``det`` go through
one function each of float arrays only (:data:`DIFFERENTIABLE`), which the Enzyme plugin gives
derivative rules; they return ``info`` as a float (it has no derivative), so that they fit the
convention of such rules, and take the user's arrays when their dtype is the working one
(:data:`DIRECT`).
"""

from __future__ import annotations

from ....pristine import math  # as imported (pristine.py: the rules key on its functions)

from ....frontend.intrinsics import getitem_unchecked, setitem_unchecked
from .... import types as T
from .blas import COL_MAJOR, ROW_MAJOR, blas_call, new_like
from .linalgimpl import packed1, packed2
from ..npintrinsics import element, new_array, zeroed_array

_L, _U, _V = 76, 85, 86  # 'L', 'U', 'V'


def _lead(n):
    """A leading dimension LAPACK accepts for ``n`` columns (at least 1)."""
    return n if n > 1 else 1


def copy2(a, out):
    n, m = a.shape
    for i in range(n):
        for j in range(m):
            setitem_unchecked(out, (i, j), getitem_unchecked(a, (i, j)))


def copy1(a, out):
    for i in range(a.shape[0]):
        setitem_unchecked(out, i, getitem_unchecked(a, i))


def transposed_copy(a, out):
    """``out = a.T``: a C-ordered ``out`` holds ``a`` in column-major order (LAPACK's own, which spares
    LAPACKE's row-major layout its two transposing copies)."""
    n, m = a.shape
    for j in range(m):
        for i in range(n):
            setitem_unchecked(out, (j, i), getitem_unchecked(a, (i, j)))


def _gesv2(a, b, x):
    """``x = solve(a, b)`` of a square ``a`` and a matrix ``b`` (any layout, ``x``'s dtype) into the new
    C-ordered ``x``; LAPACK's ``info`` as a float."""
    n = a.shape[0]
    k = x.shape[1]
    lu = new_like(x, (n, n))
    transposed_copy(a, lu)
    columns = new_like(x, (k, n))
    transposed_copy(b, columns)
    pivots = new_array((n,), T.int64)
    info = blas_call("gesv", COL_MAJOR, n, k, lu, _lead(n), pivots, columns, _lead(n))
    transposed_copy(columns, x)
    return float(info)


def _gesv1(a, b, x):
    """:func:`_gesv2` of a vector ``b``."""
    n = a.shape[0]
    lu = new_like(x, (n, n))
    transposed_copy(a, lu)
    copy1(b, x)
    pivots = new_array((n,), T.int64)
    return float(blas_call("gesv", COL_MAJOR, n, 1, lu, _lead(n), pivots, x, _lead(n)))


def _inverse(a, x):
    """``x = inv(a)`` into the new C-ordered ``x``; ``info`` as a float. In column-major order the copy
    of ``a`` is ``a.T`` and the solution ``inv(a.T) = inv(a).T``, which is ``inv(a)`` in row-major order."""
    n = a.shape[0]
    for i in range(n):
        for j in range(n):
            x[i, j] = 1.0 if i == j else 0.0
    lu = new_like(x, (n, n))
    copy2(a, lu)
    pivots = new_array((n,), T.int64)
    return float(blas_call("gesv", COL_MAJOR, n, n, lu, _lead(n), pivots, x, _lead(n)))


def _lu(a):
    """``(LU factors, pivots, info)`` of a copy of the square ``a``: of ``a.T`` in column-major order (the
    same determinant)."""
    n = a.shape[0]
    lu = new_like(a, (n, n))
    copy2(a, lu)
    pivots = new_array((n,), T.int64)
    info = blas_call("getrf", COL_MAJOR, n, n, lu, _lead(n), pivots)
    return lu, pivots, info


def _det(a):
    """The determinant of a square ``a`` (0 where LAPACK finds it singular), in float64."""
    lu, pivots, _ = _lu(a)
    d = 1.0
    for i in range(a.shape[0]):
        d = d * float(getitem_unchecked(lu, (i, i)))
        if getitem_unchecked(pivots, i) != i + 1:
            d = -d
    return d


# The functions with derivative rules take the user's arrays themselves (of the working dtype), which
# outlive the differentiated function's reverse sweep (a copy made for them would be freed before it).
# Each reads every extent its rules read (they were checked at the user's call): LLVM replaces the
# arguments a function never reads by poison at its calls, which its rules would then get.
def solve_into2(a, b, x):
    n = a.shape[0]
    if a.shape[1] != n or b.shape[0] != n or x.shape[0] != n or b.shape[1] != x.shape[1]:
        return -1.0
    return _gesv2(a, b, x)


def solve_into1(a, b, x):
    n = a.shape[0]
    if a.shape[1] != n or b.shape[0] != n or x.shape[0] != n:
        return -1.0
    return _gesv1(a, b, x)


def inv_into(a, x):
    n = a.shape[0]
    if a.shape[1] != n or x.shape[0] != n or x.shape[1] != n:
        return -1.0
    return _inverse(a, x)


def det_of(a):
    if a.shape[0] != a.shape[1]:
        return math.nan
    return _det(a)


# the implementations: operands of the working dtype passed on, others copied first (``*_copied``:
# differentiating through those is the AD engine's error on the LAPACK call)
def solve2(a, b, dt):
    x = new_array(b.shape, dt)
    return x, int(solve_into2(a, b, x))


def solve2_copied(a, b, dt):
    x = new_array(b.shape, dt)
    return x, int(_gesv2(packed2(a, dt), packed2(b, dt), x))


def solve1(a, b, dt):
    x = new_array(b.shape, dt)
    return x, int(solve_into1(a, b, x))


def solve1_copied(a, b, dt):
    x = new_array(b.shape, dt)
    return x, int(_gesv1(packed2(a, dt), packed1(b, dt), x))


def inv(a, dt):
    x = new_array(a.shape, dt)
    return x, int(inv_into(a, x))


def inv_copied(a, dt):
    x = new_array(a.shape, dt)
    return x, int(_inverse(packed2(a, dt), x))


def det(a, dt):
    return dt(det_of(a)), 0


def det_copied(a, dt):
    return dt(_det(packed2(a, dt))), 0


def _slogdet(a, out):
    """``out[0], out[1] = sign, log|det|`` of a square ``a`` (``0, -inf`` where LAPACK finds it singular);
    ``info`` as a float."""
    lu, pivots, info = _lu(a)
    sign, logdet = 1.0, 0.0
    for i in range(a.shape[0]):
        u = float(getitem_unchecked(lu, (i, i)))
        if getitem_unchecked(pivots, i) != i + 1:
            sign = -sign
        if u < 0:
            sign = -sign
        if u != 0:
            logdet += math.log(abs(u))
    if info > 0:
        sign, logdet = 0.0, -math.inf
    out[0] = sign
    out[1] = logdet
    return float(info)


def slogdet_into(a, out):
    if a.shape[0] != a.shape[1] or out.shape[0] != 2:
        return -1.0
    return _slogdet(a, out)


def slogdet(a, dt):
    out = new_array((2,), dt)
    slogdet_into(a, out)
    return (out[0], out[1]), 0


def slogdet_copied(a, dt):
    out = new_array((2,), dt)
    _slogdet(packed2(a, dt), out)
    return (out[0], out[1]), 0


def cholesky(a, dt):
    n = a.shape[0]
    c = packed2(a, dt)  # column-major: the upper factor of a.T (a symmetric), row-major: the lower one
    info = blas_call("potrf", COL_MAJOR, _U, n, c, _lead(n))
    for i in range(n):
        for j in range(i + 1, n):
            setitem_unchecked(c, (i, j), dt(0.0))
    return c, info


def eigh(a, dt):
    n = a.shape[0]
    v = packed2(a, dt)
    w = new_array((n,), dt)
    info = blas_call("syevd", ROW_MAJOR, _V, _L, n, v, _lead(n), w)
    return (w, v), info


def _lstsq(a, work, nrhs, rcond, eps, dt):
    """``(residuals, rank, singular values, info)`` of ``a`` and the right-hand sides in the first rows
    of ``work`` (``max(m, n)`` rows, ``nrhs`` columns), whose first ``n`` rows become the solution."""
    m, n = a.shape
    s = new_array((m if m < n else n,), dt)
    rank = zeroed_array((1,), T.int64)
    info = 0
    if rcond < 0:
        rcond = eps * (m if m > n else n)
    if m > 0 and n > 0 and nrhs > 0:
        info = blas_call("gelsd", ROW_MAJOR, m, n, nrhs, packed2(a, dt), _lead(n), work, _lead(nrhs), s, rcond, rank)
    r = getitem_unchecked(rank, 0)
    full = r == n and m > n
    residuals = zeroed_array((nrhs if full else 0,), dt)
    if full:
        for j in range(nrhs):
            acc = dt(0.0)
            for i in range(n, m):
                acc = acc + getitem_unchecked(work, (i, j)) * getitem_unchecked(work, (i, j))
            setitem_unchecked(residuals, j, acc)
    return residuals, r, s, info


def lstsq2(a, b, rcond, eps, dt):
    m, n = a.shape
    k = b.shape[1]
    work = zeroed_array((m if m > n else n, k), dt)
    for i in range(m):
        for j in range(k):
            setitem_unchecked(work, (i, j), dt(element(b, i, j)))
    residuals, rank, s, info = _lstsq(a, work, k, rcond, eps, dt)
    x = new_array((n, k), dt)
    for i in range(n):
        for j in range(k):
            setitem_unchecked(x, (i, j), getitem_unchecked(work, (i, j)))
    return (x, residuals, rank, s), info


def lstsq1(a, b, rcond, eps, dt):
    m, n = a.shape
    work = zeroed_array((m if m > n else n, 1), dt)
    for i in range(m):
        setitem_unchecked(work, (i, 0), dt(element(b, i)))
    residuals, rank, s, info = _lstsq(a, work, 1, rcond, eps, dt)
    x = new_array((n,), dt)
    for i in range(n):
        setitem_unchecked(x, i, getitem_unchecked(work, (i, 0)))
    return (x, residuals, rank, s), info


#: the functions of float arrays the Enzyme plugin gives derivative rules
DIFFERENTIABLE = (solve_into1, solve_into2, inv_into, det_of, slogdet_into)
#: name -> (implementation of operands of the working dtype, of the others): ``solve``'s by the rank of ``b``
DIRECT = {"solve": {1: (solve1, solve1_copied), 2: (solve2, solve2_copied)}, "inv": (inv, inv_copied),
          "det": (det, det_copied), "slogdet": (slogdet, slogdet_copied)}

__all__ = ["DIFFERENTIABLE", "DIRECT", "solve_into1", "solve_into2", "inv_into", "det_of", "slogdet_into", "copy1", "copy2"]
