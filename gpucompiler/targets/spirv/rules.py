"""The kernel language on SPIR-V (Vulkan compute): indices, barriers, shared memory, subgroup shuffles.

Thread and workgroup indices are LLVM's SPIR-V intrinsics (``GlobalInvocationId``'s
parts: ``LocalInvocationId``, ``WorkgroupId``, ``NumWorkgroups``). Vulkan fixes a
compute shader's workgroup size in the module, so ``blockDim`` is a placeholder call
(:data:`WORKGROUP_SIZE`) that the target replaces by its constant; a shuffle is a
placeholder (:data:`SHUFFLE_DOWN`) the target lowers to ``OpGroupNonUniformShuffle``.
Shared memory is a ``Workgroup`` (address space 3) global; atomics are LLVM's
``atomicrmw``/``cmpxchg``, which the target rebuilds on Vulkan's logical pointers.

A loop's powers are checked one by one, as outside loops: the versioned copies
of frontend/powerloops.py (an unchecked copy, rerun checked) are for the CPU's
vectorizer, and on Vulkan they cannot be built. Their test that a stored array
and a read one are disjoint compares addresses, which logical pointers do not
have (and two bindings may be one buffer: the runtime binds an array passed
twice once); and LLVM 22's SPIR-V back end leaves the copies of a storing loop
unstructured (``a[j] = a[j] ** 2``: spirv-val refused the shader).
"""

from __future__ import annotations

from llvmlite import ir

from ...device import Dim3, KernelLowering, blockDim, blockIdx, gridDim, kernel_rules, new_shared_name, threadIdx
from ... import types as T
from ...frontend import intrinsics as K
from ...interpreter.lattice import const, widen
from ...interpreter.rules import Any_, Constant, RuleSet
from .libm64 import FUNCTIONS, bit_rules

NAME = "spirv"
"""The target name the overlay applies to."""

WORKGROUP_SIZE = "gpuc.spirv.workgroup.size"
"""``i32 (i32 axis)``: the workgroup size along ``axis`` (a constant once the target knows it)."""
SHARED = "gpuc.spirv.shared"
"""``ptr (ptr addrspace(3) @array)``: a shared array as the kernel's (generic) pointer, rebuilt on the
``Workgroup`` global by the target (a call, not a constant cast, so that every access reaches it)."""
SHUFFLE_DOWN = "gpuc.spirv.shuffle.down"
"""``iN (iN value, i32 delta)``: CUDA's ``shfl.down`` over a 32-lane subgroup."""

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_INTRINSIC = {threadIdx.name: "llvm.spv.thread.id.in.group.i32", blockIdx.name: "llvm.spv.group.id.i32",
              gridDim.name: "llvm.spv.num.workgroups.i32", blockDim.name: WORKGROUP_SIZE}


INDEX_READS = frozenset({*_INTRINSIC.values(), "llvm.spv.subgroup.local.invocation.id"})
"""The functions that read an index or a size (no derivative)."""
BARRIER = "llvm.spv.group.memory.barrier.with.group.sync"
"""The barrier of ``syncthreads()``."""


def _pure(fn: ir.Function) -> ir.Function:
    for attr in ("nounwind", "readnone"):
        fn.attributes.add(attr)
    return fn


def _register(cg, reg: Dim3, axis: int):
    fn = _pure(cg.mod.declare(_INTRINSIC[reg.name], _I32, [_I32]))
    return cg.b.zext(cg.b.call(fn, [ir.Constant(_I32, axis)]), _I64)


def _barrier(cg):
    """``OpControlBarrier Workgroup Workgroup AcquireRelease|WorkgroupMemory`` (HLSL's
    ``GroupMemoryBarrierWithGroupSync``)."""
    fn = cg.mod.declare(BARRIER, ir.VoidType(), [])
    fn.attributes.add("convergent")
    cg.b.call(fn, [])


def _shared(cg, array_type):
    g = ir.GlobalVariable(cg.mod.module, array_type, name=new_shared_name(cg), addrspace=3)
    g.linkage, g.align = "internal", 16  # pyright: ignore[reportAttributeAccessIssue]
    g.initializer = ir.Constant(array_type, ir.Undefined)  # pyright: ignore[reportAttributeAccessIssue]
    fn = _pure(cg.mod.declare(SHARED, ir.PointerType(), [g.type]))
    return cg.b.call(fn, [g])


def _shuffle_down(cg, word, delta):
    fn = cg.mod.declare(f"{SHUFFLE_DOWN}.i{word.type.width}", word.type, [word.type, _I32])
    fn.attributes.add("convergent")
    return cg.b.call(fn, [word, delta])


def _float64_math(interp, fn, args):
    """``math.sin(x)``... of a float64 (or an int): the implementation in :mod:`.libm64`, compiled
    like any called function (float32 stays GLSL.std.450's)."""
    try:
        impl = FUNCTIONS.get(fn)
    except TypeError:  # an unhashable callee
        return None
    if impl is None or len(args) != impl.__code__.co_argcount:
        return None
    types = [widen(a) for a in args]
    if not all(isinstance(t, T.Scalar) and t.kind in "biuf" for t in types) or all(t == T.float32 for t in types):
        return None
    return interp.invoke(impl, args)


MATH_RULES_SPIRV = RuleSet("base.spirv", target=NAME, builtin=True)
"""float64 ``exp``, ``log``, ``sin``... written in the kernel language (:mod:`.libm64`), every SPIR-V job."""
bit_rules(MATH_RULES_SPIRV)
MATH_RULES_SPIRV.handler(_float64_math)

KERNEL_RULES_SPIRV = kernel_rules(RuleSet("base.kernel.spirv", target=NAME, builtin=True),
                                  KernelLowering(_register, _barrier, _shared, _shuffle_down))
"""The kernel language on Vulkan (every SPIR-V job)."""


@KERNEL_RULES_SPIRV.define(K.powers_unchecked, Constant, Any_, varargs=True, restype=lambda *values: const(False))
def _powers_checked(cg, args, argtypes, rt):
    """A loop's powers are never unchecked (see the module docstring): the versioned loop is its checked copy."""
    return None


__all__ = ["BARRIER", "INDEX_READS", "KERNEL_RULES_SPIRV", "MATH_RULES_SPIRV", "NAME", "SHARED", "SHUFFLE_DOWN", "WORKGROUP_SIZE"]
