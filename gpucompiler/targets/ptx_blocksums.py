"""Block-summed atomic adds (PTX): an atomic add to one address that every thread of the kernel computes
alike is summed per block in shared memory, and one thread adds the block's sum at the kernel's end.

``atomic_add(out, 0, v)`` from every thread of a grid, warp-summed (:mod:`.warpatomics`), still makes
one global atomic per warp, and the memory system does them one after another at that address: 32,768
of them, about 60 µs on an H200, for 2^20 threads. With a sum per block it makes one per block (4,096
for blocks of 256). Each eligible ``atomicrmw`` (:func:`eligible_sites`) is retargeted to a slot of the
block's shared memory (the warp sum then goes there, :mod:`.warpatomics` treats the slot as summable),
and the kernel becomes::

    entry:  (its allocas) store 0 -> slot; barrier          ; every thread, before any add
    ...     ret void  ->  br exit                           ; every return of the kernel
    exit:   barrier (non-aligned); br thread 0 ? flush : done
    flush:  atomicrmw add p, load slot                      ; the block's sum, once
    done:   ret void

Deferring a thread's add to the end of its block changes nothing another thread can rely on (relaxed
atomics are unordered between threads), but would change what the thread itself reads or overwrites
afterwards; so a site is eligible only when:

* it is ``fadd`` or ``add`` (``float``, ``double``, ``i32``, ``i64``) with its old value unused, in the
  kernel function itself, on memory :func:`.warpatomics.eligible` accepts;
* its address is the same in every thread: computed by pure instructions (address arithmetic, casts,
  ``extractvalue``) from the kernel's arguments and constants only (``out[0]``, never ``out[i]``);
* nothing the thread may run after it reads or stores into memory that could be that address: every
  load, store, compare-exchange or atomic whose old value is used (other atomic adds commute with it)
  afterwards is on the thread's own stack, shared or constant memory, or on another array argument's
  data, and no call but of a known intrinsic or libdevice follows. Another array's data may still be the
  same memory (a view passed twice): the kernel checks at its start, the same way in every thread, that
  each such array's bytes (from its data pointer, shape and strides) lie clear of the address, and where
  one does not, the site adds into the address itself (per warp) and its slot stays unused;

and the kernel as a whole qualifies only when every thread reaches one of its returns and nothing else
waits for the block: it calls no function that could end a thread or wait elsewhere (``llvm.nvvm.exit``,
inline assembly, a defined function not inlined), has no barrier of its own (a kernel whose threads
return early before a ``syncthreads()`` the others reach would pair the two barriers), and every return
is ``ret void``. Float sums are reassociated, as the warp's are
(results may differ in the last bits from run to run, as any atomic sum's do); integer sums are exact.
"""

from __future__ import annotations

from typing import Any

from ..llvm import (Argument, BasicBlock, Builder, ConstantExpr, Function, GlobalVariable, Instruction, Value,
                    const_int, constant, types as LT)
from .warpatomics import eligible

SHARED = 3
_PURE = frozenset({"getelementptr", "bitcast", "addrspacecast", "freeze", "extractvalue", "add", "sub", "mul", "shl",
                   "lshr", "ashr", "and", "or", "xor", "zext", "sext", "trunc", "icmp", "select", "ptrtoint",
                   "inttoptr"})
"""Instructions whose result is a function of their operands alone (the same in every thread when they are)."""
_PRIVATE_SPACES = frozenset({3, 4, 5})
"""Shared, constant and local memory: never the global memory an eligible atomic adds into."""
_SAFE_CALLS = ("llvm.nvvm.read.ptx.sreg.", "llvm.nvvm.shfl.", "llvm.nvvm.vote.", "llvm.nvvm.activemask",
               "llvm.nvvm.fma.", "llvm.nvvm.sqrt.", "llvm.nvvm.rsqrt.", "llvm.nvvm.rcp.",
               "llvm.nvvm.fabs.", "llvm.nvvm.ex2.", "llvm.nvvm.lg2.", "llvm.nvvm.sin.", "llvm.nvvm.cos.",
               "llvm.dbg.", "llvm.lifetime.", "llvm.assume", "__nv_")
