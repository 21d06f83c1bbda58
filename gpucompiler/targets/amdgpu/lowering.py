"""The kernel language on AMD GPUs: the ``base.kernel.amdgpu`` overlay of :mod:`gpucompiler.device`.

* ``threadIdx``/``blockIdx``: ``llvm.amdgcn.workitem.id.*`` / ``workgroup.id.*``;
* ``blockDim``/``gridDim``: the HSA dispatch packet (``llvm.amdgcn.dispatch.ptr``, constant
  address space 4): ``workgroup_size_*`` (16 bits at byte 4) and ``grid_size_*`` (32 bits at byte
  12, in work-items: ``gridDim = grid_size / workgroup_size``);
* ``syncthreads()``: ``s_barrier`` between a workgroup-scope release and acquire fence (the
  barrier intrinsic alone orders no memory);
* ``shared_array``: an ``addrspace(3)`` (LDS) global;
* ``shfl_down``: ``ds_bpermute`` within the language's 32-lane warp (a wave64 is two of them);
* atomics: ``atomicrmw``/``cmpxchg`` as on every target;
* math: type inference refuses a function with no lowering here (:mod:`.amdgpu_math`), naming it.
"""

from __future__ import annotations

import operator

from llvmlite import ir

from ... import types as T
from ...core.mathfns import BY_LIBM, MATH_FUNCTIONS
from ...device import Dim3, KernelLowering, kernel_rules, new_shared_name
from ...errors import TargetUnsupportedError
from ...interpreter.lattice import Const, widen
from ...interpreter.rules import RuleSet
from ...llvm import Builder, Instruction, types as LT
from ...pristine import math
from . import devicelibs

_I16, _I32, _I64 = ir.IntType(16), ir.IntType(32), ir.IntType(64)
_AXES = "xyz"
LOCAL = 3
"""The AMDGPU address space of workgroup-shared memory (LDS)."""
CONSTANT = 4
"""The AMDGPU address space of the kernarg segment and the dispatch packet."""

_ID = {"threadIdx": "workitem", "blockIdx": "workgroup"}


def _dispatch(cg, offset: int, ty: ir.IntType):
    fn = cg.mod.declare("llvm.amdgcn.dispatch.ptr", ir.PointerType(addrspace=CONSTANT), [])
    ptr = cg.b.gep(cg.b.call(fn, []), [ir.Constant(_I64, offset)], source_etype=ir.IntType(8))
    return cg.b.zext(cg.b.load(ptr, typ=ty), _I64)


def _read(cg, reg: Dim3, axis: int):
    kind = _ID.get(reg.name)
    if kind is not None:
        fn = cg.mod.declare(f"llvm.amdgcn.{kind}.id.{_AXES[axis]}", _I32, [])
        return cg.b.zext(cg.b.call(fn, []), _I64)
    size = _dispatch(cg, 4 + 2 * axis, _I16)
    if reg.name == "blockDim":
        return size
    return cg.b.udiv(_dispatch(cg, 12 + 4 * axis, _I32), size)


def _barrier(cg):
    cg.b.fence("release", "workgroup")
    cg.b.call(cg.mod.declare("llvm.amdgcn.s.barrier", ir.VoidType(), []), [])
    cg.b.fence("acquire", "workgroup")


def _shared(cg, array_type):
    g = ir.GlobalVariable(cg.mod.module, array_type, name=new_shared_name(cg), addrspace=LOCAL)
    g.linkage, g.align = "internal", 16  # pyright: ignore[reportAttributeAccessIssue]
    g.initializer = ir.Constant(array_type, ir.Undefined)  # pyright: ignore[reportAttributeAccessIssue]
    return cg.b.addrspacecast(g, ir.PointerType())


def _lane(cg):
    lo = cg.mod.declare("llvm.amdgcn.mbcnt.lo", _I32, [_I32, _I32])
    hi = cg.mod.declare("llvm.amdgcn.mbcnt.hi", _I32, [_I32, _I32])
    ones = ir.Constant(_I32, 0xFFFFFFFF)
    return cg.b.call(hi, [ones, cg.b.call(lo, [ones, ir.Constant(_I32, 0)])])


