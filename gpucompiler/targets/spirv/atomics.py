"""Atomics on Vulkan: each ``atomicrmw`` rebuilt at device scope on its logical pointer.

* Every atomic gets ``syncscope("device") acq_rel``: relaxed atomics at the
  default (cross-device) scope make LLVM's SPIR-V back end emit zero scope
  and semantics operands as ``OpConstantNull``, which it then also uses to
  index buffers, an access chain Vulkan refuses.
* Float add, subtract, min and max are ``OpAtomicFAddEXT``/``OpAtomicFMinEXT``
  (``SPV_EXT_shader_atomic_float_add``/``_min_max``, :data:`EXTENSIONS`): the
  runtime checks the device's ``VK_EXT_shader_atomic_float`` features.
  ``fsub`` is an add of the negated value; a float exchange is an integer
  exchange of its bits (core Vulkan).
* 64-bit integer atomics are refused: LLVM 22's SPIR-V back end stops the
  process ("Unable to meet SPIR-V requirements") without ``Int64Atomics``,
  which it does not offer for Vulkan.
* ``cmpxchg`` is refused: LLVM 22's SPIR-V back end aborts the process on a
  compare-and-swap in Vulkan's logical addressing ("Unsupported ptrcast user"),
  so ``atomic_cas`` (and a compare-and-swap loop for float64 adds on
  devices without them) cannot be compiled for Vulkan yet.
"""

from __future__ import annotations

from ...llvm import Builder, Instruction, Value, types as LT

ORDER = 'syncscope("device") acq_rel'
"""The scope and ordering of every atomic in a shader."""
EXTENSIONS = ("SPV_EXT_shader_atomic_float_add", "SPV_EXT_shader_atomic_float_min_max")
"""SPIR-V extensions the back end may use (float atomics); their capabilities name what the device needs."""


def integer_access(inst: Instruction) -> bool:
    """Whether the atomic ``inst`` reads and writes its element as an integer (a float exchange)."""
    return inst.opcode == "atomicrmw" and inst.operation == "xchg" and inst.type.is_float


def rebuild_atomic(inst: Instruction, pointer: Value) -> str | None:
    """Rebuild the atomic ``inst`` on ``pointer`` (see the module docstring); the problem, if any."""
    if inst.opcode == "cmpxchg":
        return ("a compare-and-swap (atomic_cas), which LLVM's SPIR-V back end cannot compile for Vulkan "
                "yet: use atomic_add/min/max/exch, or run the kernel on PTX or the CPU emulation")
    op = str(inst.operation)
    value = inst.operands[1]
    if (isinstance(value.type, LT.IntType) and value.type.bits == 64) or (integer_access(inst) and _bits(value.type) == 64):
        return ("a 64-bit integer atomic, which LLVM's SPIR-V back end cannot compile for Vulkan (it offers no "
                "Int64Atomics there): use an int32 array, or run the kernel on PTX or the CPU emulation")
    b = Builder()
    b.position_before(inst)
    if integer_access(inst):
        bits = LT.int_type(_bits(value.type))
        new = _atomicrmw(b, "xchg", pointer, b.cast("bitcast", value, bits), inst.alignment)
        inst.replace_all_uses_with(b.cast("bitcast", new, inst.type))
    else:
        if op == "fsub":
            op, value = "fadd", b.fneg(value)
        inst.replace_all_uses_with(_atomicrmw(b, op, pointer, value, inst.alignment))
    inst.erase()
    return None


def _bits(t: LT.Type) -> int:
    return {"half": 16, "float": 32, "double": 64}[str(t)]


def _atomicrmw(b: Builder, op: str, pointer: Value, value: Value, align: int | None) -> Instruction:
    size = value.type.bits // 8 if isinstance(value.type, LT.IntType) else _bits(value.type) // 8
    parts = [f"atomicrmw {op} ", pointer.type, " ", 0, ", ", value.type, " ", 1,
             f" {ORDER}, align {align or size}"]
    new = Instruction("atomicrmw", value.type, parts, (), "")
    new.operation = op
    new.append_operand(pointer)
    new.append_operand(value)
    return b.insert(new)