"""Calls that neither read nor write global memory a kernel argument points to, nor end a thread (libdevice's
functions read only their own constant tables)."""
_MATH_INTRINSICS = frozenset({"sqrt", "fabs", "fma", "fmuladd", "minnum", "maxnum", "minimum", "maximum", "copysign",
                              "floor", "ceil", "trunc", "round", "rint", "nearbyint", "roundeven", "smax", "smin",
                              "umax", "umin", "abs", "ctpop", "ctlz", "cttz", "bswap", "bitreverse", "fshl", "fshr",
                              "sadd", "uadd", "ssub", "usub", "smul", "umul", "is"})
"""``llvm.<name>.*`` intrinsics computing on values only."""


def _callee_name(inst: Instruction) -> str | None:
    callee = inst.callee
    return callee.name if isinstance(callee, Function) else None


def safe_call(inst: Instruction) -> bool:
    name = _callee_name(inst)
    if name is None:
        return False
    if name.startswith(_SAFE_CALLS):
        return True
    return name.startswith("llvm.") and name.split(".")[1] in _MATH_INTRINSICS


UNKNOWN = "unknown"
"""What :func:`_touched` says of an access whose memory it cannot name."""


def _private(p: Value) -> bool:
    """Whether pointer ``p`` addresses the thread's own stack, shared or constant memory."""
    while True:
        space = getattr(p.type, "addrspace", 0)
        if space in _PRIVATE_SPACES:
            return True
        if isinstance(p, Instruction) and p.opcode == "alloca":
            return True
        if isinstance(p, (Instruction, ConstantExpr)) and p.opcode in ("getelementptr", "bitcast", "addrspacecast"):
            p = p.operands[0]  # (a shared array's address is a constant expression: addrspacecast of @buf)
            continue
        return False


def array_rank(a: Argument) -> int | None:
    """The number of dimensions of a kernel's array argument (``{ ptr, [n x i64], [n x i64] }``: data, shape,
    byte strides), None for another argument."""
    t = a.type
    fields = getattr(t, "elements", None)
    if not fields or len(fields) != 3 or str(fields[0]) != "ptr" or str(fields[1]) != str(fields[2]):
        return None
    n = getattr(fields[1], "count", None)
    return n if isinstance(n, int) and str(fields[1]) == f"[{n} x i64]" else None


def array_of(p: Value, entry: Function) -> Argument | str | None:
    """The array argument of ``entry`` whose data ``p`` points into (through address arithmetic and casts),
    None for memory no argument can be (the thread's own, shared, constant, a constant global), else
    :data:`UNKNOWN`."""
    while True:
        if _private(p) or (isinstance(p, GlobalVariable) and p.is_constant):
            return None
        if isinstance(p, Instruction) and p.opcode in ("getelementptr", "bitcast", "addrspacecast", "freeze"):
            p = p.operands[0]
            continue
        if isinstance(p, Instruction) and p.opcode == "extractvalue" and tuple(p.aggregate_indices or ()) == (0,):
            a = p.operands[0]
            if isinstance(a, Argument) and a in entry.args and array_rank(a) is not None:
                return a
        return UNKNOWN


def _touched(inst: Instruction, entry: Function) -> Argument | str | None:
    """What global memory ``inst`` may read or store into that an earlier atomic add must not have been deferred
    past: None (none: a value-only instruction, its own or constant memory, an atomic add whose old value is
    unused, which commutes with the deferred one), an array argument (its data), or :data:`UNKNOWN`."""
    op = inst.opcode
    if op == "load":
        return array_of(inst.operands[0], entry)
    if op == "store":
        return array_of(inst.operands[1], entry)
    if op == "atomicrmw":
        if not inst.users and inst.operation in ("add", "fadd"):
            return None
        return array_of(inst.operands[0], entry)
    if op == "cmpxchg":
        return array_of(inst.operands[0], entry)
    if op == "call":
        return None if safe_call(inst) else UNKNOWN
    return None


