"""Batch (vector) mode: ``BatchDuplicated(x, (dx1, ..., dxN))`` carries N tangents or cotangents through
ONE derivative sweep, from Python, in ``@jit`` functions and in kernels (grid emulation, ptxas, GPU)."""

from __future__ import annotations

import ctypes
import math
import re

import numpy as np
import pytest

from enzyme_plugin import (Active, BatchDuplicated, BatchDuplicatedNoNeed, Const, Duplicated, Forward,
                           ForwardWithPrimal, Reverse, autodiff, custom_rule, differentiate)
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler import types as T
from gpucompiler.errors import GPUCompilerError
from gpucompiler.runtime import CPULibrary

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
F64 = T.float64


def f2(x, y):
    return math.sin(x) * y * y


def rosen(a, out):
    """out[i] = (1 - a[i])^2 + 10 (a[i+1] - a[i]^2)^2 for i < n - 1, out[n-1] = a[n-1] * exp(a[0])."""
    n = a.shape[0]
    for i in range(n - 1):
        out[i] = (1.0 - a[i]) ** 2 + 10.0 * (a[i + 1] - a[i] * a[i]) ** 2
    out[n - 1] = a[n - 1] * math.exp(a[0])


def rosen_np(a):
    out = np.empty_like(a)
    out[:-1] = (1.0 - a[:-1]) ** 2 + 10.0 * (a[1:] - a[:-1] ** 2) ** 2
    out[-1] = a[-1] * np.exp(a[0])
    return out


def fd_jacobian(fn, a, h=1e-6):
    cols = []
    for j in range(a.size):
        e = np.zeros_like(a)
        e[j] = h
        cols.append((fn(a + e) - fn(a - e)) / (2 * h))
    return np.array(cols).T


def test_forward_batch_from_python_gives_every_directional_derivative():
    x, y = 0.5, 3.0
    dx, dy = math.cos(x) * y * y, 2 * y * math.sin(x)
    ((t1, t2, t3),) = autodiff(Forward, f2, BatchDuplicated(x, (1.0, 0.0, 2.0)), BatchDuplicated(y, (0.0, 1.0, -1.0)))
    assert t1 == pytest.approx(dx, rel=1e-14) and t2 == pytest.approx(dy, rel=1e-14)
    assert t3 == pytest.approx(2 * dx - dy, rel=1e-14)


def test_forward_batch_jacobian_of_an_array_function_against_finite_differences():
    a = np.array([0.3, -0.8, 1.2, 0.5, 2.0])
    n = a.size
    seeds = tuple(np.eye(n)[j].copy() for j in range(n))
    touts = tuple(np.zeros(n) for _ in range(n))
    autodiff(Forward, rosen, BatchDuplicated(a, seeds), BatchDuplicatedNoNeed(np.zeros(n), touts))
    np.testing.assert_allclose(np.array(touts).T, fd_jacobian(rosen_np, a), rtol=1e-7, atol=1e-7)


def test_reverse_batch_gives_every_row_of_the_jacobian_in_one_call():
    a = np.array([0.3, -0.8, 1.2, 0.5, 2.0])
    n = a.size
    das = tuple(np.zeros(n) for _ in range(n))
    douts = tuple(np.eye(n)[i].copy() for i in range(n))
    autodiff(Reverse, rosen, BatchDuplicated(a, das), BatchDuplicated(np.zeros(n), douts))
    np.testing.assert_allclose(np.array(das), fd_jacobian(rosen_np, a), rtol=1e-7, atol=1e-7)
    assert all(not d.any() for d in douts)  # the seeds are consumed, as with Duplicated


def weighted(x, a, n):
    acc = 0.0
    for i in range(n):
        acc += x * a[i] * a[i]
    return acc


def test_reverse_batch_returns_one_derivative_per_lane_for_active_scalars():
    a = np.array([1.0, 2.0, 3.0])
    da1, da2 = np.zeros(3), np.zeros(3)
    ((g1, g2),) = autodiff(Reverse, weighted, Active(2.0), BatchDuplicated(a, (da1, da2)), 3)
    assert g1 == g2 == 14.0  # every lane's return is seeded with 1, as in Enzyme.jl
    np.testing.assert_allclose(da1, 4.0 * a)
    np.testing.assert_allclose(da2, 4.0 * a)


def test_forward_batch_with_primal():
    ((t1, t2), y) = autodiff(ForwardWithPrimal, f2, BatchDuplicated(0.5, (1.0, 2.0)), Const(3.0))
    assert y == pytest.approx(f2(0.5, 3.0), rel=1e-15)
    assert t2 == pytest.approx(2 * t1, rel=1e-15) and t1 == pytest.approx(9 * math.cos(0.5), rel=1e-14)


