"""Atomic adds into a thread's own element (PTX): ``atomic_add(dx, i, v)`` with ``i = grid(1)`` and every other
access of ``dx`` at ``dx[i]`` too becomes ``dx[i] += v`` wherever the launch lets no other thread touch it.

A kernel gradient adds each element's adjoint atomically (threads may read the same element, so their
adjoints could collide), and in the common kernel every thread reads only its own element. Such atomics
cost little alone, but beside the adds into one address that every thread makes (``dw[0]``, summed per
block by :mod:`.ptx_blocksums`) they queue behind them in the memory system: on an H200, at 2^24 threads,
``dy[i]``'s atomic add with a block-summed ``dw[0]`` took 385 µs, the plain add 143 µs.

:func:`own_element_adds` rewrites, in a kernel that calls nothing unknown (block barriers are known) and
writes through no pointer of unknown origin, each relaxed ``atomicrmw add``/``fadd`` (old value unused, not volatile) into an array argument
whose every access in the kernel (load, store, atomic) is at byte ``(G + N * m) * s`` of its data, where ``G``
is the thread's x index in the grid (``ctaid.x * ntid.x + tid.x``), ``N`` the grid's x size (``nctaid.x *
ntid.x``: a grid-stride loop's step, or a multiple of it), ``m`` any integer and ``s`` (a constant, at least
the access's size) is the same for all of them (:func:`_thread_scale`)::

    head:   old = load volatile p   ; early in the block (early_load)
            ...; br ok, plain, atomic
    plain:  store old + v -> p; br join                   ; the thread's own element
    atomic: atomicrmw add p, v; br join                    ; as written

``ok`` is computed once at the kernel's start, the same in every thread: the grid and its blocks are
one-dimensional (otherwise threads of another row share ``G``), and the array's bytes lie clear of every
other array argument the kernel writes into (each span as :func:`.ptx_blocksums.array_span` reads it), so
that no other thread's store or atomic reaches the element. Then no two threads touch one element (their
``G`` differ and lie in ``[0, N)``, so their elements differ modulo ``N``), and the
thread's own adds in program order give the sums its atomics would have (``float`` atomics flush subnormals
to zero, the plain add keeps them). The old value is loaded early in the add's block (:func:`early_load`),
so that the block's work hides the load's latency: on an H200 a grid-stride reduction's gradient took 116 µs
instead of 131 at 2^24. ``PTXTarget(aggregate_atomics=False)`` keeps every atomic as written.
"""

from __future__ import annotations

import math
from typing import TypeGuard

from ..llvm import Argument, BasicBlock, Builder, ConstantData, Function, Instruction, Value, const_int, types as LT
from .ptx_blocksums import UNKNOWN, BlockSums, array_of, array_span, safe_call
from .warpatomics import eligible, split_after

SIZES = {"i8": 1, "i16": 2, "half": 2, "bfloat": 2, "i32": 4, "float": 4, "i64": 8, "double": 8}
"""Bytes of a scalar access of each type, by the type's spelling."""
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
            if not (safe_call(inst) or _barrier(inst)):
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
            flags[id(array)] = exclusive(model, entry, array, [w for w in written.values() if w is not array])
        _plain_when(flags[id(array)], rmw, {id(i) for i in accesses[id(array)]})
    return len(sites)


def _barrier(inst: Instruction) -> bool:
    """Whether ``inst`` is a block's barrier (``syncthreads``): it orders the threads of a block, and adds no
    access to another thread's element (a block reduction's shared-memory sum beside the adds)."""
    callee = getattr(inst, "callee", None)
    name = getattr(callee, "name", "") if inst.opcode == "call" else ""
    return name.startswith(("llvm.nvvm.barrier0", "llvm.nvvm.barrier.cta.sync", "llvm.nvvm.barrier.sync"))


