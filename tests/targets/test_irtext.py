"""Text edits of printed IR: results re-parse and carry the requested change."""

from __future__ import annotations

from gpucompiler.llvm.binding import parse_ir
from gpucompiler.targets.irtext import add_fast_math_flags, add_module_flag, edit_definitions

IR = str(parse_ir("""
target triple = "nvptx64-nvidia-cuda"
define internal float @"odd name"(float %x) unnamed_addr #0 {
  %y = fdiv nnan float %x, 2.0
  %z = call float @llvm.sqrt.f32(float %y)
  ret float %z
}
define dso_local void @k(ptr addrspace(1) %p) local_unnamed_addr {
  %v = load float, ptr addrspace(1) %p
  %w = call float @"odd name"(float %v)
  store float %w, ptr addrspace(1) %p
  ret void
}
declare float @llvm.sqrt.f32(float)
attributes #0 = { noinline }
!llvm.module.flags = !{!0}
!0 = !{i32 1, !"wchar_size", i32 4}
"""))


def test_kernel_calling_convention_and_attributes():
    text = edit_definitions(IR, {"k"}, calling_convention="ptx_kernel", attributes='"nvvm.maxnreg"="16"')
    ref = parse_ir(text)
    assert "define dso_local ptx_kernel void @k(ptr addrspace(1) %p) local_unnamed_addr" in str(ref)
    assert '"nvvm.maxnreg"="16"' in str(ref)
    odd = next(line for line in str(ref).splitlines() if line.startswith("define") and "odd name" in line)
    assert "ptx_kernel" not in odd and "maxnreg" not in odd


def test_attributes_on_every_definition_and_quoted_names():
    text = edit_definitions(IR, None, attributes='"denormal-fp-math-f32"="preserve-sign,preserve-sign"')
    ref = parse_ir(text)
    printed = str(ref)
    assert printed.count('"denormal-fp-math-f32"="preserve-sign,preserve-sign"') == 2


def test_fast_math_flags_and_module_flags():
    text = add_module_flag(add_fast_math_flags(IR), 4, "nvvm-reflect-ftz", "i32 1")
    printed = str(parse_ir(text))
    assert "fdiv fast float" in printed and "call fast float @llvm.sqrt.f32" in printed
    assert '!llvm.module.flags = !{!0, !1}' in printed and '!"nvvm-reflect-ftz", i32 1' in printed
    assert add_module_flag(text, 4, "nvvm-reflect-ftz", "i32 0") == text