def batch3_in_jit(x, y, t1, t2, t3):
    return autodiff(Forward, f2, BatchDuplicated(x, (t1, t2, t3)), Const(y))


def test_batch_in_jit_runs_the_primal_part_once_for_all_lanes():
    g = jit(batch3_in_jit, plugins=P)
    ((r1, r2, r3),) = g(0.5, 3.0, 1.0, 2.0, -1.0)
    d = 9 * math.cos(0.5)
    assert (r1, r2, r3) == pytest.approx((d, 2 * d, -d), rel=1e-14)
    final = g.inspect_llvm(F64, F64, F64, F64, F64)
    bodies = [b for b in final.split("\ndefine ")[1:] if not b.split("(")[0].endswith((".pywrap", ".pyentry"))]
    assert len(bodies) == 1 and bodies[0].count("call double @llvm.cos.f64") == 1


# the C interface: enzyme_width, N before the arguments; every enzyme_dup value followed by N shadows
ENGINE_IR = """
@enzyme_dup = global i32 0
@enzyme_const = global i32 0
@enzyme_width = global i32 0
declare double @llvm.sin.f64(double)
declare {double, double, double} @__enzyme_fwddiff(ptr, ...)
declare void @__enzyme_autodiff(ptr, ...)

define double @f(ptr %x, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %s = phi double [ 0.0, %entry ], [ %s1, %loop ]
  %p = getelementptr inbounds double, ptr %x, i64 %i
  %v = load double, ptr %p
  %w = call double @llvm.sin.f64(double %v)
  %t = fmul double %w, %v
  %s1 = fadd double %s, %t
  %i1 = add i64 %i, 1
  %c = icmp slt i64 %i1, %n
  br i1 %c, label %loop, label %done
done:
  ret double %s1
}

define void @fwd3(ptr %x, ptr %v1, ptr %v2, ptr %v3, i64 %n, ptr %out) {
  %r = call {double, double, double} (ptr, ...) @__enzyme_fwddiff(ptr @f, ptr @enzyme_width, i64 3,
       ptr @enzyme_dup, ptr %x, ptr %v1, ptr %v2, ptr %v3, ptr @enzyme_const, i64 %n)
  %a = extractvalue {double, double, double} %r, 0
  %b = extractvalue {double, double, double} %r, 1
  %c = extractvalue {double, double, double} %r, 2
  store double %a, ptr %out
  %o1 = getelementptr double, ptr %out, i64 1
  store double %b, ptr %o1
  %o2 = getelementptr double, ptr %out, i64 2
  store double %c, ptr %o2
  ret void
}

define void @rev2(ptr %x, ptr %d1, ptr %d2, i64 %n) {
  call void (ptr, ...) @__enzyme_autodiff(ptr @f, ptr @enzyme_width, i64 2, ptr @enzyme_dup, ptr %x, ptr %d1,
       ptr %d2, ptr @enzyme_const, i64 %n)
  ret void
}
"""


def test_engine_batch_is_one_derivative_function_with_width_shadows():
    text = differentiate(ENGINE_IR, optimize=False)
    for tag, width, calls in (("fwddiffe3", 3, "@fwd3"), ("diffe2", 2, "@rev2")):
        defs = re.findall(rf"^define [^@]*@({tag}_f\S*)\((.*)\)", text, re.M)
        assert len(defs) == 1, (tag, defs)  # one derivative function, not one per lane
        name, params = defs[0]
        assert params.count("ptr") == 1 + width  # x and its shadows
        body = text[re.search(rf"^define [^@]*@{re.escape(name)}\(", text, re.M).start():]
        body = body[:body.index("\n}")]
        assert body.count("call double @llvm.sin.f64") == 1  # the primal runs once for all lanes
        assert len(re.findall(rf"call [^\n]*@{re.escape(name)}\(", text)) == 1, calls


