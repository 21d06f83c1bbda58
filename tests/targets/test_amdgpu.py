"""The AMDGPU target: code objects for gfx90a, gfx942 and gfx1100 read back with llvm-readobj
(the AMDGPU metadata note) and llvm-objdump; the kernel language's lowering; math through the
ROCm device libraries or exact intrinsics, and typed errors for the rest. No AMD GPU exists here:
nothing is run, everything is checked in the code object."""

from __future__ import annotations

import ctypes
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Reverse, autodiff

from gpucompiler import device as gd, kernel, types as T
from gpucompiler.kernel import Kernel
from gpucompiler.core import CompilerConfig, CompilerJob, LLVMSource
from gpucompiler.errors import (ConfigError, InvalidIRError, TargetUnsupportedError, ToolNotFoundError,
                               UnknownTargetError)
from gpucompiler.llvm import parse
from gpucompiler.pipeline import compile as compile_job
from gpucompiler.runtime import hip
from gpucompiler.targets import known_targets, parse_target
from gpucompiler.targets.amdgpu import ARCHITECTURES, AMDGPUTarget
from gpucompiler.targets.amdgpu import devicelibs as amdgpu_math, tools as amdgpu_tools

ROOT = Path(__file__).resolve().parents[2]
A = T.ArrayType(T.float64, 1, "C")
A32 = T.ArrayType(T.float32, 1, "C")
ARCHS = tuple(ARCHITECTURES)

pytest.importorskip("llvmlite")
for _tool in ("ld.lld", "llvm-readobj", "llvm-objdump"):
    try:
        amdgpu_tools.find_tool(_tool)
    except ToolNotFoundError as _exc:
        pytestmark = pytest.mark.skip(reason=str(_exc))

needs_ocml = pytest.mark.skipif(amdgpu_math.find_device_libs_or_none() is None,
                                reason="the ROCm device libraries (rocm-device-libs) are not installed")


def saxpy(a, x, y, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]


def block_sum(x, out):
    s = gd.shared_array(128, np.float64)
    t = gd.threadIdx.x
    s[t] = x[gd.grid(1)]
    gd.syncthreads()
    if t == 0:
        acc = 0.0
        for k in range(128):
            acc += s[k]
        gd.atomic_add(out, 0, acc)


def warp_shift(x, out):
    i = gd.grid(1)
    out[i] = gd.shfl_down(x[i], 3)


def grid_shape(out):
    i = gd.grid(1)
    out[i] = gd.blockDim.x * 1000 + gd.gridDim.x


def sine(x, out):
    i = gd.grid(1)
    out[i] = math.sin(x[i])


def exp32(x, out):
    i = gd.grid(1)
    out[i] = math.exp(x[i])


@pytest.fixture
def no_device_libs(monkeypatch, tmp_path):
    """This process sees no ROCm device libraries (an empty folder named explicitly)."""
    monkeypatch.setenv("GPUC_ROCM_DEVICE_LIBS", str(tmp_path))
    amdgpu_math.forget_device_libs()
    yield
    monkeypatch.undo()
    amdgpu_math.forget_device_libs()


def code(fn, argtypes, arch="gfx90a", opt_level=2):
    return hip.code_object(kernel(fn, opt_level=opt_level), argtypes, AMDGPUTarget(arch))


def llvm_ir(fn, argtypes, arch="gfx90a", opt_level=2) -> str:
    k = kernel(fn, opt_level=opt_level)
    job = CompilerJob(k.specialization(tuple(argtypes)),
                      CompilerConfig(AMDGPUTarget(arch), kernel=True, name=k.symbol, opt_level=opt_level))
    text = compile_job(job, ("llvm",)).artifacts["llvm"]
    assert isinstance(text, str)
    return text


# -- naming -----------------------------------------------------------------------------
def test_parse_target_names_each_architecture():
    assert parse_target("amdgpu") == AMDGPUTarget("gfx90a")
    for arch in ARCHS:
        assert parse_target(f"amdgpu:{arch}") == AMDGPUTarget(arch)