def _own_scale(inst: Instruction, array: Argument) -> int | None:
    """``s`` when ``inst`` accesses byte ``G * s`` of ``array``'s data (``s`` at least the access's size), else
    None."""
    value = inst.value_operand if inst.opcode in ("store", "atomicrmw") else inst
    size = SIZES.get(str(value.type)) if value is not None else None
    gep = stripped(inst.pointer_operand)
    if size is None or not isinstance(gep, Instruction) or gep.opcode != "getelementptr" or len(gep.operands) != 2:
        return None
    base = stripped(gep.operands[0])
    if not (isinstance(base, Instruction) and base.opcode == "extractvalue" and base.operands[0] is array
            and tuple(base.aggregate_indices or ()) == (0,)):
        return None
    unit = SIZES.get(str(gep.source_element_type))
    scale = _thread_scale(gep.operands[1])
    if unit is None or scale is None or unit * scale < size:
        return None
    return unit * scale


def stripped(p: Value | None) -> Value | None:
    """``p`` through its bitcasts and address-space casts: the pointer they cast."""
    while isinstance(p, Instruction) and p.opcode in ("bitcast", "addrspacecast"):
        p = p.operands[0]
    return p


def _thread_scale(v: Value) -> int | None:
    """``k`` when ``v`` is ``(G + N * m) * k``: ``G`` the thread's x index in the grid, ``N`` the grid's x size
    (``nctaid.x * ntid.x``), ``m`` any integer (a grid-stride loop's count), ``k`` a positive constant."""
    return _IndexForm().scale(v)


