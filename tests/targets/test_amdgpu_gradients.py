"""``autodiff`` inside kernels compiled to AMD code objects: the kernel-gradient corpus (loops of
every shape), higher-order and batch kernels, for each listed architecture. No AMD GPU exists here:
the numbers are the CPU grid emulation's (tests/enzyme_plugin/test_kernel_gradient_corpus.py checks
them against finite differences); this file checks that the same kernels link into code objects
whose metadata note and instructions show what they must (adjoints added atomically in global
memory, no other vendor's intrinsics), and the tape heap's allocator on the CPU."""

from __future__ import annotations

import ctypes
import re
import sys
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from gpucompiler import kernel, types as T
from gpucompiler.core import CompilerConfig, CompilerJob
from gpucompiler.errors import ToolNotFoundError
from gpucompiler.llvm.binding import initialize_native
from gpucompiler.pipeline import compile as compile_job
from gpucompiler.runtime import hip
from gpucompiler.targets.amdgpu import ARCHITECTURES, AMDGPUTarget
from gpucompiler.targets.amdgpu import devicelibs, tools
from gpucompiler.targets.amdgpu.heap import ALIGN, HEAP, HEAP_IR

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "enzyme_plugin"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import ad_kernels as K  # pyright: ignore[reportMissingImports]
import ez_funcs as E  # pyright: ignore[reportMissingImports]
import ho_funcs as F  # pyright: ignore[reportMissingImports]
from kernel_gradient_corpus import CASES  # pyright: ignore[reportMissingImports]
from test_batch_mode import grad_energy_batch2, grad_newton_batch2, tangents_batch2  # pyright: ignore[reportMissingImports]

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
A2 = T.ArrayType(T.float64, 2, "C")

try:
    for _tool in ("ld.lld", "llvm-readobj", "llvm-objdump"):
        tools.find_tool(_tool)
except ToolNotFoundError as _exc:
    pytestmark = pytest.mark.skip(reason=str(_exc))
if devicelibs.find_device_libs_or_none() is None:  # the corpus calls math.sin/cos on float64
    pytestmark = pytest.mark.skip(reason="the ROCm device libraries (rocm-device-libs) are not installed")

EXTRA = {  # name: (kernel, argument types)
    "second derivative (fwd over rev)": (F.second_derivative_kernel, (A, A, A, A)),
    "second derivative (rev over rev)": (F.second_derivative_rev_rev_kernel, (A, A, A, A)),
    "while loop, fwd over rev": (F.until_four_second_derivative_kernel, (A, A, A, A)),
    "while loop, rev over rev": (F.until_four_rev_rev_kernel, (A, A, A, A)),
    "reverse batch of 2": (grad_energy_batch2, (A,) * 6),
    "forward batch of 2": (tangents_batch2, (A, A, A, A2)),
    "reverse batch through a while loop": (grad_newton_batch2, (A, A, A)),
    "barrier in the differentiated function": (E.grad_square_sync_kernel, (A, A, A, A)),
    "block reduction in shared memory": (K.red_grad, (A, A, A, A)),
}
KERNELS = {c.name: (c.kernel, (A, A)) for c in CASES} | EXTRA


def final_ir(fn, argtypes, arch="gfx90a") -> str:
    k = kernel(fn, plugins=P)
    job = CompilerJob(k.specialization(argtypes),
                      CompilerConfig(AMDGPUTarget(arch), kernel=True, name=k.symbol, plugins=k.plugins))
    return str(compile_job(job, ("llvm",)).artifacts["llvm"])


def symbols(code: bytes) -> set[str]:
    out = tools._with_file(code, [tools.find_tool("llvm-readobj"), "--symbols"], "llvm-readobj")
    return set(re.findall(r"Name: (\S+)", out))


@pytest.mark.parametrize("arch", tuple(ARCHITECTURES))
@pytest.mark.parametrize("name", tuple(KERNELS))
def test_gradient_kernel_links_into_a_code_object(name, arch):
    fn, argtypes = KERNELS[name]
    co = hip.code_object(kernel(fn, plugins=P), argtypes, AMDGPUTarget(arch))
    md = co.metadata()
    assert md[".name"] == co.name and md[".wavefront_size"] == ARCHITECTURES[arch]
    assert [(a[".offset"], a[".size"]) for a in md[".args"]] == hip.kernarg_layout(argtypes)
    asm = co.disassemble()
    assert f"<{co.name}>:" in asm and "s_endpgm" in asm
    if name != "forward batch of 2":  # dx[i] += ...: an atomic (a CAS loop for float64 here), on a global
        # pointer, or a generic one where the derivative stays a function of its own
        assert re.search(r"(?:global|flat)_atomic_(?:add_f64|cmpswap_x2|cmpswap_b64)", asm)


