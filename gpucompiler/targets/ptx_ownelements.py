"""Atomic adds into a thread's own element (PTX): ``atomic_add(dx, i, v)`` with ``i = grid(1)`` and every other
access of ``dx`` at ``dx[i]`` too becomes ``dx[i] += v`` wherever the launch lets no other thread touch it.

A kernel gradient adds each element's adjoint atomically (threads may read the same element, so their
adjoints could collide), and in the common kernel every thread reads only its own element. Such atomics
cost little alone, but beside the adds into one address that every thread makes (``dw[0]``, summed per
block by :mod:`.ptx_blocksums`) they queue behind them in the memory system: on an H200, at 2^24 threads,
``dy[i]``'s atomic add with a block-summed ``dw[0]`` took 385 µs, the plain add 143 µs.

:func:`own_element_adds` rewrites, in a kernel that calls nothing unknown and writes through no pointer of
unknown origin, each relaxed ``atomicrmw add``/``fadd`` (old value unused, not volatile) into an array argument
whose every access in the kernel (load, store, atomic) is at byte ``G * s`` of its data, where ``G`` is
the thread's x index in the grid (``ctaid.x * ntid.x + tid.x``) and ``s`` (a constant, at least the
access's size) is the same for all of them::

    head:   br ok, plain, atomic
    plain:  old = load p; store old + v -> p; br join     ; the thread's own element
    atomic: atomicrmw add p, v; br join                    ; as written

``ok`` is computed once at the kernel's start, the same in every thread: the grid and its blocks are
one-dimensional (otherwise threads of another row share ``G``), and the array's bytes lie clear of every
other array argument the kernel writes into (each span over-estimated as :mod:`.ptx_blocksums` does), so
that no other thread's store or atomic reaches the element. Then no two threads touch one element, and the
thread's own adds in program order give the sums its atomics would have (``float`` atomics flush subnormals
to zero, the plain add keeps them). ``PTXTarget(aggregate_atomics=False)`` keeps every atomic as written.
"""

from __future__ import annotations

from ..llvm import Argument, BasicBlock, Builder, ConstantData, Function, Instruction, Value, const_int, types as LT
from .ptx_blocksums import UNKNOWN, BlockSums, array_of, array_span, safe_call
from .warpatomics import eligible, split_after

_SIZES = {"i8": 1, "i16": 2, "half": 2, "bfloat": 2, "i32": 4, "float": 4, "i64": 8, "double": 8}
_ADDS = frozenset({"add", "fadd"})
_SREG = "llvm.nvvm.read.ptx.sreg."


def own_element_adds(model, entry: Function, global_space: int = 1, blocks: BlockSums | None = None) -> int:
    """Rewrite kernel ``entry``'s atomic adds into its threads' own elements (module docstring); how many.
    The adds are those :func:`.warpatomics.eligible` accepts (relaxed, old value unused, global memory);
    ``blocks``: the adds already moved to a block's slot (:mod:`.ptx_blocksums`), whose addresses the block
    still writes at its end."""
    slots = {id(p) for p in blocks.summable} if blocks is not None else set()
    summed = [f.address for f in blocks.flushes] if blocks is not None else []
    accesses: dict[int, list[Instruction]] = {}
    arrays: dict[int, Argument] = {}
    written: dict[int, Argument] = {}
    for p in summed:
        what = array_of(p, entry)
        if isinstance(what, str):
            return 0
        if what is not None:
            written[id(what)] = what
    for inst in entry.instructions():
        op = inst.opcode
        if op in ("call", "invoke", "callbr"):
            if not safe_call(inst):
                return 0
            continue
        if op not in ("load", "store", "atomicrmw", "cmpxchg") or id(inst.pointer_operand) in slots:
            continue
        what = array_of(inst.pointer_operand, entry)  # pyright: ignore[reportArgumentType]
        if what is None:
            continue
        if what is UNKNOWN or isinstance(what, str):
            if op != "load":
                return 0  # a write of unknown reach: it could race with a plain add
            continue
        accesses.setdefault(id(what), []).append(inst)
        arrays[id(what)] = what
        if op != "load":
            written[id(what)] = what
    sites: list[tuple[Argument, Instruction]] = []
    for key, insts in accesses.items():
        rmws = [i for i in insts if i.opcode == "atomicrmw" and i.operation in _ADDS and eligible(i, entry, global_space)]
        scales = {_own_scale(i, arrays[key]) for i in insts}
        if rmws and len(scales) == 1 and None not in scales:
            sites.extend((arrays[key], rmw) for rmw in rmws)
    if not sites:
        return 0
    flags: dict[int, Value] = {}
    for array, rmw in sites:
        if id(array) not in flags:
            flags[id(array)] = _exclusive(model, entry, array, [w for w in written.values() if w is not array])
        _plain_when(flags[id(array)], rmw)
    return len(sites)


