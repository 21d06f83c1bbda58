"""Functions the author-plugin tests compile (module level: stable names and job ids)."""

from __future__ import annotations

import math

from author_plugins.overlay import fast_exp, twice
from enzyme_plugin import Active, Reverse, autodiff
from gpucompiler import device as gd
from gpucompiler_plugins.mock_autodiff import mock_autodiff


def ratio(a, b):
    return a / b + 1.0


def d_ratio(a, b):
    return autodiff(Reverse, ratio, Active(a), b)[0]


def sq(x):
    return x * x


def exp_twice(x):
    return fast_exp(twice(sq, x))


def d_exp_twice(x):
    return autodiff(Reverse, exp_twice, Active(x))[0]


def rule_damp(x):
    return x / (1.0 + x * x)


def kept(x):
    return rule_damp(x) * math.sin(x) + rule_damp(2.0 * x)


def d_kept(x):
    return autodiff(Reverse, kept, Active(x))[0]


def all_three(x, b):
    return twice(sq, rule_damp(x)) / b + fast_exp(x)


def d_all_three(x, b):
    return autodiff(Reverse, all_three, Active(x), b)[0]


def m_d_all_three(x, b):
    return mock_autodiff(d_all_three, x, b)


# exact references
def ratio_ref(a, b):
    return (0.0 if b == 0.0 else a / b) + 1.0


def d_ratio_ref(a, b):
    return 0.0 if b == 0.0 else 1.0 / b


def exp_twice_ref(x):
    return math.exp(x ** 4)


def d_exp_twice_ref(x):
    return 4.0 * x ** 3 * math.exp(x ** 4)


def _damp(x):
    return x / (1.0 + x * x)


def _d_damp(x):
    return (1.0 - x * x) / (1.0 + x * x) ** 2


def kept_ref(x):
    return _damp(x) * math.sin(x) + _damp(2.0 * x)


def d_kept_ref(x):
    return _d_damp(x) * math.sin(x) + _damp(x) * math.cos(x) + 2.0 * _d_damp(2.0 * x)


def all_three_ref(x, b):
    return (0.0 if b == 0.0 else _damp(x) ** 4 / b) + math.exp(x)


def d_all_three_ref(x, b):
    return (0.0 if b == 0.0 else 4.0 * _damp(x) ** 3 * _d_damp(x) / b) + math.exp(x)


# kernels: one thread per element
def k_ratio(a, b, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = d_ratio(a[i], b[i]) + ratio(a[i], b[i])


def k_exp_twice(x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = d_exp_twice(x[i])


def k_kept(x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = d_kept(x[i])


def k_all_three(x, b, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = m_d_all_three(x[i], b[i])