def _uniform(v: Value, entry: Function, memo: dict[int, bool]) -> bool:
    """Whether ``v`` is the same in every thread: an argument of ``entry``, a constant or a global's address,
    or a pure instruction of such operands."""
    if isinstance(v, Argument):
        return v in entry.args
    if not isinstance(v, Instruction):
        return not isinstance(v, BasicBlock)  # constants, globals, functions
    hit = memo.get(id(v))
    if hit is None:
        memo[id(v)] = False  # (a cycle through phis is not pure anyway)
        hit = memo[id(v)] = v.opcode in _PURE and all(_uniform(op, entry, memo) for op in v.operands)
    return hit


def _after(rmw: Instruction) -> list[Instruction]:
    """The instructions a thread may run after ``rmw``: the rest of its block and every block reachable from
    there (all of its block when that is in a loop)."""
    block = rmw.parent
    assert block is not None
    seen: set[int] = set()
    work = list(block.successors)
    blocks: list[BasicBlock] = []
    while work:
        b = work.pop()
        if id(b) in seen:
            continue
        seen.add(id(b))
        blocks.append(b)
        work.extend(b.successors)
    insts = block.instructions
    out = list(insts) if id(block) in seen else insts[insts.index(rmw) + 1:]
    for b in blocks:
        if b is not block:
            out.extend(b.instructions)
    return out


class Site:
    """An atomic add a block may sum: deferring it is safe when the memory of the arrays ``disjoint`` (read or
    stored into after it, in other arguments than its own) does not hold its address, checked at run time
    (plain classes, as :class:`Flush` and :class:`BlockSums`: an ``attrs`` class took ~0.3 ms to make at a
    process's first compile)."""

    __slots__ = ("rmw", "disjoint")

    def __init__(self, rmw: Instruction, disjoint: tuple[Argument, ...]):
        self.rmw, self.disjoint = rmw, disjoint


def eligible_sites(entry: Function, global_space: int = 1) -> list[Site]:
    """The atomic adds of kernel ``entry`` a block may sum (see the module docstring); none when some thread
    could leave the kernel elsewhere than at a ``ret void``."""
    rets = []
    for inst in entry.instructions():
        if inst.opcode == "ret":
            if inst.operands:
                return []
            rets.append(inst)
        elif inst.opcode in ("call", "invoke", "callbr"):
            callee = inst.callee
            if not isinstance(callee, Function) or callee.name == "llvm.nvvm.exit" \
                    or callee.name.startswith("llvm.nvvm.bar") \
                    or (not callee.is_declaration and not callee.name.startswith("__nv_")):
                # inline assembly, a call through a pointer, a thread's exit, a function not inlined; a barrier
                # of the kernel's own (a thread that returned early would wait at the exit's barrier and
                # release the others from theirs)
                return []
    if not rets:
        return []
    memo: dict[int, bool] = {}
    sites = []
    for inst in entry.instructions():
        if inst.opcode != "atomicrmw" or inst.operation not in ("add", "fadd") or not eligible(inst, entry, global_space):
            continue
        if not _uniform(inst.operands[0], entry, memo):
            continue
        own = array_of(inst.operands[0], entry)
        others: dict[int, Argument] = {}
        for later in _after(inst):
            what = _touched(later, entry)
            if what is None:
                continue
            if what is UNKNOWN or what is own or isinstance(what, str):
                break
            others[id(what)] = what
        else:
            sites.append(Site(inst, tuple(others.values())))
    return sites


class Flush:
    """How one slot reaches memory at the kernel's end: ``total`` (the site's atomic, no operands yet) adds it
    to ``address`` (``flag``: only when the arrays named by the site's disjointness hold none of it)."""

    __slots__ = ("total", "address", "dbg", "slot", "flag")

    def __init__(self, total: Instruction, address: Value, dbg: Any, slot: GlobalVariable, flag: Value | None):
        self.total, self.address, self.dbg, self.slot, self.flag = total, address, dbg, slot, flag


