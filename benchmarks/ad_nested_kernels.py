"""Kernels with nested data-dependent loops for benchmarks/ad_gpu.py: a cross-section lookup in the style of
XSBench and a neighbour-list force loop, each a primal kernel and a gradient kernel calling ``autodiff``.

Cross-section lookup: lookup ``i`` has an energy ``e[i]`` and a material ``mat[i]``; the material lists its
nuclides (CSR: ``moffs``, ``mnuc``, concentrations ``conc``), from 2 to 8 of them; per nuclide a binary search
in the nuclide's row of ``grid`` (``NGRID`` points, the row of nuclide ``u`` holds ``u + g`` for sorted ``g`` in
[0, 1], so the whole array is sorted and a search key is ``u + e``), then the interpolation of ``xs`` between
the two points around it, weighted by the concentration. Differentiated with respect to ``xs`` (the
concentrations, shared by every lookup of a material, stay constant: their adjoints would be atomics of
all threads into a few dozen addresses).

Neighbour list: particle ``i`` sums a soft pair energy over its neighbours (CSR: ``noffs``, ``nbr``, 4 to 16
of them) in 3-D; differentiated with respect to the positions.
"""

from __future__ import annotations

import math

import numpy as np

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd

NGRID = 2048
"""Points of each nuclide's energy grid."""
NUCLIDES = 64
MATERIALS = 12
MAX_NUC = 8
MAX_NBR = 16


def xs_macro(xs, conc, grid, moffs, mnuc, mat, e, i):
    m = mat[i]
    s = 0.0
    for j in range(moffs[m], moffs[m + 1]):
        u = mnuc[j]
        key = u + e[i]
        lo = u * NGRID
        hi = lo + NGRID - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if grid[mid] <= key:
                lo = mid
            else:
                hi = mid
        f = (key - grid[lo]) / (grid[lo + 1] - grid[lo])
        s += conc[j] * (xs[lo] + f * (xs[lo + 1] - xs[lo]))
    return s


def xs_primal(xs, conc, grid, moffs, mnuc, mat, e, out):
    i = gd.grid(1)
    if i < e.shape[0]:
        out[i] = xs_macro(xs, conc, grid, moffs, mnuc, mat, e, i)


def xs_grad(xs, dxs, conc, grid, moffs, mnuc, mat, e):
    i = gd.grid(1)
    if i < e.shape[0]:
        autodiff(Reverse, xs_macro, Duplicated(xs, dxs), Const(conc), Const(grid), Const(moffs),
                 Const(mnuc), Const(mat), Const(e), Const(i))


def pair_energy(px, py, pz, noffs, nbr, i):
    s = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        j = nbr[k]
        dx = px[i] - px[j]
        dy = py[i] - py[j]
        dz = pz[i] - pz[j]
        r2 = dx * dx + dy * dy + dz * dz
        s += math.exp(-r2) / (r2 + 0.1)
    return s


def nbr_primal(px, py, pz, noffs, nbr, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = pair_energy(px, py, pz, noffs, nbr, i)


def nbr_grad(px, dpx, py, dpy, pz, dpz, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, pair_energy, Duplicated(px, dpx), Duplicated(py, dpy), Duplicated(pz, dpz), Const(noffs),
                 Const(nbr), Const(i))


def xs_problem(n: int, rng):
    """``(xs, conc, grid, moffs, mnuc, mat, e)`` for ``n`` lookups."""
    g = np.sort(rng.uniform(0.0, 1.0, (NUCLIDES, NGRID)), axis=1)
    g[:, 0], g[:, -1] = 0.0, 1.0
    grid = (g + np.arange(NUCLIDES)[:, None]).ravel()
    xs = rng.uniform(0.5, 2.0, NUCLIDES * NGRID)
    lens = rng.integers(2, MAX_NUC + 1, MATERIALS)
    moffs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    mnuc = np.concatenate([rng.choice(NUCLIDES, k, replace=False) for k in lens]).astype(np.int64)
    conc = rng.uniform(0.1, 1.0, int(moffs[-1]))
    mat = rng.integers(0, MATERIALS, n).astype(np.int64)
    e = rng.uniform(0.001, 0.999, n)
    return xs, conc, grid, moffs, mnuc, mat, e


def xs_padded(moffs, mnuc):
    """``(nuclide, slot-of-conc, mask)`` per material, padded to MAX_NUC (for JAX)."""
    nuc = np.zeros((MATERIALS, MAX_NUC), np.int64)
    slot = np.zeros((MATERIALS, MAX_NUC), np.int64)
    mask = np.zeros((MATERIALS, MAX_NUC))
    for m in range(MATERIALS):
        k = moffs[m + 1] - moffs[m]
        nuc[m, :k], slot[m, :k], mask[m, :k] = mnuc[moffs[m]:moffs[m + 1]], np.arange(moffs[m], moffs[m + 1]), 1.0
    return nuc, slot, mask


def xs_jax(jnp, xs, conc, grid, nuc, slot, mask, mat, e):
    """The lookup over padded nuclide lists: one ``searchsorted`` in the sorted grid per (lookup, nuclide)."""
    u = nuc[mat]  # (n, MAX_NUC)
    key = u + e[:, None]
    lo = jnp.clip(jnp.searchsorted(grid, key, side="right") - 1, u * NGRID, u * NGRID + NGRID - 2)
    f = (key - grid[lo]) / (grid[lo + 1] - grid[lo])
    val = xs[lo] + f * (xs[lo + 1] - xs[lo])
    return jnp.sum(mask[mat] * conc[slot[mat]] * val, axis=1)


def nbr_problem(n: int, rng):
    """``(px, py, pz, noffs, nbr)``: ``n`` particles, 4 to MAX_NBR neighbours each."""
    pos = [rng.uniform(0.0, 4.0, n) for _ in range(3)]
    lens = rng.integers(4, MAX_NBR + 1, n)
    noffs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    nbr = ((np.repeat(np.arange(n), lens) + rng.integers(1, 64, int(noffs[-1]))) % n).astype(np.int64)
    return (*pos, noffs, nbr)


def nbr_padded(noffs, nbr):
    """``(neighbours, mask)`` padded to MAX_NBR (for JAX; padding points at the particle itself)."""
    n = noffs.shape[0] - 1
    lens = np.diff(noffs)
    col = np.arange(MAX_NBR)[None, :]
    mask = col < lens[:, None]
    idx = np.where(mask, noffs[:-1, None] + col, 0)
    return np.where(mask, nbr[np.minimum(idx, nbr.shape[0] - 1)], np.arange(n)[:, None]), mask.astype(np.float64)


def nbr_jax(jnp, px, py, pz, nb, mask):
    dx, dy, dz = px[:, None] - px[nb], py[:, None] - py[nb], pz[:, None] - pz[nb]
    r2 = dx * dx + dy * dy + dz * dz
    return jnp.sum(mask * jnp.exp(-r2) / (r2 + 0.1), axis=1)
