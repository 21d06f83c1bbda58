"""Kernels of benchmarks/idioms.py: the idioms Numba users write, one function each."""

from __future__ import annotations

import math

import numpy as np

from gpucompiler import prange


def sum_sq_pow(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] ** 2
    return s


def sum_sq_mul(a):
    s = 0.0
    for x in a:
        s += x * x
    return s


def sum_cubes(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] ** 3
    return s


def sum_reciprocal(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] ** -1
    return s


def int_squares(n):
    s = 0
    for i in range(n):
        s += i ** 2
    return s


def map_square(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ** 2.0


def array_sum_sq(a):
    return (a ** 2).sum()


def norm_rows(m, out):
    for i in range(m.shape[0]):
        s = 0.0
        for j in range(m.shape[1]):
            s += m[i, j] ** 2
        out[i] = math.sqrt(s)


def diff_slices(a):
    return (a[1:] - a[:-1]).sum()


def stencil(u):
    v = u.copy()
    v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return v


def masked_sum(a):
    return a[a > 0.5].sum()


def where_sum(a):
    return np.where(a > 0.5, a, 0.0).sum()


def prange_sum_sq(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i] ** 2
    return s


def prange_sum(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i]
    return s


def rel_diff(x, y):
    return abs(x - y) / (abs(x) + abs(y) + 1e-12)


def sort(a):
    return np.sort(a)


def argsort(a):
    return np.argsort(a)


def sort_stable(a):
    return np.sort(a, kind="stable")


def argsort_stable(a):
    return np.argsort(a, kind="mergesort")
