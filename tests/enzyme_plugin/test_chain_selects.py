"""A value carried through a loop by a select (``m = max(m, x[i])``, a running minimum, an argmax): the
reverse sweep needs only the last iteration whose select took the element, which the forward sweep keeps in
one integer per execution of the loop (no tape per iteration, no malloc), and a loop that holds nothing
else visits only that iteration and the first in its reverse. Gradients against the subgradient the primal's
own comparisons choose (CPython replays them: ties go to the first maximum, NaN compares false), in combined
and split mode, in a nest, with the element transformed, for the CPU grid emulation and PTX (ptxas)."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, ReverseSplit, autodiff, autodiff_thunk
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler import types as T

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
A2 = T.ArrayType(T.float64, 2, "C")


def running_max(x):
    m = x[0]
    for i in range(1, x.shape[0]):
        m = max(m, x[i])
    return m * 1.5


def running_min(x):
    m = x[0]
    for i in range(1, x.shape[0]):
        if x[i] < m:
            m = x[i]
    return m * m


def max_and_argmax(x, w):
    m, j = x[0], 0
    for i in range(1, x.shape[0]):
        if x[i] > m:
            m, j = x[i], i
    return m * w + x[j] * 0.25


def max_of_negated(x):
    m = -x[0]
    for i in range(1, x.shape[0]):
        m = max(m, -x[i] + 0.5)
    return m


def max_of_scaled(x):
    m = 0.0
    for i in range(x.shape[0]):
        m = max(m, x[i] * x[i] * 0.5)
    return m


def row_max_sum(a, w):
    s = 0.0
    for r in range(a.shape[0]):
        m = a[r, 0]
        for c in range(1, a.shape[1]):
            m = max(m, a[r, c])
        s += m * w[r]
    return s


def online_logsumexp(x):
    """Not a chain: the running maximum is also used by the sum in each iteration."""
    m = x[0]
    s = 1.0
    for i in range(1, x.shape[0]):
        if x[i] > m:
            s = s * math.exp(m - x[i]) + 1.0
            m = x[i]
        else:
            s += math.exp(x[i] - m)
    return m + math.log(s)


def _first_argmax(x, greater=lambda a, b: a > b):
    j = 0
    for i in range(1, len(x)):
        if greater(x[i], x[j]):
            j = i
    return j


def _one_hot(n, j, v):
    g = np.zeros(n)
    g[j] = v
    return g


def _inputs():
    rng = np.random.default_rng(11)
    yield np.array([0.7])
    yield np.array([2.0, 2.0])  # a tie: the first
    yield np.array([-0.0, 0.0, -0.0])  # equal zeros: the first
    yield np.array([1.0, 3.0, 3.0, -1.0, 3.0])
    yield np.array([math.nan, 1.0, 5.0])  # a NaN first is never replaced
    yield np.array([1.0, math.nan, 5.0, 2.0])  # a NaN later is never taken
    yield np.array([-math.inf, -1e308, -math.inf])
    yield np.full(9, 4.25)
    yield np.arange(40.0)  # every iteration takes the element
    yield np.arange(40.0)[::-1].copy()  # none does
    for n in (3, 17, 1000):
        yield rng.standard_normal(n)
    yield np.round(rng.standard_normal(500) * 3)  # many ties


def _grad(f, *arrays):
    grads = [np.zeros_like(a) for a in arrays]
    autodiff(Reverse, f, *(Duplicated(a.copy(), g) for a, g in zip(arrays, grads)))
    return grads


@pytest.mark.parametrize("k", range(14))
def test_running_max_and_min(k):
    x = list(_inputs())[k]
    n = len(x)
    (g,) = _grad(running_max, x)
    np.testing.assert_array_equal(g, _one_hot(n, _first_argmax(x), 1.5))
    (g,) = _grad(running_min, x)
    j = _first_argmax(x, lambda a, b: a < b)
    np.testing.assert_array_equal(g, _one_hot(n, j, 2.0 * x[j]))


@pytest.mark.parametrize("k", range(14))
def test_argmax_transformed_and_scaled_elements(k):
    x = list(_inputs())[k]
    n = len(x)
    gx = np.zeros(n)
    (dw,) = autodiff(Reverse, max_and_argmax, Duplicated(x.copy(), gx), Active(0.75))
    j = _first_argmax(x)
    np.testing.assert_array_equal(gx, _one_hot(n, j, 0.75 + 0.25))
    assert dw == x[j] or (math.isnan(dw) and math.isnan(x[j]))
    (g,) = _grad(max_of_negated, x)
    vals = np.concatenate([[-x[0]], -x[1:] + 0.5])
    np.testing.assert_array_equal(g, _one_hot(n, _first_argmax(vals), -1.0))
    if not np.all(np.isfinite(x)):
        return  # (the adjoint 0 of an element not taken times an infinite or NaN element is NaN)
    (g,) = _grad(max_of_scaled, x)
    vals = np.concatenate([[0.0], x * x * 0.5])
    j = _first_argmax(vals)
    np.testing.assert_array_equal(g, np.zeros(n) if j == 0 else _one_hot(n, j - 1, x[j - 1]))


@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (4, 7), (16, 33)])
def test_row_maxima_in_a_nest(shape):
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    a = np.round(rng.standard_normal(shape) * 2)  # ties within rows
    w = rng.standard_normal(shape[0])
    ga, gw = _grad(row_max_sum, a, w)
    ref_a = np.zeros(shape)
    for r in range(shape[0]):
        ref_a[r, _first_argmax(a[r])] = w[r]
    np.testing.assert_array_equal(ga, ref_a)
    np.testing.assert_array_equal(gw, a.max(axis=1))


@pytest.mark.parametrize("n", [1, 2, 9, 300])
def test_a_maximum_used_inside_its_loop_is_not_a_chain(n):
    x = np.random.default_rng(n).standard_normal(n) * 4
    (g,) = _grad(online_logsumexp, x)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(g, e / e.sum(), rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("n", [1, 5, 64])
def test_split_mode(n):
    x = np.round(np.random.default_rng(n).standard_normal(n) * 2)
    fwd, rev = autodiff_thunk(ReverseSplit, running_max, Duplicated)
    g = np.zeros(n)
    tape, y = fwd(Duplicated(x, g))
    assert y == running_max(x)
    rev(Duplicated(x, g), 1.0, tape)
    np.testing.assert_array_equal(g, _one_hot(n, _first_argmax(x), 1.5))


@jit(plugins=P)
def _running_max_grad(x, dx):
    autodiff(Reverse, running_max, Duplicated(x, dx))


def test_no_tape_per_iteration():
    """The loop's reverse reads neither the elements nor the running maximum back: no array is allocated
    (before: 16 bytes per iteration, malloc'd before the loop)."""
    text = _running_max_grad.inspect_llvm(A, A)
    assert not re.search(r"call [^\n]*@(malloc|realloc)\(", text), text


def _row_max(x, i):
    m = x[i, 0]
    for c in range(1, x.shape[1]):
        m = max(m, x[i, c])
    return m * m


def _row_max_kernel(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, _row_max, Duplicated(x, dx), Const(i))


def _row_max_reference(x):
    g = np.zeros_like(x)
    for r in range(x.shape[0]):
        j = _first_argmax(x[r])
        g[r, j] = 2.0 * x[r, j]
    return g


def test_kernel_in_the_grid_emulation():
    x = np.round(np.random.default_rng(5).standard_normal((70, 13)) * 2)
    dx = np.zeros_like(x)
    k: Any = kernel(_row_max_kernel, plugins=P)
    k[3, 32, "cpu"](x, dx)
    np.testing.assert_array_equal(dx, _row_max_reference(x))


def test_kernel_ptx_passes_ptxas(check_ptx):
    check_ptx(kernel(_row_max_kernel, plugins=P).inspect_asm(A2, A2))


def max_squared(x):
    m = x[0]
    for i in range(1, x.shape[0]):
        m = max(m, x[i])
    return m * m


def grad_max_squared(x, dx):
    autodiff(Reverse, max_squared, Duplicated(x, dx))


@pytest.mark.parametrize("n", [1, 4, 33])
def test_hessian_vector_products_through_a_chain(n):
    """Forward over reverse and reverse over reverse: the inner derivative's kept iteration is an integer
    the outer level sees as inactive; H = 2 e_j e_j^T at the first maximum j."""
    x = np.round(np.random.default_rng(n).standard_normal(n) * 2)
    v = np.random.default_rng(n + 1).standard_normal(n)
    j = _first_argmax(x)
    dx, hv = np.zeros(n), np.zeros(n)
    autodiff(Forward, grad_max_squared, Duplicated(x.copy(), v.copy()), Duplicated(dx, hv))
    np.testing.assert_array_equal(dx, _one_hot(n, j, 2.0 * x[j]))
    np.testing.assert_array_equal(hv, _one_hot(n, j, 2.0 * v[j]))
    hv2 = np.zeros(n)
    autodiff(Reverse, grad_max_squared, Duplicated(x.copy(), hv2), Duplicated(np.zeros(n), v.copy()))
    np.testing.assert_array_equal(hv2, _one_hot(n, j, 2.0 * v[j]))


def pick_by_rank(x, rank):
    """The carried value is chosen by an integer comparison."""
    m = x[0]
    best = rank[0]
    for i in range(1, x.shape[0]):
        if rank[i] > best:
            best = rank[i]
            m = x[i]
    return m * 3.0


def replace_above(x, c, t):
    """The other arm is a value from before the loop: ``c`` gets the adjoint if any element exceeds t."""
    m = x[0]
    for i in range(1, x.shape[0]):
        m = c if x[i] > t else m
    return m * m


def max_until_large(x):
    """A break leaves the loop with the running maximum from the middle of an iteration."""
    m = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > 100.0:
            break
        m = max(m, x[i])
    return m * 2.0


@pytest.mark.parametrize("n", [1, 2, 6, 50])
def test_integer_decided_invariant_arm_and_early_exit(n):
    rng = np.random.default_rng(n)
    x = np.round(rng.standard_normal(n) * 2)
    rank = rng.integers(0, 5, n)
    g = np.zeros(n)
    autodiff(Reverse, pick_by_rank, Duplicated(x.copy(), g), Const(rank))
    np.testing.assert_array_equal(g, _one_hot(n, _first_argmax(rank), 3.0))
    for t in (-10.0, 0.5, 10.0):
        g = np.zeros(n)
        (dc,) = autodiff(Reverse, replace_above, Duplicated(x.copy(), g), Active(1.25), Const(t))
        took = any(x[1:] > t)
        assert dc == (2.5 if took else 0.0)
        np.testing.assert_array_equal(g, np.zeros(n) if took else _one_hot(n, 0, 2.0 * x[0]))
    y = x.copy()
    if n > 3:
        y[n // 2] = 500.0  # the loop stops there
    g = np.zeros(n)
    autodiff(Reverse, max_until_large, Duplicated(y.copy(), g))
    stop = next((i for i in range(1, n) if y[i] > 100.0), n)
    np.testing.assert_array_equal(g, _one_hot(n, _first_argmax(y[:stop]), 2.0))
