"""Functions the AD-contract tests compile (module level)."""

from __future__ import annotations

import math

from enzyme_plugin import Active, Duplicated, Forward, Reverse, autodiff
from gpucompiler import device as gd
from gpucompiler_plugins.mock_autodiff import mock_autodiff


def noise(x):
    """A value the user declares constant for AD (a plugin marks it inactive)."""
    return math.sin(x)


def g(x):
    return noise(x) * x + x * x


def dg(x):
    return autodiff(Reverse, g, Active(x))[0]


def fg(x):
    return autodiff(Forward, g, Duplicated(x, 1.0))[0]


def k_dg(x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = dg(x[i])


def ste_round(x):
    """Rounding to quarters: AD gives 0; the ``straight`` plugin's rule, the identity's derivative."""
    return math.floor(x * 4.0 + 0.5) / 4.0


def h(x):
    return ste_round(x) * x + x


def h_ref(x):
    """h'(x) with d ste_round / dx = 1: x + ste_round(x) + 1."""
    return x + ste_round(x) + 1.0


def dh(x):
    return autodiff(Reverse, h, Active(x))[0]


def fh(x):
    return autodiff(Forward, h, Duplicated(x, 1.0))[0]


def m_fh(x):
    return mock_autodiff(fh, x)


def k_dh(x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = dh(x[i]) + fh(x[i])


def ste_two(x, y):
    """A function of two floats named ``ste_*``: the unary rule contradicts its signature."""
    return math.floor(x) * y


def two(x, y):
    return ste_two(x, y) * x


def d_two(x, y):
    return autodiff(Reverse, two, Active(x), Active(y))


def mix(x, y):
    """floor(x) * y, given the derivative of x * y by a test's rule (two adjoints: a struct)."""
    return math.floor(x) * y


def m(x, y):
    return mix(x, y) + x


def dm(x, y):
    return autodiff(Reverse, m, Active(x), Active(y))


def fm(x, y):
    return autodiff(Forward, m, Duplicated(x, 1.0), Duplicated(y, 0.0))[0] + 10.0 * autodiff(
        Forward, m, Duplicated(x, 0.0), Duplicated(y, 1.0))[0]
