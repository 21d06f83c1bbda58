"""Warp-aggregated adjoints on AMD GPUs (``gpucompiler.targets.amdgpu.warp``): the adjoints of a value
every thread reads are summed over the wavefront (64 lanes on gfx90a/gfx942, 32 on gfx1100) with
``ds_bpermute`` butterflies before one atomic add. No AMD GPU exists here: the code objects are linked
and disassembled, the IR read back; the helpers' IR is verified by LLVM for both wavefront sizes."""

from __future__ import annotations

import math
import re

import llvmlite.binding as llvm
import pytest

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd, kernel, types as T
from gpucompiler.errors import ToolNotFoundError
from gpucompiler.llvm.binding import initialize
from gpucompiler.runtime import hip
from gpucompiler.targets.amdgpu import ARCHITECTURES, AMDGPUTarget, tools
from gpucompiler.targets.amdgpu.warp import PREFIX, definitions

A = T.ArrayType(T.float64, 1, "C")
P = ("enzyme",)


def energy(x, w, i):
    return w[0] * x[i] * x[i] + w[1] * x[i]


@kernel(plugins=P)
def grad_energy(x, dx, w, dw):
    """Every thread reads w: the adjoints of w[0] and w[1] from all threads add up."""
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, energy, Duplicated(x, dx), Duplicated(w, dw), Const(i))


@pytest.mark.parametrize("arch", tuple(ARCHITECTURES))
def test_the_record_carries_the_wavefront_size(arch):
    warp = AMDGPUTarget(arch).warp_intrinsics()
    assert warp.width == ARCHITECTURES[arch]
    assert all(name.startswith(PREFIX) for name in (warp.active_mask, warp.vote_all, warp.shuffle_index,
                                                   warp.shuffle_xor, warp.lane_id))


@pytest.mark.parametrize("width", [32, 64])
def test_the_helpers_are_valid_llvm_ir(width):
    initialize()
    mod = llvm.parse_assembly('target triple = "amdgcn-amd-amdhsa"\n' + definitions(width))
    mod.verify()
    names = {f.name for f in mod.functions if not f.is_declaration}
    assert {PREFIX + n for n in ("active.mask", "vote.all", "shuffle.index", "shuffle.xor", "lane.id")} == names
    assert f"@llvm.amdgcn.ballot.i{width}(" in str(mod) and ("mbcnt.hi(i32 -1" in str(mod)) == (width == 64)


@pytest.mark.parametrize("arch", tuple(ARCHITECTURES))
def test_shared_parameters_are_summed_over_the_wavefront(arch):
    text = grad_energy.inspect_llvm(A, A, A, A, target=AMDGPUTarget(arch))
    width = ARCHITECTURES[arch]
    assert PREFIX not in text  # every helper linked and inlined
    assert f"@llvm.amdgcn.ballot.i{width}(i1 true)" in text
    # dw[0] and dw[1] (one element for all lanes), dx[i] (checked at run time): a butterfly of log2(width)
    # levels each, the two halves of a double per level
    levels = int(math.log2(width))
    assert text.count("@llvm.amdgcn.ds.bpermute(") >= 3 * 2 * levels
    assert re.search(r"atomicrmw fadd ptr addrspace\(1\) ", text)


@pytest.mark.parametrize("arch", tuple(ARCHITECTURES))
def test_the_code_object_links_and_shows_the_butterfly(arch):
    try:
        for tool in ("ld.lld", "llvm-readobj", "llvm-objdump"):
            tools.find_tool(tool)
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))
    co = hip.code_object(grad_energy, (A, A, A, A), AMDGPUTarget(arch))
    assert co.metadata()[".wavefront_size"] == ARCHITECTURES[arch]
    asm = co.disassemble()
    assert asm.count("ds_bpermute_b32") >= 3 * 2 * int(math.log2(ARCHITECTURES[arch]))
    assert ("v_mbcnt_hi_u32_b32" in asm) == (ARCHITECTURES[arch] == 64)
    assert re.search(r"(?:global|flat)_atomic_(?:add_f64|cmpswap_x2|cmpswap_b64)", asm)
