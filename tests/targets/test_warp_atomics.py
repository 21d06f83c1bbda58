"""Warp-aggregated atomic adds (``gpucompiler.targets.warpatomics``, the SPIR-V form in ``.spirv.warp``).

Which atomics the pass rewrites is checked on IR (parsed back, verified by LLVM); the PTX of a one-address
reduction by ptxas, AMD's code objects by their disassembly; the numbers on lavapipe (SPIR-V) and the CPU
grid emulation against NumPy, and, marked ``gpu``, on a CUDA device (``scripts/gpu_check.sh``): full warps,
a partial last warp and lanes a branch disables.
"""

from __future__ import annotations

import math
import struct
import subprocess
import sys
import textwrap

import llvmlite.binding as llvm
import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd, kernel, types as T
from gpucompiler.errors import ToolNotFoundError
from gpucompiler.llvm import parse
from gpucompiler.llvm.binding import initialize
from gpucompiler.runtime import hip
from gpucompiler.targets.amdgpu import ARCHITECTURES, AMDGPUTarget, tools
from gpucompiler.targets.ptx import PTXTarget
from gpucompiler.targets.spirv import SPIRVTarget
from gpucompiler.targets.warpatomics import aggregate_atomics

WARP = PTXTarget().warp_intrinsics()
rng = np.random.default_rng(27)


# -- kernels -------------------------------------------------------------------------------------------
def one_address(x, out):
    """Every thread adds into out[0]: a one-address reduction."""
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(out, 0, x[i] * x[i])


def where_positive(x, out):
    """Only the lanes whose x is positive add: a branch disables the others."""
    i = gd.grid(1)
    if i < x.shape[0] and x[i] > 0:
        gd.atomic_add(out, 0, x[i])


def two_addresses(x, out):
    """Even and odd lanes add to two elements: the per-lane atomics."""
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(out, i % 2, x[i])


def old_value_used(x, out, seen):
    """The old value is read: each lane's add stays its own."""
    i = gd.grid(1)
    if i < x.shape[0]:
        seen[i] = gd.atomic_add(out, 0, x[i])


def in_shared_memory(x, out):
    """A block's sum in shared memory (its atomics stay per lane), then one add per block into out[0]."""
    buf = gd.shared_array(1, np.float32)
    t = gd.threadIdx.x
    if t == 0:
        buf[0] = 0.0
    gd.syncthreads()
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(buf, 0, x[i])
    gd.syncthreads()
    if t == 0:
        gd.atomic_add(out, 0, buf[0])