def _shuffle_down(cg, word, delta):
    """The lane ``delta`` above within the 32-lane warp, the caller's own past its end (PTX's clamp)."""
    lane = _lane(cg)
    inside = cg.b.icmp_unsigned("<", cg.b.add(cg.b.and_(lane, ir.Constant(_I32, 31)), delta), ir.Constant(_I32, 32))
    source = cg.b.select(inside, cg.b.add(lane, delta), lane)
    address = cg.b.shl(source, ir.Constant(_I32, 2))
    bperm = cg.mod.declare("llvm.amdgcn.ds.bpermute", _I32, [_I32, _I32])
    if word.type == _I32:
        return cg.b.call(bperm, [address, word])
    lo = cg.b.call(bperm, [address, cg.b.trunc(word, _I32)])
    hi = cg.b.call(bperm, [address, cg.b.trunc(cg.b.lshr(word, ir.Constant(_I64, 32)), _I32)])
    return cg.b.or_(cg.b.shl(cg.b.zext(hi, _I64), ir.Constant(_I64, 32)), cg.b.zext(lo, _I64))


KERNEL_RULES = kernel_rules(RuleSet("base.kernel.amdgpu", target="amdgpu", builtin=True),
                            KernelLowering(_read, _barrier, _shared, _shuffle_down))
"""The AMDGPU overlay of the kernel language, and the refusal of math without a lowering here."""

_MATH = {getattr(math, f.python): f for f in MATH_FUNCTIONS if f.python is not None and hasattr(math, f.python)}
_MATH[operator.pow] = BY_LIBM["pow"]
_UFUNCS = {f.numpy: f for f in MATH_FUNCTIONS if f.numpy is not None}
"""The math table's records by NumPy ufunc name (``arcsin``)."""


@KERNEL_RULES.handler
def _math_without_lowering(interp, fn, args):
    """Refuse, at the user's line, a math function this target cannot lower (None: the rules apply)."""
    record = _MATH.get(fn) if callable(fn) else None
    if record is None and type(fn).__name__ == "ufunc":  # NumPy's (not imported here: its import is slow)
        record = _UFUNCS.get(getattr(fn, "__name__", ""))
    types = [widen(a) for a in args]
    if record is None or not types or not all(isinstance(t, T.Scalar) for t in types):
        return None
    floats = [t for t in types if t.kind == "f"]
    if not floats or record.rounds or (record.libm == "pow" and _folded_power(args[-1])):
        return None  # integers (exact), rounding (exact), a power LLVM rewrites exactly
    bits = 32 if all(t == T.float32 for t in floats) else 64
    if devicelibs.available(record, bits):
        return None
    raise TargetUnsupportedError(devicelibs.unsupported_message(record.libm, bits), types)


_FOLDED_POWERS = frozenset({-1.0, 0.0, 0.5, 1.0, 2.0})
"""Constant exponents whose ``pow`` LLVM rewrites without a library (``1/x``, ``1``, ``sqrt``, ``x``, ``x*x``)."""


def _folded_power(exponent) -> bool:
    value = exponent.value if isinstance(exponent, Const) else None
    return type(value) in (int, float) and value in _FOLDED_POWERS


def fence_barriers(model) -> int:
    """Put a workgroup release fence before and an acquire fence after every ``s_barrier`` that lacks
    them (the AD engine mirrors barriers into the reverse sweep as the bare call); returns how many."""
    added = 0
    for fn in model.functions.values():
        if fn.is_declaration:
            continue
        for block in fn.blocks:
            insts = block.instructions
            k = 0
            while k < len(insts):
                inst = insts[k]
                if inst.opcode == "call" and getattr(inst.callee, "name", None) == "llvm.amdgcn.s.barrier":
                    b = Builder()
                    if not (k > 0 and _is_fence(insts[k - 1], "release")):
                        b.position_before(inst)
                        b.insert(_fence("release"))
                        added += 1
                        k += 1
                    if not (k + 1 < len(insts) and _is_fence(insts[k + 1], "acquire")):
                        b.position_after(inst)
                        b.insert(_fence("acquire"))
                        added += 1
                    insts = block.instructions
                k += 1
    return added


def _is_fence(inst, ordering: str) -> bool:
    return inst.opcode == "fence" and any(ordering in p for p in inst.parts if isinstance(p, str))


def _fence(ordering: str) -> Instruction:
    return Instruction("fence", LT.void, [f'fence syncscope("workgroup") {ordering}'])
