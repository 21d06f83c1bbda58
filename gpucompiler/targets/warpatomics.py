"""Warp-aggregated atomic adds: a GPU target's ``finish`` rewrites each atomic add whose old value is unused
so that a warp adding to one address makes one atomic instead of one per lane.

A kernel where every thread runs ``atomic_add(out, 0, v)`` (a one-address reduction, the adjoint of a
parameter every thread reads) is serialised by the memory system: the device does one add after another.
:func:`aggregate_atomics` runs on the final kernel module, after AD and before the last optimisation, with
the target's :class:`~gpucompiler.core.WarpIntrinsics`; each eligible ``atomicrmw`` becomes::

      full = active_mask() == -1              ; every lane of the warp is here (shuffles are then legal)
      br full, check, single
    check:  same = vote_all(addr == shuffle_index(addr, 0)); br same, reduce, single
    reduce: s = butterfly sum of v (log2(width) shuffle_xor); br lane_id == 0, one, join
    one:    atomicrmw op p, s                 ; lane 0 adds the warp's sum
    single: atomicrmw op p, v                 ; otherwise each lane adds its own

Eligible (:func:`eligible`): ``fadd``/``fsub`` of ``float``/``double`` and ``add``/``sub`` of ``i32``/``i64``,
not volatile, ``monotonic`` (relaxed) at the default, device (agent) or workgroup scope, with the old value
unused, on memory every thread sees the same at one address: global memory (the target's global address
space, or a generic pointer that comes from a kernel argument or a global variable). Never a thread's own
memory (an ``alloca``: one generic address names each lane's own copy), shared memory or a pointer of
unknown origin (loaded from memory, made from an integer). Another ordering keeps its per-lane meaning.

Floating-point atomics have no defined order, so a warp's partial sum is one of the results the
per-lane adds could give up to rounding: results may differ in the last bits from run to run, as any
atomic sum's do. Integer sums are exact. A target field ``aggregate_atomics=False`` keeps one atomic per
lane (``PTXTarget(aggregate_atomics=False)``, ``AMDGPUTarget(...)``, ``SPIRVTarget(...)``).
"""

from __future__ import annotations

from collections.abc import Collection

from ..core import WarpIntrinsics
from ..llvm import Argument, BasicBlock, Builder, Function, GlobalVariable, Instruction, Value, const_int, types as LT

_COMBINE = {"fadd": "fadd", "fsub": "fadd", "add": "add", "sub": "add"}
"""The operations aggregated, and how a warp combines the lanes' operands (a sum of subtrahends)."""
_SCOPES = frozenset({"", 'syncscope("device")', 'syncscope("agent")', 'syncscope("workgroup")',
                     'syncscope("block")', 'syncscope("agent-one-as")', 'syncscope("workgroup-one-as")'})
"""Scopes at which one warp's atomics are one agent's: the default (system) scope and narrower ones that
still hold a whole warp (never ``singlethread``)."""
_THROUGH = frozenset({"getelementptr", "bitcast", "addrspacecast", "freeze"})
"""Instructions whose pointer result addresses the object of their first operand."""


def eligible(inst: Instruction, entry: Function | None, global_space: int = 1, summable: Collection[Value] = ()) -> bool:
    """Whether ``inst`` is an atomic add that may be summed over a warp first (see the module docstring);
    ``entry`` is the kernel, whose arguments point to global memory; ``summable``: shared slots a block sums
    into (:mod:`.ptx_blocksums`), summable too."""
    if inst.opcode != "atomicrmw" or inst.operation not in _COMBINE or inst.users or inst.is_volatile:
        return False
    if str(inst.type) not in ("float", "double", "i32", "i64") or (inst.type.is_float != inst.operation.startswith("f")):
        return False
    tail = inst.parts[-1]
    words = tail.split(",", 1)[0].split() if type(tail) is str else []
    if not words or words[-1] != "monotonic" or " ".join(words[:-1]) not in _SCOPES:
        return False
    p = inst.operands[0]
    return any(p is slot for slot in summable) or global_memory(p, entry, global_space)


def global_memory(p: Value, entry: Function | None, global_space: int = 1) -> bool:
    """Whether pointer ``p`` addresses global memory: typed so, or generic and from (through GEPs, casts,
    phis and selects) a kernel argument or a global variable."""
    work, seen = [p], set()
    while work:
        v = work.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        space = getattr(v.type, "addrspace", None)
        if space == global_space:
            continue
        if space != 0:
            return False
        if isinstance(v, Argument):
            if entry is None or v not in entry.args:
                return False
        elif isinstance(v, GlobalVariable):
            continue
        elif isinstance(v, Instruction) and v.opcode in _THROUGH:
            work.append(v.operands[0])
        elif isinstance(v, Instruction) and v.opcode == "phi":
            work.extend(value for value, _ in v.incoming)
        elif isinstance(v, Instruction) and v.opcode == "select":
            work.extend(v.operands[1:3])
        elif isinstance(v, Instruction) and v.opcode == "extractvalue":  # a kernel's array argument
            agg = v.operands[0]
            agg = agg.operands[0] if isinstance(agg, Instruction) and agg.opcode == "freeze" else agg
            if not (isinstance(agg, Argument) and entry is not None and agg in entry.args):
                return False
        else:
            return False
    return True


