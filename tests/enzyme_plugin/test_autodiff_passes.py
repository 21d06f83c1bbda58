"""The plugin's passes, by parsing the IR around their stages: noinline, NVVM, inttoptr, the marker lowering."""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import pytest

import ez_funcs as F
from enzyme_plugin.passes import inttoptr, nvvm
from gpucompiler import CompilerConfig, CompilerJob, LLVMSource, NativeTarget, jit
from gpucompiler.targets import PTXTarget
from gpucompiler import types as T
from gpucompiler.cache import Cache, DiskTier
from gpucompiler.llvm import address_bindings, parse
from gpucompiler.pipeline import compile
from gpucompiler.runtime import CPULibrary

P = ("enzyme",)


def _fn(ir, part):
    model = parse(ir)
    return model, next(f for n, f in model.functions.items() if part in n and not f.is_declaration)


def test_custom_rule_function_noinline_before_ad_and_restored_after():
    j = jit(F.grad_uses_clip, plugins=P)
    _, before = _fn(j.inspect_llvm(T.float64, stage="link_deferred"), "ez_funcs.clip(float64)")
    assert before.has_attribute("noinline") and before.has_attribute("gpuc.enzyme.noinline")
    model, opt = _fn(j.inspect_llvm(T.float64, stage="optimize"), "ez_funcs.clip(float64)")
    assert opt.has_attribute("noinline") and opt.uses  # the optimiser kept the call the rule applies to
    assert any(n.startswith("__enzyme_register_gradient_") for n in model.globals)
    after = parse(j.inspect_llvm(T.float64, stage="post_ad"))
    clip = [f for n, f in after.functions.items() if "ez_funcs.clip(float64)" in n and not f.is_declaration]
    assert all(not f.has_attribute("noinline") and not f.has_attribute("gpuc.enzyme.noinline") for f in clip)
    assert not any(n.startswith("__enzyme_register_") for n in after.globals)


def test_marker_lowered_to_the_c_interface_with_flattened_arrays():
    j = jit(F.grad_sumsq, plugins=P)
    A = T.ArrayType(T.float64, 1, "C")
    early = parse(j.inspect_llvm(A, A, T.float64, T.int64, stage="post_irgen"))
    assert "gpuc.enzyme.autodiff" in early.functions and "gpuc.lookup" in early.functions
    linked = parse(j.inspect_llvm(A, A, T.float64, T.int64, stage="link_deferred"))
    assert "gpuc.enzyme.autodiff" not in linked.functions
    call = next(u.user for u in linked.functions["__enzyme_autodiff"].uses)
    wrapper = call.args[0]
    # the error slot first (a Const pointer), then the arrays flattened
    assert wrapper.name.endswith(".enzyme") and [str(a.type) for a in wrapper.args] == \
        ["ptr", "ptr", "i64", "i64", "double", "i64"]
    markers = [a.name for a in call.args[1:] if getattr(a, "name", "").startswith("enzyme_")]
    assert markers == ["enzyme_const", "enzyme_dup", "enzyme_const", "enzyme_const", "enzyme_out", "enzyme_const"]
    final = parse(j.inspect_llvm(A, A, T.float64, T.int64))
    assert not {"__enzyme_autodiff", "enzyme_dup", "enzyme_out"} & (set(final.functions) | set(final.globals))


NVVM_IR = """
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier0()
declare double @__nv_sin(double)
define double @f(double %x) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  call void @llvm.nvvm.barrier0()
  %s = call double @__nv_sin(double %x)
  ret double %s
}
"""


def test_nvvm_preserve_and_restore_round_trip():
    model = parse(NVVM_IR)
    assert nvvm.preserve(model, PTXTarget()) == 3
    names = set(model.functions)
    assert {"gpuc.inactive.llvm.nvvm.read.ptx.sreg.tid.x", "gpuc.barrier.llvm.nvvm.barrier0", "sin"} <= names
    assert not {n for n in names if n.startswith(("llvm.nvvm", "__nv_"))}
    assert nvvm.restore(model, PTXTarget()) == 3
    assert {"llvm.nvvm.read.ptx.sreg.tid.x", "llvm.nvvm.barrier0", "__nv_sin"} <= set(model.functions)
    assert parse(str(model)).functions["f"] is not None  # still valid IR