def test_unknown_architecture_is_a_typed_error_listing_the_known():
    with pytest.raises(UnknownTargetError, match="amdgpu:gfx1100"):
        parse_target("amdgpu:gfx803")
    with pytest.raises(ConfigError, match="gfx90a, gfx942, gfx1100"):
        AMDGPUTarget("sm_90")


def test_isa_versions_follow_the_gfx_names():
    assert [amdgpu_math.isa_version(a) for a in ("gfx90a", "gfx942", "gfx1100", "gfx908")] == [9010, 9402, 11000, 9008]


# -- the code object --------------------------------------------------------------------
@pytest.mark.parametrize("arch", ARCHS)
def test_code_object_note_names_the_kernel_and_its_kernarg_segment(arch):
    co = code(saxpy, (T.float64, A, A, A), arch)
    assert co.image[:4] == b"\x7fELF"
    note = amdgpu_tools.metadata(co.image)
    assert note["amdhsa.target"] == f"amdgcn-amd-amdhsa--{arch}"
    (md,) = note["amdhsa.kernels"]
    assert md[".name"] == "saxpy" and md[".symbol"] == "saxpy.kd"
    # a double, then three {ptr, [1 x i64], [1 x i64]} arrays: 8 + 3 * 24 bytes, by value
    assert [(a[".offset"], a[".size"], a[".value_kind"]) for a in md[".args"]] == [
        (0, 8, "by_value"), (8, 24, "by_value"), (32, 24, "by_value"), (56, 24, "by_value")]
    assert md[".kernarg_segment_size"] == 80
    assert [(a[".offset"], a[".size"]) for a in md[".args"]] == hip.kernarg_layout(co.argtypes)
    assert md[".wavefront_size"] == ARCHITECTURES[arch]
    assert md[".private_segment_fixed_size"] == 0


@pytest.mark.parametrize("arch", ARCHS)
def test_disassembly_reads_arguments_from_the_kernarg_segment_and_accesses_global_memory(arch):
    asm = code(saxpy, (T.float64, A, A, A), arch).disassemble()
    assert "<saxpy>:" in asm and "s_endpgm" in asm
    loads = re.findall(r"s_load_(?:dword|b32|b64|dwordx2|dwordx4|b128)\w*\s+s\[?[\d:]+\]?, s\[(\d+):\d+\], (0x[0-9a-f]+)", asm)
    offsets = {int(off, 16) for _, off in loads}
    assert {0x0, 0x20} & offsets, asm  # the scalar a and the array x's pointer (kernarg offsets of the note)
    assert re.search(r"global_load_(?:dwordx2|b64)", asm) and re.search(r"global_store_(?:dwordx2|b64)", asm)
    assert "flat_load" not in asm  # array pointers are global (addrspace 1), not generic


def test_kernel_is_an_amdgpu_kernel():
    text = llvm_ir(saxpy, (T.float64, A, A, A))
    assert re.search(r"define amdgpu_kernel void @saxpy\(", text)
    parse(text)  # our model reads it back


def test_allocas_move_to_the_private_address_space():
    """LLVM's verifier refuses an amdgcn alloca outside address space 5; the users keep a generic pointer."""
    ir = """
define void @k(ptr %out, i64 %n) {
  %slot = alloca [4 x double], align 8
  %p = getelementptr [4 x double], ptr %slot, i64 0, i64 %n
  store double 2.0, ptr %p
  %q = getelementptr [4 x double], ptr %slot, i64 0, i64 1
  %v = load double, ptr %q
  store double %v, ptr %out
  ret void
}"""
    job = CompilerJob(LLVMSource(ir, "k"), CompilerConfig(AMDGPUTarget(), kernel=True, opt_level=0))
    text = str(compile_job(job, ("llvm",)).artifacts["llvm"])
    assert re.search(r"%slot = alloca \[4 x double\], align 8, addrspace\(5\)", text), text
    assert re.search(r"addrspacecast ptr addrspace\(5\) %slot to ptr", text)
    assert compile_job(job, ("obj",)).artifacts["obj"][:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ARCHS)
