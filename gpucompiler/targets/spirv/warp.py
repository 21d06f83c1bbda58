"""Warp-aggregated adjoints on Vulkan: the AD engine's marked atomic adds summed over the subgroup.

The engine (:class:`~gpucompiler.core.WarpIntrinsics` with ``target_sum`` :data:`SUM`) passes an
adjoint that threads may add to one address (a parameter every thread reads) through
``gpuc.spirv.subgroup.sum.f32``/``.f64`` into a plain ``atomicrmw fadd``. A Vulkan pointer is a
buffer and an element index only once :func:`~.logical.to_logical` has rebuilt it, so
:func:`aggregate_adds` runs after :func:`~.lower.lower_shader`; where the add's pointer is a buffer
element ``llvm.spv.resource.getpointer(handle, i)`` it becomes::

    same  = OpGroupNonUniformAll(i == OpGroupNonUniformUMin(i))  ; every active lane adds to element i
    total = OpGroupNonUniformFAdd Reduce v                         ; their sum
    if !same or OpGroupNonUniformElect: atomicrmw fadd p, same ? total : v

Subgroup operations act on the active invocations, so this holds for any subgroup size and any set
of active lanes (lavapipe's 8, NVIDIA's 32, AMD's 64); it needs the ``GroupNonUniform``, ``Vote`` and
``Arithmetic`` capabilities (Vulkan 1.1's subgroup operations; ``SPIRVTarget(subgroups=False)``
keeps one atomic per lane). Elsewhere (shared memory) the mark is dropped: each lane adds its own.
"""

from __future__ import annotations

from ...llvm import BasicBlock, Builder, ConstantData, Function, Instruction, Value, const_int, types as LT

SUM = "gpuc.spirv.subgroup.sum"
"""The ``target_sum`` of the SPIR-V target's warp record (``.f32``/``.f64`` appended by the engine)."""
_SUFFIX = {"float": "f32", "double": "f64"}


def _declare(model, name: str, ret: LT.Type, params) -> Function:
    fn = model.functions.get(name)
    if fn is None:
        fn = model.add_function(Function(name, LT.function(ret, params)))
        for a in ("convergent", "nounwind"):
            fn.add_attribute(a)
    return fn


def _buffer_index(rmw: Instruction) -> Value | None:
    """The element index of a buffer ``atomicrmw fadd`` (None for other atomics)."""
    if rmw.opcode != "atomicrmw" or rmw.operation != "fadd":
        return None
    p = rmw.pointer_operand
    if not isinstance(p, Instruction) or p.opcode != "call":
        return None
    return p.args[1] if getattr(p.callee, "name", "").startswith("llvm.spv.resource.getpointer") else None


def aggregate_adds(model) -> int:
    """Sum the subgroup's marked buffer adds into one atomic per element (see the module docstring),
    drop every mark; returns how many adds were aggregated."""
    done = 0
    for fn in [f for f in model.functions.values() if f.name.startswith(SUM + ".")]:
        for call in [u for u in fn.users if isinstance(u, Instruction) and u.opcode == "call"]:
            value = call.args[0]
            for user in list(dict.fromkeys(u.user for u in call.uses)):
                if not isinstance(user, Instruction):
                    continue
                index = _buffer_index(user)
                if index is not None and user.operands[1] is call:
                    _aggregate(model, user, index, value)
                    done += 1
            call.replace_all_uses_with(value)
            call.erase()
        model.remove_function(fn)
    return done


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
    add, join = _split_after(rmw)
    b.position_at_end(block)
    b.cond_br(go, add, join)


def _split_after(rmw: Instruction) -> tuple[BasicBlock, BasicBlock]:
    """Move ``rmw`` into a block of its own and what followed it into a join block after it; returns
    them (the caller ends the first part with a branch); successors' phis now come from the join."""
    block = rmw.parent
    assert block is not None and block.parent is not None
    fn = block.parent
    add, join = BasicBlock("", fn), BasicBlock("", fn)
    at = fn.blocks.index(block)
    fn.blocks[at + 1:at + 1] = [add, join]
    insts = block.instructions
    k = insts.index(rmw)
    rest = insts[k + 1:]
    del insts[k:]
    add.append(rmw)
    Builder(add).br(join)
    for inst in rest:
        join.append(inst)
    for succ in join.successors:
        for phi in (i for i in succ.instructions if i.opcode == "phi"):
            for k, op in enumerate(phi.operands):
                if op is block:
                    phi.set_operand(k, join)
    return add, join