class BlockSums:
    """The sites of a kernel retargeted to shared slots (:func:`sum_per_block`); ``summable``: the pointers they
    add into now (a slot, or a choice between the slot and the address made at run time), for the warp's
    sums; :meth:`finish` adds the zeroing at the kernel's start and the flush at its end."""

    __slots__ = ("model", "entry", "summable", "flushes")

    def __init__(self, model: Any, entry: Function, summable: list[Value], flushes: list[Flush]):
        self.model, self.entry, self.summable, self.flushes = model, entry, summable, flushes

    def finish(self) -> None:
        if self.flushes:
            _start(self.model, self.entry, [f.slot for f in self.flushes])
            _finish(self.model, self.entry, self.flushes)


def sum_per_block(model, entry: Function, global_space: int = 1) -> BlockSums:
    """Retarget the eligible atomic adds of kernel ``entry`` to shared slots summed per block (the module
    docstring); :attr:`BlockSums.summable` goes to :func:`.warpatomics.aggregate_atomics` (which then sums warps
    into them), then :meth:`BlockSums.finish` completes the kernel."""
    summable, flushes = [], []
    for n, site in enumerate(eligible_sites(entry, global_space)):
        rmw = site.rmw
        slot = model.add_global(GlobalVariable(f"gpuc.blocksum.{n}", rmw.type, prefix=f"internal addrspace({SHARED})",
                                               suffix=", align 8", initializer=constant(rmw.type, "undef"),
                                               addrspace=SHARED))
        p = rmw.operands[0]
        flag = _disjoint(entry, p, site.disjoint) if site.disjoint else None
        flushes.append(Flush(rmw.detached_copy(""), p, rmw.metadata.get("dbg"), slot, flag))
        if flag is None:
            target: Value = slot
        else:  # the slot where the arrays read afterwards are elsewhere, else the address itself, as written
            b = Builder()
            b.position_before(rmw)
            target = b.select(flag, b.cast("addrspacecast", slot, LT.ptr()), generic(b, p))
        _retarget(rmw, target)
        summable.append(target)
    return BlockSums(model, entry, summable, flushes)


def generic(b: Builder, p: Value) -> Value:
    return p if getattr(p.type, "addrspace", 0) == 0 else b.cast("addrspacecast", p, LT.ptr())


def _disjoint(entry: Function, p: Value, arrays: tuple[Argument, ...]) -> Value:
    """An ``i1`` computed at the kernel's start, the same in every thread: whether the bytes of every array in
    ``arrays`` (:func:`array_span`) lie clear of the 16 bytes at address ``p``."""
    b, i64 = Builder(), LT.i64
    b.position_before(next(i for i in entry.blocks[0].instructions if i.opcode != "alloca"))
    at = b.cast("ptrtoint", generic(b, _rebuilt(b, p, {})), i64)
    end = b.binop("add", at, const_int(i64, 16))
    flag: Value = const_int(LT.i1, 1)
    for a in arrays:
        lo, hi = array_span(b, a)
        clear = b.binop("or", b.icmp("sle", end, lo), b.icmp("sle", hi, at))
        flag = b.binop("and", flag, clear)
    return flag


def array_span(b: Builder, a: Argument) -> tuple[Value, Value]:
    """``(lo, hi)`` at ``b``: the bytes ``[lo, hi)`` that hold every element of array argument ``a``: from its
    data pointer, per dimension, ``(extent - 1) * stride`` down where the stride is negative and up where it is
    positive (nothing for an extent of 0 or 1, or a stride of 0), and 16 bytes (the largest element) past the
    last element's address."""
    i64 = LT.i64
    zero = const_int(i64, 0)
    lo: Value = b.cast("ptrtoint", generic(b, b.extractvalue(a, 0)), i64)
    hi: Value = lo
    for d in range(array_rank(a) or 0):
        stride, extent = b.extractvalue(a, (2, d)), b.extractvalue(a, (1, d))
        last = b.select(b.icmp("sgt", extent, zero), b.binop("sub", extent, const_int(i64, 1)), zero)
        step = b.binop("mul", last, stride)
        down = b.icmp("slt", step, zero)
        lo = b.binop("add", lo, b.select(down, step, zero))
        hi = b.binop("add", hi, b.select(down, zero, step))
    return lo, b.binop("add", hi, const_int(i64, 16))