def aggregate_atomics(model, warp: WarpIntrinsics, entry: Function | None, global_space: int = 1,
                      summable: Collection[Value] = (), keep: Collection[Instruction] = ()) -> int:
    """Rewrite every eligible atomic add of ``model``'s defined functions into the warp-aggregated form
    (the module docstring) with ``warp``'s intrinsics; returns how many (``summable``: as :func:`eligible`'s;
    ``keep``: atomics left as they are, e.g. those a warp already combined, each lane at its own address)."""
    kept = {id(inst) for inst in keep}
    sites = [inst for fn in model.functions.values() if not fn.is_declaration for inst in fn.instructions()
             if id(inst) not in kept and eligible(inst, entry, global_space, summable)]
    for rmw in sites:
        _aggregate(Collectives(model, warp, rmw), rmw)
    return len(sites)


class Collectives:
    """Calls of the warp intrinsics at a builder (:attr:`b`, positioned by the caller), carrying the atomic's
    debug location; a function called is declared in ``model`` on first use."""

    def __init__(self, model, warp: WarpIntrinsics, rmw: Instruction):
        self.model, self.warp, self.b = model, warp, Builder()
        self.dbg = rmw.metadata.get("dbg")

    def call(self, name: str, ret: LT.Type, args: list[Value]) -> Instruction:
        fn = self.model.functions.get(name)
        if fn is None:
            fn = self.model.add_function(Function(name, LT.function(ret, [a.type for a in args])))
            if not name.startswith("llvm."):  # (LLVM gives intrinsics their own attributes)
                for a in ("convergent", "nounwind"):
                    fn.add_attribute(a)
        call = self.b.call(fn, args)
        if self.dbg is not None:
            call.metadata["dbg"] = self.dbg
        return call

    def shuffle(self, name: str, v: Value, lane: int | Value) -> Value:
        """``name`` (``shuffle_index``/``shuffle_xor`` shape) over the whole warp of a 32- or 64-bit ``v``;
        ``lane``: a constant or an ``i32`` value (the source lane of ``shuffle_index``)."""
        b, i32, width = self.b, LT.i32, self.warp.width
        bits = {"float": 32, "double": 64, "i32": 32, "i64": 64}[str(v.type)]
        x = v if v.type.is_integer else b.bitcast(v, LT.int_type(bits))
        source = const_int(i32, lane) if isinstance(lane, int) else lane
        args = lambda w: [const_int(i32, -1), w, source, const_int(i32, width - 1)]  # noqa: E731
        if bits == 32:
            y: Value = self.call(name, i32, args(x))
        else:
            lo, hi = b.trunc(x, i32), b.trunc(b.lshr(x, const_int(LT.i64, 32)), i32)
            lo, hi = self.call(name, i32, args(lo)), self.call(name, i32, args(hi))
            y = b.or_(b.zext(lo, LT.i64), b.shl(b.zext(hi, LT.i64), const_int(LT.i64, 32)))
        return y if v.type.is_integer else b.bitcast(y, v.type)


def _aggregate(c: Collectives, rmw: Instruction) -> None:
    b, warp, i32 = c.b, c.warp, LT.i32
    head = rmw.parent
    assert head is not None and head.parent is not None
    single, join = split_after(rmw)
    fn = head.parent
    check, reduce, one = BasicBlock("", fn), BasicBlock("", fn), BasicBlock("", fn)
    at = fn.blocks.index(single)
    fn.blocks[at:at] = [check, reduce, one]
    b.position_at_end(head)
    b.cond_br(b.icmp("eq", c.call(warp.active_mask, i32, []), const_int(i32, -1)), check, single)
    b.position_at_end(check)
    addr = b.ptrtoint(rmw.operands[0], LT.i64)
    lead = c.shuffle(warp.shuffle_index, addr, 0)
    b.cond_br(c.call(warp.vote_all, LT.i1, [const_int(i32, -1), b.icmp("eq", addr, lead)]), reduce, single)
    b.position_at_end(reduce)
    s = rmw.operands[1]
    lane = warp.width // 2
    while lane:
        s = b.binop(_COMBINE[str(rmw.operation)], s, c.shuffle(warp.shuffle_xor, s, lane))
        lane //= 2
    b.cond_br(b.icmp("eq", c.call(warp.lane_id, i32, []), const_int(i32, 0)), one, join)
    b.position_at_end(one)
    total = rmw.detached_copy("")
    total.append_operand(rmw.operands[0])
    total.append_operand(s)
    total.metadata = dict(rmw.metadata)
    b.insert(total)
    b.br(join)


def split_after(inst: Instruction) -> tuple[BasicBlock, BasicBlock]:
    """Move ``inst`` into a block of its own and what followed it into a join block after it; returns
    them (the caller ends the first part, left without a terminator, with a branch); successors' phis
    now come from the join."""
    block = inst.parent
    assert block is not None and block.parent is not None
    fn = block.parent
    own, join = BasicBlock("", fn), BasicBlock("", fn)
    at = fn.blocks.index(block)
    fn.blocks[at + 1:at + 1] = [own, join]
    insts = block.instructions
    k = insts.index(inst)
    rest = insts[k + 1:]
    del insts[k:]
    own.append(inst)
    Builder(own).br(join)
    for later in rest:
        join.append(later)
    for succ in join.successors:
        for phi in (i for i in succ.instructions if i.opcode == "phi"):
            for n, op in enumerate(phi.operands):
                if op is block:
                    phi.set_operand(n, join)
    return own, join

