"""Loops LLVM's vectorizers turn into gathers and scatters (indexing through an index array, strided
access) when no bounds check stands in the way: the pipeline before AD runs no vectorizer (the one after
AD vectorizes the derivative), so the engine sees scalar loops and the gradients are right. They were zero: the lanes of addresses (``<8 x ptr>``) carried no shadow, so
``llvm.masked.gather`` looked constant."""

from __future__ import annotations

import math

import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit, kernel
from gpucompiler import device as gd

P = ("enzyme",)


def gathered_sum(x, idx, w, n):
    s = 0.0
    for i in range(n):
        s += w[i] * math.sin(x[idx[i]])
    return s


def strided_squares(x, n):
    s = 0.0
    for i in range(n):
        s += x[2 * i] * x[2 * i]
    return s


def gathered_rows(x, idx, y, n):
    for i in range(n):
        y[i] = x[idx[i]] * x[3 * i + 1]
    return 0.0


def scattered(x, y, idx, n):
    for i in range(n):
        y[idx[i]] += math.exp(x[i])
    return 0.0


@jit(boundscheck=False, plugins=P)
def grad_gathered_sum(x, dx, idx, w, n):
    autodiff(Reverse, gathered_sum, Duplicated(x, dx), Const(idx), Const(w), Const(n))


@jit(boundscheck=False, plugins=P)
def tangent_gathered_sum(x, vx, idx, w, n):
    return autodiff(Forward, gathered_sum, Duplicated(x, vx), Const(idx), Const(w), Const(n))[0]


@jit(boundscheck=False, plugins=P)
def grad_strided_squares(x, dx, n):
    autodiff(Reverse, strided_squares, Duplicated(x, dx), Const(n))


@jit(boundscheck=False, plugins=P)
def grad_gathered_rows(x, dx, idx, y, dy, n):
    autodiff(Reverse, gathered_rows, Duplicated(x, dx), Const(idx), Duplicated(y, dy), Const(n))


@jit(boundscheck=False, plugins=P)
def grad_scattered(x, dx, y, dy, idx, n):
    autodiff(Reverse, scattered, Duplicated(x, dx), Duplicated(y, dy), Const(idx), Const(n))


def _fd(f, x, v, h=1e-6):
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


N = 100
RNG = np.random.default_rng(5)
X = RNG.uniform(-1.0, 1.0, 3 * N + 1)
IDX = RNG.integers(0, N, N)  # repeats: one x feeds several terms
W = RNG.uniform(-1.0, 1.0, N)


def test_a_gather_through_an_index_array_reverse_and_forward():
    dx = np.zeros_like(X)
    grad_gathered_sum(X, dx, IDX, W, N)
    want = np.zeros_like(X)
    np.add.at(want, IDX, W * np.cos(X[IDX]))  # exact
    np.testing.assert_allclose(dx, want, rtol=1e-13, atol=1e-15)
    v = RNG.normal(size=X.size)
    t = tangent_gathered_sum(X, v, IDX, W, N)
    assert t == pytest.approx(float(want @ v), rel=1e-12)
    assert t == pytest.approx(_fd(lambda z: gathered_sum(z, IDX, W, N), X, v), rel=1e-7)


def test_a_strided_reduction():
    dx = np.zeros_like(X)
    grad_strided_squares(X, dx, N)
    want = np.zeros_like(X)
    want[0:2 * N:2] = 2 * X[0:2 * N:2]
    np.testing.assert_allclose(dx, want, rtol=1e-15)


def test_gathered_and_strided_reads_into_an_output_array():
    dx, y, dy = np.zeros_like(X), np.zeros(N), RNG.normal(size=N)  # dy: the cotangent of y
    grad_gathered_rows(X, dx, IDX, y, dy.copy(), N)
    np.testing.assert_allclose(y, X[IDX] * X[1:3 * N:3], rtol=1e-15)

    def loss(z):
        out = np.zeros(N)
        gathered_rows(z, IDX, out, N)
        return float(out @ dy)

    v = RNG.normal(size=X.size)
    assert float(dx @ v) == pytest.approx(_fd(loss, X, v), rel=1e-7)


def test_a_scatter_add_through_an_index_array():
    dx, y, dy = np.zeros(N), np.zeros(N), RNG.normal(size=N)
    grad_scattered(X[:N].copy(), dx, y, dy.copy(), IDX, N)
    np.testing.assert_allclose(dx, dy[IDX] * np.exp(X[:N]), rtol=1e-13)  # exact: y[idx[i]] gets exp(x[i])


def gather_kernel(x, dx, idx, w, n):
    if gd.grid(1) == 0:
        autodiff(Reverse, gathered_sum, Duplicated(x, dx), Const(idx), Const(w), Const(n))


def test_a_gather_in_a_kernel_on_the_cpu_grid():
    dx = np.zeros_like(X)
    kernel(gather_kernel, plugins=P, boundscheck=False)[1, 4, "cpu"](X, dx, IDX, W, N)
    want = np.zeros_like(X)
    np.add.at(want, IDX, W * np.cos(X[IDX]))
    np.testing.assert_allclose(dx, want, rtol=1e-13, atol=1e-15)
