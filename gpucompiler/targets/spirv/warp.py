"""Subgroup-aggregated atomic adds on Vulkan: the SPIR-V target's form of :mod:`..warpatomics`.

A Vulkan pointer is a buffer and an element index only once :func:`~.logical.to_logical` has rebuilt it
(every atomic at device scope, :mod:`.atomics`), so :func:`aggregate_adds` runs after
:func:`~.lower.lower_shader`. Each ``atomicrmw fadd`` (``float``/``double``; ``atomic_add``'s subtraction
is an add of the negation by then) or ``add`` of ``i32`` whose old value is unused and whose pointer is a
buffer element ``llvm.spv.resource.getpointer(handle, i)`` becomes::

    same  = OpGroupNonUniformAll(i == OpGroupNonUniformUMin(i))  ; every active lane adds to element i
    total = OpGroupNonUniformFAdd/IAdd Reduce v                     ; their sum
    if !same or OpGroupNonUniformElect: atomicrmw add p, same ? total : v

Subgroup operations act on the active invocations, so this holds for any subgroup size and any set
of active lanes (lavapipe's 8, NVIDIA's 32, AMD's 64); it needs the ``GroupNonUniform``, ``Vote`` and
``Arithmetic`` capabilities (Vulkan 1.1's subgroup operations; ``SPIRVTarget(subgroups=False)``
keeps one atomic per lane, as ``aggregate_atomics=False`` does). Atomics on shared memory and atomics
whose old value is used keep one per lane. Like any atomic sum, a float sum may round differently.
"""

from __future__ import annotations

from ...llvm import Builder, ConstantData, Function, Instruction, Value, const_int, types as LT
from ..warpatomics import split_after

_SUFFIX = {"float": "f32", "double": "f64", "i32": "i32"}
"""The element types summed, by the suffix of ``llvm.spv.wave.reduce.sum``."""
_SUMMED = {"float": "fadd", "double": "fadd", "i32": "add"}


def _declare(model, name: str, ret: LT.Type, params) -> Function:
    fn = model.functions.get(name)
    if fn is None:
        fn = model.add_function(Function(name, LT.function(ret, params)))
        for a in ("convergent", "nounwind"):
            fn.add_attribute(a)
    return fn


def _buffer_index(rmw: Instruction) -> Value | None:
    """The element index of a buffer atomic add whose old value is unused (None for other atomics)."""
    if rmw.opcode != "atomicrmw" or rmw.users or _SUMMED.get(str(rmw.type)) != rmw.operation:
        return None
    p = rmw.pointer_operand
    if not isinstance(p, Instruction) or p.opcode != "call":
        return None
    handle = p.args[0] if p.args else None
    if isinstance(handle, Instruction) and handle.opcode in ("phi", "select"):
        return None  # lanes may add to different buffers at one index
    return p.args[1] if getattr(p.callee, "name", "").startswith("llvm.spv.resource.getpointer") else None


def aggregate_adds(model) -> int:
    """Sum the subgroup's buffer adds into one atomic per element (see the module docstring); returns
    how many adds were aggregated."""
    sites = [(inst, index) for fn in model.functions.values() if not fn.is_declaration
             for inst in fn.instructions() if (index := _buffer_index(inst)) is not None]
    for rmw, index in sites:
        _aggregate(model, rmw, index, rmw.operands[1])
    return len(sites)


def _aggregate(model, rmw: Instruction, index: Value, value: Value) -> None:
    b = Builder()
    b.position_before(rmw)
    it = index.type
    if isinstance(index, ConstantData):  # one element for every lane (a scalar parameter's adjoint)
        same: Value = const_int(LT.i1, 1)
    else:
        low = b.call(_declare(model, f"llvm.spv.wave.reduce.umin.{it}", it, [it]), [index])
        same = b.call(_declare(model, "llvm.spv.wave.all", LT.i1, [LT.i1]), [b.icmp("eq", index, low)])
    total = b.call(_declare(model, f"llvm.spv.wave.reduce.sum.{_SUFFIX[str(value.type)]}", value.type,
                            [value.type]), [value])
    first = b.call(_declare(model, "llvm.spv.wave.is.first.lane", LT.i1, []), [])
    rmw.set_operand(1, b.select(same, total, value))
    go = b.select(same, first, const_int(LT.i1, 1))
    block = rmw.parent
    assert block is not None
    add, join = split_after(rmw)
    b.position_at_end(block)
    b.cond_br(go, add, join)
