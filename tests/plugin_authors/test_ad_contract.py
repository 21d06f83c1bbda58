"""The public contract between another plugin and Enzyme: ``enzyme_plugin.contract.mark_inactive`` makes
calls of a function inactive for AD (no private name prefix, no hand-rolled rename), and the function
gets its name back after AD; ``register_rule`` gives a function IR derivative rules (the installed
``straight`` plugin's straight-through estimators, a test plugin's two-argument rule, a shadowed
pointer's), and a rule that contradicts the function's signature is a typed error naming the plugin."""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

import contract_funcs as C
import enzyme_plugin
import gpucompiler.plugin as gp
from enzyme_plugin.contract import AD_MARKERS, RuleSignatureError, mark_inactive, register_rule
from gpucompiler import jit, kernel
from gpucompiler import types as T
from gpucompiler.errors import PluginError
from gpucompiler.llvm import Builder, Function, constant, parse
from gpucompiler.llvm import types as LT
from gpucompiler.runtime import CPULibrary


class Constant(gp.Plugin):
    """Marks every function named ``*.noise(...)`` inactive for AD."""

    name, version = "constant_noise", "1"

    @gp.callback("pre_ad")
    def mark(self, module):
        model = module.model
        for fn in [f for n, f in model.functions.items() if ".noise(" in n]:
            mark_inactive(model, fn)


@pytest.mark.parametrize("opt", [0, 1, 2, 3])
def test_an_inactive_function_contributes_no_derivative(register, opt):
    register(Constant)
    marked = jit(C.dg, plugins=("enzyme", "constant_noise"), opt_level=opt)
    forward = jit(C.fg, plugins=("enzyme", "constant_noise"), opt_level=opt)
    plain = jit(C.dg, plugins=("enzyme",), opt_level=opt)
    for x in (0.3, -1.2, 2.0):
        assert marked(x) == pytest.approx(math.sin(x) + 2 * x, rel=1e-14)  # d/dx treats noise(x) as constant
        assert forward(x) == pytest.approx(math.sin(x) + 2 * x, rel=1e-14)
        assert plain(x) == pytest.approx(math.sin(x) + x * math.cos(x) + 2 * x, rel=1e-14)
    names = set(parse(marked.inspect_llvm(T.float64)).functions)
    assert not [n for n in names if n.startswith("gpuc.inactive.")]  # its name is back after AD


def test_inactive_in_the_grid_emulation_and_on_ptx(register, check_ptx, libdevice_path):
    register(Constant)
    x = np.linspace(-2.0, 2.0, 40)
    out = np.zeros(40)
    k = kernel(C.k_dg, plugins=("enzyme", "constant_noise"))
    k[2, 32, "cpu"](x, out)  # pyright: ignore[reportIndexIssue]
    np.testing.assert_allclose(out, np.sin(x) + 2 * x, rtol=1e-14)
    assert not [n for n in parse(k.inspect_llvm(x, out)).functions if n.startswith("gpuc.inactive.")]
    check_ptx(k.inspect_asm(x, out))


def test_the_model_renames_a_function_and_its_uses():
    m = parse("declare double @f(double)\ndefine double @g(double %x) {\n  %y = call double @f(double %x)\n"
              "  ret double %y\n}\n")
    m.rename_function(m.functions["f"], "h")
    assert list(m.functions) == ["h", "g"] and "call double @h(double %x)" in str(m)
    m.add_function(Function("f", LT.function(LT.double, [LT.double])))
    with pytest.raises(ValueError, match="@f already exists"):
        m.rename_function(m.functions["h"], "f")


# -- custom rules from another plugin: enzyme_plugin.contract.register_rule ----------------------
XS = (0.3, -1.2, 2.05, 0.125)


@pytest.mark.parametrize("opt", [0, 1, 2, 3])
def test_an_installed_plugin_gives_a_function_a_straight_through_rule(installed, opt):
    reverse = jit(C.dh, plugins=("enzyme", "straight"), opt_level=opt)
    forward = jit(C.fh, plugins=("enzyme", "straight"), opt_level=opt)
    plain = jit(C.dh, plugins=("enzyme",), opt_level=opt)
    for x in XS:
        assert reverse(x) == pytest.approx(C.h_ref(x), rel=1e-14)
        assert forward(x) == pytest.approx(C.h_ref(x), rel=1e-14)
        assert plain(x) == pytest.approx(C.ste_round(x) + 1.0, rel=1e-14)  # floor: no derivative
    final = parse(reverse.inspect_llvm(T.float64))
    assert not [n for n in final.functions if n.startswith("__enzyme")]  # the registration is gone after AD
    if opt:
        assert not [n for n in final.functions if ".ste." in n]  # the rules inlined where called
    assert not [n for n in final.globals if n.startswith("__enzyme_register")]


@pytest.mark.parametrize("opt", [0, 3])
def test_the_rule_composes_with_the_other_author_plugins_and_mock_enzyme(installed, opt):
    everything = ("enzyme", "straight", "divsan", "overlay", "keep_rules", "mock_enzyme")
    reverse = jit(C.dh, plugins=everything, opt_level=opt)
    forward = jit(C.m_fh, plugins=everything, opt_level=opt)
    for x in XS:
        assert reverse(x) == pytest.approx(C.h_ref(x), rel=1e-14)
        assert forward(x) == pytest.approx(C.h_ref(x), rel=1e-14)  # through mock_autodiff's nested job


