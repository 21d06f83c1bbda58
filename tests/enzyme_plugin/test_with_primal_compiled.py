"""ReverseWithPrimal / ForwardWithPrimal inside @jit functions and kernels: the primal comes from the
derivative's own sweep (Enzyme's enzyme_primal_return), checked against f and analytic derivatives."""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from enzyme_plugin import (Active, BatchDuplicated, Const, Duplicated, ForwardWithPrimal, ReverseWithPrimal,
                           autodiff, differentiate)
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler.runtime import CPULibrary

P = ("enzyme",)


def waves(x, a, n):
    acc = 0.0
    for i in range(n):
        acc += math.sin(x * a[i])
    return acc


def reverse_with_primal(x, a, da, n):
    return autodiff(ReverseWithPrimal, waves, Active(x), Duplicated(a, da), Const(n))


def forward_with_primal(x, a, n):
    return autodiff(ForwardWithPrimal, waves, Duplicated(x, 1.0), Const(a), Const(n))


def batch_with_primal(x, a, n):
    return autodiff(ForwardWithPrimal, waves, BatchDuplicated(x, (1.0, -2.0)), Const(a), Const(n))


A = np.array([0.5, 1.0, 2.0])


def dwaves(x):
    return float(np.sum(np.cos(x * A) * A))


def test_reverse_with_primal_in_jit():
    da = np.zeros(3)
    (dx,), y = jit(reverse_with_primal, plugins=P)(0.7, A, da, 3)
    assert y == pytest.approx(waves(0.7, A, 3), rel=1e-15)
    assert dx == pytest.approx(dwaves(0.7), rel=1e-14)
    np.testing.assert_allclose(da, np.cos(0.7 * A) * 0.7, rtol=1e-14)


def test_forward_with_primal_in_jit_also_batched():
    t, y = jit(forward_with_primal, plugins=P)(0.7, A, 3)
    assert y == pytest.approx(waves(0.7, A, 3), rel=1e-15) and t == pytest.approx(dwaves(0.7), rel=1e-14)
    (t1, t2), y = jit(batch_with_primal, plugins=P)(0.7, A, 3)
    assert y == pytest.approx(waves(0.7, A, 3), rel=1e-15)
    assert (t1, t2) == pytest.approx((dwaves(0.7), -2.0 * dwaves(0.7)), rel=1e-14)


def values_and_derivatives(xs, a, ys, dys):
    i = gd.grid(1)
    if i < xs.shape[0]:
        r = autodiff(ForwardWithPrimal, waves, Duplicated(xs[i], 1.0), Const(a), Const(3))
        dys[i] = r[0]
        ys[i] = r[1]


def test_forward_with_primal_in_a_kernel_on_the_grid_emulation():
    xs, ys, dys = np.linspace(-1.0, 1.0, 64), np.zeros(64), np.zeros(64)
    kernel(values_and_derivatives, plugins=P)[2, 32, "cpu"](xs, A, ys, dys)
    np.testing.assert_allclose(ys, [waves(x, A, 3) for x in xs], rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(dys, [dwaves(x) for x in xs], rtol=1e-13, atol=1e-15)


C_IR = """
@enzyme_primal_return = global i32 0
declare double @llvm.sin.f64(double)
declare {double, double} @__enzyme_fwddiff(ptr, ...)
declare {{double}, double} @__enzyme_autodiff(ptr, ...)
define double @f(double %x) {
  %s = call double @llvm.sin.f64(double %x)
  %y = fmul double %s, %x
  ret double %y
}
define void @both(double %x, ptr %out) {
  %r = call {double, double} (ptr, ...) @__enzyme_fwddiff(ptr @f, ptr @enzyme_primal_return, double %x, double 1.0)
  %p = extractvalue {double, double} %r, 0
  %t = extractvalue {double, double} %r, 1
  %g = call {{double}, double} (ptr, ...) @__enzyme_autodiff(ptr @f, ptr @enzyme_primal_return, double %x)
  %ga = extractvalue {{double}, double} %g, 0, 0
  %gp = extractvalue {{double}, double} %g, 1
  store double %p, ptr %out
  %o1 = getelementptr double, ptr %out, i64 1
  store double %t, ptr %o1
  %o2 = getelementptr double, ptr %out, i64 2
  store double %ga, ptr %o2
  %o3 = getelementptr double, ptr %out, i64 3
  store double %gp, ptr %o3
  ret void
}
"""


def test_enzyme_primal_return_marker_in_the_c_interface():
    out = np.zeros(4)
    lib = CPULibrary.from_ir(differentiate(C_IR))
    lib.function("both", None, ctypes.c_double, ctypes.c_void_p)(0.7, out.ctypes.data)
    y, d = math.sin(0.7) * 0.7, math.cos(0.7) * 0.7 + math.sin(0.7)
    np.testing.assert_allclose(out, [y, d, d, y], rtol=1e-15)