def _retarget(rmw: Instruction, target: Value) -> None:
    """``rmw`` adds into ``target`` instead (its spelling names the pointer's type before the operand)."""
    parts = list(rmw.parts)
    k = parts.index(0)
    parts[k - 2] = target.type
    rmw.parts = tuple(parts)
    rmw.set_operand(0, target)


def _declare(model, name: str, ret: LT.Type, params: list[LT.Type]) -> Function:
    fn = model.functions.get(name)
    if fn is None:
        fn = model.add_function(Function(name, LT.function(ret, params)))
    return fn


def _zero(t: LT.Type) -> Value:
    return const_int(t, 0) if t.is_integer else constant(t, "0.0")


def _start(model, entry: Function, slots: list[GlobalVariable]) -> None:
    """Every thread zeroes the slots, then the block waits: no add reaches a slot before it is zero."""
    first = entry.blocks[0]
    at = next(i for i in first.instructions if i.opcode != "alloca")
    b = Builder()
    b.position_before(at)
    for slot in slots:
        b.store(_zero(slot.value_type), slot)
    b.call(_declare(model, "llvm.nvvm.barrier.cta.sync.aligned.all", LT.void, [LT.i32]), [const_int(LT.i32, 0)])


def _finish(model, entry: Function, flushes: list[Flush]) -> None:
    """Every return goes to one exit where the block waits for all its threads, then thread 0 adds each
    slot into its address (a slot with a flag only where the flag holds)."""
    exit_, flush = BasicBlock("gpuc.blocksum.exit", entry), BasicBlock("", entry)
    entry.blocks.extend([exit_, flush])
    for ret in [i for i in entry.instructions() if i.opcode == "ret" and i.parent not in (exit_, flush)]:
        block = ret.parent
        assert block is not None
        ret.erase()
        Builder(block).br(exit_)
    b = Builder(exit_)
    b.call(_declare(model, "llvm.nvvm.barrier.cta.sync.all", LT.void, [LT.i32]), [const_int(LT.i32, 0)])
    tid = [b.call(_declare(model, f"llvm.nvvm.read.ptx.sreg.tid.{axis}", LT.i32, []), []) for axis in "xyz"]
    done = BasicBlock("", entry)
    b.cond_br(b.icmp("eq", b.or_(b.or_(tid[0], tid[1]), tid[2]), const_int(LT.i32, 0)), flush, done)
    b.position_at_end(flush)
    copies: dict[int, Value] = {}
    for f in flushes:
        add = BasicBlock("", entry) if f.flag is not None else None
        after = BasicBlock("", entry) if f.flag is not None else None
        if add is not None and after is not None and f.flag is not None:
            entry.blocks.extend([add, after])
            b.cond_br(f.flag, add, after)
            b.position_at_end(add)
        total = f.total
        total.append_operand(_rebuilt(b, f.address, copies))
        total.append_operand(b.load(f.slot.value_type, f.slot))
        if f.dbg is not None:
            total.metadata["dbg"] = f.dbg
        b.insert(total)
        if after is not None:
            b.br(after)
            b.position_at_end(after)
            copies = {}  # (what the add's block computed does not dominate the next)
    b.br(done)
    entry.blocks.append(done)
    Builder(done).ret()


def _rebuilt(b: Builder, v: Value, copies: dict[int, Value]) -> Value:
    """``v`` (uniform: pure instructions over arguments and constants) computed again at ``b``."""
    if not isinstance(v, Instruction):
        return v
    hit = copies.get(id(v))
    if hit is None:
        c = v.detached_copy("")
        for op in v.operands:
            c.append_operand(_rebuilt(b, op, copies))
        hit = copies[id(v)] = b.insert(c)
    return hit


__all__ = ["UNKNOWN", "BlockSums", "Flush", "Site", "array_of", "array_rank", "array_span", "eligible_sites", "generic", "safe_call",
           "sum_per_block"]
