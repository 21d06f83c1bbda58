"""Functions the AD-contract tests compile (module level)."""

from __future__ import annotations

import math

from enzyme_plugin import Active, Reverse, autodiff
from gpucompiler import device as gd


def noise(x):
    """A value the user declares constant for AD (a plugin marks it inactive)."""
    return math.sin(x)


def g(x):
    return noise(x) * x + x * x


def dg(x):
    return autodiff(Reverse, g, Active(x))[0]


def k_dg(x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = dg(x[i])