def test_shared_memory_and_barrier(arch):
    co = code(block_sum, (A, A), arch)
    md = co.metadata()
    assert md[".group_segment_fixed_size"] == 128 * 8  # the LDS array
    asm = co.disassemble()
    assert "s_barrier" in asm and re.search(r"ds_(?:write|store)_(?:b64|dwordx2|b64)", asm)
    assert re.search(r"global_atomic_(?:add_f64|cmpswap_x2|cmpswap_b64)|flat_atomic|global_atomic_add_f64", asm), asm
    text = llvm_ir(block_sum, (A, A), arch)
    assert "addrspace(3) global [128 x double]" in text
    body = text[text.index("@llvm.amdgcn.s.barrier()") - 200:text.index("@llvm.amdgcn.s.barrier()") + 120]
    assert 'fence syncscope("workgroup") release' in body and 'fence syncscope("workgroup") acquire' in body


def test_the_barrier_is_fenced_even_where_the_ir_lacks_the_fences():
    """A bare s_barrier (the AD engine's mirrored one) gets its fences in ``finish``."""
    ir = """
declare void @llvm.amdgcn.s.barrier()
define void @k(ptr %p) {
  store i32 1, ptr %p
  call void @llvm.amdgcn.s.barrier()
  %v = load i32, ptr %p
  store i32 %v, ptr %p
  ret void
}"""
    job = CompilerJob(LLVMSource(ir, "k"), CompilerConfig(AMDGPUTarget(), kernel=True))
    text = compile_job(job, ("llvm",)).artifacts["llvm"]
    assert re.search(r'fence syncscope\("workgroup"\) release\s+tail call void @llvm.amdgcn.s.barrier\(\)\s+'
                     r'fence syncscope\("workgroup"\) acquire', str(text)), text


@pytest.mark.parametrize("dtype", [T.float64, T.int32])
def test_shuffle_down_is_ds_bpermute_within_32_lanes(dtype):
    arr = T.ArrayType(dtype, 1, "C")
    text = llvm_ir(warp_shift, (arr, arr))
    assert "@llvm.amdgcn.ds.bpermute" in text and "@llvm.amdgcn.mbcnt.lo" in text
    assert text.count("call i32 @llvm.amdgcn.ds.bpermute") == (2 if dtype == T.float64 else 1)
    asm = code(warp_shift, (arr, arr)).disassemble()
    assert "ds_bpermute_b32" in asm


def test_block_and_grid_sizes_come_from_the_dispatch_packet():
    text = llvm_ir(grid_shape, (T.ArrayType(T.int64, 1, "C"),))
    assert "@llvm.amdgcn.dispatch.ptr()" in text
    # workgroup_size_x: 16 bits at byte 4; grid_size_x (work-items): 32 bits at byte 12
    assert re.search(r"getelementptr i8, ptr addrspace\(4\) %[\w.]+, i64 4\n\s+%[\w.]+ = load i16", text)
    assert re.search(r"getelementptr i8, ptr addrspace\(4\) %[\w.]+, i64 12\n\s+%[\w.]+ = load i32", text)
    assert "udiv" in text


# -- math ------------------------------------------------------------------------------
@needs_ocml
@pytest.mark.parametrize("arch", ARCHS)
def test_sin_float64_links_ocml(arch):
    text = llvm_ir(sine, (A, A), arch)
    assert not re.search(r"declare .*@(?:__ocml_|sin\b|llvm\.sin)", text)  # linked and inlined
    assert not re.search(r"call .*@(?:__ocml_|sin\b|llvm\.sin)", text)
    assert "0x3FE45F306DC9C883" in text  # 2/pi: ocml's argument reduction, inlined
    co = code(sine, (A, A), arch)
    assert co.metadata()[".name"] == "sine"


def test_without_device_libs_sin_float64_is_a_typed_error_at_the_users_line(no_device_libs):
    with pytest.raises(TargetUnsupportedError) as err:
        code(sine, (A, A))
    message = str(err.value)
    assert "sin on float64" in message and "amdgpu" in message and "rocm-device-libs" in message
    line = sine.__code__.co_firstlineno + 2
    assert f"test_amdgpu.py:{line}" in message, message


