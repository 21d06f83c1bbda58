"""The CPU runtime: object code loaded through the JIT, called with ctypes, checked against NumPy."""

from __future__ import annotations

import ctypes
import gc
import math

import llvmlite.binding as llvm
import numpy as np
import pytest

from gpucompiler.core import CompilerConfig
from gpucompiler.core import CompilerJob, LLVMSource
from gpucompiler.pipeline import compile
from gpucompiler.runtime import CPULibrary, LinkError
from gpucompiler.targets import NativeTarget

ARITH = """
define i64 @gcd(i64 %a, i64 %b) {
entry:
  br label %loop
loop:
  %x = phi i64 [ %a, %entry ], [ %y, %body ]
  %y = phi i64 [ %b, %entry ], [ %r, %body ]
  %done = icmp eq i64 %y, 0
  br i1 %done, label %exit, label %body
body:
  %r = srem i64 %x, %y
  br label %loop
exit:
  ret i64 %x
}

define double @poly(double %x) {
  %x2 = fmul double %x, %x
  %a = fmul double %x2, 3.0
  %b = fsub double %a, %x
  %c = fadd double %b, 0.5
  ret double %c
}
"""

SUM = """
define double @dot(ptr %a, ptr %b, i64 %n) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  %acc = phi double [ 0.0, %entry ], [ %acc1, %body ]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %exit
body:
  %pa = getelementptr double, ptr %a, i64 %i
  %pb = getelementptr double, ptr %b, i64 %i
  %va = load double, ptr %pa
  %vb = load double, ptr %pb
  %m = fmul double %va, %vb
  %acc1 = fadd double %acc, %m
  store double %m, ptr %pa
  %i1 = add i64 %i, 1
  br label %head
exit:
  ret double %acc
}
"""

LIBM = """
declare double @sin(double)
declare double @gpuc_test_scale(double)
define double @f(double %x) {
  %s = call double @sin(double %x)
  %t = call double @gpuc_test_scale(double %s)
  ret double %t
}
"""

SCALE = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(lambda v: 3.0 * v)


def _as_ptr(array: np.ndarray):
    return array.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def test_integer_and_float_functions():
    lib = CPULibrary.from_ir(ARITH)
    gcd = lib.function("gcd", ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
    poly = lib.function("poly", ctypes.c_double, ctypes.c_double)
    for a, b in [(12, 18), (17, 5), (2**40, 2**20 * 3), (0, 9)]:
        assert gcd(a, b) == math.gcd(a, b)
    xs = np.linspace(-3, 3, 13)
    assert np.array_equal([poly(float(x)) for x in xs], 3 * xs * xs - xs + 0.5)
    assert set(lib.names) == {"gcd", "poly"}


def test_loop_over_numpy_arrays():
    dot = CPULibrary.from_ir(SUM).function(
        "dot", ctypes.c_double, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
        ctypes.c_int64)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(1000), rng.standard_normal(1000)
    expected_products = a * b
    total = dot(_as_ptr(a), _as_ptr(b), a.size)
    assert total == pytest.approx(np.dot(expected_products, np.ones_like(a)), rel=1e-12)
    assert np.array_equal(a, expected_products)  # the loop wrote the products back


def test_external_symbols_resolved_by_name():
    llvm.add_symbol("gpuc_test_scale", ctypes.cast(SCALE, ctypes.c_void_p).value)
    lib = CPULibrary.from_ir(LIBM)
    f = lib.function("f", ctypes.c_double, ctypes.c_double)
    xs = np.linspace(-2, 2, 9)
    assert np.allclose([f(float(x)) for x in xs], 3 * np.sin(xs), rtol=0, atol=1e-15)


def test_function_keeps_library_alive():
    poly = CPULibrary.from_ir(ARITH).function("poly", ctypes.c_double, ctypes.c_double)
    gc.collect()
    assert poly(2.0) == 10.5


def test_unresolved_symbol_is_a_typed_error():
    ir = "declare double @gpuc_no_such_symbol(double)\n" \
         "define double @g(double %x) {\n  %y = call double @gpuc_no_such_symbol(double %x)\n  ret double %y\n}\n"
    with pytest.raises(LinkError, match=r"gpuc_no_such_symbol.*add_symbol"):
        CPULibrary.from_ir(ir)


@pytest.mark.parametrize("emit", [("obj",), ("llvm",)])
def test_from_result_of_the_pipeline(emit):
    job = CompilerJob(LLVMSource(SUM, "dot"), CompilerConfig(target=NativeTarget(), opt_level=3))
    result = compile(job, emit)
    dot = CPULibrary.from_result(result).function(
        "dot", ctypes.c_double, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
        ctypes.c_int64)
    a, b = np.arange(1.0, 8.0), np.full(7, 0.5)
    assert dot(_as_ptr(a), _as_ptr(b), 7) == 14.0


def test_from_result_rejects_other_targets():
    from gpucompiler.errors import ConfigError
    from gpucompiler.targets import PTXTarget

    result = compile(CompilerJob(LLVMSource(ARITH, "poly"), CompilerConfig(target=PTXTarget())))
    with pytest.raises(ConfigError, match="native"):
        CPULibrary.from_result(result)
