"""The PTX target's interpreter overlays: libdevice's math and the NVVM kernel intrinsics.

:data:`MATH_RULES` calls libdevice's ``__nv_*`` version of every function
of the language's ``math`` (``__nv_sinf`` for float32); :data:`KERNEL_RULES`
lowers the kernel language (:mod:`gpucompiler.device`) to NVVM's special
registers, ``bar.sync``, ``shfl.sync`` and ``addrspace(3)`` globals.
"""

from __future__ import annotations

import functools
import os
from types import FunctionType

from llvmlite import ir

from .. import types as T
from ..device import Dim3, KernelLowering, kernel_rules, new_shared_name
from ..language.math.mathlib import device_math_rules
from ..interpreter.rules import RuleSet
from .libdevice import libdevice_name, prefetch

_I32, _I64 = ir.IntType(32), ir.IntType(64)
_SPECIAL_REGISTERS = {"threadIdx": "tid", "blockIdx": "ctaid", "blockDim": "ntid", "gridDim": "nctaid"}
SHARED = 3
"""The NVPTX address space of block-shared memory."""


def _read(cg, triple: Dim3, axis: int):
    name = f"llvm.nvvm.read.ptx.sreg.{_SPECIAL_REGISTERS[triple.name]}.{'xyz'[axis]}"
    return cg.b.zext(cg.b.call(cg.mod.declare(name, _I32, []), []), _I64)


def _barrier(cg) -> None:
    fn = cg.mod.declare("llvm.nvvm.barrier.cta.sync.aligned.all", ir.VoidType(), [_I32])
    cg.b.call(fn, [ir.Constant(_I32, 0)])


def _shared(cg, array_type):
    g = ir.GlobalVariable(cg.mod.module, array_type, name=new_shared_name(cg), addrspace=SHARED)
    g.linkage, g.align = "internal", 16  # pyright: ignore[reportAttributeAccessIssue]
    g.initializer = ir.Constant(array_type, ir.Undefined)  # pyright: ignore[reportAttributeAccessIssue]
    return cg.b.addrspacecast(g, ir.PointerType())


def _shuffle_down(cg, word, delta):
    """``shfl.sync.down.b32`` over every lane (64-bit values as two 32-bit halves)."""
    fn = cg.mod.declare("llvm.nvvm.shfl.sync.down.i32", _I32, [_I32, _I32, _I32, _I32])
    full, clamp = ir.Constant(_I32, 0xFFFFFFFF), ir.Constant(_I32, 0x1F)
    if word.type == _I32:
        return cg.b.call(fn, [full, word, delta, clamp])
    lo = cg.b.call(fn, [full, cg.b.trunc(word, _I32), delta, clamp])
    hi = cg.b.call(fn, [full, cg.b.trunc(cg.b.lshr(word, ir.Constant(_I64, 32)), _I32), delta, clamp])
    return cg.b.or_(cg.b.shl(cg.b.zext(hi, _I64), ir.Constant(_I64, 32)), cg.b.zext(lo, _I64))


def _libdevice(cg, fn, rt, xs):
    return cg.call_extern(libdevice_name(fn, rt == T.float32), rt, xs)


class _PrefetchingRules(RuleSet):
    """Rules whose result types, when inferred, start libdevice's parse on its thread (:func:`.libdevice.prefetch`)
    where a core is free for it (:func:`_core_to_spare`): the inference of a math call comes before the key's
    lookup and the IR generation, ~20 ms before the code generator names its first ``__nv_*`` function, so that
    the parse is over by the time the link needs it. Without a free core the parse would take the compile's
    (its imports and IR generation grew by more than the link saved on the loaded development VM); the code
    generator's first name starts it then."""

    def define(self, fn, *sig, restype, varargs=False, pure=True):
        if isinstance(restype, FunctionType):
            restype = _prefetching(restype)
        return super().define(fn, *sig, restype=restype, varargs=varargs, pure=pure)


def _prefetching(restype: FunctionType):
    def infer(*argtypes):
        if _core_to_spare():
            prefetch()
        return restype(*argtypes)
    return infer


@functools.cache
def _core_to_spare() -> bool:
    """Whether the load average leaves a core this process may run on free beside the compile's (asked once)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # (not Linux)
        cores = os.cpu_count() or 1
    try:
        return os.getloadavg()[0] <= cores - 1
    except (AttributeError, OSError):  # no load average to be had: the code generator starts the parse
        return False


MATH_RULES = device_math_rules(_PrefetchingRules("base.ptx", target="ptx", builtin=True), _libdevice)
"""libdevice's math (every PTX job)."""
KERNEL_RULES = kernel_rules(RuleSet("base.kernel.ptx", target="ptx", builtin=True),
                            KernelLowering(_read, _barrier, _shared, _shuffle_down))
"""The kernel language on NVVM (every PTX job)."""
