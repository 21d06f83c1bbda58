"""Gradients through the index expressions users write: periodic (``%``), clamped (``min``/``max``),
reversed, strided, gathered through an index array, and an ``if`` on the index, in reverse and forward
mode, from ``@jit`` at every optimisation level and inside kernels on the CPU grid emulation.

``y[i] = 2 * x[(i + 1) % n]`` with ``n = x.shape[0]`` gave an all-zero gradient everywhere: LLVM put a
``freeze`` on the array pointer, which the AD engine did not model. Each result is checked against the
Jacobian of the CPython-run function (exact: the functions are at most quadratic)."""

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import device as gd, jit
from gpucompiler.kernel import Kernel
from rounding import assert_sum_close

P = ("enzyme",)


def periodic(x, y, idx):
    n = x.shape[0]
    for i in range(n):
        y[i] = 2 * x[(i + 1) % n]


def clamped(x, y, idx):
    n = x.shape[0]
    for i in range(n):
        y[i] = 2 * x[min(i + 1, n - 1)] - x[max(i - 1, 0)]


def reversed_(x, y, idx):
    n = x.shape[0]
    for i in range(n):
        y[i] = x[n - 1 - i] * x[i]


def strided(x, y, idx):
    n = x.shape[0]
    for i in range(n // 2):
        y[i] = 3 * x[2 * i + 1] + x[2 * i]
    for i in range(n - 1, -1, -2):
        y[i] += x[i] * 0.5


def gathered(x, y, idx):
    for i in range(idx.shape[0]):
        y[i] = x[idx[i]] * x[idx[(i + 3) % idx.shape[0]]]


def index_branch(x, y, idx):
    n = x.shape[0]
    for i in range(n):
        if i % 3 == 0:
            y[i] = x[(i + 2) % n] * x[i]
        elif i < n - 1:
            y[i] = 2 * x[i + 1]
        else:
            y[i] = -x[0]


WRITERS = [periodic, clamped, reversed_, strided, gathered, index_branch]


def periodic_sum(x, idx, w):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += w[i] * 2 * x[(i + 1) % n]
    return s


def clamped_sum(x, idx, w):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += w[i] * (2 * x[min(i + 1, n - 1)] - x[max(i - 1, 0)])
    return s


def reversed_sum(x, idx, w):
    n = x.shape[0]
    s = 0.0
    for i in range(n - 1, -1, -1):
        s += w[i] * x[n - 1 - i] * x[i]
    return s


def strided_sum(x, idx, w):
    n = x.shape[0]
    s = 0.0
    for i in range(0, n, 2):
        s += w[i] * x[i] * x[(i + 1) % n]
    return s


def gathered_sum(x, idx, w):
    s = 0.0
    for i in range(idx.shape[0]):
        s += w[i] * x[idx[i]] * x[idx[(i + 3) % idx.shape[0]]]
    return s


def index_branch_sum(x, idx, w):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        if i % 3 == 0:
            s += w[i] * x[(i + 2) % n] * x[i]
        else:
            s += w[i] * 2 * x[min(i + 1, n - 1)]
    return s


READERS = [periodic_sum, clamped_sum, reversed_sum, strided_sum, gathered_sum, index_branch_sum]


def _wrappers(f, opt):
    """``@jit`` functions taking ``f``'s reverse and forward derivatives at ``opt_level=opt``."""

    def rev(x, dx, y, dy, idx):
        autodiff(Reverse, f, Duplicated(x, dx), Duplicated(y, dy), Const(idx))

    def fwd(x, tx, y, ty, idx):
        autodiff(Forward, f, Duplicated(x, tx), Duplicated(y, ty), Const(idx))

    return jit(rev, plugins=P, opt_level=opt), jit(fwd, plugins=P, opt_level=opt)


def _jacobian(f, x, idx):
    """d y / d x of the CPython-run ``f`` by central differences (exact for these quadratics)."""
    n = len(x)
    jac = np.zeros((n, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = 0.5
        yp, ym = np.zeros(n), np.zeros(n)
        f(x + e, yp, idx)
        f(x - e, ym, idx)
        jac[:, k] = yp - ym
    return jac


N = 11
RNG = np.random.default_rng(25)
X = RNG.uniform(-2, 2, N)
IDX = RNG.integers(0, N, N)
W = RNG.normal(size=N)
V = RNG.normal(size=N)


@pytest.mark.parametrize("f", WRITERS, ids=lambda f: f.__name__)
def test_reverse_and_forward_at_every_optimisation_level(f):
    jac = _jacobian(f, X, IDX)
    want_rev, want_fwd = W @ jac, jac @ V
    assert np.any(want_rev != 0)
    dx = np.zeros(N)
    autodiff(Reverse, f, Duplicated(X.copy(), dx), Duplicated(np.zeros(N), W.copy()), Const(IDX))
    np.testing.assert_allclose(dx, want_rev, rtol=1e-12, atol=1e-12, err_msg="autodiff from Python")
    for opt in range(4):
        rev, fwd = _wrappers(f, opt)
        dx, y = np.zeros(N), np.zeros(N)
        rev(X.copy(), dx, y, W.copy(), IDX)
        np.testing.assert_allclose(dx, want_rev, rtol=1e-12, atol=1e-12, err_msg=f"reverse, opt_level={opt}")
        ty = np.zeros(N)
        fwd(X.copy(), V.copy(), np.zeros(N), ty, IDX)
        np.testing.assert_allclose(ty, want_fwd, rtol=1e-12, atol=1e-12, err_msg=f"forward, opt_level={opt}")


def _grad_kernel(g):
    def grad(x, dx, idx, w):
        i = gd.grid(1)
        if i < 4:
            autodiff(Reverse, g, Duplicated(x, dx), Const(idx), Const(w))
    return grad


@pytest.mark.parametrize("g", READERS, ids=lambda g: g.__name__)
def test_kernels_at_every_optimisation_level(g):
    """Four threads each add the gradient into the shared ``dx`` (atomically): four times the gradient."""
    h = 1e-3
    want = np.array([(g(X + h * e, IDX, W) - g(X - h * e, IDX, W)) / (2 * h) for e in np.eye(N)])
    assert np.any(want != 0)
    dx = np.zeros(N)
    autodiff(Reverse, g, Duplicated(X.copy(), dx), Const(IDX), Const(W))
    np.testing.assert_allclose(dx, want, rtol=1e-9, atol=1e-9, err_msg="autodiff from Python")
    for opt in range(4):
        dx = np.zeros(N)
        Kernel(_grad_kernel(g), plugins=P, opt_level=opt)[1, 4, "cpu"](X.copy(), dx, IDX, W)
        np.testing.assert_allclose(dx, 4 * want, rtol=1e-9, atol=1e-9, err_msg=f"kernel, opt_level={opt}")


def _periodic_in_one_thread(x, dx, y, dy, idx):
    if gd.grid(1) == 0:
        autodiff(Reverse, periodic, Duplicated(x, dx), Duplicated(y, dy), Const(idx))


def _periodic_tangent_in_one_thread(x, tx, y, ty, idx):
    if gd.grid(1) == 0:
        autodiff(Forward, periodic, Duplicated(x, tx), Duplicated(y, ty), Const(idx))


def test_the_issue_example_in_a_kernel():
    """``y[i] = 2 * x[(i + 1) % n]`` differentiated inside a kernel (one thread: the others would race on y)."""
    for opt in range(4):
        dx, dy = np.zeros(N), W.copy()
        Kernel(_periodic_in_one_thread, plugins=P, opt_level=opt)[2, 4, "cpu"](X.copy(), dx, np.zeros(N), dy, IDX)
        np.testing.assert_allclose(dx, 2 * np.roll(W, 1), rtol=1e-15, err_msg=f"reverse, opt_level={opt}")
        ty = np.zeros(N)
        Kernel(_periodic_tangent_in_one_thread, plugins=P, opt_level=opt)[2, 4, "cpu"](X.copy(), V.copy(), np.zeros(N),
                                                                                     ty, IDX)
        np.testing.assert_allclose(ty, 2 * np.roll(V, -1), rtol=1e-15, err_msg=f"forward, opt_level={opt}")


def test_forward_mode_of_a_reduction_in_jit():
    @jit(plugins=P, opt_level=3)
    def tangent(x, tx, idx, w):
        return autodiff(Forward, periodic_sum, Duplicated(x, tx), Const(idx), Const(w))[0]

    assert_sum_close(tangent(X.copy(), V.copy(), IDX, W), 2 * np.roll(W, 1) * V)


def _scaled_periodic(s, x):
    n = x.shape[0]
    t = 0.0
    for i in range(n):
        t += s * x[(i + 1) % n]
    return t


def test_active_scalar_through_a_periodic_index():
    (ds,) = autodiff(Reverse, _scaled_periodic, Active(1.5), Const(X.copy()))
    assert_sum_close(ds, X)