def test_without_autodiff_the_plugin_leaves_the_module_alone(installed):
    f = jit(C.h, plugins=("enzyme", "straight"))
    assert f(0.3) == pytest.approx(C.ste_round(0.3) * 0.3 + 0.3, rel=1e-15)
    assert not [n for n in parse(f.inspect_llvm(T.float64)).globals if n.startswith("__enzyme")]


def test_a_rule_in_the_grid_emulation_and_on_ptx(installed, check_ptx, libdevice_path):
    x = np.linspace(-2.0, 2.0, 40)
    out = np.zeros(40)
    for opt in (0, 1, 2, 3):
        k = kernel(C.k_dh, plugins=("enzyme", "straight"), opt_level=opt)
        k[2, 32, "cpu"](x, out)  # pyright: ignore[reportIndexIssue]
        np.testing.assert_allclose(out, [2 * C.h_ref(v) for v in x], rtol=1e-14)
        module = parse(k.inspect_llvm(x, out))
        assert not [n for n in module.functions if n.startswith("__enzyme")]
        check_ptx(k.inspect_asm(x, out))


def test_a_rule_that_contradicts_the_signature_names_the_plugin(installed):
    with pytest.raises(PluginError, match=r"plugin 'straight' failed in stage 'pre_ad'.*RuleSignatureError: "
                                          r"the reverse rule .*ste_two.* returns double; it must return "
                                          r"\{ double, double \}") as info:
        jit(C.d_two, plugins=("enzyme", "straight"))(0.5, 2.0)
    assert isinstance(info.value.cause, RuleSignatureError) and info.value.at is not None
    assert info.value.at[0].endswith("straight.py")


def _mix_rules(model, fn):
    """forward(x, dx, y, dy) = dx * y + x * dy; reverse(x, y, dret) = {dret * y, dret * x}: the derivative
    of x * y for floor(x) * y (after the parameters before ``x``: the error slot of @jit code)."""
    d, lead = LT.double, list(fn.function_type.params[:-2])
    fwd = model.add_function(Function(f"{fn.name}.forward", LT.function(d, lead + [d] * 4), prefix="internal"))
    b = Builder(fwd.append_block("entry"))
    x, dx, y, dy = fwd.args[len(lead):]
    b.ret(b.fadd(b.fmul(dx, y), b.fmul(x, dy)))
    pair = LT.struct([d, d])
    rev = model.add_function(Function(f"{fn.name}.reverse", LT.function(pair, lead + [d] * 3), prefix="internal"))
    b = Builder(rev.append_block("entry"))
    x, y, dret = rev.args[len(lead):]
    b.ret(b.insertvalue(b.insertvalue(constant(pair, "poison"), b.fmul(dret, y), 0), b.fmul(dret, x), 1))
    return fwd, rev


class MixRule(gp.Plugin):
    name, version = "mix_rule", "1"

    @gp.callback("pre_ad", markers=AD_MARKERS)
    def give_rules(self, module):
        model = module.model
        for fn in [f for n, f in model.functions.items() if ".mix(" in n]:
            forward, reverse = _mix_rules(model, fn)
            register_rule(model, fn, forward=forward, reverse=reverse)


@pytest.mark.parametrize("opt", [0, 1, 2, 3])
def test_a_rule_of_two_arguments_returns_a_struct_of_adjoints(register, opt):
    register(MixRule)
    dm = jit(C.dm, plugins=("enzyme", "mix_rule"), opt_level=opt)
    fm = jit(C.fm, plugins=("enzyme", "mix_rule"), opt_level=opt)
    for x, y in ((0.7, 2.0), (-1.5, 0.25), (3.2, -1.0)):
        dx, dy = dm(x, y)
        assert (dx, dy) == (pytest.approx(y + 1.0, rel=1e-15), pytest.approx(x, rel=1e-15))
        assert fm(x, y) == pytest.approx((y + 1.0) + 10.0 * x, rel=1e-14)


SIGNATURES = """
define double @f(double %x, ptr %p, i64 %n) {
  ret double %x
}
define double @fwd_ok(double %x, double %dx, ptr %p, ptr %dp, i64 %n) {
  ret double %dx
}
define double @fwd_no_shadow(double %x, ptr %p, i64 %n) {
  ret double %x
}
define double @rev_ok(double %x, ptr %p, ptr %dp, i64 %n, double %dret) {
  ret double %dret
}
define { double, double } @rev_pair(double %x, ptr %p, ptr %dp, i64 %n, double %dret) {
  ret { double, double } poison
}
declare double @ext(double)
"""