def test_engine_batch_values_against_the_analytic_derivative():
    lib = CPULibrary.from_ir(differentiate(ENGINE_IR))
    x = np.array([0.3, -1.1, 2.0, 0.7])
    g = np.cos(x) * x + np.sin(x)
    vs = [np.array([1.0, 0, 0, 0]), np.array([0.5, 1.0, -1.0, 2.0]), np.ones(4)]
    out = np.zeros(3)
    ptr = ctypes.c_void_p
    fwd = lib.function("fwd3", None, ptr, ptr, ptr, ptr, ctypes.c_int64, ptr)
    fwd(x.ctypes.data, *(v.ctypes.data for v in vs), 4, out.ctypes.data)
    np.testing.assert_allclose(out, [g @ v for v in vs], rtol=1e-14)
    d1, d2 = np.zeros(4), np.full(4, 2.0)
    lib.function("rev2", None, ptr, ptr, ptr, ctypes.c_int64)(x.ctypes.data, d1.ctypes.data, d2.ctypes.data, 4)
    np.testing.assert_allclose(d1, g, rtol=1e-14)
    np.testing.assert_allclose(d2, 2.0 + g, rtol=1e-14)


def sumsq_loop(a, n):
    acc = 0.0
    for i in range(n):
        acc += a[i] * a[i] * a[i]
    return acc


def jit_reverse_batch(a, d1, d2, n):
    autodiff(Reverse, sumsq_loop, BatchDuplicated(a, (d1, d2)), Const(n))


def test_reverse_batch_through_a_loop_in_jit():
    a = np.linspace(0.5, 2.0, 7)
    d1, d2 = np.zeros(7), np.ones(7)
    jit(jit_reverse_batch, plugins=P)(a, d1, d2, 7)
    np.testing.assert_allclose(d1, 3 * a * a, rtol=1e-15)
    np.testing.assert_allclose(d2, 1 + 3 * a * a, rtol=1e-15)


# -- kernels -------------------------------------------------------------------
def energy(x, w, i):
    return w[0] * math.sin(x[i]) * x[i]


def grad_energy_batch2(x, dx1, dx2, w, dw1, dw2):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, energy, BatchDuplicated(x, (dx1, dx2)), BatchDuplicated(w, (dw1, dw2)), Const(i))


def sinx(x):
    return math.sin(x) * x