def maximum(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_max(out, 0, x[i])


def energy(x, w, out, i):
    gd.atomic_add(out, 0, w[0] * x[i] * x[i])


def grad_energy(x, dx, w, dw, out, dout):
    """The gradient of a one-address reduction: every thread reads dout[0] and adds into dw[0]; lanes
    whose x is below -1 (and past the end) take no part."""
    i = gd.grid(1)
    if i < x.shape[0] and x[i] > -1.0:
        autodiff(Reverse, energy, Duplicated(x, dx), Duplicated(w, dw), Duplicated(out, dout), Const(i))


A32, A64, I32, I64 = (T.ArrayType(t, 1, "C") for t in (T.float32, T.float64, T.int32, T.int64))


# -- which atomics: IR in, IR out ------------------------------------------------------------------------
IR = """
@g = addrspace(1) global float 0.0
@s = addrspace(3) global float 0.0

define void @k(ptr %out, ptr addrspace(1) %gout, ptr %table, float %v, double %d, i32 %n, i64 %m) {
entry:
  %p = getelementptr float, ptr %out, i64 1
  %a0 = atomicrmw fadd ptr %p, float %v monotonic, align 4
  %a1 = atomicrmw fadd ptr addrspace(1) %gout, double %d syncscope("device") monotonic, align 8
  %a2 = atomicrmw add ptr %out, i32 %n monotonic, align 4
  %a3 = atomicrmw sub ptr addrspace(1) %gout, i64 %m monotonic, align 8
  %a4 = atomicrmw fsub ptr addrspace(1) @g, float %v monotonic, align 4
  %b0 = atomicrmw fadd ptr %out, float %v seq_cst, align 4
  %b1 = atomicrmw fadd ptr %out, float %v acq_rel, align 4
  %b2 = atomicrmw volatile fadd ptr %out, float %v monotonic, align 4
  %b3 = atomicrmw fadd ptr %out, float %v syncscope("singlethread") monotonic, align 4
  %b4 = atomicrmw fadd ptr addrspace(3) @s, float %v monotonic, align 4
  %own = alloca float, align 4
  %b5 = atomicrmw fadd ptr %own, float %v monotonic, align 4
  %loaded = load ptr, ptr %table, align 8
  %b6 = atomicrmw fadd ptr %loaded, float %v monotonic, align 4
  %b7 = atomicrmw fadd ptr %out, float %v monotonic, align 4
  store float %b7, ptr %table, align 4
  %b8 = atomicrmw fmax ptr %out, float %v monotonic, align 4
  %b9 = atomicrmw xchg ptr %out, i32 %n monotonic, align 4
  %i = inttoptr i64 %m to ptr
  %b10 = atomicrmw fadd ptr %i, float %v monotonic, align 4
  ret void
}

define void @helper(ptr %q, ptr addrspace(1) %gq, float %v) {
  %c0 = atomicrmw fadd ptr %q, float %v monotonic, align 4
  %c1 = atomicrmw fadd ptr addrspace(1) %gq, float %v monotonic, align 4
  ret void
}
"""


def _rewritten():
    model = parse(IR)
    count = aggregate_atomics(model, WARP, model.functions["k"])
    return model, count


def _verified(text: str) -> None:
    initialize()
    ref = llvm.parse_assembly(f'target triple = "nvptx64-nvidia-cuda"\n{text}')
    ref.verify()


def test_only_relaxed_adds_to_global_memory_with_the_old_value_unused_are_rewritten():
    model, count = _rewritten()
    # a0..a4 in the kernel; in the helper only the global pointer (its generic argument may be a thread's own)
    assert count == 6
    text = str(model)
    _verified(text)
    k = model.functions["k"]
    atomics = [i for i in k.instructions() if i.opcode == "atomicrmw"]
    names = {i.name for i in atomics}
    for kept in ("b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10"):
        assert kept in names
        assert sum(i.name == kept for i in atomics) == 1
    # each rewritten add: its per-lane form (the original) and lane 0's add of the warp's sum
    assert len(atomics) == 11 + 5 * 2
    assert text.count("call i32 @llvm.nvvm.activemask()") == 6
    assert text.count("call i1 @llvm.nvvm.vote.all.sync(") == 6


def test_the_sum_keeps_the_operation_type_and_order():
    model, _ = _rewritten()
    k = model.functions["k"]
    sums = [i for i in k.instructions() if i.opcode == "atomicrmw" and not i.name]
    tails = sorted(i.parts[-1] for i in sums)
    assert tails == sorted([" monotonic, align 4", ' syncscope("device") monotonic, align 8',
                            " monotonic, align 4", " monotonic, align 8", " monotonic, align 4"])
    ops = sorted(str(i.operation) for i in sums)
    assert ops == ["add", "fadd", "fadd", "fsub", "sub"]
    # the butterfly combines subtrahends with adds: 5 levels per 32-bit value, the 64-bit ones in two halves
    # (a0..a4 and the helper's global add), and the declaration
    text = str(model)
    assert text.count("@llvm.nvvm.shfl.sync.bfly.i32(") == 5 * (1 + 2 + 1 + 2 + 1 + 1) + 1


PROVENANCE = """
@s = addrspace(3) global float 0.0

define void @k({ ptr, i64 } %arr, ptr %a, ptr %b, float %v, i1 %c) {
entry:
  %own = alloca float, align 4
  %data = extractvalue { ptr, i64 } %arr, 0
  %fd = freeze { ptr, i64 } %arr
  %frozen = extractvalue { ptr, i64 } %fd, 0
  %either = select i1 %c, ptr %a, ptr %b
  %mine = select i1 %c, ptr %a, ptr %own
  %gen = addrspacecast ptr addrspace(3) @s to ptr
  %built = insertvalue { ptr, i64 } undef, ptr %own, 0
  %back = extractvalue { ptr, i64 } %built, 0
  br i1 %c, label %l, label %r
l:
  br label %r
r:
  %joined = phi ptr [ %a, %entry ], [ %b, %l ]
  %mixed = phi ptr [ %a, %entry ], [ %own, %l ]
  %y0 = atomicrmw fadd ptr %data, float %v monotonic, align 4
  %y1 = atomicrmw fadd ptr %frozen, float %v monotonic, align 4
  %y2 = atomicrmw fadd ptr %either, float %v monotonic, align 4
  %y3 = atomicrmw fadd ptr %joined, float %v monotonic, align 4
  %n0 = atomicrmw fadd ptr %mine, float %v monotonic, align 4
  %n1 = atomicrmw fadd ptr %gen, float %v monotonic, align 4
  %n2 = atomicrmw fadd ptr %back, float %v monotonic, align 4
  %n3 = atomicrmw fadd ptr %mixed, float %v monotonic, align 4
  ret void
}
"""


def test_a_generic_pointer_is_global_only_from_kernel_arguments():
    """Through extractvalue (of a frozen argument too), selects and phis to the kernel's arguments: summed;
    anything that may be the thread's own alloca or shared memory: per lane."""
    model = parse(PROVENANCE)
    assert aggregate_atomics(model, WARP, model.functions["k"]) == 4
    _verified(str(model))
    names = [i.name for i in model.functions["k"].instructions() if i.opcode == "atomicrmw"]
    assert sorted(n for n in names if n) == ["n0", "n1", "n2", "n3", "y0", "y1", "y2", "y3"]
    assert names.count("") == 4
    model = parse(PROVENANCE)  # not the kernel: its arguments may point anywhere
    assert aggregate_atomics(model, WARP, None) == 0


def test_a_phi_successor_is_fed_from_the_join():
    ir = """
define void @k(ptr %out, float %v, i1 %c) {
entry:
  br i1 %c, label %a, label %b
a:
  %x = atomicrmw fadd ptr %out, float %v monotonic, align 4
  br label %b
b:
  %r = phi i32 [ 0, %entry ], [ 1, %a ]
  ret void
}
"""
    model = parse(ir)
    assert aggregate_atomics(model, WARP, model.functions["k"]) == 1
    _verified(str(model))


# -- PTX: the kernel language ---------------------------------------------------------------------------
def _ptx(fn, *types, target=None):
    lines = [ln.strip() for ln in kernel(fn, target=target).inspect_asm(*types).splitlines()]
    return lines


@pytest.mark.parametrize("array, halves", [(A32, 1), (A64, 2), (I32, 1), (I64, 2)])
def test_a_one_address_reduction_sums_the_warp_in_ptx(check_ptx, array, halves):
    lines = _ptx(one_address, array, array)
    check_ptx("\n".join(lines))
    assert sum(ln.startswith("activemask.b32") for ln in lines) == 1
    assert sum(ln.startswith("vote.sync.all.pred") for ln in lines) == 1
    assert sum(ln.startswith("shfl.sync.idx.b32") for ln in lines) == 2  # the address, in two halves
    assert sum(ln.startswith("shfl.sync.bfly.b32") for ln in lines) == 5 * halves
    assert any(ln.startswith("mov.u32") and "%laneid" in ln for ln in lines)
    atoms = [ln for ln in lines if ln.startswith(("atom.", "red."))]  # the warp's sum into the block's, which
    assert sum(".shared.add." in ln for ln in atoms) == 1 and sum(".global.add." in ln for ln in atoms) == 1  # one adds
    assert len(atoms) == 2                                                  # (.ptx_blocksums)


def test_the_opt_out_keeps_one_atomic_per_thread(check_ptx):
    lines = _ptx(one_address, A32, A32, target=PTXTarget(aggregate_atomics=False))
    check_ptx("\n".join(lines))
    assert not any(ln.startswith(("activemask", "vote.", "shfl.")) for ln in lines)
    assert sum(ln.startswith(("atom.global.add.f32", "red.global.add.f32")) for ln in lines) == 1


@pytest.mark.parametrize("fn, types", [(old_value_used, (A32, A32, A32)), (maximum, (A32, A32))])
def test_atomics_that_are_not_plain_sums_are_left_alone(check_ptx, fn, types):
    lines = _ptx(fn, *types)
    check_ptx("\n".join(lines))
    assert not any(ln.startswith(("activemask", "vote.", "shfl.")) for ln in lines)


def test_shared_memory_atomics_stay_per_lane(check_ptx):
    lines = _ptx(in_shared_memory, A32, A32)
    check_ptx("\n".join(lines))
    shared = [ln for ln in lines if ln.startswith(("atom.shared", "red.shared"))]
    assert shared  # the block's adds: per lane
    # only the global add (by thread 0) is checked for a full warp
    assert sum(ln.startswith("activemask.b32") for ln in lines) == 1


@pytest.mark.parametrize("capability, isa, summed", [((7, 0), None, False), ((6, 1), None, False),
                                                     ((7, 0), 63, True), ((7, 5), None, True)])
def test_before_ptx_6_2_atomics_stay_per_thread(capability, isa, summed):
    """``activemask`` needs PTX ISA 6.2: sm_70's default 6.0 keeps one atomic per thread (LLVM would stop
    the process on the intrinsic); naming a newer ISA sums the warp."""
    target = PTXTarget(capability=capability, ptx_version=isa)
    assert (target.warp_intrinsics() is not None) == summed
    lines = _ptx(one_address, A32, A32, target=target)
    assert any(ln.startswith("activemask.b32") for ln in lines) == summed
    assert sum(ln.startswith(("atom.global.add.f32", "red.global.add.f32")) for ln in lines) >= 1


def test_a_gradient_kernel_for_sm_70_compiles():
    """(In a child process: LLVM stopped the process on ``activemask`` for PTX ISA 6.0.)"""
    code = textwrap.dedent("""
        from enzyme_plugin import Const, Duplicated, Reverse, autodiff
        from gpucompiler import device as gd, kernel, types as T
        from gpucompiler.targets.ptx import PTXTarget

        A = T.ArrayType(T.float64, 1, "C")

        def term(x, w, i):
            return w[0] * x[i] * x[i]

        def grad(x, dx, w, dw):
            i = gd.grid(1)
            if i < x.shape[0]:
                autodiff(Reverse, term, Duplicated(x, dx), Duplicated(w, dw), Const(i))

        ptx = kernel(grad, plugins=("enzyme",), target=PTXTarget(capability=(7, 0))).inspect_asm(A, A, A, A)
        assert ".target sm_70" in ptx and "activemask" not in ptx and "atom.global.add.f64" in ptx
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


# -- AMD ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", tuple(ARCHITECTURES))
def test_a_one_address_reduction_sums_the_wavefront_on_amd(arch):
    width = ARCHITECTURES[arch]
    k = kernel(one_address)
    text = k.inspect_llvm(A32, A32, target=AMDGPUTarget(arch))
    assert text.count("@llvm.amdgcn.ds.bpermute(") >= int(math.log2(width))
    off = k.inspect_llvm(A32, A32, target=AMDGPUTarget(arch, aggregate_atomics=False))
    assert "ds.bpermute" not in off and "ballot" not in off
    try:
        for tool in ("ld.lld", "llvm-readobj", "llvm-objdump"):
            tools.find_tool(tool)
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))
    asm = hip.code_object(k, (A32, A32), AMDGPUTarget(arch)).disassemble()
    assert asm.count("ds_bpermute_b32") >= int(math.log2(width))
    assert "global_atomic_add_f32" in asm or "global_atomic_cmpswap" in asm or "flat_atomic" in asm


# -- SPIR-V on lavapipe ------------------------------------------------------------------------------------


def _opcodes(binary: bytes) -> set[int]:
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    ops, at = set(), 5
    while at < len(words):
        ops.add(words[at] & 0xFFFF)
        at += max(words[at] >> 16, 1)
    return ops


OP_GROUP_FADD, OP_GROUP_IADD = 350, 349


@pytest.mark.parametrize("array, op", [(A32, OP_GROUP_FADD), (I32, OP_GROUP_IADD)])
def test_a_one_address_reduction_is_summed_over_the_subgroup_in_the_shader(array, op):
    k = kernel(one_address)
    text = k.inspect_llvm(array, array, target=SPIRVTarget())
    assert "@llvm.spv.wave.reduce.sum." in text
    binary = k.compile((array, array), SPIRVTarget())[0]
    assert isinstance(binary, bytes) and op in _opcodes(binary)
    off = k.compile((array, array), SPIRVTarget(aggregate_atomics=False))[0]
    assert isinstance(off, bytes) and op not in _opcodes(off)


def _values(n, dtype):
    """``n`` values whose sums are exact in ``dtype`` (quarters in [-2, 2]; integers): a lane added twice
    or not at all changes the result."""
    k = rng.integers(-8, 9, n)
    return (k / 4 if np.dtype(dtype).kind == "f" else k).astype(dtype)


def _reference(fn, x) -> list:
    x = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)
    if fn is one_address:
        return [np.sum(x * x), 0]
    if fn is where_positive:
        return [np.sum(x[x > 0]), 0]
    if fn is in_shared_memory:
        return [np.sum(x), 0]
    return [np.sum(x[0::2]), np.sum(x[1::2])]


SUMS = [(fn, dtype) for fn in (one_address, where_positive, two_addresses) for dtype in (np.float32, np.int32)]
SUMS.append((in_shared_memory, np.float32))


@pytest.mark.parametrize("fn, dtype", SUMS, ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("n", [256, 200, 37, 4099])
def test_one_address_reductions_on_lavapipe_match_numpy(vulkan_device, fn, n, dtype):
    x = _values(n, dtype)
    out = np.zeros(2, dtype)
    kernel(fn)[(n + 63) // 64, 64, SPIRVTarget()](x, out)
    assert out.tolist() == _reference(fn, x)


# -- the CPU grid emulation (no warps): unchanged --------------------------------------------------------
@pytest.mark.parametrize("fn", [one_address, where_positive, two_addresses])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_the_emulation_sums_right(fn, dtype):
    x = _values(1001, dtype)
    out = np.zeros(2, dtype)
    kernel(fn)[8, 128, "cpu"](x, out)
    assert out.tolist() == _reference(fn, x)


# -- on a CUDA device -----------------------------------------------------------------------------------------
GPU_CASES = [(fn, n, dtype) for fn in (one_address, where_positive, two_addresses)
             for n in (1 << 16, 1000, 31) for dtype in (np.float32, np.float64, np.int32, np.int64)]
GPU_CASES += [(in_shared_memory, n, np.float32) for n in (1 << 16, 1000, 31)]


@pytest.mark.gpu
@pytest.mark.parametrize("aggregate", [True, False])
@pytest.mark.parametrize("fn, n, dtype", GPU_CASES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_one_address_reductions_on_the_gpu_match_numpy(fn, n, dtype, aggregate):
    """Full warps (2^16), a partial last warp (1000, 31), lanes a branch disables; exact sums."""
    x = _values(n, dtype)
    out = np.zeros(2, dtype)
    kernel(fn)[(n + 127) // 128, 128, PTXTarget(aggregate_atomics=aggregate)](x, out)
    assert out.tolist() == _reference(fn, x)


def _gradient_case(n):
    x = _values(n, np.float64)
    args = (x, np.zeros(n), np.array([0.75]), np.zeros(1), np.zeros(1), np.array([2.0]))
    on = x > -1.0
    want_dw = [2.0 * np.sum(x[on] * x[on])]
    want_dx = np.where(on, 2.0 * 0.75 * 2.0 * x, 0.0)
    return args, want_dx, want_dw


@pytest.mark.parametrize("n", [1000, 31])
def test_the_gradient_of_a_one_address_reduction_on_the_emulation(n):
    args, want_dx, want_dw = _gradient_case(n)
    kernel(grad_energy, plugins=("enzyme",))[(n + 127) // 128, 128, "cpu"](*args)
    assert args[3].tolist() == want_dw and args[1].tolist() == want_dx.tolist()


@pytest.mark.gpu
@pytest.mark.parametrize("aggregate", [True, False])
@pytest.mark.parametrize("n", [1 << 16, 1000, 31])
def test_the_gradient_of_a_one_address_reduction_on_the_gpu(n, aggregate):
    args, want_dx, want_dw = _gradient_case(n)
    k = kernel(grad_energy, plugins=("enzyme",))
    k[(n + 127) // 128, 128, PTXTarget(aggregate_atomics=aggregate)](*args)
    assert args[3].tolist() == want_dw and args[1].tolist() == want_dx.tolist()
