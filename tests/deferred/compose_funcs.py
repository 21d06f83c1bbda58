"""Functions of the composition tests: nested jobs of ``mock_enzyme`` and ``enzyme`` inside each other.

The names spell the nesting from the outside in: ``m_`` a ``mock_autodiff`` (the value), ``d_`` a
reverse-mode ``autodiff`` (the derivative) of what follows.
"""

from __future__ import annotations

import math

from enzyme_plugin import Active, Reverse, autodiff
from gpucompiler import device as gd
from gpucompiler_plugins.mock_autodiff import mock_autodiff


def g(x):
    return x * x * x + math.sin(x)


def dg_exact(x):
    return 3.0 * x * x + math.cos(x)


def ddg_exact(x):
    return 6.0 * x - math.sin(x)


def dg(x):
    return autodiff(Reverse, g, Active(x))[0]


def mg(x):
    return mock_autodiff(g, x)


def m_dg(x):
    return mock_autodiff(dg, x)


def d_mg(x):
    return autodiff(Reverse, mg, Active(x))[0]


def d_dg(x):
    return autodiff(Reverse, dg, Active(x))[0]


def m_mg(x):
    return mock_autodiff(mg, x)


def m_d_mg(x):
    return mock_autodiff(d_mg, x)


def d_m_dg(x):
    return autodiff(Reverse, m_dg, Active(x))[0]


def m_m_dg(x):
    return mock_autodiff(m_dg, x)


#: name -> (function, exact value at x)
CASES = {
    "enzyme_inside_mock": (m_dg, dg_exact),
    "mock_inside_enzyme": (d_mg, dg_exact),
    "enzyme_inside_enzyme": (d_dg, ddg_exact),
    "mock_inside_mock": (m_mg, g),
    "mock_enzyme_mock": (m_d_mg, dg_exact),
    "enzyme_mock_enzyme": (d_m_dg, ddg_exact),
    "enzyme_mock_mock": (m_m_dg, dg_exact),
}


def root_of(x):
    if x < 0.0:
        raise ValueError("root_of needs x >= 0")
    return math.sqrt(x)


def d_root(x):
    return autodiff(Reverse, root_of, Active(x))[0]


def m_root(x):
    return mock_autodiff(root_of, x)


def m_d_root(x):
    return mock_autodiff(d_root, x)


def d_m_root(x):
    return autodiff(Reverse, m_root, Active(x))[0]


def m_m_root(x):
    return mock_autodiff(m_root, x)


#: name -> a function whose innermost nested job raises for x < 0, and its derivative order
FAILING = {"enzyme": (d_root, 1), "mock": (m_root, 0), "enzyme_inside_mock": (m_d_root, 1),
           "mock_inside_enzyme": (d_m_root, 1), "mock_inside_mock": (m_m_root, 0)}


def k_m_dg(xs, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = m_dg(xs[i])


def k_d_mg(xs, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = d_mg(xs[i])


def k_d_m_dg(xs, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = d_m_dg(xs[i])


#: case name -> a kernel writing ``case(xs[i])`` to ``out[i]``
KERNELS = {"enzyme_inside_mock": k_m_dg, "mock_inside_enzyme": k_d_mg, "enzyme_mock_enzyme": k_d_m_dg}