@pytest.mark.parametrize("name", tuple(KERNELS))
def test_gradient_kernel_ir_accumulates_adjoints_atomically_with_only_amd_intrinsics(name):
    fn, argtypes = KERNELS[name]
    text = final_ir(fn, argtypes)
    if name != "forward batch of 2":  # forward mode accumulates no adjoints
        assert re.search(r"atomicrmw fadd ptr(?: addrspace\(1\))? ", text)  # dx[i] += ... from every thread
    assert not re.search(r"@llvm\.nvvm\.|@__nv_|__enzyme_|@gpuc\.(inactive|barrier)\.", text)
    assert not re.search(r"declare .*@(sin|cos|exp|log|pow|sqrt)f?\(", text)  # math linked (ocml) or intrinsic
    for alloca in re.findall(r"= alloca .*", text):
        assert alloca.endswith("addrspace(5)"), alloca


def test_the_reverse_sweep_mirrors_the_barrier_with_its_fences():
    """``syncthreads()`` inside the differentiated function: the reverse sweep waits too (adjoints written
    by one thread are complete before others read them), and every s_barrier has its fences."""
    text = final_ir(E.grad_square_sync_kernel, (A, A, A, A))
    barriers = re.findall(r"(.*)\n\s+(?:tail )?call void @llvm.amdgcn.s.barrier\(\)\n(.*)", text)
    assert len(barriers) >= 2, text
    for before, after in barriers:
        assert 'fence syncscope("workgroup") release' in before
        assert 'fence syncscope("workgroup") acquire' in after


def test_a_tape_growing_at_run_time_uses_the_heap_a_constant_one_does_not():
    """The 13-step constant loop keeps its tape in registers, as the Newton solve's while capped at 60 steps
    keeps its own in one piece; a long data-dependent while grows on the heap the runtime hands over (the code
    object exports the heap's header)."""
    constant, newton = CASES[0], next(c for c in CASES if "Newton" in c.name)
    growing = next(c for c in CASES if "long data-dependent while" in c.name)
    for fixed in (constant, newton):
        assert HEAP not in symbols(hip.code_object(kernel(fixed.kernel, plugins=P), (A, A)).image)
    heap = hip.code_object(kernel(growing.kernel, plugins=P), (A, A))
    assert HEAP in symbols(heap.image)
    text = final_ir(growing.kernel, (A, A))
    assert re.search(r'atomicrmw add ptr addrspace\(1\) .*syncscope\("agent"\)', text)  # the heap's bump


# -- the tape heap's allocator, run on the CPU -------------------------------------------
@pytest.fixture(scope="module")
def host_allocator():
    """The allocator's IR as host code: the same instructions, global memory as ordinary memory."""
    initialize_native()
    ir = HEAP_IR.replace(" addrspace(1)", "").replace('syncscope("agent") ', "")
    mod = llvm.parse_assembly(f'target triple = "{llvm.get_process_triple()}"\n' + ir)
    mod.verify()
    tm = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine()
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    header = (ctypes.c_uint64 * 3).from_address(engine.get_global_value_address(HEAP))
    malloc = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64)(engine.get_function_address("malloc"))
    yield header, malloc, engine


def test_heap_allocator_takes_aligned_blocks_in_order_and_returns_null_when_spent(host_allocator):
    header, malloc, _ = host_allocator
    header[0], header[1], header[2] = 0x10000, 100, 0
    assert malloc(1) == 0x10000
    assert malloc(20) == 0x10000 + ALIGN
    assert malloc(32) == 0x10000 + 3 * ALIGN
    assert header[2] == 5 * ALIGN
    assert malloc(40) == 0  # 80 + 48 > 100: spent
    assert malloc(2 ** 63) == 0  # no wrap-around
    header[2] = 0
    assert malloc(96) == 0x10000
    header[0], header[1], header[2] = 0, 0, 0  # no heap handed over: every request fails
    assert malloc(8) == 0
