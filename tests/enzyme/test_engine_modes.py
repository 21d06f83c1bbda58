"""Unit tests of the AD engine on small hand-written IR: forward and reverse mode,
loops, phis, math rules, memory, calls, and loud errors for what has no rule."""

from __future__ import annotations

import ctypes
import math

import pytest

import enzyme_plugin
from enzyme_plugin import ADError
from gpucompiler.runtime import CPULibrary

D = ctypes.c_double
PD = ctypes.POINTER(D)

HEAD = """
@enzyme_const = global i32 0
@enzyme_dup = global i32 0
declare double @__enzyme_autodiff(ptr, ...)
declare double @__enzyme_fwddiff(ptr, ...)
declare double @llvm.sin.f64(double)
declare double @exp(double)
"""

# s = sum_i x[i]^2 * sin(y) over a loop with a phi; also a call to a defined helper
LOOP = HEAD + """
define double @sq(double %v) {
  %m = fmul double %v, %v
  ret double %m
}
define double @f(ptr %x, i32 %n, double %y) {
entry:
  %c0 = icmp sgt i32 %n, 0
  br i1 %c0, label %loop, label %done
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %s = phi double [ 0.0, %entry ], [ %s1, %loop ]
  %p = getelementptr inbounds double, ptr %x, i32 %i
  %v = load double, ptr %p
  %q = call double @sq(double %v)
  %sy = call double @llvm.sin.f64(double %y)
  %t = fmul double %q, %sy
  %s1 = fadd double %s, %t
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, %n
  br i1 %c, label %loop, label %done
done:
  %r = phi double [ 0.0, %entry ], [ %s1, %loop ]
  %e = call double @exp(double %r)
  ret double %e
}
define double @grad(ptr %x, ptr %dx, i32 %n, double %y) {
  %k = load i32, ptr @enzyme_const
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @f, ptr %x, ptr %dx, i32 %k, i32 %n, double %y)
  ret double %d
}
define double @fwd(ptr %x, ptr %vx, i32 %n, double %y, double %vy) {
  %d = call double (ptr, ...) @__enzyme_fwddiff(ptr @f, ptr %x, ptr %vx, i32 %n, double %y, double %vy)
  ret double %d
}
"""


def _reference(x, y):
    s = sum(v * v for v in x) * math.sin(y)
    e = math.exp(s)
    return [e * 2 * v * math.sin(y) for v in x], e * sum(v * v for v in x) * math.cos(y)


@pytest.fixture(scope="module")
def loop_lib():
    return CPULibrary.from_ir(enzyme_plugin.differentiate(LOOP))


def test_reverse_loop_phi_call_math(loop_lib):
    grad = loop_lib.function("grad", D, PD, PD, ctypes.c_int, D)
    x = (D * 4)(0.1, -0.2, 0.3, 0.25)
    dx = (D * 4)()
    dy = grad(x, dx, 4, 0.7)
    want_dx, want_dy = _reference(list(x), 0.7)
    assert list(dx) == pytest.approx(want_dx, rel=1e-12)
    assert dy == pytest.approx(want_dy, rel=1e-12)


def test_reverse_zero_trip_loop(loop_lib):
    grad = loop_lib.function("grad", D, PD, PD, ctypes.c_int, D)
    x, dx = (D * 1)(1.0), (D * 1)()
    assert grad(x, dx, 0, 0.7) == 0.0 and dx[0] == 0.0


def test_forward_agrees_with_reverse(loop_lib):
    fwd = loop_lib.function("fwd", D, PD, PD, ctypes.c_int, D, D)
    x = (D * 4)(0.1, -0.2, 0.3, 0.25)
    vx = (D * 4)(1.0, 0.5, -1.0, 2.0)
    want_dx, want_dy = _reference(list(x), 0.7)
    got = fwd(x, vx, 4, 0.7, 0.3)
    assert got == pytest.approx(sum(a * b for a, b in zip(want_dx, vx)) + 0.3 * want_dy, rel=1e-12)


