"""Vulkan's logical addressing: every memory access rebuilt from its root object and an element index.

A Vulkan compute shader has no pointer arithmetic: an access names a storage
buffer (``llvm.spv.resource.getpointer(handle, index)``), a ``Workgroup``
global or a ``Function`` variable, and an element of it. Code from the
frontend addresses arrays by byte offsets (``getelementptr i8, ptr %data,
i64 %off``), which LLVM's SPIR-V back end cannot lower (it aborts the
process). :func:`to_logical` therefore follows every pointer derived from a
root (GEPs, casts, phis, selects) as an ``i64`` byte offset, then rebuilds
each load, store and atomic on the root at ``offset / width``. All accesses
to one root must have one width; a storage buffer takes the type of its
accesses (an integer of that width where they differ, e.g. a float array
that an atomic exchange writes as bits). The AD tape's heap
(:mod:`.heap`) is the exception: a root of 32-bit ``words`` accessed at
any width (8-byte values as two words, 1- and 2-byte ones inside their word),
where ``null`` is offset 0 and ``ptrtoint`` gives the offset, so that its
pointers can be kept in memory as integers. Anything else a pointer does
(stored to memory, passed to a call that was not inlined, compared with a
pointer of another root) is collected as a problem: the caller raises them
as one typed error, before LLVM sees the module.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ...llvm import BasicBlock, Builder, Function, Instruction, Value, const_int, constant, types as LT
from ...llvm.printer import print_instruction
from .atomics import integer_access, rebuild_atomic

STORAGE_BUFFER = 11
"""LLVM's SPIR-V address space of ``StorageBuffer`` pointers."""
WORKGROUP = 3
"""LLVM's SPIR-V address space of ``Workgroup`` (shared) memory."""

_FLOAT_BYTES = {"half": 2, "float": 4, "double": 8}
_PASS_THROUGH = ("addrspacecast", "bitcast", "freeze")
_ACCESSES = ("load", "store", "atomicrmw", "cmpxchg")


class LogicalPointerError(Exception):
    """A pointer use Vulkan's logical addressing cannot express (the message says which)."""


