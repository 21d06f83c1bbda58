"""Kernels of the main job (module level, so that their sources name the compile jobs)."""

import math

from gpucompiler import device as gd
from enzyme_plugin import Const, Duplicated, Reverse, autodiff


def potential(x, w, i):
    """A per-particle energy with two shared parameters w[0], w[1]."""
    r = x[i]
    return w[0] * math.sin(r) * r + w[1] * math.exp(-r * r)


def grad_kernel(x, dx, w, dw):
    """dx[i] += dE/dx[i]; dw += dE/dw over all particles (every thread adds into dw: atomics)."""
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, potential, Duplicated(x, dx), Duplicated(w, dw), Const(i))
