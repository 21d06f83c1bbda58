"""Vector lanes the primal leaves undefined (SLP-vectorized code: ``shufflevector`` masks with poison lanes,
``<0.5, poison>`` constants) get defined values before AD: their adjoint ``0 * poison`` was poison and
spoiled the lanes it was added to (clang -O2 gradients came out doubled)."""

import ctypes

import numpy as np
import pytest

import enzyme_plugin
from gpucompiler.runtime import CPULibrary

# min(a, 0.5) * min(b, c), the shape clang -O2's SLP vectorizer gives `fmin(0.5, x[i]) * fmin(x[i+1], w[i])`
IR = """
declare <2 x double> @llvm.minnum.v2f64(<2 x double>, <2 x double>)
declare void @__enzyme_autodiff(ptr, ...)
@enzyme_out = global i32 0
define double @f(double %a, double %b, double %c) {
  %v0 = insertelement <2 x double> poison, double %a, i64 0
  %v1 = insertelement <2 x double> %v0, double %b, i64 1
  %w = insertelement <2 x double> <double 5.000000e-01, double poison>, double %c, i64 1
  %m = call <2 x double> @llvm.minnum.v2f64(<2 x double> %v1, <2 x double> %w)
  %sh = shufflevector <2 x double> %m, <2 x double> poison, <2 x i32> <i32 1, i32 poison>
  %p = fmul <2 x double> %m, %sh
  %r = extractelement <2 x double> %p, i64 0
  ret double %r
}
define void @grad(double %a, double %b, double %c, ptr %out) {
  %m = load i32, ptr @enzyme_out
  %r = call {double, double, double} (ptr, ...) @__enzyme_autodiff(ptr @f, i32 %m, double %a, i32 %m, double %b, i32 %m, double %c)
  store {double, double, double} %r, ptr %out
  ret void
}
"""


@pytest.mark.parametrize("a, b, c", [(-0.45, 0.3, 0.2), (0.7, -1.0, 2.0), (0.1, 0.4, 0.4)])
def test_poison_lanes_carry_no_adjoint(a, b, c):
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(IR))
    grad = ctypes.CFUNCTYPE(None, ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_void_p)(
        lib.address("grad"))
    out = np.zeros(3)
    grad(a, b, c, out.ctypes.data)
    # d/da min(a, .5) * m, d/db and d/dc of min(b, c) * n (a tie goes to c, as minnum's rule gives it)
    m, n = min(b, c), min(a, 0.5)
    want = [m if a < 0.5 else 0.0, n if b < c else 0.0, 0.0 if b < c else n]
    np.testing.assert_allclose(out, want, rtol=1e-15, atol=0)


# a lane nobody reads divides an undefined constant: defined as 0.5, neither it nor its adjoint is NaN (at
# b = 0 the lane itself is infinite and b's adjoint NaN, a limit docs/enzyme.md states)
DIVIDED = """
declare void @__enzyme_autodiff(ptr, ...)
declare <2 x double> @llvm.log.v2f64(<2 x double>)
@enzyme_out = global i32 0
define double @f(double %a, double %b) {
  %v0 = insertelement <2 x double> poison, double %a, i64 0
  %v1 = insertelement <2 x double> %v0, double %b, i64 1
  %q = fdiv <2 x double> <double 2.000000e+00, double poison>, %v1
  %l = call <2 x double> @llvm.log.v2f64(<2 x double> %q)
  %r = extractelement <2 x double> %l, i64 0
  ret double %r
}
define void @grad(double %a, double %b, ptr %out) {
  %m = load i32, ptr @enzyme_out
  %r = call {double, double} (ptr, ...) @__enzyme_autodiff(ptr @f, i32 %m, double %a, i32 %m, double %b)
  store {double, double} %r, ptr %out
  ret void
}
"""


@pytest.mark.parametrize("a, b", [(3.0, 1.0), (-2.0, 4.0)])
def test_an_unused_lane_divided_by_an_undefined_constant_stays_out_of_the_gradient(a, b):
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(DIVIDED))
    grad = ctypes.CFUNCTYPE(None, ctypes.c_double, ctypes.c_double, ctypes.c_void_p)(lib.address("grad"))
    out = np.zeros(2)
    grad(a, b, out.ctypes.data)
    np.testing.assert_allclose(out, [-1.0 / a, 0.0], rtol=1e-15, atol=0)  # d/da log(2 / a)