@pytest.mark.parametrize("extra", ["", "declare double @sin(double)\ndefine double @g(double %x) {\n"
                                   "  %s = call double @sin(double %x)\n  ret double %s\n}\n"])
def test_nvvm_preserve_renames_a_parsed_module_in_place_as_the_model_pass_does(monkeypatch, extra):
    """The plugin's ``optimize.last`` preserve renames the declarations of a module LLVM holds through LLVM,
    without printing it and parsing it into the Python model (~2 ms of a cold GPU compile): the same module
    text as the model's pass. Where a new name is taken (``sin`` declared beside ``__nv_sin``: the uses move
    to it) the model's pass runs, as before."""
    from enzyme_plugin.plugin import EnzymePlugin
    from gpucompiler import module as holder
    from gpucompiler.core import CompilerConfig as Config, CompilerJob as Job
    from gpucompiler.llvm.binding import parse_ir
    from gpucompiler.module import IRModule

    job = Job(LLVMSource(NVVM_IR + extra, "f"), Config(target=PTXTarget()))
    model = parse(str(parse_ir(NVVM_IR + extra)))  # (as the driver makes it: LLVM's print, intrinsics' attributes)
    nvvm.preserve(model, PTXTarget())
    expected = str(parse_ir(str(model)))
    parsed, real = [], holder.ir_model.parse
    monkeypatch.setattr(holder.ir_model, "parse", lambda text: parsed.append(text) or real(text))
    module = IRModule(ref=parse_ir(NVVM_IR + extra))
    EnzymePlugin().preserve_nvvm(job, module)
    assert str(module.ref) == expected
    assert (parsed == []) is (extra == "")


RESTORE_IR = """
declare i32 @gpuc.inactive.llvm.nvvm.read.ptx.sreg.tid.x()
declare double @sin(double)
declare double @cos(double)
define double @f(double %x) {
  %t = call i32 @gpuc.inactive.llvm.nvvm.read.ptx.sreg.tid.x()
  %s = call double @sin(double %x)
  %c = call double @cos(double %s)
  ret double %c
}
"""


@pytest.mark.parametrize("extra", ["", "@enzyme_dup = external global i32\n", "declare double @__nv_cos(double)\n"])
def test_nvvm_restore_renames_a_parsed_module_in_place_as_the_model_pass_does(monkeypatch, extra):
    """The ``post_ad`` restore gives names back and maps the math to libdevice through LLVM when names are
    all it changes: the module text of the model's passes, without parsing it into the Python model. A
    marker global to drop, or a new name taken (``__nv_cos`` declared beside ``cos``), takes the model's
    passes, as before."""
    from enzyme_plugin.plugin import EnzymeJobState, EnzymePlugin
    from gpucompiler import module as holder
    from gpucompiler.core import CompilerConfig as Config, CompilerJob as Job
    from gpucompiler.llvm.binding import parse_ir
    from gpucompiler.module import IRModule

    text = RESTORE_IR + extra
    job = Job(LLVMSource(text, "f"), Config(target=PTXTarget()))
    through_model = IRModule(ref=parse_ir(text))
    assert through_model.model is not None  # held as the Python model: the restore's model passes run on it
    EnzymePlugin().restore(job, through_model, EnzymeJobState(ran_ad=True))
    expected = str(parse_ir(str(through_model)))  # (printed and parsed back, as the driver does)
    parsed, real = [], holder.ir_model.parse
    monkeypatch.setattr(holder.ir_model, "parse", lambda text: parsed.append(text) or real(text))
    module = IRModule(ref=parse_ir(text))
    EnzymePlugin().restore(job, module, EnzymeJobState(ran_ad=True))
    assert str(parse_ir(str(module))) == expected
    names = {f.name for f in module.ref.functions}
    assert {"llvm.nvvm.read.ptx.sreg.tid.x", "__nv_sin", "__nv_cos"} <= names and not {"sin", "cos"} & names
    assert (parsed == []) is (extra == "")


