"""A Vulkan compute shader's entry point around a kernel, and where its arguments live.

Vulkan passes a compute shader no arguments: data comes from descriptor
bindings. A kernel ``k(a, x, y)`` becomes a shader ``main`` with

* one storage buffer per array argument, bindings ``0, 1, ...`` in order;
* one more storage buffer, the *parameter block*, of 64-bit words: for each
  argument in order, an array's shape then its strides (bytes), a scalar's
  value (integers sign-extended, ``float32`` in the low half of its word,
  ``bool`` as 0 or 1).

``main`` reads the parameter block, rebuilds each argument as the kernel
takes it (``{ptr, [n x i64], [n x i64]}`` for arrays) and calls the kernel,
which LLVM then inlines. :class:`Layout` is the one description of this
that the target and the runtime (:mod:`gpucompiler.runtime.vulkan`) share.
"""

from __future__ import annotations

import attrs
from llvmlite import ir

from ...llvm import types as LT

BUFFER = "gpuc.spirv.buffer"
"""``ptr addrspace(11) (i32 binding)``: the start of a storage buffer (rebuilt as resource handles)."""


@attrs.frozen
class Slot:
    """One kernel argument: an array at ``binding`` (``ndim`` shape and stride words) or a scalar word."""

    kind: str
    """``"array"`` or a scalar's LLVM type (``"float"``, ``"i64"``...)"""
    word: int
    """its first word in the parameter block"""
    binding: int = -1
    ndim: int = 0


@attrs.frozen
class Layout:
    """Where a kernel's arguments live (see the module docstring)."""

    slots: tuple[Slot, ...]
    words: int
    """the parameter block's size in 64-bit words"""

    @property
    def arrays(self) -> int:
        """Array bindings; the parameter block is binding ``arrays``."""
        return sum(s.kind == "array" for s in self.slots)


_SCALARS = ("i1", "i8", "i16", "i32", "i64", "half", "float", "double")


def layout(params: tuple[LT.Type, ...]) -> Layout | str:
    """The :class:`Layout` of a kernel taking LLVM ``params``, or what cannot be passed."""
    slots, word, binding = [], 0, 0
    for k, t in enumerate(params):
        if (isinstance(t, LT.StructType) and t.elements is not None and len(t.elements) == 3
                and t.elements[0] == LT.ptr() and isinstance(t.elements[1], LT.ArrayType)):
            ndim = t.elements[1].count
            slots.append(Slot("array", word, binding, ndim))
            word, binding = word + 2 * ndim, binding + 1
        elif str(t) in _SCALARS:
            slots.append(Slot(str(t), word))
            word += 1
        else:
            return f"argument {k + 1} has the LLVM type {t}: a Vulkan kernel takes arrays and scalars"
    return Layout(tuple(slots), word)


def wrapper_ir(kernel: str, kernel_type: LT.FunctionType, lay: Layout, name: str) -> str:
    """LLVM IR of ``name``: the shader entry that reads the parameter block and calls ``kernel``."""
    mod = ir.Module()
    i32, i64 = ir.IntType(32), ir.IntType(64)
    sb = ir.PointerType(addrspace=11)
    buffer = ir.Function(mod, ir.FunctionType(sb, [i32]), name=BUFFER)
    for attr in ("nounwind", "readnone"):
        buffer.attributes.add(attr)
    ll_params = [_ll(t) for t in kernel_type.params]
    callee = ir.Function(mod, ir.FunctionType(ir.VoidType(), ll_params), name=kernel)
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), []), name=name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    block = b.call(buffer, [ir.Constant(i32, lay.arrays)])

    def word(k: int):
        return b.load(b.gep(block, [ir.Constant(i64, k)], source_etype=i64), typ=i64)

    args = []
    for slot, t in zip(lay.slots, ll_params):
        if slot.kind == "array":
            data = b.addrspacecast(b.call(buffer, [ir.Constant(i32, slot.binding)]), ir.PointerType())
            value = b.insert_value(ir.Constant(t, ir.Undefined), data, 0)
            for d in range(slot.ndim):
                value = b.insert_value(value, word(slot.word + d), [1, d])
                value = b.insert_value(value, word(slot.word + slot.ndim + d), [2, d])
            args.append(value)
        elif slot.kind in ("float", "double", "half"):
            w = word(slot.word)
            bits = ir.IntType({"double": 64, "float": 32, "half": 16}[slot.kind])
            args.append(b.bitcast(w if bits.width == 64 else b.trunc(w, bits), t))
        else:
            w = word(slot.word)
            args.append(w if slot.kind == "i64" else b.trunc(w, t))
    b.call(callee, args)
    b.ret_void()
    return str(mod)


def _ll(t: LT.Type) -> ir.Type:
    """The llvmlite type of an argument type :func:`layout` accepted."""
    if isinstance(t, LT.StructType):
        assert t.elements is not None
        n = t.elements[1]
        assert isinstance(n, LT.ArrayType)
        dims = ir.ArrayType(ir.IntType(64), n.count)
        return ir.LiteralStructType([ir.PointerType(), dims, dims])
    if isinstance(t, LT.IntType):
        return ir.IntType(t.bits)
    return {"half": ir.HalfType(), "float": ir.FloatType(), "double": ir.DoubleType()}[str(t)]