def test_register_rule_checks_each_rule_against_the_functions_signature():
    m = parse(SIGNATURES)
    f = m.functions["f"]
    assert register_rule(m, f, forward=m.functions["fwd_ok"], reverse=m.functions["rev_ok"], shadowed=[1]) is f
    assert f.has_attribute("noinline")
    assert {"__enzyme_register_derivative_f", "__enzyme_register_gradient_f"} <= set(m.globals)
    with pytest.raises(RuleSignatureError, match=r"forward rule @fwd_no_shadow of @f .* must take "
                                                 r"\(double, double, ptr, ptr, i64\)"):
        register_rule(m, f, forward=m.functions["fwd_no_shadow"], shadowed=[1])
    with pytest.raises(RuleSignatureError, match=r"reverse rule @rev_pair of @f .* returns \{ double, double \}; "
                                                 r"it must return double"):
        register_rule(m, f, reverse=m.functions["rev_pair"], shadowed=[1])
    with pytest.raises(RuleSignatureError, match=r"shadowed=\[0, 2\] must be indices of pointer parameters"):
        register_rule(m, f, forward=m.functions["fwd_ok"], shadowed=[0, 2])
    with pytest.raises(RuleSignatureError, match=r"must take \(double, double, ptr, i64\)"):  # the pointer alone
        register_rule(m, f, forward=m.functions["fwd_ok"])
    with pytest.raises(RuleSignatureError, match="@ext is a declaration"):
        register_rule(m, m.functions["ext"], forward=m.functions["fwd_ok"])
    with pytest.raises(RuleSignatureError, match="needs forward=, reverse= or both"):
        register_rule(m, f)
    other = parse(SIGNATURES)
    with pytest.raises(RuleSignatureError, match="@fwd_ok is not a function of this module"):
        register_rule(m, f, forward=other.functions["fwd_ok"])


# a pointer parameter with a shadow (shadowed=): the C interface's IR, the rules written in IR; the rules claim
# d sq = 3 x dx where AD of sq's body would give 2 x dx, so the result shows which one ran
POINTER_IR = """
declare void @__enzyme_autodiff(ptr, ...)
declare double @__enzyme_fwddiff(ptr, ...)
@enzyme_dup = global i32 0
@enzyme_const = global i32 0

define double @sq(ptr %x, i64 %n) noinline {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %s = phi double [ 0.0, %entry ], [ %s1, %loop ]
  %p = getelementptr double, ptr %x, i64 %i
  %v = load double, ptr %p
  %vv = fmul double %v, %v
  %s1 = fadd double %s, %vv
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret double %s1
}

define internal double @sq.fwd(ptr %x, ptr %dx, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %s = phi double [ 0.0, %entry ], [ %s1, %loop ]
  %p = getelementptr double, ptr %x, i64 %i
  %dp = getelementptr double, ptr %dx, i64 %i
  %v = load double, ptr %p
  %dv = load double, ptr %dp
  %t = fmul double %v, %dv
  %t3 = fmul double %t, 3.0
  %s1 = fadd double %s, %t3
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret double %s1
}

define internal void @sq.rev(ptr %x, ptr %dx, i64 %n, double %dret) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %p = getelementptr double, ptr %x, i64 %i
  %dp = getelementptr double, ptr %dx, i64 %i
  %v = load double, ptr %p
  %old = load double, ptr %dp
  %t = fmul double %v, %dret
  %t3 = fmul double %t, 3.0
  %new = fadd double %old, %t3
  store double %new, ptr %dp
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}

define double @f(ptr %x, i64 %n) {
  %s = call double @sq(ptr %x, i64 %n)
  %y = fmul double %s, 2.0
  ret double %y
}

define void @grad(ptr %x, ptr %dx, i64 %n) {
  %m = load i32, ptr @enzyme_dup
  %c = load i32, ptr @enzyme_const
  call void (ptr, ...) @__enzyme_autodiff(ptr @f, i32 %m, ptr %x, ptr %dx, i32 %c, i64 %n)
  ret void
}
define double @tangent(ptr %x, ptr %dx, i64 %n) {
  %m = load i32, ptr @enzyme_dup
  %c = load i32, ptr @enzyme_const
  %t = call double (ptr, ...) @__enzyme_fwddiff(ptr @f, i32 %m, ptr %x, ptr %dx, i32 %c, i64 %n)
  ret double %t
}
"""


def test_a_shadowed_pointers_rules_get_its_shadow_forward_and_reverse():
    m = parse(POINTER_IR)
    register_rule(m, m.functions["sq"], forward=m.functions["sq.fwd"], reverse=m.functions["sq.rev"], shadowed=[0])
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(str(m)))
    proto = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    xs = (1.0, -2.0, 3.5)
    x, dx, t = (ctypes.c_double * 3)(*xs), (ctypes.c_double * 3)(), (ctypes.c_double * 3)(1.0, 0.0, 1.0)
    lib.function("grad", None, *proto)(ctypes.addressof(x), ctypes.addressof(dx), 3)
    assert list(dx) == [2.0 * 3.0 * v for v in xs]  # f = 2 sq(x): the rule's 3 x, not the body's 2 x
    tangent = lib.function("tangent", ctypes.c_double, *proto)(ctypes.addressof(x), ctypes.addressof(t), 3)
    assert tangent == 2.0 * 3.0 * (xs[0] + xs[2])