def _sin_address() -> int:
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    return ctypes.cast(libm.sin, ctypes.c_void_p).value


def _inttoptr_ir(addr: int, marker: str = "__enzyme_autodiff") -> str:
    return f"""
define double @f(double %x) {{
  %s = call double inttoptr (i64 {addr} to ptr)(double %x)
  %y = fmul double %s, %x
  ret double %y
}}
declare double @{marker}(ptr, ...)
define double @df(double %x) {{
  %d = call double (ptr, ...) @{marker}(ptr @f, double %x)
  ret double %d
}}
"""


def test_inttoptr_callee_named_then_differentiated_and_run():
    addr = _sin_address()
    model = parse(_inttoptr_ir(addr))
    assert inttoptr.preserve(model) == 1
    callee = next(i for i in model.functions["f"].instructions() if i.opcode == "call").callee
    assert callee.name == "sin" and address_bindings(str(model)) == {}  # a real symbol: no record
    job = CompilerJob(LLVMSource(_inttoptr_ir(addr), "df"), CompilerConfig(NativeTarget(), plugins=P))
    result = compile(job, ("llvm", "obj"))
    assert "inttoptr (" not in result.artifacts["llvm"]  # serialised IR keeps names, no process addresses
    df = CPULibrary.from_result(result).function("df", ctypes.c_double, ctypes.c_double)
    x = 0.8
    assert df(x) == pytest.approx(math.cos(x) * x + math.sin(x), rel=1e-14)


def test_unnamed_address_is_named_and_recorded_in_the_module():
    fake = 0x10000  # no symbol there: a name made from the address
    model = parse(_inttoptr_ir(fake, "not_a_marker"))
    inttoptr.preserve(model)
    name = f"{inttoptr.PREFIX}{fake:x}"
    named = next(i for i in model.functions["f"].instructions() if i.opcode == "call")
    assert named.callee is model.functions[name]
    printed = str(model)
    assert address_bindings(printed) == {name: fake} and "inttoptr (" not in printed
    assert address_bindings(str(parse(printed))) == {name: fake}  # the record survives a round trip


def test_restore_output_validates_on_native_is_cached_and_runs_from_another_cache(tmp_path):
    """``enzyme_inttoptr="restore"`` (documented): the output calls what the source called, keeps
    names (was: constant addresses put back, refused by the native validator) and is cached with
    its address record, so a fresh cache loads and runs it."""
    callback = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(lambda v: v + 1.5)  # no symbol
    addr = ctypes.cast(callback, ctypes.c_void_p).value
    ir = f"""
define double @f(double %x) {{
  %c = call double inttoptr (i64 {addr} to ptr)(double 2.0)
  %y = fmul double %x, %x
  %z = fmul double %y, %c
  ret double %z
}}
declare double @__enzyme_autodiff(ptr, ...)
define double @df(double %x) {{
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @f, double %x)
  ret double %d
}}
"""
    job = CompilerJob(LLVMSource(ir, "df"), CompilerConfig(NativeTarget(), plugins=P,
                                                         params={"enzyme_inttoptr": "restore"}))
    first = Cache(DiskTier(tmp_path), compiler=compile).compile(job, ("obj",))
    assert first.origin == "compiled" and "inttoptr (" not in first.artifacts["llvm"]
    assert first.meta["addresses"] == {f"{inttoptr.PREFIX}{addr:x}": addr}
    again = Cache(DiskTier(tmp_path), compiler=compile).compile(job, ("obj",))
    assert again.origin == "disk"
    df = CPULibrary.from_cached(again).function("df", ctypes.c_double, ctypes.c_double)
    x = 0.7
    assert df(x) == pytest.approx(2 * x * (2.0 + 1.5), rel=1e-15)