def _own_scale(inst: Instruction, array: Argument) -> int | None:
    """``s`` when ``inst`` accesses byte ``G * s`` of ``array``'s data (``s`` at least the access's size), else
    None."""
    value = inst.value_operand if inst.opcode in ("store", "atomicrmw") else inst
    size = _SIZES.get(str(value.type)) if value is not None else None
    gep = _stripped(inst.pointer_operand)
    if size is None or not isinstance(gep, Instruction) or gep.opcode != "getelementptr" or len(gep.operands) != 2:
        return None
    base = _stripped(gep.operands[0])
    if not (isinstance(base, Instruction) and base.opcode == "extractvalue" and base.operands[0] is array
            and tuple(base.aggregate_indices or ()) == (0,)):
        return None
    unit = _SIZES.get(str(gep.source_element_type))
    scale = _thread_scale(gep.operands[1])
    if unit is None or scale is None or unit * scale < size:
        return None
    return unit * scale


def _stripped(p: Value | None) -> Value | None:
    while isinstance(p, Instruction) and p.opcode in ("bitcast", "addrspacecast"):
        p = p.operands[0]
    return p


def _thread_scale(v: Value) -> int | None:
    """``k`` when ``v`` is ``G * k`` (``G``: the thread's x index in the grid; ``k`` a positive constant)."""
    if _grid_x(v):
        return 1
    if isinstance(v, Instruction) and v.opcode in ("shl", "mul"):
        a, c = v.operands
        if v.opcode == "mul" and not _grid_x(a):
            a, c = c, a
        k = _constant_int(c)
        if _grid_x(a) and k is not None and k > 0:
            return 1 << k if v.opcode == "shl" and k < 32 else (k if v.opcode == "mul" else None)
    return None


def _constant_int(v: Value) -> int | None:
    if not isinstance(v, ConstantData) or not v.type.is_integer:
        return None
    try:
        return int(v.ref)
    except ValueError:
        return None


def _widened(v: Value) -> Value:
    while isinstance(v, Instruction) and v.opcode in ("zext", "sext"):
        v = v.operands[0]
    return v


def _sreg(v: Value, name: str) -> bool:
    v = _widened(v)
    if not (isinstance(v, Instruction) and v.opcode == "call"):
        return False
    callee = v.callee
    return isinstance(callee, Function) and callee.name == _SREG + name


def _grid_x(v: Value) -> bool:
    """Whether ``v`` is ``ctaid.x * ntid.x + tid.x`` (in any operand order, widened or not)."""
    v = _widened(v)
    if not (isinstance(v, Instruction) and v.opcode == "add"):
        return False
    for mul, tid in (v.operands, reversed(v.operands)):
        mul = _widened(mul)
        if _sreg(tid, "tid.x") and isinstance(mul, Instruction) and mul.opcode == "mul":
            a, b = mul.operands
            if (_sreg(a, "ctaid.x") and _sreg(b, "ntid.x")) or (_sreg(a, "ntid.x") and _sreg(b, "ctaid.x")):
                return True
    return False


def _exclusive(model, entry: Function, array: Argument, others: list[Argument]) -> Value:
    """An ``i1`` computed at the kernel's start: the grid and blocks are one-dimensional, and ``array``'s bytes
    lie clear of every array in ``others``."""
    b, i32 = Builder(), LT.i32
    b.position_before(next(i for i in entry.blocks[0].instructions if i.opcode != "alloca"))
    flag: Value = const_int(LT.i1, 1)
    for reg in ("nctaid.y", "nctaid.z", "ntid.y", "ntid.z"):
        fn = model.functions.get(_SREG + reg)
        if fn is None:
            fn = model.add_function(Function(_SREG + reg, LT.function(i32, [])))
        flag = b.binop("and", flag, b.icmp("eq", b.call(fn, []), const_int(i32, 1)))
    lo, hi = array_span(b, array)
    for other in others:
        olo, ohi = array_span(b, other)
        flag = b.binop("and", flag, b.binop("or", b.icmp("sle", hi, olo), b.icmp("sle", ohi, lo)))
    return flag


def _plain_when(flag: Value, rmw: Instruction) -> None:
    """``rmw`` becomes a plain load, add and store where ``flag`` holds, and stays as written elsewhere."""
    head = rmw.parent
    assert head is not None and head.parent is not None
    own, join = split_after(rmw)
    fn = head.parent
    plain = BasicBlock("", fn)
    fn.blocks.insert(fn.blocks.index(own), plain)
    b = Builder(head)
    b.cond_br(flag, plain, own)
    b.position_at_end(plain)
    p, v = rmw.operands[0], rmw.operands[1]
    size = _SIZES[str(v.type)]
    old = b.load(v.type, p, align=size)
    b.store(b.binop(str(rmw.operation), old, v), p, align=size)
    b.br(join)


__all__ = ["own_element_adds"]
