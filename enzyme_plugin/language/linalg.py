"""Linear algebra in differentiated code: loops for the matrix products, rules for solve, inv and det.

``a @ b`` and ``np.dot`` of float matrices call the host's BLAS
(:mod:`gpucompiler.language.numpy.linalg.linalgimpl`), whose calls the AD engine has
no rule for. Inside a differentiated function (the nested jobs of ``autodiff``)
the product runs the same loops as before BLAS instead, which the engine
differentiates whatever the activity of each operand (a constant matrix times an
active one included).

``np.linalg.solve``, ``inv``, ``det`` and ``slogdet`` go through one function each
(:data:`gpucompiler.language.numpy.linalg.lapackimpl.DIFFERENTIABLE`), given forward
and reverse rules here (``custom_rule``): ``dx = a^-1 (db - da x)``, ``dx = -x da x``,
``d det = det * trace(a^-1 da)``, ``d log|det| = trace(a^-1 da)`` and their adjoints. The other functions of
``np.linalg`` that call LAPACK have no rule: differentiating through them is the
engine's ADError naming the LAPACK call.
"""

from __future__ import annotations

import math
import types as pytypes

from gpucompiler import types as T
from gpucompiler.interpreter import widen
from gpucompiler.language.numpy.linalg.blas import NO_TRANS, ROW_MAJOR, TRANS, blas_call, new_like
from gpucompiler.language.numpy.linalg.lapackimpl import copy2, det_of, inv_into, slogdet_into, solve_into1, solve_into2
from gpucompiler.language.numpy.linalg.linalgimpl import LOOPS

from .sets import nested_rules
from .custom import custom_rule


@nested_rules.handler
def _products_in_loops(interp, fn, args):
    loops = LOOPS.get(fn) if isinstance(fn, pytypes.FunctionType) else None
    if loops is None:
        return None
    b = widen(args[1])
    c_ordered = isinstance(b, T.ArrayType) and b.layout == "C"
    return interp.invoke(loops[0] if c_ordered else loops[1], args)


# -- solve, inv, det: derivative rules of the LAPACK calls ---------------------------------------------
# Each rule gets the user's operands (any layout) with their shadows, and the result made for the call
# (new, C-ordered) with its shadow; it recomputes the primal results it needs from the operands. The
# functions return LAPACK's info as a float, whose derivative is zero.
def _gemm(ta, tb, m, n, k, alpha, a, b, beta, c):
    """``c = alpha * op(a) @ op(b) + beta * c`` of C-ordered matrices (``op``: ``ta``/``tb``)."""
    if m > 0 and n > 0 and k > 0:
        blas_call("gemm", ROW_MAJOR, ta, tb, m, n, k, alpha, a, a.shape[1] if a.shape[1] > 1 else 1,
                  b, b.shape[1] if b.shape[1] > 1 else 1, beta, c, n if n > 1 else 1)


def _copied(a, like):
    """``a`` (a matrix of any layout) in a new C-ordered array of ``like``'s dtype."""
    n, m = a.shape
    t = new_like(like, (n, m))
    copy2(a, t)
    return t


def _transposed(a, like):
    n = a.shape[0]
    t = new_like(like, (n, n))
    for i in range(n):
        for j in range(n):
            t[i, j] = a[j, i]
    return t


def _solve2_forward(a, da, b, db, x, dx):
    """``dx = a^-1 (db - da x)``."""
    n, k = x.shape
    solve_into2(a, b, x)
    r = _copied(db, x)
    _gemm(NO_TRANS, NO_TRANS, n, k, n, -1.0, _copied(da, x), x, 1.0, r)
    solve_into2(a, r, dx)
    return 0.0


def _solve2_reverse(a, da, b, db, x, dx, dret):
    """``g = a^-T dx``: ``db += g``, ``da -= g x^T``; ``dx`` consumed."""
    n, k = x.shape
    xr = new_like(x, (n, k))
    solve_into2(a, b, xr)
    g = new_like(x, (n, k))
    solve_into2(_transposed(a, x), dx, g)
    t = new_like(x, (n, n))
    _gemm(NO_TRANS, TRANS, n, n, k, 1.0, g, xr, 0.0, t)
    for i in range(n):
        for j in range(k):
            db[i, j] += g[i, j]
            dx[i, j] = 0.0
        for j in range(n):
            da[i, j] -= t[i, j]
    return ()


