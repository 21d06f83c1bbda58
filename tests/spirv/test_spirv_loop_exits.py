"""Values leaving a loop on Vulkan are each invocation's own (``gpucompiler/targets/spirv/exits.py``).

Mesa's lavapipe (llvmpipe, Mesa 22.3) keeps running a loop's body for an invocation that has left the
loop while others of its SIMD group iterate on, and the code after a rotated loop (exit test in the
latch) read what the body computed then (a tape load there read 0): the batch gradient of
a float32 Newton loop was NaN for the invocations that converged early, with the engine's IR, its
emulation and the SPIR-V (``spirv-val``) all right. The kernels below are that gradient written by
hand (a tape stored by a forward loop and read back by a reverse loop, no AD), on lavapipe against the
CPU grid emulation and ``d sqrt(c)/dc``; without the rewrite their early lanes gave ``-inf`` or NaN.
Then the AD batch gradients themselves: the corpus's Newton loop, and one whose exit test scales the
residual by an infinite factor (a value only compared: no reverse, else ``0 * inf``). The rewrite itself
is checked on the CPU: each rewritten loop computes what the original did.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from enzyme_plugin import BatchDuplicated, Const, Reverse, autodiff
from gpucompiler import device as gd
from gpucompiler.kernel import Kernel
from gpucompiler.llvm.parser import parse
from gpucompiler.runtime import CPULibrary
from gpucompiler.targets.spirv import SPIRVTarget
from gpucompiler.targets.spirv.exits import exit_through_headers
from tests.enzyme_plugin.test_batch_mode import grad_newton_batch2

f32 = np.float32


def newton_reverse(cs, tape, out):
    """sqrt(c) by Newton's method, then its derivative in c by a reverse loop over the kept iterates."""
    i = gd.grid(1)
    if i < cs.shape[0]:
        c = cs[i]
        y = c
        k = 0
        while abs(y * y - c) > 1e-12 and k < 60:
            q = c / y
            tape[i * 128 + 2 * k] = y
            tape[i * 128 + 2 * k + 1] = q
            y = 0.5 * (y + q)
            k += 1
        a = f32(1.0)
        g = f32(0.0)
        k -= 1
        while k >= 0:
            y = tape[i * 128 + 2 * k]
            q = tape[i * 128 + 2 * k + 1]
            h = a * f32(0.5)
            g += h / y
            a = h - h * q / y
            k -= 1
        out[i] = g + a


def newton_reverse_break(cs, tape, out):
    """The same with both loops leaving by ``break``."""
    i = gd.grid(1)
    if i < cs.shape[0]:
        c = cs[i]
        y = c
        k = 0
        while k < 60:
            tape[i * 128 + k] = y
            y = 0.5 * (y + c / y)
            k += 1
            if abs(y * y - c) <= 1e-12:
                break
        a = f32(1.0)
        g = f32(0.0)
        k -= 1
        while True:
            t = tape[i * 128 + k]
            h = a * f32(0.5)
            g += h / t
            a = h - h * c / (t * t)
            k -= 1
            if k < 0:
                break
        out[i] = g + a


def newton_reverse_counted(cs, tape, out):
    """The same over counted loops whose trip count is the invocation's (4 or 60 Newton steps)."""
    i = gd.grid(1)
    if i < cs.shape[0]:
        c = cs[i]
        n = 60 if i % 2 == 0 else 4
        y = c
        for k in range(n):
            tape[i * 128 + k] = y
            y = 0.5 * (y + c / y)
        a = f32(1.0)
        g = f32(0.0)
        for j in range(n):
            t = tape[i * 128 + n - 1 - j]
            h = a * f32(0.5)
            g += h / t
            a = h - h * c / (t * t)
        out[i] = g + a


C = np.linspace(2.0, 5.0, 64).astype(f32)
#: neighbours that converge after 60 and after 4 iterations in float32 (``abs(y*y - c) > 1e-12``)
ALTERNATING = np.array([C[0], C[1]] * 32, f32)


@pytest.mark.parametrize("fn", [newton_reverse, newton_reverse_break, newton_reverse_counted])
@pytest.mark.parametrize("cs", [ALTERNATING, C], ids=["alternating", "linspace"])
def test_values_leaving_a_divergent_loop_are_each_invocations_own(vulkan_device, fn, cs):
    got, want = np.zeros(64, f32), np.zeros(64, f32)
    k = Kernel(fn)
    k[2, 32, SPIRVTarget()](cs.copy(), np.zeros(64 * 128, f32), got)
    k[2, 32, "cpu"](cs.copy(), np.zeros(64 * 128, f32), want)
    assert np.isfinite(got).all(), got
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(got, 0.5 / np.sqrt(cs.astype(np.float64)), rtol=1e-4)


def guarded_sqrt(cs, ws, i):
    """Newton's sqrt whose exit test scales the residual by ``w`` (only compared: no reverse)."""
    c = cs[i]
    y = c
    k = 0
    while abs((y * y - c) * ws[i]) > 1e-6 and k < 60:
        y = 0.5 * (y + c / y)
        k += 1
    return y


def grad_guarded_batch2(cs, ws, dc1, dc2):
    i = gd.grid(1)
    if i < cs.shape[0]:
        autodiff(Reverse, guarded_sqrt, BatchDuplicated(cs, (dc1, dc2)), Const(ws), Const(i))