def tangents_batch2(x, t1, t2, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        r = autodiff(Forward, sinx, BatchDuplicated(x[i], (t1[i], t2[i])))
        out[0, i] = r[0][0]
        out[1, i] = r[0][1]


def kernel_inputs():
    x, w = np.linspace(-1.0, 1.0, 256), np.array([2.0])
    return x, w, [np.zeros(256), np.full(256, 0.5), np.zeros(1), np.ones(1)]


def check_kernel_gradients(x, w, d):
    g = 2.0 * (np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(d[0], g, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(d[1], 0.5 + g, rtol=1e-13, atol=1e-15)
    total = np.sum(np.sin(x) * x)
    np.testing.assert_allclose(d[2], [total], rtol=1e-12)
    np.testing.assert_allclose(d[3], [1.0 + total], rtol=1e-12)


def test_reverse_batch_in_a_kernel_on_the_grid_emulation():
    x, w, d = kernel_inputs()
    kernel(grad_energy_batch2, plugins=P)[4, 64, "cpu"](x, d[0], d[1], w, d[2], d[3])
    check_kernel_gradients(x, w, d)


def test_forward_batch_in_a_kernel_on_the_grid_emulation():
    x = np.linspace(-1.0, 1.0, 256)
    out = np.zeros((2, 256))
    kernel(tangents_batch2, plugins=P)[4, 64, "cpu"](x, np.ones(256), np.full(256, -3.0), out)
    np.testing.assert_allclose(out[0], np.cos(x) * x + np.sin(x), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(out[1], -3.0 * out[0], rtol=1e-14, atol=1e-15)


def newton_sqrt(cs, i):
    """sqrt(cs[i]) by Newton's method: a data-dependent while loop, so the reverse sweep needs a tape."""
    c = cs[i]
    y = c
    k = 0
    while abs(y * y - c) > 1e-12 and k < 60:
        y = 0.5 * (y + c / y)
        k += 1
    return y


def grad_newton_batch2(cs, dc1, dc2):
    i = gd.grid(1)
    if i < cs.shape[0]:
        autodiff(Reverse, newton_sqrt, BatchDuplicated(cs, (dc1, dc2)), Const(i))


def test_reverse_batch_through_a_while_loop_in_a_kernel():
    cs = np.linspace(2.0, 5.0, 64)
    dc1, dc2 = np.zeros(64), np.ones(64)
    kernel(grad_newton_batch2, plugins=P)[2, 32, "cpu"](cs, dc1, dc2)
    np.testing.assert_allclose(dc1, 0.5 / np.sqrt(cs), rtol=1e-9)
    np.testing.assert_allclose(dc2, 1.0 + 0.5 / np.sqrt(cs), rtol=1e-9)


def test_batch_kernels_assemble_with_ptxas(check_ptx):
    ptx = kernel(grad_energy_batch2, plugins=P).inspect_asm(A, A, A, A, A, A)
    assert ptx.count("sin.approx") == 0  # libdevice's sin, not the fast approximation
    check_ptx(ptx)
    check_ptx(kernel(tangents_batch2, plugins=P).inspect_asm(A, A, A, T.ArrayType(T.float64, 2, "C")))
    check_ptx(kernel(grad_newton_batch2, plugins=P).inspect_asm(A, A, A))


@pytest.mark.gpu
def test_batch_kernels_on_the_gpu():
    cp = pytest.importorskip("cupy")
    x, w, d = kernel_inputs()
    dd = [cp.asarray(v) for v in d]
    kernel(grad_energy_batch2, plugins=P)[4, 64](cp.asarray(x), dd[0], dd[1], cp.asarray(w), dd[2], dd[3])
    check_kernel_gradients(x, w, [cp.asnumpy(v) for v in dd])
    out = cp.zeros((2, 256))
    kernel(tangents_batch2, plugins=P)[4, 64](cp.asarray(x), cp.ones(256), cp.full(256, -3.0), out)
    np.testing.assert_allclose(cp.asnumpy(out)[1], -3.0 * (np.cos(x) * x + np.sin(x)), rtol=1e-13, atol=1e-15)


# -- limits: typed errors ------------------------------------------------------------
def test_batches_of_different_widths_are_a_typed_error():
    with pytest.raises(GPUCompilerError, match="same number of shadows"):
        autodiff(Forward, f2, BatchDuplicated(0.5, (1.0, 2.0)), BatchDuplicated(3.0, (1.0,)))
    with pytest.raises(GPUCompilerError, match="Duplicated ones"):
        autodiff(Forward, f2, BatchDuplicated(0.5, (1.0, 2.0)), Duplicated(3.0, 1.0))


def clip(x):
    return min(max(x, -1.0), 1.0)


def clip_fwd(x, dx):
    return dx


def clip_rev(x, dret):
    return (dret,)


custom_rule(clip, forward=clip_fwd, reverse=clip_rev)


def uses_clip(x):
    return clip(x) * x


def test_forward_batch_calls_a_forward_rule_once_per_lane():
    """clip's rule passes the tangent through (straight-through), also where clip is flat."""
    ((t1, t2),) = autodiff(Forward, uses_clip, BatchDuplicated(3.0, (1.0, 2.0)))
    assert (t1, t2) == (1.0 * 3.0 + 1.0, 2.0 * 3.0 + 2.0)  # d(clip(x) x) = dclip x + clip dx, clip(3) = 1


def test_reverse_batch_through_a_custom_reverse_rule_is_a_typed_error():
    with pytest.raises(GPUCompilerError, match=r"batch mode \(width 2\) of .*custom reverse rule"):
        autodiff(Reverse, uses_clip_array, BatchDuplicated(np.array([3.0]), (np.zeros(1), np.zeros(1))))


def uses_clip_array(a):
    return clip(a[0]) * a[0]


def power(x, n):
    """x**n by recursion: a call the optimiser keeps out of line."""
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def through_calls(x, y):
    return power(x, 3) * math.sin(y) + power(y, 2)


def power_of_first(a, n):
    return power(a[0], n) * a[1]


def test_batch_through_calls_kept_out_of_line_forward_and_reverse():
    """The callee's derivative of the batch's width is called once for all lanes."""
    x, y = 0.7, 0.3
    ((tx, ty),) = autodiff(Forward, through_calls, BatchDuplicated(x, (1.0, 0.0)), BatchDuplicated(y, (0.0, 1.0)))
    assert tx == pytest.approx(3 * x * x * math.sin(y), rel=1e-14)
    assert ty == pytest.approx(x ** 3 * math.cos(y) + 2 * y, rel=1e-14)
    lanes = (np.zeros(2), np.ones(2))
    autodiff(Reverse, power_of_first, BatchDuplicated(np.array([x, 2.0]), lanes), 3)
    np.testing.assert_allclose(lanes[0], [3 * x * x * 2.0, x ** 3], rtol=1e-14)
    np.testing.assert_allclose(lanes[1], [1 + 3 * x * x * 2.0, 1 + x ** 3], rtol=1e-14)
    gx, gy = autodiff(Reverse, through_calls, Active(x), Active(y))  # width 1, as a cross-check
    assert gx == pytest.approx(tx, rel=1e-14) and gy == pytest.approx(ty, rel=1e-14)
