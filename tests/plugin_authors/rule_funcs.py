"""Functions the rule-set tests compile (module level)."""

from __future__ import annotations

import math

from gpucompiler import device as gd


def scale(x):
    """In CPython ``3 * x``; the plugin's rules lower it per target."""
    return 3.0 * x


def hypot2(x, y):
    return math.sqrt(x * x + y * y)


def uses(x, y):
    return scale(x) + hypot2(x, y)


def k_uses(x, y, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = uses(x[i], y[i])