def test_overwritten_memory_and_branches():
    # y = x[0]; x[0] = x[0] * x[0]; return y > 0 ? x[0] * y : -y   (x[0] read, then overwritten)
    ir = HEAD + """
define double @g(ptr %x) {
entry:
  %a = load double, ptr %x
  %b = fmul double %a, %a
  store double %b, ptr %x
  %c = fcmp ogt double %a, 0.0
  br i1 %c, label %pos, label %neg
pos:
  %b2 = load double, ptr %x
  %m = fmul double %b2, %a
  br label %out
neg:
  %n = fneg double %a
  br label %out
out:
  %r = phi double [ %m, %pos ], [ %n, %neg ]
  ret double %r
}
define void @grad(ptr %x, ptr %dx) {
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @g, ptr %x, ptr %dx)
  ret void
}
"""
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(ir))
    grad = lib.function("grad", None, PD, PD)
    for a, want in ((1.5, 3 * 1.5 ** 2), (-2.0, -1.0)):
        x, dx = (D * 1)(a), (D * 1)()
        grad(x, dx)
        assert dx[0] == pytest.approx(want, rel=1e-12)


def test_unsupported_instruction_raises_naming_it():
    ir = HEAD + """
declare double @mystery(double)
define double @h(double %x) {
  %y = call double @mystery(double %x)
  ret double %y
}
define double @grad(double %x) {
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @h, double %x)
  ret double %d
}
"""
    with pytest.raises(ADError) as info:
        enzyme_plugin.differentiate(ir)
    assert "@mystery" in str(info.value) and "@h" in str(info.value)
    assert info.value.function == "h"


def _grad_of(body: str, sig: str = "ptr %x, i64 %n") -> str:
    return HEAD + f"""
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
define double @h({sig}) {{
{body}
}}
define void @grad(ptr %x, ptr %dx) {{
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @h, ptr %x, ptr %dx, i64 4)
  ret void
}}
"""


SILENT_PATHS = {
    # an atomic add of an active value into memory with a shadow
    "atomicrmw": ("""  %v = load double, ptr %x
  %m = fmul double %v, %v
  %o = atomicrmw fadd ptr %x, double %m monotonic
  ret double %o""", "atomic"),
    # an i64 load of doubles used as an integer (not only copied)
    "integer load of doubles": ("""  %p = getelementptr inbounds double, ptr %x, i64 1
  %v = load double, ptr %p
  %i = load i64, ptr %x
  %j = add i64 %i, 1
  store i64 %j, ptr %p
  ret double %v""", "integer"),
    # a memcpy whose bytes are never typed in the function
    "untyped memcpy": ("""  %q = getelementptr inbounds i8, ptr %x, i64 16
  call void @llvm.memcpy.p0.p0.i64(ptr %q, ptr %x, i64 16, i1 false)
  ret double 0.0""", "cannot deduce"),
    # a pointer into active memory selected with one that has no shadow
    "select of pointers": ("""  %c = icmp sgt i64 %n, 2
  %p = select i1 %c, ptr %x, ptr @enzyme_dup
  %v = load double, ptr %p
  ret double %v""", "shadow"),
}


@pytest.mark.parametrize("case", sorted(SILENT_PATHS))
def test_would_be_silent_paths_raise(case):
    body, needle = SILENT_PATHS[case]
    with pytest.raises(ADError) as info:
        enzyme_plugin.differentiate(_grad_of(body))
    assert needle in str(info.value) and "@h" in str(info.value), str(info.value)


def test_integer_copy_of_doubles_moves_the_adjoint():
    """``load i64``/``store i64`` between doubles (a lowered memcpy): the adjoint moves with the bytes."""
    body = """  %p = getelementptr inbounds double, ptr %x, i64 1
  %v = load double, ptr %x
  %m = fmul double %v, 3.0
  store double %m, ptr %p
  %q = getelementptr inbounds double, ptr %x, i64 2
  %i = load i64, ptr %p
  store i64 %i, ptr %q
  %r = load double, ptr %q
  %s = fmul double %r, %r
  ret double %s"""
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(_grad_of(body)))
    grad = lib.function("grad", None, PD, PD)
    x, dx = (D * 4)(1.5, 0.0, 0.0, 0.0), (D * 4)()
    grad(x, dx)
    # s = (3 x0)^2: ds/dx0 = 18 x0; x[1], x[2] are overwritten before being read
    assert list(dx) == pytest.approx([18 * 1.5, 0.0, 0.0, 0.0], rel=1e-12)


