"""Matrix products through the host's BLAS: the implementations of ``a @ b`` and ``np.dot`` of float32
and float64 matrices and vectors on the CPU (compiled like user code, :mod:`.reductions` calls them).

An operand BLAS cannot read in place (a view with a stride across both axes, a negative or zero
stride, an expression, another dtype) is first copied into a C-ordered array of the result's
dtype. The product itself is one call of ``gemm`` or ``gemv`` (:func:`gemm_into`,
:func:`gemv_into`); a differentiated function computes it with the loops of :mod:`.npaxes`
instead (the Enzyme plugin's rules swap the calls of :func:`product22` & co., :data:`LOOPS`),
which its AD engine differentiates.
"""

from __future__ import annotations

from ....pristine import math  # as imported (pristine.py: the rules key on its functions)

from ....frontend.intrinsics import setitem_unchecked
from .. import npaxes as X
from .blas import ROW_MAJOR, NO_TRANS, TRANS, blas_call, blas_ready, contiguous, lead, trans
from ..npintrinsics import element, new_array, zeroed_array


def packed2(x, dt):
    """``x`` (a matrix or a matrix expression) copied into a new C-ordered array of ``dt``."""
    n, m = x.shape
    out = new_array((n, m), dt)
    for i in range(n):
        for j in range(m):
            setitem_unchecked(out, (i, j), dt(element(x, i, j)))
    return out


def packed1(x, dt):
    n = x.shape[0]
    out = new_array((n,), dt)
    for i in range(n):
        setitem_unchecked(out, i, dt(element(x, i)))
    return out


def gemm_into(a, b, out, dt):
    """``out = a @ b`` of BLAS-ready matrices (``out`` new and C-ordered, no extent zero)."""
    n, k = a.shape
    p = b.shape[1]
    blas_call("gemm", ROW_MAJOR, trans(a), trans(b), n, p, k, 1.0, a, lead(a), b, lead(b), 0.0, out, p)


def gemv_into(a, x, out, dt):
    """``out = a @ x`` of a BLAS-ready matrix and vector (``out`` new, no extent zero)."""
    n, k = a.shape
    if trans(a) == NO_TRANS:
        blas_call("gemv", ROW_MAJOR, NO_TRANS, n, k, 1.0, a, lead(a), x, lead(x), 0.0, out, 1)
    else:  # the columns are contiguous: a is the transpose of a row-major (k, n) matrix
        blas_call("gemv", ROW_MAJOR, TRANS, k, n, 1.0, a, lead(a), x, lead(x), 0.0, out, 1)


def gevm_into(x, b, out, dt):
    """``out = x @ b`` (a vector times a matrix): ``b``'s transpose times ``x``."""
    k, p = b.shape
    if trans(b) == NO_TRANS:
        blas_call("gemv", ROW_MAJOR, TRANS, k, p, 1.0, b, lead(b), x, lead(x), 0.0, out, 1)
    else:
        blas_call("gemv", ROW_MAJOR, NO_TRANS, p, k, 1.0, b, lead(b), x, lead(x), 0.0, out, 1)


def _gemm(a, b, out, dt):
    if blas_ready(b, dt):
        gemm_into(a, b, out, dt)
    else:
        gemm_into(a, packed2(b, dt), out, dt)


def matmul22(a, b, dt):
    """``a @ b`` of two matrices (the inner extents checked by the caller)."""
    return product22(a, b, dt)


def product22(a, b, dt):
    """:func:`matmul22` through BLAS (differentiated code swaps the call for loops)."""
    n, k = a.shape
    p = b.shape[1]
    if k == 0 or n == 0 or p == 0:
        return zeroed_array((n, p), dt)
    out = new_array((n, p), dt)
    if blas_ready(a, dt):
        _gemm(a, b, out, dt)
    else:
        _gemm(packed2(a, dt), b, out, dt)
    return out


def _gemv(a, x, out, dt):
    if blas_ready(x, dt):
        gemv_into(a, x, out, dt)
    else:
        gemv_into(a, packed1(x, dt), out, dt)


def matmul21(a, x, dt):
    """A matrix times a vector."""
    return product21(a, x, dt)


def product21(a, x, dt):
    n, k = a.shape
    if k == 0 or n == 0:
        return zeroed_array((n,), dt)
    out = new_array((n,), dt)
    if blas_ready(a, dt):
        _gemv(a, x, out, dt)
    else:
        _gemv(packed2(a, dt), x, out, dt)
    return out


def _gevm(x, b, out, dt):
    if blas_ready(x, dt):
        gevm_into(x, b, out, dt)
    else:
        gevm_into(packed1(x, dt), b, out, dt)


def matmul12(x, b, dt):
    """A vector times a matrix."""
    return product12(x, b, dt)