def test_without_device_libs_exp_float32_uses_the_exact_intrinsic(no_device_libs):
    text = llvm_ir(exp32, (A32, A32))
    assert "__ocml" not in text
    co = code(exp32, (A32, A32))
    assert co.metadata()[".name"] == "exp32"


def test_math_intrinsic_without_a_lowering_is_refused_before_llvm_could_abort(no_device_libs, tmp_path):
    """LLVM aborts the process on ``llvm.tan.f64`` for amdgcn ("no libcall available"); validation
    names the function instead. Run as the CLI, so an abort would show as a crash."""
    src = tmp_path / "tan.ll"
    src.write_text("declare double @llvm.tan.f64(double)\n"
                   "define void @k(ptr %p) {\n  %x = load double, ptr %p\n"
                   "  %y = call double @llvm.tan.f64(double %x)\n  store double %y, ptr %p\n  ret void\n}\n")
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "compile-ir", str(src), "--target", "amdgpu:gfx90a",
                           "--kernel", "--emit", "obj", "-o", str(tmp_path / "k.hsaco")],
                          capture_output=True, text=True, env={**os.environ, "GPUC_ROCM_DEVICE_LIBS": str(tmp_path),
                                                                "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'plugins'}"})
    assert proc.returncode == 1, proc.stderr
    assert "tan on float64 has no lowering on the amdgpu target" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_undefined_function_is_a_validation_error():
    ir = "declare double @mystery(double)\ndefine void @k(ptr %p) {\n  %x = load double, ptr %p\n" \
         "  %y = call double @mystery(double %x)\n  store double %y, ptr %p\n  ret void\n}\n"
    job = CompilerJob(LLVMSource(ir, "k"), CompilerConfig(AMDGPUTarget(), kernel=True))
    with pytest.raises(InvalidIRError, match=r"UNKNOWN_FUNCTION.*@mystery"):
        compile_job(job, ("obj",))


# -- the runtime -----------------------------------------------------------------------
def test_kernargs_pack_at_the_offsets_of_the_note():
    co = code(saxpy, (T.float64, A, A, A))
    values = [2.5, (0x1000, 4, 8), (0x2000, 4, 8), (0x3000, 4, 8)]
    buf = hip.pack_kernargs(co.argtypes, values)
    assert len(buf) == co.metadata()[".kernarg_segment_size"]
    words = np.frombuffer(buf, dtype=np.uint64)
    assert np.frombuffer(buf[:8], dtype=np.float64)[0] == 2.5
    assert list(words[1:]) == [0x1000, 4, 8, 0x2000, 4, 8, 0x3000, 4, 8]


def test_mixed_width_arguments_align_as_the_back_end_does():
    def k(n, a, x, out):
        i = gd.grid(1)
        if i < n:
            out[i] = a * x[i]

    argtypes = (T.int32, T.float32, A32, A32)
    co = code(k, argtypes)
    assert [(a[".offset"], a[".size"]) for a in co.metadata()[".args"]] == hip.kernarg_layout(argtypes) \
        == [(0, 4), (4, 4), (8, 24), (32, 24)]


def test_launch_without_a_hip_runtime_says_what_is_missing():
    try:
        hip.hip_library()
    except ToolNotFoundError:
        pass
    else:
        pytest.skip("a HIP runtime is installed here")
    co = code(saxpy, (T.float64, A, A, A))
    with pytest.raises(ToolNotFoundError, match="no HIP runtime: libamdhip64"):
        hip.launch_code(co, 1, 64, 2.0, np.ones(64), np.ones(64), np.zeros(64))


def test_launching_through_the_kernel_without_a_hip_runtime_says_what_is_missing():
    """``k[grid, block]`` of a kernel for an AMD GPU goes through the registered HIP runtime."""
    try:
        hip.hip_library()
    except ToolNotFoundError:
        pass
    else:
        pytest.skip("a HIP runtime is installed here")
    k = Kernel(saxpy, target=AMDGPUTarget("gfx942"))
    with pytest.raises(ToolNotFoundError, match="no HIP runtime: libamdhip64"):
        k[1, 64](2.0, np.ones(64), np.ones(64), np.zeros(64))