def _solve1_forward(a, da, b, db, x, dx):
    n = x.shape[0]
    solve_into1(a, b, x)
    r = new_like(x, (n,))
    for i in range(n):
        acc = db[i]
        for j in range(n):
            acc -= da[i, j] * x[j]
        r[i] = acc
    solve_into1(a, r, dx)
    return 0.0


def _solve1_reverse(a, da, b, db, x, dx, dret):
    n = x.shape[0]
    xr = new_like(x, (n,))
    solve_into1(a, b, xr)
    g = new_like(x, (n,))
    solve_into1(_transposed(a, x), dx, g)
    for i in range(n):
        db[i] += g[i]
        dx[i] = 0.0
        for j in range(n):
            da[i, j] -= g[i] * xr[j]
    return ()


def _inv_forward(a, da, x, dx):
    """``dx = -x da x``."""
    n = x.shape[0]
    inv_into(a, x)
    t = new_like(x, (n, n))
    _gemm(NO_TRANS, NO_TRANS, n, n, n, 1.0, _copied(da, x), x, 0.0, t)
    _gemm(NO_TRANS, NO_TRANS, n, n, n, -1.0, x, t, 0.0, dx)
    return 0.0


def _inv_reverse(a, da, x, dx, dret):
    """``da -= x^T dx x^T``; ``dx`` consumed."""
    n = x.shape[0]
    xr = new_like(x, (n, n))
    inv_into(a, xr)
    t = new_like(x, (n, n))
    _gemm(TRANS, NO_TRANS, n, n, n, 1.0, xr, dx, 0.0, t)
    u = new_like(x, (n, n))
    _gemm(NO_TRANS, TRANS, n, n, n, 1.0, t, xr, 0.0, u)
    for i in range(n):
        for j in range(n):
            da[i, j] -= u[i, j]
            dx[i, j] = 0.0
    return ()


def _det_forward(a, da):
    """``det(a) * trace(a^-1 da)``; NaN where ``a`` is singular (LAPACK cannot solve with it)."""
    n = a.shape[0]
    t = new_like(a, (n, n))
    if solve_into2(a, da, t) != 0.0:
        return math.nan
    trace = 0.0
    for i in range(n):
        trace += t[i, i]
    return det_of(a) * trace


def _det_reverse(a, da, dret):
    """``da += dret * det(a) * a^-T``; NaN where ``a`` is singular."""
    n = a.shape[0]
    xr = new_like(a, (n, n))
    singular = inv_into(a, xr) != 0.0
    scale = dret * det_of(a)
    for i in range(n):
        for j in range(n):
            da[i, j] += math.nan if singular else scale * xr[j, i]
    return ()


def _slogdet_forward(a, da, out, dout):
    """``d log|det| = trace(a^-1 da)`` (the sign has none); NaN where ``a`` is singular."""
    slogdet_into(a, out)
    n = a.shape[0]
    t = new_like(a, (n, n))
    singular = solve_into2(a, da, t) != 0.0
    trace = 0.0
    for i in range(n):
        trace += t[i, i]
    dout[0] = 0.0
    dout[1] = math.nan if singular else trace
    return 0.0


def _slogdet_reverse(a, da, out, dout, dret):
    """``da += dout[1] * a^-T``; ``dout`` consumed."""
    n = a.shape[0]
    xr = new_like(a, (n, n))
    singular = inv_into(a, xr) != 0.0
    for i in range(n):
        for j in range(n):
            da[i, j] += math.nan if singular else dout[1] * xr[j, i]
    dout[0] = 0.0
    dout[1] = 0.0
    return ()


custom_rule(solve_into2, forward=_solve2_forward, reverse=_solve2_reverse)
custom_rule(solve_into1, forward=_solve1_forward, reverse=_solve1_reverse)
custom_rule(inv_into, forward=_inv_forward, reverse=_inv_reverse)
custom_rule(det_of, forward=_det_forward, reverse=_det_reverse)
custom_rule(slogdet_into, forward=_slogdet_forward, reverse=_slogdet_reverse)
