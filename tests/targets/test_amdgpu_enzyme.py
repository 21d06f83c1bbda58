"""Enzyme's C interface on AMD GPUs: HIP device code (hip/guide.hip, ours) compiled by
``clang-19 -x hip --cuda-device-only --offload-arch=gfxNNN -nogpulib -nogpuinc`` goes through
``gpuc enzyme --target amdgpu:gfxNNN`` into a code object whose metadata note, instructions and
gradient kernel IR are checked; the same per-thread body compiled for the host and differentiated
checks the numbers (no AMD GPU here)."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import enzyme_plugin
from gpucompiler.llvm import parse_ir
from gpucompiler.runtime import CPULibrary
from gpucompiler.targets.amdgpu import ARCHITECTURES, devicelibs, tools

HERE = Path(__file__).resolve().parent
GUIDE = HERE / "hip" / "guide.hip"
ROOT = HERE.parents[1]
CLANG = shutil.which("clang-19")

pytestmark = [pytest.mark.skipif(CLANG is None, reason="clang-19 is not installed"),
              pytest.mark.skipif(devicelibs.find_device_libs_or_none() is None,
                                 reason="the ROCm device libraries (rocm-device-libs) are not installed")]


def gpuc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpucompiler", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'plugins'}"})


def clang(*args: str, out: Path) -> Path:
    assert CLANG is not None
    proc = subprocess.run([CLANG, *args, "-emit-llvm", "-S", "-O2", str(GUIDE), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def device_ir(arch: str, tmp: Path) -> Path:
    return clang("-x", "hip", "--cuda-device-only", f"--offload-arch={arch}", "-nogpulib", "-nogpuinc",
                 out=tmp / f"guide.{arch}.ll")


@pytest.fixture(scope="module", params=tuple(ARCHITECTURES))
def guide(request, tmp_path_factory):
    """``(arch, code object, final LLVM IR)`` of the differentiated guide kernel."""
    arch = request.param
    tmp = tmp_path_factory.mktemp(arch)
    src = device_ir(arch, tmp)
    for emit, out in (("obj", "guide.hsaco"), ("llvm", "guide.final.ll")):
        proc = gpuc("enzyme", str(src), "--target", f"amdgpu:{arch}", "--kernel", "--entry", "dcube",
                    "--emit", emit, "-o", out, cwd=tmp)
        assert proc.returncode == 0, proc.stderr
    return arch, (tmp / "guide.hsaco").read_bytes(), (tmp / "guide.final.ll").read_text()


def test_clang_device_code_is_amdgcn_with_markers_in_global_memory(tmp_path):
    text = device_ir("gfx90a", tmp_path).read_text()
    assert 'target triple = "amdgcn-amd-amdhsa"' in text
    assert "@enzyme_dup = protected addrspace(1) externally_initialized global i32 0" in text
    assert re.search(r"define protected amdgpu_kernel void @dcube\(ptr addrspace\(1\)", text)
    assert "call void (ptr, ...) @__enzyme_autodiff" in text


def test_code_object_note_names_the_gradient_kernel_and_its_arguments(guide):
    arch, code, _ = guide
    note = tools.metadata(code)
    assert note["amdhsa.target"] == f"amdgcn-amd-amdhsa--{arch}"
    (md,) = note["amdhsa.kernels"]
    assert md[".name"] == "dcube" and md[".wavefront_size"] == ARCHITECTURES[arch]
    kinds = [(a[".value_kind"], a[".offset"], a[".size"]) for a in md[".args"]]
    # four global pointers and the int n (clang's HIP kernel ABI), then the runtime's hidden arguments
    assert kinds[:5] == [("global_buffer", 0, 8), ("global_buffer", 8, 8), ("global_buffer", 16, 8),
                         ("global_buffer", 24, 8), ("by_value", 32, 4)]
    assert all(k.startswith("hidden_") for k, _, _ in kinds[5:])
    assert md[".kernarg_segment_size"] >= 36


def test_disassembly_adds_the_adjoint_atomically_in_global_memory(guide):
    _, code, _ = guide
    asm = tools.disassemble(code)
    assert "<dcube>:" in asm and "s_endpgm" in asm
    assert re.search(r"global_atomic_(?:add_f64|cmpswap_x2|cmpswap_b64)", asm), asm


def test_gradient_kernel_ir_verifies_and_inlines_the_device_math(guide):
    _, _, text = guide
    parse_ir(text)  # LLVM verifies it
    assert "__enzyme_autodiff" not in text  # differentiated: no marker call is left
    assert re.search(r"define (?:protected )?amdgpu_kernel void @dcube\(", text)
    assert "atomicrmw fadd ptr addrspace(1)" in text  # dx[i] += dy[i] * (3x^2 + 2 + cos x)
    assert not re.search(r"call .*@(?:__ocml_\w+|sin|cos|llvm\.(?:sin|cos)\.f64)\(", text)  # ocml inlined
    assert text.count("@llvm.amdgcn.trig.preop.f64") >= 2  # sin's and cos's argument reductions


def test_same_body_on_the_host_gives_the_gradient(tmp_path):
    host = clang("-x", "c++", out=tmp_path / "guide.host.ll").read_text()
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(host))
    p = ctypes.POINTER(ctypes.c_double)
    run = lib.function("dcube_host", None, p, p, p, p, ctypes.c_int)
    n = 300
    x = np.linspace(-2.0, 2.0, n)
    dx, y, dy = np.zeros(n), np.zeros(n), np.linspace(0.5, 1.5, n)
    seed = dy.copy()
    run(*(a.ctypes.data_as(p) for a in (x, dx, y, dy)), n)
    np.testing.assert_allclose(dx, seed * (3 * x * x + 2 + np.cos(x)), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(y, x ** 3 + 2 * x + np.sin(x), rtol=1e-14, atol=1e-15)
    assert not dy.any(), "the seed is consumed"


def test_without_device_libraries_the_sine_is_a_typed_error(tmp_path):
    src = device_ir("gfx90a", tmp_path)
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "enzyme", str(src), "--target", "amdgpu:gfx90a",
                           "--kernel", "--entry", "dcube", "--emit", "obj", "-o", "g.hsaco"], cwd=tmp_path,
                          capture_output=True, text=True,
                          env={**os.environ, "GPUC_ROCM_DEVICE_LIBS": str(tmp_path),
                               "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'plugins'}"})
    assert proc.returncode == 1
    assert "needs the ROCm device libraries" in proc.stderr or "sin on float64 has no lowering" in proc.stderr
    assert "Traceback" not in proc.stderr
