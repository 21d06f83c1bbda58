"""The PTX target's IR edits on the Python model: calling convention, attributes, fast-math
flags, module flags and global-memory array pointers; every result is re-parsed by LLVM."""

from __future__ import annotations

import re

import numpy as np

from gpucompiler import device as gd, kernel, types as T
from gpucompiler.llvm import const_int, parse, types as LT
from gpucompiler.llvm.binding import parse_ir
from gpucompiler.targets.ptx_codegen import add_fast_math_flags, global_array_pointers

IR = str(parse_ir("""
target triple = "nvptx64-nvidia-cuda"
define internal float @"odd name"(float %x) unnamed_addr #0 {
  %y = fdiv nnan float %x, 2.0
  %z = call float @llvm.sqrt.f32(float %y)
  %n = fneg float %z
  %i = call i32 @llvm.abs.i32(i32 7, i1 false)
  ret float %n
}
define dso_local void @k({ ptr, [1 x i64], [1 x i64] } %a, i64 %i) local_unnamed_addr {
  %p = extractvalue { ptr, [1 x i64], [1 x i64] } %a, 0
  %n = extractvalue { ptr, [1 x i64], [1 x i64] } %a, 1, 0
  %e = getelementptr inbounds float, ptr %p, i64 %i
  %f = getelementptr float, ptr %e, i64 %n
  %v = load float, ptr %e, align 4
  %vv = load volatile float, ptr %f, align 4
  %w = call float @"odd name"(float %v)
  store float %w, ptr %f, align 4
  call void @sink(ptr %f)
  ret void
}
declare void @sink(ptr)
declare float @llvm.sqrt.f32(float)
declare i32 @llvm.abs.i32(i32, i1)
attributes #0 = { noinline }
!llvm.module.flags = !{!0}
!0 = !{i32 1, !"wchar_size", i32 4}
"""))


def test_calling_convention_attributes_and_module_flags():
    m = parse(IR)
    k, odd = m.functions["k"], m.functions["odd name"]
    assert k.calling_convention == "ccc" and odd.calling_convention == "ccc"
    k.calling_convention = "ptx_kernel"
    k.add_attribute('"nvvm.maxnreg"="16"')
    odd.calling_convention = "fastcc"
    assert k.calling_convention == "ptx_kernel" and odd.calling_convention == "fastcc"
    m.add_module_flag(4, "nvvm-reflect-ftz", const_int(LT.i32, 1))
    m.add_module_flag(4, "nvvm-reflect-ftz", const_int(LT.i32, 0))  # already set: unchanged
    text = str(parse_ir(str(m)))
    assert re.search(r"^define dso_local ptx_kernel void @k\(", text, re.M)
    assert re.search(r'^define internal fastcc float @"odd name"\(', text, re.M)
    assert '"nvvm.maxnreg"="16"' in text
    assert text.count('!"nvvm-reflect-ftz", i32 1}') == 1 and "nvvm-reflect-ftz\", i32 0" not in text
    assert '!"wchar_size"' in text
    odd.calling_convention = "ccc"
    assert odd.calling_convention == "ccc" and "fastcc" not in str(m)


def test_fast_math_flags_on_float_operations_and_float_intrinsics_only():
    m = parse(IR)
    add_fast_math_flags(m.functions["odd name"])
    text = str(parse_ir(str(m)))
    assert "fdiv fast float" in text and "fneg fast float" in text
    assert re.search(r"call fast float @llvm\.sqrt\.f32", text)
    assert re.search(r"call i32 @llvm\.abs\.i32", text)  # not a float call


def test_array_pointers_become_global_loads_and_stores():
    m = parse(IR)
    moved = global_array_pointers(m.functions["k"])
    text = str(parse_ir(str(m)))
    assert moved == 2  # the plain load and the store; the volatile load stays generic
    assert re.search(r"load float, ptr addrspace\(1\) %\S+, align 4", text)
    assert re.search(r"store float %w, ptr addrspace\(1\) %\S+, align 4", text)
    assert "load volatile float, ptr %" in text
    assert re.search(r"getelementptr inbounds float, ptr addrspace\(1\)", text)
    assert re.search(r"call void @sink\(ptr %", text)  # other uses get the generic pointer


@kernel
def _axpy(a, x, y):
    i = gd.grid(1)
    if i < y.shape[0]:
        y[i] = a * x[i] + y[i]


def test_kernel_ptx_uses_global_loads_and_stores(check_ptx):
    A = T.ArrayType(T.float32, 1, "C")
    ptx = _axpy.inspect_asm(T.float32, A, A)
    check_ptx(ptx)
    assert re.findall(r"^\s*ld\.global\.\S+", ptx, re.M) and re.findall(r"^\s*st\.global\.\S+", ptx, re.M)
    assert not re.search(r"^\s*(ld|st)\.(b|f|u|s)\d+\s", ptx, re.M)  # no generic accesses left
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    _axpy[1, 8, "cpu"](np.float32(2.0), x, y)
    np.testing.assert_array_equal(y, 2 * np.arange(5) + 1)
