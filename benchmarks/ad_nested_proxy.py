"""A CPU proxy for the nested-loop kernels of benchmarks/ad_gpu.py (``--nested``): gradient/primal time on
the CPU grid emulation and on the host, for machines without a GPU.

The kernels of benchmarks/ad_nested_kernels.py run on the CPU grid emulation with ``boundscheck=False``,
which runs the code the GPU runs (the same tape arena, atomics and recomputation; with bounds checks the
emulation's error path writes memory and the loads are taped instead). The host rows run the same loss in a
``@jit`` loop over the items calling ``autodiff`` (the host's tape: no atomics, ``realloc``-grown arrays).
Times are the thread's CPU time (``time.thread_time``), primal and gradient interleaved, minimum over
``--reps``: steadier than wall time on a shared machine. On a CPU a tape slot is an L1 store and load, so
this proxy understates what the GPU gains from a smaller tape and overstates the cost of recomputation.

    PYTHONPATH=.:plugins python benchmarks/ad_nested_proxy.py [--log2n 17] [--reps 15]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ad_nested_kernels as NK
from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import jit, kernel

P = ("enzyme",)
BLOCK = 256


def host_nbr_primal(px, py, pz, noffs, nbr, out):
    for i in range(out.shape[0]):
        out[i] = NK.pair_energy(px, py, pz, noffs, nbr, i)


def host_nbr_grad(px, dpx, py, dpy, pz, dpz, noffs, nbr):
    for i in range(noffs.shape[0] - 1):
        autodiff(Reverse, NK.pair_energy, Duplicated(px, dpx), Duplicated(py, dpy), Duplicated(pz, dpz),
                 Const(noffs), Const(nbr), Const(i))


def host_xs_primal(xs, conc, grid, moffs, mnuc, mat, e, out):
    for i in range(e.shape[0]):
        out[i] = NK.xs_macro(xs, conc, grid, moffs, mnuc, mat, e, i)


def host_xs_grad(xs, dxs, conc, grid, moffs, mnuc, mat, e):
    for i in range(e.shape[0]):
        autodiff(Reverse, NK.xs_macro, Duplicated(xs, dxs), Const(conc), Const(grid), Const(moffs),
                 Const(mnuc), Const(mat), Const(e), Const(i))


def timed_pair(primal, grad, reps: int) -> tuple[float, float]:
    """Minimum thread CPU time of ``primal()`` and of ``grad()``, run alternately ``reps`` times."""
    primal()
    grad()
    tp, tg = [], []
    for _ in range(reps):
        t0 = time.thread_time()
        primal()
        tp.append(time.thread_time() - t0)
        t0 = time.thread_time()
        grad()
        tg.append(time.thread_time() - t0)
    return min(tp), min(tg)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=17)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args(argv)
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    px, py, pz, noffs, nbr = NK.nbr_problem(n, rng)
    xs, conc, egrid, moffs, mnuc, mat, e = NK.xs_problem(n, rng)
    out, dxs = np.zeros(n), np.zeros_like(xs)
    d = [np.zeros(n) for _ in range(3)]
    g = (n + BLOCK - 1) // BLOCK

    def emulated(fn):
        return kernel(fn, plugins=P, boundscheck=False)[g, BLOCK, "cpu"]

    nbr_p, nbr_g, xs_p, xs_g = (emulated(f) for f in (NK.nbr_primal, NK.nbr_grad, NK.xs_primal, NK.xs_grad))
    h_nbr_p, h_nbr_g, h_xs_p, h_xs_g = (jit(f, plugins=P) for f in (host_nbr_primal, host_nbr_grad,
                                                                     host_xs_primal, host_xs_grad))
    nbr_args = (px, d[0], py, d[1], pz, d[2], noffs, nbr)
    xs_args = (xs, dxs, conc, egrid, moffs, mnuc, mat, e)
    rows = {
        "neighbour list, emulation": (lambda: nbr_p(px, py, pz, noffs, nbr, out), lambda: nbr_g(*nbr_args)),
        "cross-section lookup, emulation": (lambda: xs_p(xs, conc, egrid, moffs, mnuc, mat, e, out),
                                            lambda: xs_g(*xs_args)),
        "neighbour list, host @jit": (lambda: h_nbr_p(px, py, pz, noffs, nbr, out), lambda: h_nbr_g(*nbr_args)),
        "cross-section lookup, host @jit": (lambda: h_xs_p(xs, conc, egrid, moffs, mnuc, mat, e, out),
                                            lambda: h_xs_g(*xs_args)),
    }
    print(f"# n = 2^{args.log2n}, thread CPU time, min of {args.reps}")
    for name, (primal, grad) in rows.items():
        tp, tg = timed_pair(primal, grad, args.reps)
        print(f"| {name:32s} | primal {tp * 1e3:8.2f} ms | grad {tg * 1e3:8.2f} ms | {tg / tp:5.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
