"""The native target: every emit kind checked on its content, and validation."""

from __future__ import annotations

import llvmlite.binding as llvm
import pytest

from gpucompiler.core import CompilerConfig
from gpucompiler.errors import InvalidIRError
from gpucompiler.core import CompilerJob, LLVMSource
from gpucompiler.llvm.binding import parse_ir
from gpucompiler.pipeline import compile
from gpucompiler.targets import NativeTarget
from gpucompiler.targets import native

IR = """
define i64 @triple_plus(i64 %x) {
  %y = mul i64 %x, 3
  %z = add i64 %y, 1
  ret i64 %z
}
"""


def _compile(ir, entry, emit, **config):
    return compile(CompilerJob(LLVMSource(ir, entry), CompilerConfig(target=NativeTarget(), **config)), emit)


def test_emit_every_kind():
    result = _compile(IR, "triple_plus", ("llvm", "bc", "asm", "obj"))
    art = result.artifacts
    ref = parse_ir(art["llvm"])
    assert ref.triple == llvm.get_process_triple()
    assert [f.name for f in ref.functions] == ["triple_plus"]
    assert [f.name for f in llvm.parse_bitcode(art["bc"]).functions] == ["triple_plus"]
    assert "triple_plus:" in art["asm"]
    obj = art["obj"]
    assert isinstance(obj, bytes) and obj[:4] == b"\x7fELF" and b"triple_plus" in obj


def test_target_machine_is_cached_and_uses_the_host():
    t = NativeTarget()
    assert t.target_machine(2) is NativeTarget().target_machine(2)
    assert t.target_machine(2).triple == llvm.get_process_triple()
    assert t.host_cpu() == llvm.get_host_cpu_name()
    assert NativeTarget(cpu="x86-64").host_cpu() == "x86-64"


def test_the_host_cpu_is_asked_of_llvm_once_per_process(monkeypatch):
    """Every target machine's lookup names the host CPU: LLVM identifies it once (~50 us a time)."""
    asked = []
    name = llvm.get_host_cpu_name()
    monkeypatch.setattr(llvm, "get_host_cpu_name", lambda: asked.append(1) or name)
    native._host_cpu.cache_clear()
    try:
        for level in (0, 2, 0):
            NativeTarget().target_machine(level)
        assert NativeTarget().host_cpu() == name and asked == [1]
    finally:
        native._host_cpu.cache_clear()


def test_validation_collects_unknown_names_and_pointer_constants():
    ir = """
declare double @sin(double)
declare double @gpuc_surely_undefined(double)
define double @f(double %x) {
  %a = call double @sin(double %x)
  %b = call double @gpuc_surely_undefined(double %a)
  %p = inttoptr i64 140737488355328 to ptr
  %c = load double, ptr %p
  %d = fadd double %b, %c
  ret double %d
}
"""
    with pytest.raises(InvalidIRError) as info:
        _compile(ir, "f", ("llvm",), opt_level=0)
    kinds = sorted(kind for kind, _ in info.value.errors)
    assert kinds == ["POINTER_CONSTANT", "UNKNOWN_FUNCTION"]
    assert "gpuc_surely_undefined" in str(info.value) and "@sin" not in str(info.value)