@pytest.mark.parametrize("cs", [ALTERNATING, C], ids=["alternating", "linspace"])
def test_batch_gradients_through_a_divergent_newton_loop_on_vulkan(vulkan_device, cs):
    """The gradients that were NaN on lavapipe for the invocations leaving early, and the same with the
    residual scaled by an infinite (or zero) factor that only decides the exit."""
    want = 0.5 / np.sqrt(cs.astype(np.float64))
    dc1, dc2 = np.zeros(64, f32), np.ones(64, f32)
    Kernel(grad_newton_batch2, plugins=("enzyme",))[2, 32, SPIRVTarget()](cs.copy(), dc1, dc2)
    np.testing.assert_allclose(dc1, want, rtol=1e-5)
    np.testing.assert_allclose(dc2, 1.0 + want, rtol=1e-5)
    ws = np.array([np.inf, 1.0, -np.inf, 0.0] * 16, f32)
    dc1, dc2 = np.zeros(64, f32), np.zeros(64, f32)
    Kernel(grad_guarded_batch2, plugins=("enzyme",))[2, 32, SPIRVTarget()](cs.copy(), ws, dc1, dc2)
    converged = ws != 0.0  # w = 0: no iteration, y = c
    np.testing.assert_allclose(dc1[converged], want[converged], rtol=1e-5)
    np.testing.assert_array_equal(dc1[~converged], 1.0)
    np.testing.assert_array_equal(dc2, dc1)


# -- the rewrite on the CPU: the same results from every loop shape it rewrites (and the ones it leaves)
LOOPS = """
define double @rotated(double %x, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %s = phi double [ %x, %entry ], [ %s1, %loop ]
  %t = fmul double %s, 0.5
  %s1 = fadd double %t, 1.0
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %n
  br i1 %more, label %loop, label %exit
exit:
  %fi = sitofp i64 %i1 to double
  %r = fadd double %s1, %fi
  %u = fmul double %t, %r
  ret double %u
}

define double @branchy(double %x, i64 %n) {
entry:
  %skip = icmp slt i64 %n, 1
  br i1 %skip, label %done, label %head
head:
  %i = phi i64 [ 0, %entry ], [ %i1, %latch ]
  %s = phi double [ %x, %entry ], [ %s2, %latch ]
  %odd = and i64 %i, 1
  %isodd = icmp eq i64 %odd, 1
  br i1 %isodd, label %a, label %b
a:
  %sa = fmul double %s, 1.5
  br label %latch
b:
  %sb = fsub double %s, 2.0
  br label %latch
latch:
  %s2 = phi double [ %sa, %a ], [ %sb, %b ]
  %i1 = add i64 %i, 1
  %stop = icmp sge i64 %i1, %n
  br i1 %stop, label %done, label %head
done:
  %r = phi double [ %x, %entry ], [ %s2, %latch ]
  %w = phi i64 [ -1, %entry ], [ %i, %latch ]
  %fw = sitofp i64 %w to double
  %q = fadd double %r, %fw
  ret double %q
}

define double @nested(double %x, i64 %n) {
entry:
  br label %outer
outer:
  %j = phi i64 [ 0, %entry ], [ %j1, %outer.latch ]
  %acc = phi double [ 0.0, %entry ], [ %acc1, %outer.latch ]
  br label %inner
inner:
  %k = phi i64 [ 0, %outer ], [ %k1, %inner ]
  %p = phi double [ %x, %outer ], [ %p1, %inner ]
  %p1 = fmul double %p, 0.75
  %k1 = add i64 %k, 1
  %kmore = icmp ult i64 %k1, %j
  br i1 %kmore, label %inner, label %outer.latch
outer.latch:
  %acc1 = fadd double %acc, %p1
  %j1 = add i64 %j, 1
  %jmore = icmp slt i64 %j1, %n
  br i1 %jmore, label %outer, label %exit
exit:
  %v = fadd double %acc1, %p
  ret double %v
}

define i64 @header_value(i64 %a, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %h = phi i64 [ %a, %entry ], [ %h1, %loop ]
  %prev = phi i64 [ 7, %entry ], [ %h, %loop ]
  %h1 = mul i64 %h, 3
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %n
  br i1 %more, label %loop, label %exit
exit:
  %r = mul i64 %prev, 1000
  %s = add i64 %r, %h
  ret i64 %s
}

define double @pointer_leaves(ptr %a, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %p = getelementptr double, ptr %a, i64 %i
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %n
  br i1 %more, label %loop, label %exit
exit:
  %v = load double, ptr %p
  ret double %v
}
"""


def _functions(text):
    lib = CPULibrary.from_ir(text)
    d, i64 = ctypes.c_double, ctypes.c_int64
    return {"rotated": lib.function("rotated", d, d, i64), "branchy": lib.function("branchy", d, d, i64),
            "nested": lib.function("nested", d, d, i64), "header_value": lib.function("header_value", i64, i64, i64),
            "pointer_leaves": lib.function("pointer_leaves", d, ctypes.POINTER(d), i64)}


def test_rewritten_loops_compute_what_the_originals_did():
    module = parse(LOOPS)
    counts = {name: exit_through_headers(fn) for name, fn in module.functions.items()}
    assert counts == {"rotated": 1, "branchy": 1, "nested": 2, "header_value": 1, "pointer_leaves": 0}
    rewritten = str(module)
    assert rewritten.count(".gate:") == 5
    old, new = _functions(LOOPS), _functions(rewritten)
    for n in (0, 1, 2, 3, 7):
        for x in (0.25, -3.0, 1e3):
            for name in ("rotated", "branchy", "nested"):
                assert new[name](x, n) == old[name](x, n), (name, x, n)
        m = max(n, 1)  # iterations: the test is at the end
        assert new["header_value"](5, n) == old["header_value"](5, n) == 1000 * (7 if m == 1 else 5 * 3 ** (m - 2)) + 5 * 3 ** (m - 1)
    a = np.arange(8.0)
    assert new["pointer_leaves"](a.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), 5) == 4.0