def test_struct_of_doubles_stored_whole():
    """``store {double, double}`` into memory with a shadow: both fields carry their adjoints."""
    body = """  %v = load double, ptr %x
  %w = fmul double %v, %v
  %a = insertvalue { double, double } poison, double %v, 0
  %b = insertvalue { double, double } %a, double %w, 1
  %q = getelementptr inbounds double, ptr %x, i64 2
  store { double, double } %b, ptr %q
  %r = load double, ptr %q
  %p = getelementptr inbounds double, ptr %x, i64 3
  %t = load double, ptr %p
  %s = fmul double %r, %t
  ret double %s"""
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(_grad_of(body)))
    grad = lib.function("grad", None, PD, PD)
    x, dx = (D * 4)(1.5, 0.0, 0.0, 0.0), (D * 4)()
    grad(x, dx)
    # s = x0 * x0^2: ds/dx0 = 3 x0^2
    assert list(dx) == pytest.approx([3 * 1.5 ** 2, 0.0, 0.0, 0.0], rel=1e-12)


def test_custom_gradient_of_a_returning_function_runs_the_primal_once():
    """The augmented rule returns Enzyme's ``{tape, primal result}``: the primal is not run again."""
    ir = HEAD + """
@calls = global i64 0
define double @cube(double %x) noinline {
  %c = load i64, ptr @calls
  %c1 = add i64 %c, 1
  store i64 %c1, ptr @calls
  %x2 = fmul double %x, %x
  %x3 = fmul double %x2, %x
  ret double %x3
}
define { ptr, double } @cube_aug(double %x) {
  %y = call double @cube(double %x)
  %r = insertvalue { ptr, double } { ptr null, double poison }, double %y, 1
  ret { ptr, double } %r
}
define { double } @cube_rev(double %x, double %d, ptr %tape) {
  %x2 = fmul double %x, %x
  %g = fmul double %x2, 7.0
  %gd = fmul double %g, %d
  %r = insertvalue { double } poison, double %gd, 0
  ret { double } %r
}
@__enzyme_register_gradient_cube = global [3 x ptr] [ptr @cube, ptr @cube_aug, ptr @cube_rev]
define double @h(double %x) {
  %y = call double @cube(double %x)
  %s = fmul double %y, %y
  ret double %s
}
define double @grad(double %x) {
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @h, double %x)
  ret double %d
}
define i64 @count() {
  %c = load i64, ptr @calls
  ret i64 %c
}
"""
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(ir))
    grad = lib.function("grad", D, D)
    count = lib.function("count", ctypes.c_int64)
    # d/dx (cube(x))^2 with the rule's d cube = 7 x^2 (not 3 x^2): 2 x^3 * 7 x^2
    assert grad(1.5) == pytest.approx(2 * 1.5 ** 3 * 7 * 1.5 ** 2, rel=1e-12)
    assert count() == 1


FREEZE = HEAD + """
define double @f(double %x) {
  %y = fmul double %x, %x
  %z = freeze double %y
  ret double %z
}
define double @grad(double %x) {
  %r = call double (ptr, ...) @__enzyme_autodiff(ptr @f, double %x)
  ret double %r
}
define double @tangent(double %x) {
  %r = call double (ptr, ...) @__enzyme_fwddiff(ptr @f, double %x, double 1.0)
  ret double %r
}
"""


def test_freeze_carries_the_derivative():
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(FREEZE))
    for name in ("grad", "tangent"):
        assert lib.function(name, D, D)(1.5) == pytest.approx(3.0, rel=1e-15)


ONE_ARG = HEAD + """
define double @f(double %x) {
  %y = fmul double %x, %x
  ret double %y
}
"""


@pytest.mark.parametrize("call,message", [
    ("call double (ptr, ...) @__enzyme_autodiff(ptr @f, double %x, double %x)", "too many"),
    ("call double (ptr, ...) @__enzyme_autodiff(ptr @f, ptr @enzyme_const)", "missing the value after enzyme_const"),
    ("call double (ptr, ...) @__enzyme_autodiff(ptr @f)", "too few arguments"),
])
def test_marker_calls_with_wrong_arguments_are_aderrors(call, message):
    ir = ONE_ARG + f"define double @g(double %x) {{\n  %r = {call}\n  ret double %r\n}}\n"
    with pytest.raises(ADError, match=message):
        enzyme_plugin.differentiate(ir)