# -- adversarial: every intrinsic, every element type, every architecture ----------------
def everything(a, out, ints):
    i = gd.grid(1)
    s = gd.shared_array((4, 32), np.float32)
    t = gd.shared_array(32, np.int64)
    s[i % 4, i % 32] = a[i]
    t[i % 32] = ints[i]
    gd.syncthreads()
    v = gd.shfl_down(a[i], 1) + gd.shfl_down(s[0, i % 32], 2)
    w = gd.shfl_down(ints[i], 5) + gd.shfl_down(np.int32(i), 3)
    gd.atomic_add(out, 0, v)
    gd.atomic_min(out, 1, v)
    gd.atomic_max(out, 2, v)
    gd.atomic_exch(out, 3, v)
    gd.atomic_cas(out, 4, 0.0, v)
    gd.atomic_add(ints, 0, w)
    gd.atomic_min(ints, 1, w)
    gd.atomic_max(ints, 2, w)
    gd.atomic_cas(ints, 3, 0, w + t[i % 32])
    out[5] = math.sqrt(abs(a[i])) + math.floor(a[i]) + math.fabs(a[i]) + math.copysign(1.0, a[i])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("floats,ints", [(T.float64, T.int64), (T.float32, T.int32), (T.float32, T.int64)])
def test_every_kernel_intrinsic_and_element_type_compiles(arch, floats, ints):
    fa, ia = T.ArrayType(floats, 1, "C"), T.ArrayType(ints, 1, "C")
    co = code(everything, (fa, fa, ia), arch)
    assert co.metadata()[".group_segment_fixed_size"] == 4 * 32 * 4 + 32 * 8
    asm = co.disassemble()
    assert asm.count("ds_bpermute_b32") >= 4 and "s_barrier" in asm


def power(x, out):
    i = gd.grid(1)
    out[i] = x[i] ** 2.0 + x[i] ** 0.5 + x[i] ** -1.0 + math.pow(x[i], 1.0)


def cube_power(x, out):
    i = gd.grid(1)
    out[i] = x[i] ** 3


def numpy_sine(x, out):
    i = gd.grid(1)
    out[i] = np.sin(x[i])


@pytest.mark.parametrize("arr", [A, A32])
def test_without_device_libs_powers_llvm_rewrites_compile_and_others_are_refused_at_their_line(no_device_libs, arr):
    text = llvm_ir(power, (arr, arr))
    assert "llvm.pow" not in text and "@llvm.sqrt" in text
    for fn, name in ((cube_power, "pow"), (numpy_sine, "sin")):
        with pytest.raises(TargetUnsupportedError, match=f"{name} on float") as err:
            code(fn, (arr, arr))
        assert f"test_amdgpu.py:{fn.__code__.co_firstlineno + 2}:" in str(err.value)


@needs_ocml
def test_float32_sine_is_ocml_not_the_hardware_approximation():
    """The back end lowers llvm.sin.f32 to v_sin_f32 (no full argument reduction): ocml's is used."""
    def sine32(x, out):
        i = gd.grid(1)
        out[i] = math.sin(x[i])

    text = llvm_ir(sine32, (A32, A32))
    assert "llvm.sin.f32" not in text and not re.search(r"call .*@__ocml_sin_f32", text)
    asm = code(sine32, (A32, A32)).disassemble()
    assert "v_sin_f32" not in asm  # the hardware's approximation is not used
    assert asm.count("v_fma_f32") + asm.count("v_fmac_f32") >= 8  # ocml's reduction and polynomial


def test_compile_ir_lists_the_architectures_and_writes_a_code_object(tmp_path):
    assert {"amdgpu", "amdgpu:gfx90a", "amdgpu:gfx942", "amdgpu:gfx1100"} <= set(known_targets())
    src = tmp_path / "k.ll"
    src.write_text("define void @scale(ptr %p, double %a) {\n  %x = load double, ptr %p\n"
                   "  %y = fmul double %x, %a\n  store double %y, ptr %p\n  ret void\n}\n")
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "compile-ir", str(src), "--target", "amdgpu:gfx1100",
                           "--kernel", "--emit", "obj", "-o", str(tmp_path / "k.hsaco")], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'plugins'}"})
    assert proc.returncode == 0, proc.stderr
    note = amdgpu_tools.metadata((tmp_path / "k.hsaco").read_bytes())
    assert note["amdhsa.target"] == "amdgcn-amd-amdhsa--gfx1100"
    (md,) = note["amdhsa.kernels"]
    assert md[".name"] == "scale" and [(a[".offset"], a[".size"]) for a in md[".args"]] == [(0, 8), (8, 8)]


