"""Runtime activity (Enzyme's option): an active value stored into memory without a shadow loses its
derivative there instead of stopping the compile; without the option the ADError says it exists."""

from __future__ import annotations

import numpy as np
import pytest

from enzyme_plugin import (Active, BatchDuplicated, Const, Duplicated, Forward, Reverse, autodiff,
                           set_runtime_activity)
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler.errors import GPUCompilerError

P = ("enzyme",)
A = np.array([1.0, 2.0, 3.0])


def through_scratch(x, a, scratch, n):
    """3x + sum_i x a[n-1-i] a[i], the products kept in ``scratch``."""
    for i in range(n):
        scratch[i] = x * a[i]
    acc = 0.0
    for i in range(n):
        acc += scratch[n - 1 - i] * a[i]
    return acc + 3.0 * x


def test_without_the_option_the_error_names_it():
    with pytest.raises(GPUCompilerError, match=r"no shadow.*set_runtime_activity\(Reverse\)"):
        autodiff(Reverse, through_scratch, Active(2.0), Const(A), Const(np.zeros(3)), 3)


def test_derivatives_through_constant_memory_are_dropped_with_the_option():
    """As Enzyme.jl's runtime activity: the scratch buffer is constant, so only the direct 3x term counts."""
    (g,) = autodiff(set_runtime_activity(Reverse), through_scratch, Active(2.0), Const(A), Const(np.zeros(3)), 3)
    assert g == 3.0
    (t,) = autodiff(set_runtime_activity(Forward), through_scratch, Duplicated(2.0, 1.0), Const(A),
                    Const(np.zeros(3)), 3)
    assert t == 3.0
    ((t1, t2),) = autodiff(set_runtime_activity(Forward), through_scratch, BatchDuplicated(2.0, (1.0, 2.0)),
                           Const(A), Const(np.zeros(3)), 3)
    assert (t1, t2) == (3.0, 6.0)


def test_the_option_changes_nothing_where_memory_has_a_shadow():
    want = 3.0 + float(np.sum(A[::-1] * A))
    (g,) = autodiff(set_runtime_activity(Reverse), through_scratch, Active(2.0), Const(A),
                    Duplicated(np.zeros(3), np.zeros(3)), 3)
    assert g == want


def grad_in_jit(x, a, scratch):
    return autodiff(set_runtime_activity(Reverse), through_scratch, Active(x), Const(a), Const(scratch), 3)


def test_runtime_activity_in_jit_functions():
    assert jit(grad_in_jit, plugins=P)(2.0, A, np.zeros(3)) == (3.0,)


RA_REVERSE = set_runtime_activity(Reverse)  # a module-level constant mode


def through_scratch_at(x, a, scratch, at):
    """``through_scratch`` with the products in ``scratch[at:at + 3]`` (one slice per thread)."""
    for i in range(3):
        scratch[at + i] = x * a[i]
    acc = 0.0
    for i in range(3):
        acc += scratch[at + 2 - i] * a[i]
    return acc + 3.0 * x


def scratch_kernel(xs, dxs, a, scratch):
    i = gd.grid(1)
    if i < xs.shape[0]:
        r = autodiff(RA_REVERSE, through_scratch_at, Active(xs[i]), Const(a), Const(scratch), Const(3 * i))
        dxs[i] = r[0]


def test_runtime_activity_in_a_kernel_on_the_grid_emulation():
    xs, dxs = np.linspace(0.0, 1.0, 64), np.zeros(64)
    kernel(scratch_kernel, plugins=P)[2, 32, "cpu"](xs, dxs, A, np.zeros(3 * 64))
    np.testing.assert_array_equal(dxs, np.full(64, 3.0))
