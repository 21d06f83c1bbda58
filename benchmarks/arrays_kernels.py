"""Kernels of benchmarks/arrays.py: arrays made, viewed and returned inside compiled code."""

from __future__ import annotations

import numpy as np


def small_new(n):
    return np.zeros(n)


def small_tuple(n):
    a = np.zeros(n)
    return a, np.ones((n, 2), np.int32), n


def rows_of_new(n):
    a = np.ones((n, 2))
    s = 0.0
    for i in range(a.shape[0]):
        r = a[i]
        s += r[0] + r[1]
    return s


def stencil(u, steps):
    out = u.copy()
    for _ in range(steps):
        inner = out[1:-1, 1:-1]
        up, down, left, right = u[:-2, 1:-1], u[2:, 1:-1], u[1:-1, :-2], u[1:-1, 2:]
        for i in range(inner.shape[0]):
            for j in range(inner.shape[1]):
                inner[i, j] = 0.25 * (up[i, j] + down[i, j] + left[i, j] + right[i, j])
        u = out.copy()
    return u


def reversed_copy(a):
    return a[::-1].copy()


def stencil_numpy(u, steps):
    out = u.copy()
    for _ in range(steps):
        out[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        u = out.copy()
    return u
