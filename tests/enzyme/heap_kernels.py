"""Kernels whose ``autodiff`` tape lives on the device heap, with NumPy references of their gradients.

Every thread walks its own variable-length list (CSR offsets ``offs``, entries ``cols``): a ``for`` with
a data-dependent ``while`` inside (a binary search in ``knots`` that records an active value per step, so
its tape array grows from a ``malloc``'d block, one per list entry) and gathers after it. The tape of a
thread is a nest array sized by its list's length plus one growing array per entry: the heap must be
given back after every launch.
"""

from __future__ import annotations

import math

import numpy as np

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd


def search_loss(x, vals, knots, offs, cols, i):
    s = 0.0
    for j in range(offs[i], offs[i + 1]):
        v = x[cols[j]]
        lo = 0
        hi = knots.shape[0] - 1
        acc = 0.0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            acc = acc * 0.5 + vals[mid] * v
            if knots[mid] <= v:
                lo = mid
            else:
                hi = mid
        s += acc * x[i] + vals[lo] * v
    return s


def k_search_grad(x, dx, vals, dvals, knots, offs, cols):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, search_loss, Duplicated(x, dx), Duplicated(vals, dvals), Const(knots), Const(offs),
                 Const(cols), Const(i))


def spin_loss(x, offs, cols, i):
    """A ``while`` of data-dependent length per entry (about 2^18 steps for x near 0): tape enough to
    exhaust a small heap; an early ``break`` leaves the list."""
    s = 0.0
    for j in range(offs[i], offs[i + 1]):
        v = x[cols[j]]
        while v < 1.0e5:
            v = v + 0.25 + 0.1 * math.sin(v)
        if v > 2.0e5:
            break
        s += v * x[i]
    return s


def k_spin_grad(x, dx, offs, cols):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, spin_loss, Duplicated(x, dx), Const(offs), Const(cols), Const(i))


def two_level_loss(x, offs, cols, i):
    """The list of each entry of the thread's list: two nested loops of data-dependent trip counts."""
    s = 0.0
    for j in range(offs[i], offs[i + 1]):
        c = cols[j]
        for k in range(offs[c], offs[c + 1]):
            v = x[cols[k]]
            s += v * x[c] * 0.5 + math.sin(v)
    return s


def k_two_level_grad(x, dx, offs, cols):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, two_level_loss, Duplicated(x, dx), Const(offs), Const(cols), Const(i))


def while_then_loop_loss(x, offs, cols, i):
    """A ``while`` whose count sets the trip count of the ``for`` after it, per list entry."""
    s = 0.0
    for j in range(offs[i], offs[i + 1]):
        v = x[cols[j]]
        t = 0
        while v < 3.0 and t < 50:
            v = v * 1.3 + 0.1
            t += 1
        for k in range(0, t % 4):
            s += v * x[(cols[j] + k) % x.shape[0]]
    return s


def k_while_then_loop_grad(x, dx, offs, cols):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, while_then_loop_loss, Duplicated(x, dx), Const(offs), Const(cols), Const(i))


def problem(n: int, seed: int = 0, maxlen: int = 6, nk: int = 65):
    """``(x, vals, knots, offs, cols)``: ``n`` threads, lists of 0..maxlen entries, ``nk`` sorted knots."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.02, 0.98, n)
    knots = np.sort(np.concatenate([[0.0, 1.0], rng.uniform(0.0, 1.0, nk - 2)]))
    vals = rng.uniform(-1.0, 1.0, nk)
    lens = rng.integers(0, maxlen + 1, n)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    cols = rng.integers(0, n, int(offs[-1])).astype(np.int64)
    return x, vals, knots, offs, cols


def search_reference(x, vals, knots, offs, cols):
    """``(dx, dvals)`` of ``sum_i search_loss(x, vals, knots, offs, cols, i)``, by NumPy: every list entry's
    binary search run in lock step, each step's weight ``0.5 ** (steps after it)``."""
    rows = np.repeat(np.arange(x.shape[0]), np.diff(offs))
    v, xi = x[cols], x[rows]
    lo, hi = np.zeros(v.shape, np.int64), np.full(v.shape, knots.shape[0] - 1)
    mids, alive = [], []
    while np.any(hi - lo > 1):
        on = hi - lo > 1
        mid = (lo + hi) // 2
        mids.append(mid)
        alive.append(on)
        right = on & (knots[mid] <= v)
        lo = np.where(right, mid, lo)
        hi = np.where(on & ~right, mid, hi)
    weight = np.zeros(v.shape)
    dx, dvals = np.zeros_like(x), np.zeros_like(vals)
    acc = np.zeros(v.shape)
    for mid, on in zip(reversed(mids), reversed(alive)):  # the last step has weight 1
        w = np.where(on, np.where(weight == 0.0, 1.0, weight * 0.5), weight)
        weight = np.where(on, w, weight)
        acc += np.where(on, w * vals[mid], 0.0)
        np.add.at(dvals, mid[on], (w * xi * v)[on])
    np.add.at(dx, rows, acc * v)
    np.add.at(dx, cols, xi * acc + vals[lo])
    np.add.at(dvals, lo, v)
    return dx, dvals


__all__ = ["k_search_grad", "k_spin_grad", "k_two_level_grad", "k_while_then_loop_grad", "problem", "search_loss",
           "search_reference", "spin_loss", "two_level_loss", "while_then_loop_loss"]
