"""Functions the plugin-options tests compile (module level)."""

from __future__ import annotations

from enzyme_plugin import Duplicated, Reverse, autodiff
from gpucompiler import device as gd


def total_sq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def grad_into(a, da):
    autodiff(Reverse, total_sq, Duplicated(a, da))
    return da[0]


def k_grad(a, da, out):
    i = gd.grid(1)
    if i == 0:
        out[0] = grad_into(a, da)
