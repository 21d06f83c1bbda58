"""Registered rules whose shape does not fit, and function-like declarations
naming no known function, are ADErrors (never a zero gradient)."""

from __future__ import annotations

import pytest

import enzyme_plugin

_RULE = """
define float @f(float %x) {
  %y = fmul float %x, %x
  ret float %y
}
define ptr @f_aug(float %x) {
  ret ptr null
}
define {rev_ret} @f_rev(float %x, float %d, ptr %t) {
  ret {rev_ret} {rev_val}
}
@__enzyme_register_gradient_f = global [3 x ptr] [ptr @f, ptr @f_aug, ptr @f_rev]
@enzyme_out = global i32 0
declare float @__enzyme_autodiff(ptr, ...)
define float @g(float %x) {
  %m = load i32, ptr @enzyme_out
  %r = call float (ptr, ...) @__enzyme_autodiff(ptr @f, i32 %m, float %x)
  ret float %r
}
"""


def test_reverse_rule_of_wrong_shape_raises():
    text = _RULE.replace("{rev_ret}", "double").replace("{rev_val}", "0.0")
    with pytest.raises(enzyme_plugin.ADError, match=r"f_rev.*returns double"):
        enzyme_plugin.differentiate(text)


def test_reverse_rule_returning_the_adjoint_reaches_the_caller():
    from gpucompiler.llvm.binding import parse_ir

    text = _RULE.replace("{rev_ret}", "float").replace("{rev_val}", "%d")
    out = enzyme_plugin.differentiate(text)
    parse_ir(out)
    assert "zeroinitializer" not in out.split("@g(")[1]


_LIKE = """
@.str = private constant [8 x i8] c"nosuchf\\00"
@__enzyme_function_like = global [2 x ptr] [ptr @h, ptr @.str]
define double @h(double %x) {
  %y = fmul double %x, %x
  ret double %y
}
declare double @__enzyme_autodiff(ptr, ...)
define double @g(double %x) {
  %r = call double (ptr, ...) @__enzyme_autodiff(ptr @h, double %x)
  ret double %r
}
"""


def test_function_like_unknown_function_raises():
    with pytest.raises(enzyme_plugin.ADError, match="nosuchf"):
        enzyme_plugin.differentiate(_LIKE)


def test_function_like_differentiated_directly_takes_the_rule():
    import ctypes

    from gpucompiler.runtime import CPULibrary

    text = _LIKE.replace("nosuchf", "log1p\\00\\00")  # the same 8 bytes
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(text))
    g = lib.function("g", ctypes.c_double, ctypes.c_double)
    assert g(0.5) == pytest.approx(1 / 1.5, rel=1e-12)  # log1p's derivative, not the body's 2x


def test_unimplemented_enzyme_declaration_is_named():
    """``__enzyme_inactivefn`` asks for f to be inactive: ignoring it would differentiate f."""
    text = _LIKE.replace("@__enzyme_function_like =", "@__enzyme_inactivefn =")
    with pytest.raises(enzyme_plugin.ADError, match="__enzyme_inactivefn is not supported"):
        enzyme_plugin.differentiate(text)