def product12(x, b, dt):
    k, p = b.shape
    if k == 0 or p == 0:
        return zeroed_array((p,), dt)
    out = new_array((p,), dt)
    if blas_ready(b, dt):
        _gevm(x, b, out, dt)
    else:
        _gevm(x, packed2(b, dt), out, dt)
    return out


# -- the same products in loops (differentiated code: :data:`LOOPS`) ---------------------------------
def product22_loops_packed(a, b, dt):
    """:func:`.npaxes.matmul22` of ``b`` copied into C order (its rows are the inner loop's)."""
    return X.matmul22(a, packed2(b, dt), dt)


# -- norms (loops: the AD engine differentiates them) ------------------------------------------------
def squares(x, dt):
    """The sum of the squares of a BLAS-ready vector: BLAS's ``dot`` of it with itself (as NumPy's norm)."""
    n = x.shape[0]
    if n == 0:
        return dt(0.0)
    return blas_call("dot", n, x, lead(x), x, lead(x))


def squares_loops(x, dt):
    """:func:`squares` in a loop (differentiated code), of any vector or vector expression."""
    acc = dt(0.0)
    for i in range(x.shape[0]):
        v = dt(element(x, i))
        acc = dt(acc + v * v)
    return acc


def norm_fro1(x, dt):
    """The 2-norm of a vector (NumPy's default)."""
    if blas_ready(x, dt):
        return dt(math.sqrt(squares(x, dt)))
    return dt(math.sqrt(squares_loops(x, dt)))


def block_squares(x, dt):
    """The sum of the squares of a matrix that is one block of elements: BLAS's ``dot`` over the block."""
    n, m = x.shape
    if n * m == 0:
        return dt(0.0)
    return blas_call("dot", n * m, x, 1, x, 1)


def block_squares_loops(x, dt):
    """:func:`block_squares` in loops (differentiated code)."""
    acc = dt(0.0)
    n, m = x.shape
    for i in range(n):
        for j in range(m):
            v = dt(element(x, i, j))
            acc = dt(acc + v * v)
    return acc


def norm_fro2(x, dt):
    """The Frobenius norm of a matrix (NumPy's default): one BLAS ``dot`` over a contiguous matrix (BLAS's
    threads, as NumPy's), else the rows' sums of squares added."""
    if contiguous(x, dt):
        return dt(math.sqrt(block_squares(x, dt)))
    acc = dt(0.0)
    for i in range(x.shape[0]):
        row = x[i]
        if blas_ready(row, dt):
            acc = dt(acc + squares(row, dt))
        else:
            acc = dt(acc + squares_loops(row, dt))
    return dt(math.sqrt(acc))


def norm_fro2_loops(x, dt):
    """:func:`norm_fro2` of a matrix expression (no rows to hand to BLAS)."""
    return dt(math.sqrt(block_squares_loops(x, dt)))


def norm_p1(x, p, dt):
    """``sum(|x|**p) ** (1 / p)`` of a vector (``p`` 1: the sum of magnitudes)."""
    acc = dt(0.0)
    for i in range(x.shape[0]):
        v = dt(abs(element(x, i)))
        acc = dt(acc + (v if p == 1 else v ** p))
    return acc if p == 1 else dt(acc ** (1.0 / p))


def norm_zero1(x, dt):
    """The number of nonzero elements of a vector, as ``dt``."""
    acc = dt(0.0)
    for i in range(x.shape[0]):
        if element(x, i) != 0:
            acc = dt(acc + 1.0)
    return acc


def norm_max1(x, sign, dt):
    """The largest (``sign`` 1) or smallest (-1) magnitude of a non-empty vector."""
    best = dt(abs(element(x, 0)))
    for i in range(1, x.shape[0]):
        v = dt(abs(element(x, i)))
        if (v > best) if sign > 0 else (v < best):
            best = v
    return best


def norm_lines2(x, axis, sign, dt):
    """The largest (``sign`` 1) or smallest (-1) sum of magnitudes along ``axis`` of a matrix with
    lines to compare: columns (``axis`` 0, NumPy's ord=1) or rows (1, ord=inf)."""
    n, m = x.shape
    lines, length = (m, n) if axis == 0 else (n, m)
    best = dt(0.0)
    for q in range(lines):
        acc = dt(0.0)
        for r in range(length):
            acc = dt(acc + dt(abs(element(x, r, q) if axis == 0 else element(x, q, r))))
        if q == 0 or ((acc > best) if sign > 0 else (acc < best)):
            best = acc
    return best


#: the functions calling BLAS -> their loops (the products: :mod:`.npaxes`'), by whether the second
#: operand is C-ordered (as its type says) or not
LOOPS = {product22: (X.matmul22, product22_loops_packed), product21: (X.matmul21, X.matmul21),
         product12: (X.matmul12, X.matmul12), squares: (squares_loops, squares_loops),
         block_squares: (block_squares_loops, block_squares_loops)}


__all__ = ["LOOPS", "matmul22", "matmul21", "matmul12"]