def test_the_device_libraries_are_part_of_the_cache_key(no_device_libs):
    """Code compiled without ocml must not be served once it is installed (nor the reverse)."""
    without = AMDGPUTarget().machine()
    amdgpu_math.forget_device_libs()
    os.environ.pop("GPUC_ROCM_DEVICE_LIBS")
    with_libs = AMDGPUTarget().machine()
    assert without["device_libs"] is None
    assert (with_libs["device_libs"] is not None) == (amdgpu_math.find_device_libs_or_none() is not None)


class FakeHIP:
    """A HIP runtime in host memory: device buffers are host buffers, and a launch runs ``saxpy`` by
    reading its arguments from the kernarg buffer it was given (so the packing is what is tested)."""

    def __init__(self):
        self.buffers, self.freed, self.launches = {}, [], []

    def hipInit(self, flags):
        return 0

    def hipGetDeviceCount(self, count):
        count._obj.value = 1
        return 0

    def hipModuleLoadData(self, module, image):
        module._obj.value = 0x1000
        return 0

    def hipModuleGetFunction(self, fn, module, name):
        fn._obj.value, self.name = 0x2000, name
        return 0

    def hipModuleGetGlobal(self, address, nbytes, module, name):
        return 500  # hipErrorNotFound: no tape heap in this kernel

    def hipMalloc(self, ptr, size):
        buf = ctypes.create_string_buffer(size.value)
        self.buffers[ctypes.addressof(buf)] = buf
        ptr._obj.value = ctypes.addressof(buf)
        return 0

    def hipMemcpy(self, dst, src, size, kind):
        ctypes.memmove(dst, src, size.value)
        return 0

    def hipModuleLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        size = ctypes.cast(extra[3], ctypes.POINTER(ctypes.c_size_t))[0]
        args = ctypes.string_at(extra[1], size)
        self.launches.append(((gx, gy, gz), (bx, by, bz), args))
        a = np.frombuffer(args[:8], np.float64)[0]
        arrays = []
        for offset in (8, 32, 56):  # {ptr, shape, stride} at the note's offsets
            ptr, n, stride = np.frombuffer(args[offset:offset + 24], np.uint64)
            assert stride == 8
            arrays.append(np.ctypeslib.as_array((ctypes.c_double * int(n)).from_address(int(ptr))))
        x, y, out = arrays
        out[:] = a * x + y
        return 0

    def hipDeviceSynchronize(self):
        return 0

    def hipFree(self, ptr):
        self.freed.append(ptr.value)
        return 0

    def hipModuleUnload(self, module):
        return 0


def test_launch_stages_strided_and_read_only_arrays_and_packs_the_kernargs(monkeypatch):
    fake = FakeHIP()
    monkeypatch.setattr(hip, "hip_library", lambda: fake)
    base = np.arange(16.0)
    x = base[::2]                       # a strided view: staged contiguous, in order
    y = np.linspace(1.0, 2.0, 8)
    y.flags.writeable = False           # read, never written back
    out = np.zeros(16)[::2]
    k = Kernel(saxpy, target=AMDGPUTarget())
    k[(1, 1, 1), (8, 1, 1)](3.0, x, y, out)
    np.testing.assert_array_equal(out, 3.0 * base[::2] + y)
    (grid, block, args), = fake.launches
    assert grid == (1, 1, 1) and block == (8, 1, 1) and fake.name == b"saxpy"
    assert len(args) == 80 and len(fake.freed) == 3


