"""Kernels of benchmarks/frontend.py (plain Python, compiled by each engine; NumPy runs the array ones as written)."""

import math

import numpy as np

def loop20(n, x):
    s = 0.0
    t = 1
    for i in range(n):
        if i % 3 == 0:
            s += x * i
        elif i % 3 == 1:
            s -= x / (i + 1)
        else:
            t = (t * 7 + i) % 1000
        j = 0
        while j < 3:
            s += j * 0.5
            j += 1
        if s > 1e6:
            s = s / 2
        if t > 500:
            s += 1
    return s + t


def add(a, b):
    return a + b


def stencil(a, out):
    for i in range(1, a.shape[0] - 1):
        for j in range(1, a.shape[1] - 1):
            out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
    return 0


def primes(n):
    count = 0
    for k in range(2, n):
        d = 2
        p = True
        while d * d <= k:
            if k % d == 0:
                p = False
                break
            d += 1
        if p:
            count += 1
    return count


def fused(out, a, b, c):
    out[:] = a * b + np.sin(c)
    return 0


def fused_arith(out, a, b, c):
    out[:] = a * b + 2.0 * c - a / (1.0 + c)
    return 0


def reduce_expr(a, b):
    return np.sum(np.sqrt(a * a + b * b)) + np.sum(a * b) + a.max()


def stencil_slices(u, out):
    out[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return 0


def prange_kernels(prange):
    """``sum_sqrt_sin`` written with the engine's ``prange`` (``range`` for the serial loop)."""
    def sum_sqrt_sin(a):
        s = 0.0
        for i in prange(a.shape[0]):
            s += math.sqrt(a[i]) * math.sin(a[i])
        return s
    return sum_sqrt_sin


def sum_sqrt_sin_numpy(a):
    return np.sum(np.sqrt(a) * np.sin(a))