def size_of(t: LT.Type) -> int:
    """Bytes of ``t`` in memory (natural alignment, as the data layout of SPIR-V)."""
    if isinstance(t, LT.IntType):
        return max(1, (t.bits + 7) // 8) if t.bits <= 8 else t.bits // 8
    if isinstance(t, LT.ArrayType):
        return t.count * size_of(t.element)
    if isinstance(t, LT.StructType) and t.elements is not None:
        return _struct_offsets(t)[-1]
    if t.kind == "ptr":
        return 8
    if str(t) in _FLOAT_BYTES:
        return _FLOAT_BYTES[str(t)]
    raise LogicalPointerError(f"no memory layout for {t} on Vulkan")


def _align_of(t: LT.Type) -> int:
    if isinstance(t, LT.ArrayType):
        return _align_of(t.element)
    if isinstance(t, LT.StructType) and t.elements:
        return max(_align_of(e) for e in t.elements)
    return size_of(t)


def _struct_offsets(t: LT.StructType) -> list[int]:
    """Offsets of ``t``'s fields, then its size."""
    offsets, at = [], 0
    assert t.elements is not None
    for e in t.elements:
        a = 1 if t.packed else _align_of(e)
        at = (at + a - 1) // a * a
        offsets.append(at)
        at += size_of(e)
    a = 1 if t.packed or not t.elements else max(_align_of(e) for e in t.elements)
    offsets.append((at + a - 1) // a * a)
    return offsets


def _int(v: Value) -> int | None:
    """The value of an integer constant, else None."""
    if v.type.is_integer and type(v).__name__ == "ConstantData":
        value = getattr(v, "value", None)
        return value if isinstance(value, int) else None
    return None


@attrs.define(eq=False)
class Root:
    """A memory object: ``pointer`` is where offsets start from; ``access(b, index, width)`` returns a
    pointer to element ``index`` (``i32``) of an object whose elements are ``width`` bytes."""

    pointer: Value
    name: str
    address: Callable[[Builder, Value, LT.Type], Value]
    element: LT.Type | None = None
    """the element type, fixed by the object (shared and local arrays) or chosen from the accesses (buffers)"""
    words: bool = False
    """``i32`` elements accessed at any width (the tape heap, the tape's byte arrays)"""
    heap: bool = False
    """the tape heap: ``null`` is offset 0 and ``ptrtoint`` the offset"""
    dead: Value | None = None
    """the heap's ``i1`` variable set when the thread's tape failed: its reads then come from the zero
    words and its writes go to the discarded ones (:mod:`.heap`)"""
    spare: tuple[int, int] = (0, 0)
    """with ``dead``: the first of two zero words (reads) and of two discarded words (writes)"""
    reserved: int = 0
    """with ``dead``: the words at the start (the heap's header) a plain access never reaches: it goes
    to ``spare`` too"""


@attrs.define(eq=False)
class _Access:
    inst: Instruction
    offset: Value
    type: LT.Type
    """the type in memory (an atomic's value; integer for compare-and-swap)"""


def _is_null(v: Value) -> bool:
    return v.type.is_pointer and type(v).__name__ == "ConstantData" and getattr(v, "text", "") == "null"


def _access_type(inst: Instruction) -> LT.Type:
    if inst.opcode == "load":
        return inst.type
    if inst.opcode == "store":
        return inst.operands[0].type
    return inst.operands[1].type  # atomicrmw's operand, cmpxchg's expected value


class _Walk:
    """The offsets of every pointer derived from one root, and the accesses through them."""

    def __init__(self, root: Root, problems: list[str]):
        self.root, self.problems = root, problems
        self.offsets: dict[Value, Value] = {root.pointer: const_int(LT.i64, 0)}
        self.accesses: list[_Access] = []
        self.derived: list[Instruction] = []
        self.phis: list[tuple[Instruction, Instruction]] = []
        self._pending: list[Value] = []

    def run(self) -> None:
        work = self._pending = [self.root.pointer]
        while work:
            p = work.pop()
            for use in list(p.uses):
                if use.user in self.offsets:  # a phi or select reached before from another operand
                    continue
                new = self._use(p, use.user, use.index)
                if new is not None:
                    work.append(new)
        for old, phi in self.phis:
            for value, block in old.incoming:
                off = self._offset_of(value)
                if off is None:
                    self._problem(old, "a pointer that comes from two different arrays (a phi)")
                    off = constant(LT.i64, "poison")
                assert isinstance(block, BasicBlock)
                phi.add_incoming(off, block)

    def _offset_of(self, v: Value) -> Value | None:
        """The offset of ``v`` if it is derived from the root (``null`` is offset 0 in the tape heap)."""
        off = self.offsets.get(v)
        if off is None and self.root.heap and _is_null(v):
            return const_int(LT.i64, 0)
        return off

    def _problem(self, inst: Instruction, what: str) -> None:
        fn = inst.function
        where = f" in @{fn.name}" if fn is not None else ""
        self.problems.append(f"{what}{where}: {print_instruction(inst).strip()[:160]}")

    def _use(self, p: Value, user, index: int) -> Value | None:
        if not isinstance(user, Instruction) or user.parent is None:
            self.problems.append(f"a pointer to {self.root.name} used in a constant expression")
            return None
        op, base = user.opcode, self.offsets[p]
        b = Builder()
        if op == "getelementptr" and index == 0:
            b.position_before(user)
            self.offsets[user] = self._gep_offset(b, user, base)
        elif op in _PASS_THROUGH and user.type.is_pointer:
            self.offsets[user] = base
        elif op == "insertvalue" and index == 1:  # an array's struct rebuilt around the pointer
            return self._carried(user, user.aggregate_indices, base)
        elif op == "phi":
            if user in self.offsets:
                return None
            b.position_before(user)
            phi = b.phi(LT.i64)
            self.offsets[user] = phi
            self.phis.append((user, phi))
        elif op == "select" and index in (1, 2):
            other = self._offset_of(user.operands[3 - index])
            if other is None:  # the other side's offset is not known yet: revisit from there
                return None
            b.position_before(user)
            a, c = (base, other) if index == 1 else (other, base)
            self.offsets[user] = b.select(user.operands[0], a, c)
        elif op in _ACCESSES and user.pointer_operand is p and not (op == "store" and index == 0):
            self.accesses.append(_Access(user, base, _access_type(user)))
            return None
        elif op == "icmp" and all(self._offset_of(o) is not None for o in user.operands[:2]):
            b.position_before(user)
            x, y = (self._offset_of(o) for o in user.operands[:2])
            assert x is not None and y is not None
            cmp = b.icmp(str(user.predicate), x, y)
            user.replace_all_uses_with(cmp)
            self.derived.append(user)
            return None
        elif op == "icmp":
            return None  # compared with a pointer reached later (revisited from it) or of another object
        elif op == "call" and isinstance(user.callee, Function) and user.callee.name.startswith("llvm.lifetime."):
            self.derived.append(user)
            return None
        elif op == "ptrtoint" and self.root.heap:  # a tape heap pointer as an integer: its offset
            user.replace_all_uses_with(base if user.type == LT.i64 else _int_cast(b, user, base))
            self.derived.append(user)
            return None
        elif (op == "store" and index == 0) or op == "ptrtoint":
            self._problem(user, f"a pointer into {self.root.name} stored to memory (only the AD tape heap's "
                                "pointers can be)")
            return None
        else:
            self._problem(user, f"a pointer into {self.root.name} used by {op}")
            return None
        self.derived.append(user)
        return user

    def _carried(self, agg: Instruction, path, base: Value) -> None:
        """The pointer ``base`` stands at ``path`` of the aggregate ``agg``: follow it to the
        ``extractvalue``s that take it out again (through insertions into other fields)."""
        for use in list(agg.uses):
            user = use.user
            if not isinstance(user, Instruction):
                self.problems.append(f"an aggregate holding a pointer into {self.root.name} in a constant")
                continue
            op = user.opcode
            if op == "extractvalue" and user.aggregate_indices == path:
                self.offsets[user] = base
                self.derived.append(user)
                self._pending.append(user)
            elif (op == "insertvalue" and use.index == 0 and user.aggregate_indices != path) or op == "freeze":
                self._carried(user, path, base)
            elif op == "extractvalue" and not _prefix(path, user.aggregate_indices):
                b = Builder()  # another field (a shape, a stride): from what was inserted there, as the
                b.position_before(user)  # aggregate goes away
                user.replace_all_uses_with(_field(b, agg, tuple(user.aggregate_indices), user.type))
                self.derived.append(user)
            else:
                self._problem(user, f"an aggregate holding a pointer into {self.root.name} used by {op}")
        self.derived.append(agg)

    @staticmethod
    def _gep_offset(b: Builder, gep: Instruction, base: Value) -> Value:
        t = gep.source_element_type
        assert t is not None
        indices = gep.indices
        off = base
        for k, idx in enumerate(indices):
            if k == 0:
                step: int | None = size_of(t)
            elif isinstance(t, LT.ArrayType):
                t = t.element
                step = size_of(t)
            elif isinstance(t, LT.StructType):
                field = _int(idx)
                if field is None:
                    raise LogicalPointerError("a struct indexed by a variable")
                off = _add(b, off, const_int(LT.i64, _struct_offsets(t)[field]))
                assert t.elements is not None
                t = t.elements[field]
                continue
            else:
                raise LogicalPointerError(f"a getelementptr into {t}")
            off = _add(b, off, _scale(b, idx, step))
        return off


def _int_cast(b: Builder, at: Instruction, v: Value) -> Value:
    b.position_before(at)
    return b.cast("trunc", v, at.type)


def _field(b: Builder, agg: Value, path: tuple[int, ...], t: LT.Type) -> Value:
    """The field at ``path`` (of type ``t``) of ``agg``, from the ``insertvalue``s that built it: an
    aggregate field rebuilt from its elements."""
    if isinstance(t, (LT.ArrayType, LT.StructType)):
        parts = t.elements if isinstance(t, LT.StructType) else [t.element] * t.count
        assert parts is not None
        out: Value = constant(t, "poison")
        for k, e in enumerate(parts):
            out = b.insertvalue(out, _field(b, agg, (*path, k), e), k)
        return out
    while isinstance(agg, Instruction) and agg.opcode in ("insertvalue", "freeze"):
        if agg.opcode == "freeze":
            agg = agg.operands[0]
            continue
        at = tuple(agg.aggregate_indices)
        if at == path[:len(at)]:
            inner = agg.operands[1]
            return inner if len(at) == len(path) else b.extractvalue(inner, path[len(at):])
        agg = agg.operands[0]
    return b.extractvalue(agg, path)


def _prefix(a, b) -> bool:
    """Whether one index path starts the other (the same field or one inside it)."""
    n = min(len(a), len(b))
    return tuple(a[:n]) == tuple(b[:n])


def _add(b: Builder, a: Value, c: Value) -> Value:
    x, y = _int(a), _int(c)
    if x is not None and y is not None:
        return const_int(LT.i64, x + y)
    if y == 0:
        return a
    if x == 0:
        return c
    return b.binop("add", a, c)


def _scale(b: Builder, idx: Value, step: int) -> Value:
    if idx.type != LT.i64:
        idx = b.cast("sext", idx, LT.i64)
    k = _int(idx)
    if k is not None:
        return const_int(LT.i64, k * step)
    return idx if step == 1 else b.binop("mul", idx, const_int(LT.i64, step), flags=("nsw",))


def _element_index(b: Builder, offset: Value, width: int) -> Value:
    """``offset / width`` as an ``i32`` index; ``(i << log2 width)`` and ``i * width`` give ``i`` back."""
    k = _int(offset)
    if k is not None:
        return const_int(LT.i32, k // width)
    shift = width.bit_length() - 1
    src = offset
    if isinstance(src, Instruction) and src.opcode in ("shl", "mul"):
        c = _int(src.operands[1])
        if c is not None and ((src.opcode == "shl" and c == shift) or (src.opcode == "mul" and c == width)):
            index = src.operands[0]
            return index if index.type == LT.i32 else b.cast("trunc", index, LT.i32)
    index = b.binop("ashr", offset, const_int(LT.i64, shift), flags=("exact",)) if shift else offset
    return b.cast("trunc", index, LT.i32)


def to_logical(fn: Function, roots: list[Root]) -> list[str]:
    """Rebuild every access through ``roots`` on logical pointers (atomics with
    :func:`~.atomics.rebuild_atomic`); return the problems found."""
    problems: list[str] = []
    walks = []
    for root in roots:
        walk = _Walk(root, problems)
        try:
            walk.run()
        except LogicalPointerError as exc:
            problems.append(f"{exc} (into {root.name})")
            continue
        walks.append(walk)
    if problems:
        return problems
    for walk in walks:
        _rebuild(walk, problems)
    return problems


def _rebuild(walk: _Walk, problems: list[str]) -> None:
    if walk.accesses:
        _rebuild_accesses(walk, problems)
    for inst in reversed(walk.derived):
        if inst.parent is not None:
            inst.replace_all_uses_with(constant(inst.type, "poison"))
            inst.erase()


def _rebuild_accesses(walk: _Walk, problems: list[str]) -> None:
    root = walk.root
    if root.words:
        for a in walk.accesses:
            problem = _rebuild_words(root, a)
            if problem is not None:
                problems.append(f"{problem} in {root.name}: {print_instruction(a.inst).strip()[:160]}")
        return
    widths = {size_of(a.type) for a in walk.accesses}
    if len(widths) > 1:
        problems.append(f"{root.name} is read or written with elements of different sizes "
                        f"({', '.join(map(str, sorted(widths)))} bytes)")
        return
    width = widths.pop()
    types = {str(a.type): a.type for a in walk.accesses}
    needs_int = any(a.inst.opcode == "cmpxchg" or integer_access(a.inst) for a in walk.accesses)
    element = root.element
    if element is None:
        element = next(iter(types.values())) if len(types) == 1 and not needs_int else LT.int_type(8 * width)
        root.element = element
    elif size_of(element) != width:
        problems.append(f"{root.name} holds {element} but is accessed as {width}-byte elements")
        return
    b = Builder()
    for a in walk.accesses:
        inst = a.inst
        b.position_before(inst)
        ptr = root.address(b, _element_index(b, a.offset, width), element)
        op = inst.opcode
        if op == "load":
            new = b.load(element, ptr, align=inst.alignment)
            inst.replace_all_uses_with(_retyped(b, new, inst.type))
            inst.erase()
        elif op == "store":
            b.store(_retyped(b, inst.operands[0], element), ptr, align=inst.alignment)
            inst.erase()
        elif not (a.type == element or integer_access(inst)):
            problems.append(f"an atomic {op} on {a.type} elements of {root.name}, which holds {element}")
        else:
            problem = rebuild_atomic(inst, ptr)
            if problem is not None:
                problems.append(problem)


def _rebuild_words(root: Root, a: _Access) -> str | None:
    """Rebuild access ``a`` on the ``i32`` words of ``root``: 4 bytes as one word, 8 as two (low word
    first), 1 and 2 inside their word (a store reads the word and writes it back: the heap's blocks are
    a thread's own, 16-byte aligned, so no other thread writes that word); an atomic on one word."""
    inst, t = a.inst, a.type
    try:
        width = size_of(t)
    except LogicalPointerError as exc:
        return str(exc)
    if width not in (1, 2, 4, 8) or (width >= 4 and (inst.alignment or 1) < 4):
        return f"a {width}-byte access aligned to {inst.alignment or 1} bytes"
    b = Builder()
    b.position_before(inst)
    i32 = LT.i32
    index = b.cast("trunc", b.binop("lshr", a.offset, const_int(LT.i64, 2)), i32)
    if inst.opcode not in ("load", "store"):
        if width == 4 and isinstance(t, LT.IntType):
            return rebuild_atomic(inst, root.address(b, index, i32))
        return _plain_update(root, a, b)
    if root.dead is not None:  # a spent thread's, or one through null into the header
        spare = root.spare[inst.opcode == "store"]
        off = b.binop("or", b.load(LT.i1, root.dead), b.icmp("ult", index, const_int(i32, root.reserved)))
        index = b.select(off, const_int(i32, spare), index)
    bits = LT.int_type(8 * width)
    if inst.opcode == "load":
        word = b.load(i32, root.address(b, index, i32), align=4)
        if width == 8:
            high = b.load(i32, root.address(b, b.binop("add", index, const_int(i32, 1)), i32), align=4)
            value = b.binop("or", b.cast("zext", word, bits),
                            b.binop("shl", b.cast("zext", high, bits), const_int(bits, 32)))
        elif width == 4:
            value = word
        else:
            value = b.cast("trunc", b.binop("lshr", word, _shift(b, a.offset)), bits)
        inst.replace_all_uses_with(_from_bits(b, value, t))
        inst.erase()
        return None
    value = _to_bits(b, inst.operands[0], bits)
    if width == 8:
        b.store(b.cast("trunc", value, i32), root.address(b, index, i32), align=4)
        high = b.cast("trunc", b.binop("lshr", value, const_int(bits, 32)), i32)
        b.store(high, root.address(b, b.binop("add", index, const_int(i32, 1)), i32), align=4)
    elif width == 4:
        b.store(value, root.address(b, index, i32), align=4)
    else:
        shift = _shift(b, a.offset)
        old = b.load(i32, root.address(b, index, i32), align=4)
        keep = b.binop("xor", b.binop("shl", const_int(i32, (1 << (8 * width)) - 1), shift), const_int(i32, -1))
        new = b.binop("or", b.binop("and", old, keep), b.binop("shl", b.cast("zext", value, i32), shift))
        b.store(new, root.address(b, index, i32), align=4)
    inst.erase()
    return None


_UPDATES = {"fadd": "fadd", "fsub": "fsub", "add": "add", "sub": "sub", "and": "and", "or": "or", "xor": "xor"}


def _plain_update(root: Root, a: _Access, b: Builder) -> str | None:
    """An atomic read-modify-write in the tape heap as a load and a store: a block there is one thread's
    (the AD engine adds the adjoints of a tape's shadow atomically, not knowing that)."""
    inst = a.inst
    op = str(inst.operation)
    if not root.heap or inst.opcode != "atomicrmw" or (op not in _UPDATES and op != "xchg"):
        return f"an atomic {inst.opcode} {op} on {a.type}"
    pointer, value = inst.operands[0], inst.operands[1]
    old = b.load(a.type, pointer, align=inst.alignment)
    inst.replace_all_uses_with(old)
    new = value if op == "xchg" else b.binop(_UPDATES[op], old, value)
    store = b.store(new, pointer, align=inst.alignment)
    inst.erase()
    return _rebuild_words(root, _Access(old, a.offset, a.type)) or _rebuild_words(root, _Access(store, a.offset, a.type))


def _shift(b: Builder, offset: Value) -> Value:
    """The bit position of byte ``offset`` in its word."""
    return b.binop("shl", b.binop("and", b.cast("trunc", offset, LT.i32), const_int(LT.i32, 3)),
                   const_int(LT.i32, 3))


def _retyped(b: Builder, v: Value, t: LT.Type) -> Value:
    """``v`` as a value of ``t``, the same bytes in memory: an ``i1`` is the byte that holds 0 or 1 (``zext``
    and ``trunc`` between integers), anything else bitcast."""
    if v.type == t:
        return v
    if isinstance(v.type, LT.IntType) and isinstance(t, LT.IntType):
        return b.cast("zext" if v.type.bits < t.bits else "trunc", v, t)
    return b.cast("bitcast", v, t)


def _to_bits(b: Builder, v: Value, bits: LT.IntType) -> Value:
    """``v`` as the integer of its bytes in memory (``i1`` as a byte holding 0 or 1)."""
    if isinstance(v.type, LT.IntType):
        return v if v.type == bits else b.cast("zext", v, bits)
    return b.cast("bitcast", v, bits)


def _from_bits(b: Builder, v: Value, t: LT.Type) -> Value:
    if isinstance(t, LT.IntType):
        return v if t == v.type else b.cast("trunc", v, t)
    return b.cast("bitcast", v, t)