class HeapFakeHIP(FakeHIP):
    """The fake runtime of a kernel that exports the tape heap's header (at ``header``); launches record only."""

    def __init__(self, header: int):
        super().__init__()
        self.header = header

    def hipModuleGetGlobal(self, address, nbytes, module, name):
        if name != b"gpuc_amdgpu_heap":
            return 500
        address._obj.value = self.header
        return 0

    def hipModuleLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launches.append((gx, bx))
        return 0


def test_launch_hands_a_growing_tape_its_heap(monkeypatch):
    """A kernel whose AD tape grows at run time exports the heap header; the launch points it at the
    process's heap (GPUC_DEVICE_HEAP bytes), all of it free."""
    def newton(x, i):
        s = x[i]
        while s * s - x[i] > 1e-12:
            s = 0.5 * (s + x[i] / s)
        return s

    def grad_newton(x, dx):
        i = gd.grid(1)
        autodiff(Reverse, newton, Duplicated(x, dx), Const(i))

    header = (ctypes.c_uint64 * 3)(7, 7, 7)
    fake = HeapFakeHIP(ctypes.addressof(header))
    monkeypatch.setattr(hip, "hip_library", lambda: fake)
    monkeypatch.setenv("GPUC_DEVICE_HEAP", "1M")
    hip._heap.cache_clear()
    co = hip.code_object(Kernel(grad_newton, plugins=("enzyme",)), (A, A))
    hip.launch_code(co, 1, 32, np.full(32, 2.0), np.zeros(32))
    base, size, used = header
    assert base in fake.buffers and size == 1 << 20 and used == 0
    hip._heap.cache_clear()


@pytest.mark.parametrize("size", ["", "i64 32, "], ids=["llvm22", "two-argument"])
def test_lifetime_markers_of_a_moved_alloca_name_the_alloca_itself(size):
    """LLVM's verifier wants lifetime.start/end on an alloca, not on the cast of a private one to generic."""
    sig = "i64, ptr" if size else "ptr"
    ir = f"""
declare void @llvm.lifetime.start.p0({sig})
declare void @llvm.lifetime.end.p0({sig})
define void @k(ptr %out, i64 %n) {{
  %slot = alloca [4 x double], align 8
  call void @llvm.lifetime.start.p0({size}ptr %slot)
  %p = getelementptr [4 x double], ptr %slot, i64 0, i64 %n
  store double 2.0, ptr %p
  %q = getelementptr [4 x double], ptr %slot, i64 0, i64 1
  %v = load double, ptr %q
  store double %v, ptr %out
  call void @llvm.lifetime.end.p0({size}ptr %slot)
  ret void
}}"""
    job = CompilerJob(LLVMSource(ir, "k"), CompilerConfig(AMDGPUTarget(), kernel=True, opt_level=0))
    text = str(compile_job(job, ("llvm",)).artifacts["llvm"])
    assert re.search(r"call void @llvm\.lifetime\.start\.p5\((?:i64 32, )?ptr addrspace\(5\) %slot\)", text), text
    assert compile_job(job, ("obj",)).artifacts["obj"][:4] == b"\x7fELF"


def grid_3d(out):
    i, j, k = gd.grid(3)  # pyright: ignore[reportGeneralTypeIssues]  (a kernel intrinsic: raises in Python)
    n = gd.gridsize(3)
    out[i, j, k] = n[0] * 10000 + n[1] * 100 + n[2] + gd.blockDim.z


def test_every_axis_reads_its_own_work_item_id_and_dispatch_packet_field():
    """HSA's packet: workgroup_size_x/y/z (16 bits) at bytes 4, 6, 8; grid_size_x/y/z (32 bits) at 12, 16, 20."""
    text = llvm_ir(grid_3d, (T.ArrayType(T.int64, 3, "C"),), opt_level=0)
    for axis in "xyz":
        assert f"@llvm.amdgcn.workitem.id.{axis}()" in text and f"@llvm.amdgcn.workgroup.id.{axis}()" in text
    sizes = set(re.findall(r"getelementptr i8, ptr addrspace\(4\) %[\w.]+, i64 (\d+)\n\s+%[\w.]+ = load (i16|i32)", text))
    assert sizes == {("4", "i16"), ("6", "i16"), ("8", "i16"), ("12", "i32"), ("16", "i32"), ("20", "i32")}, sizes