class _IndexForm:
    """The forms of :func:`_thread_scale`, by structure: ``G``; ``a * c`` and ``a << c`` of a form; ``a + b``
    and ``a - b`` of a form of scale ``k`` and a multiple of ``N * k``; a phi all of whose values have one form
    (assumed while its values are checked: a loop's index); Python's wrap of a negative index
    (``i + (i < 0 ? n : 0)``) of a form that is never negative. 64-bit arithmetic only (an index that wrapped
    around 2^64 addresses no array)."""

    def __init__(self) -> None:
        self.phis: dict[int, int | None] = {}  # phi -> the scale assumed while its values are checked
        self.multiples: set[tuple[int, int]] = set()
        self.nonnegative_phis: set[int] = set()
        self.budget = 256

    def _step(self, v: Value) -> TypeGuard[Instruction]:
        """Whether ``v`` is a 64-bit instruction to look into, the walk's budget lasting (a step of it)."""
        self.budget -= 1
        return isinstance(v, Instruction) and str(v.type) == "i64" and self.budget >= 0

    def scale(self, v: Value) -> int | None:
        if grid_x(v):
            return 1
        if not self._step(v):
            return None
        op = v.opcode
        if op in ("shl", "mul"):
            times = _times_constant(v)
            s = self.scale(times[0]) if times is not None else None
            return None if s is None or times is None else s * times[1]
        if op in ("add", "sub"):
            a, b = v.operands
            wrapped = self._unwrapped(v)
            if wrapped is not None:
                return self.scale(wrapped)
            s = self.scale(a)
            if s is not None and self.multiple(b, s):
                return s
            s = self.scale(b) if op == "add" else None
            return s if s is not None and self.multiple(a, s) else None
        if op == "phi":
            if id(v) in self.phis:
                return self.phis[id(v)]  # (None while its scale is looked for)
            values = [x for x, _ in v.incoming]
            self.phis[id(v)] = None
            s = next((s for s in map(self.scale, values) if s is not None), None)  # from a value not through it
            ok = False
            if s is not None:
                self.phis[id(v)] = s
                ok = all(self.scale(x) == s for x in values)
            del self.phis[id(v)]
            return s if ok else None
        return None

    def multiple(self, v: Value, k: int) -> bool:
        """Whether ``v`` is a multiple of ``N * k``."""
        if constant_int(v) == 0:
            return True
        if k == 1 and _grid_size(v):
            return True
        if not self._step(v):
            return False
        op = v.opcode
        if op in ("shl", "mul"):
            times = _times_constant(v)
            if times is not None:
                return self.multiple(times[0], k // math.gcd(k, times[1]))
            return op == "mul" and any(self.multiple(x, k) for x in v.operands)
        if op in ("add", "sub"):
            return all(self.multiple(x, k) for x in v.operands)
        if op == "phi":
            key = (id(v), k)
            if key in self.multiples:
                return True
            self.multiples.add(key)
            ok = all(self.multiple(x, k) for x, _ in v.incoming)
            self.multiples.discard(key)
            return ok
        return False

    def _unwrapped(self, v: Instruction) -> Value | None:
        """``i`` when ``v`` is ``i + select(i < 0, n, 0)`` (either order) and ``i`` is never negative."""
        if v.opcode != "add":
            return None
        for i, sel in (v.operands, reversed(v.operands)):
            if not (isinstance(sel, Instruction) and sel.opcode == "select" and constant_int(sel.operands[2]) == 0):
                continue
            test = sel.operands[0]
            if isinstance(test, Instruction) and test.opcode == "icmp" and test.predicate == "slt" \
                    and test.operands[0] is i and constant_int(test.operands[1]) == 0 and self.nonnegative(i):
                return i
        return None

    def nonnegative(self, v: Value) -> bool:
        """Whether ``v`` is never negative: a special register, a zero extension, sums, products and shifts of
        such values and non-negative constants, phis of them (64-bit: no wrap, as above)."""
        c = constant_int(v)
        if c is not None:
            return c >= 0
        if _sreg_any(v) or (isinstance(v, Instruction) and v.opcode == "zext"):
            return True
        if not self._step(v):
            return False
        if v.opcode in ("add", "mul", "shl"):
            return all(self.nonnegative(x) for x in v.operands)
        if v.opcode == "phi":
            if id(v) in self.nonnegative_phis:
                return True
            self.nonnegative_phis.add(id(v))
            ok = all(self.nonnegative(x) for x, _ in v.incoming)
            self.nonnegative_phis.discard(id(v))
            return ok
        return False


def constant_int(v: Value) -> int | None:
    """The value of integer constant ``v``, None when ``v`` is no simple integer constant."""
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


def _times_constant(v: Instruction) -> tuple[Value, int] | None:
    """``(a, f)`` when ``v`` is ``a * f`` or ``a << log2(f)`` with ``f`` a positive constant (shifts under 32)."""
    a, c = v.operands
    if v.opcode == "mul" and constant_int(a) is not None:
        a, c = c, a
    n = constant_int(c)
    if n is None or n <= 0 or (v.opcode == "shl" and n >= 32):
        return None
    return a, (1 << n if v.opcode == "shl" else n)


def _sreg_any(v: Value) -> bool:
    v = _widened(v)
    callee = v.callee if isinstance(v, Instruction) and v.opcode == "call" else None
    return isinstance(callee, Function) and callee.name.startswith(_SREG)


def _grid_size(v: Value) -> bool:
    """Whether ``v`` is ``nctaid.x * ntid.x`` (in either order, widened or not)."""
    v = _widened(v)
    if not (isinstance(v, Instruction) and v.opcode == "mul"):
        return False
    a, b = v.operands
    return (_sreg(a, "nctaid.x") and _sreg(b, "ntid.x")) or (_sreg(a, "ntid.x") and _sreg(b, "nctaid.x"))


def grid_x(v: Value) -> bool:
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


def exclusive(model, entry: Function, array: Argument, others: list[Argument], one_dimensional: bool = True) -> Value:
    """An ``i1`` computed at the kernel's start, the same in every thread: the grid and blocks are
    one-dimensional (only when ``one_dimensional``), and ``array``'s bytes lie clear of every array in
    ``others`` (:func:`.ptx_blocksums.array_span`). ``true`` when nothing is
    checked."""
    b, i32 = Builder(), LT.i32
    b.position_before(next(i for i in entry.blocks[0].instructions if i.opcode != "alloca"))
    flag: Value = const_int(LT.i1, 1)
    if not one_dimensional and not others:
        return flag
    for reg in ("nctaid.y", "nctaid.z", "ntid.y", "ntid.z") if one_dimensional else ():
        fn = model.functions.get(_SREG + reg)
        if fn is None:
            fn = model.add_function(Function(_SREG + reg, LT.function(i32, [])))
        flag = b.binop("and", flag, b.icmp("eq", b.call(fn, []), const_int(i32, 1)))
    lo, hi = array_span(b, array)
    for other in others:
        olo, ohi = array_span(b, other)
        flag = b.binop("and", flag, b.binop("or", b.icmp("sle", hi, olo), b.icmp("sle", ohi, lo)))
    return flag


_PURE = frozenset({"getelementptr", "extractvalue", "bitcast", "addrspacecast", "add", "sub", "mul", "shl", "lshr",
                   "ashr", "sext", "zext", "trunc", "or", "and", "xor", "icmp", "select"})
"""Instructions that compute an address from values and may move up their block (besides reads of the
special registers: ``tid.x``...): a Python index's wrap (``i + (i < 0 ? n : 0)``) among them."""


def early_load(rmw: Instruction, after: Instruction | None = None) -> Instruction | None:
    """A load of the element ``rmw`` adds into, early in ``rmw``'s block: at its start, or right after
    ``after`` (the block's last access of the same array before ``rmw``). A plain add's old value, read before
    the block's work (a stencil's ``tanh``) rather than after it, which hides its latency (on an H200 the
    stencil's gradient took 117 µs instead of 185). The address's computation in the block moves up with it;
    None when it needs a value the block computes otherwise (a load, a call). The load is volatile: LLVM's
    code generator would sink it back to its use.

    The load runs wherever the block does, on any launch: the block reaches ``rmw``, which addresses the
    same element, so the address is one the thread uses anyway. Its value serves the plain add only, taken
    where no other thread touches the element and no array the kernel writes overlaps the array (the
    plain add's flag): between the load and ``rmw`` nothing writes the element."""
    block = rmw.parent
    assert block is not None
    insts = block.instructions
    where = {id(i): k for k, i in enumerate(insts)}
    start = where[id(after)] + 1 if after is not None else 0
    while insts[start].opcode == "phi":
        start += 1
    p = rmw.operands[0]
    chain: list[Instruction] = []  # the address's computation after the load's place, to move up
    todo = [p]
    while todo:
        v = todo.pop()
        if not isinstance(v, Instruction) or v.parent is not block or where[id(v)] < start or v in chain:
            continue
        if v.opcode not in _PURE and not (v.opcode == "call" and getattr(v.callee, "name", "").startswith(_SREG)):
            return None
        chain.append(v)
        todo.extend(v.operands)
    at = next(i for i in insts[start:] if i not in chain)
    for inst in sorted(chain, key=lambda i: where[id(i)]):  # (in their order: each after what it uses)
        inst.remove_from_parent()
        inst.insert_before(at)
    t = rmw.operands[1].type
    load = Instruction("load", t, ["load volatile ", t, ", ", p.type, " ", 0, f", align {SIZES[str(t)]}"], (p,))
    load.insert_before(at)
    return load


def _plain_when(flag: Value, rmw: Instruction, touching: set[int]) -> None:
    """``rmw`` becomes a plain load, add and store where ``flag`` holds, and stays as written elsewhere; the
    load is made early (:func:`early_load`: after the block's last access of the array before ``rmw``, among
    the instructions ``touching`` it, by id)."""
    head = rmw.parent
    assert head is not None and head.parent is not None
    before = head.instructions[:head.instructions.index(rmw)]
    early = early_load(rmw, next((i for i in reversed(before) if id(i) in touching), None))
    own, join = split_after(rmw)
    fn = head.parent
    plain = BasicBlock("", fn)
    fn.blocks.insert(fn.blocks.index(own), plain)
    b = Builder(head)
    b.cond_br(flag, plain, own)
    b.position_at_end(plain)
    p, v = rmw.operands[0], rmw.operands[1]
    size = SIZES[str(v.type)]
    old = early if early is not None else b.load(v.type, p, align=size)
    b.store(b.binop(str(rmw.operation), old, v), p, align=size)
    b.br(join)


__all__ = ["SIZES", "constant_int", "early_load", "exclusive", "grid_x", "own_element_adds", "stripped"]
