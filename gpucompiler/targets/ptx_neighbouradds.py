"""Neighbouring atomic adds combined in a warp (PTX): ``dx[i - 1] += a; dx[i] += b; dx[i + 1] += c`` with
``i = grid(1)`` makes one atomic per element and warp, plus one per edge of the warp, instead of three.

The gradient of a 3-point stencil (``out[i] = f(x[i - 1], x[i], x[i + 1])``) adds three adjoints per thread
into ``dx``, atomically (neighbouring threads add into the same element): three atomics per element where
one would do. In a warp lane ``l``'s element ``G_l + c`` is lane
``l + c``'s element ``G_{l + c} = G_l + c``, so the warp can bring each element's adds to the lane that owns
it with shuffles and add them there once.

:func:`neighbour_adds` groups, within one basic block of the kernel, the relaxed ``atomicrmw fadd``/``add``
that :func:`.warpatomics.eligible` accepts (old value unused, not volatile, global memory) into one array
argument at byte ``(G + c) * s`` of its data: ``G`` the thread's x index in the grid (``ctaid.x * ntid.x +
tid.x``, :func:`.ptx_ownelements.grid_x`), ``s`` the access's size (``float``/``i32`` 4, ``double``/``i64``
8) and ``c`` a constant, a different one per add, of magnitude under the warp's width. The address is read
through a chain of one-index ``getelementptr`` over the array's data pointer (``extractvalue %arg, 0``,
through casts) whose 64-bit indices are sums, differences, and products or shifts by constants of ``G`` and
constants (``gep i8, p, (G << 3) - 8``, ``gep double, p, G + 1``, ``gep double, (gep double, p, G), 1``).
A group of two adds or more becomes, at its last add (where every operand of the group is defined)::

    head:   ok = flag && activemask() == -1 && ntid.x % 32 == 0;  br ok, warp, lanes
    warp:   t_k = 0 <= l - c_k < 32 ? shuffle_index(v_k, l - c_k) : -0.0   ; every lane, every add k
            atomicrmw add (G + 0) * s, sum over k of t_k                   ; the lane's own element
            atomicrmw add (G + c_k) * s, v_k  where l + c_k is outside [0, 32)  ; the warp's edges
    lanes:  the group's atomics as written, in their order                 ; any other launch or warp

(``l`` the lane's index). Where the launch is one-dimensional and the group's adds are the only ones the kernel
makes into the array, a lane whose element takes all its shares from its own warp (every ``0 <= l - c_k <
32``: lanes 1 to 30 of a 3-point stencil) adds the sum with a plain load and store instead: no other thread
touches that element. With an add at offset 0 the load is made early, at the start of the group's block
(:func:`.ptx_ownelements.early_load`): a stencil's gradient then reads ``dx[i]`` while it computes its
``tanh``. Where ``ntid.x`` is a multiple of 32 a warp lies in one row of its block, its lanes
are 32 consecutive ``tid.x`` and lane ``l``'s ``G`` is ``G_0 + l``: lane ``m``'s add ``k`` goes to element
``G_0 + m + c_k``, added by lane ``m + c_k`` when that is a lane of the warp, by lane ``m`` itself (an edge)
when it is not; each add is made exactly once. The shuffles run in every lane (the validity of a source
lane is a select), after the whole warp was found here (``activemask() == -1``, as :mod:`.warpatomics`
checks). Lanes that own no contribution (with offsets all of one sign, the lanes at one end) make no add of
their own element, which may lie outside the array. Unlike :mod:`.ptx_ownelements` the launch may have
several rows: threads of other rows, blocks or warps that add into the same element still add atomically,
and a warp's lanes are consecutive in ``G`` whenever ``ntid.x`` is a multiple of 32.

Moving a thread's add into another lane, and its earlier adds of the group down to the last, changes what
the thread itself could read back; so a group is made only when nothing could: the kernel calls nothing
but known intrinsics and libdevice (:func:`.ptx_blocksums.safe_call`), has no fence, atomic load or store,
compare-exchange or atomic stronger than ``monotonic``, and no access of unknown reach but atomic adds whose
old value is unused (which commute with the group's); the array is accessed only by such adds; nothing
between the group's first and last add reads or writes global memory; and where the thread may read or
write global memory after the group, ``flag``, computed at the kernel's start
(:func:`.ptx_ownelements.exclusive`), finds the array's bytes clear of every other array the kernel reads or
writes (a view of the same buffer read after the group would miss a neighbour's add made for the thread).
The plain add's flag also finds them clear of every other array the kernel writes into, by stores or
atomics (another thread's write through a view could reach the element between the load and the store).
A stencil's gradient, which ends at its adds and writes no other array, checks only the launch: its spans
were a fifth of its instructions. Floating sums are reassociated, as any atomic sum's are: results may differ in the
last bits from the per-lane adds' (``float`` atomics flush subnormals to zero, the register sum keeps them);
integer sums are exact. ``PTXTarget(aggregate_atomics=False)`` keeps every atomic as written.
"""

from __future__ import annotations

from ..core import WarpIntrinsics
from ..llvm import Argument, BasicBlock, Function, Instruction, Value, const_int, constant, types as LT
from .ptx_blocksums import array_of, safe_call
from .ptx_ownelements import SIZES, constant_int, early_load, exclusive, grid_x, stripped
from .warpatomics import Collectives, eligible, split_after

_SREG = "llvm.nvvm.read.ptx.sreg."
_ADDED = {"fadd": ("float", "double"), "add": ("i32", "i64")}
"""The operations combined, and the types each adds."""
_MEMORY = frozenset({"load", "store", "atomicrmw", "cmpxchg"})


class _Add:
    """An atomic add of a group: ``rmw`` adds into ``array`` at element ``G + offset``."""

    __slots__ = ("rmw", "array", "offset")

    def __init__(self, rmw: Instruction, array: Argument, offset: int):
        self.rmw, self.array, self.offset = rmw, array, offset


def neighbour_adds(model, warp: WarpIntrinsics, entry: Function, global_space: int = 1) -> list[Instruction]:
    """Combine kernel ``entry``'s groups of neighbouring atomic adds in a warp (the module docstring) with
    ``warp``'s intrinsics; returns the atomics the warp's path makes (each lane's own element and the edges),
    which :func:`.warpatomics.aggregate_atomics` should keep as they are."""
    accessed = _accessed(entry)
    if accessed is None:
        return []
    groups = [g for block in entry.blocks for g in _groups(block, entry, global_space, warp.width, accessed)]
    adds = _adds_per_array(entry)
    written = _written(entry)
    made: list[Instruction] = []
    for group in groups:
        array = group[0].array
        seen = [a for a in accessed.values() if a is not array] if _accessed_after(group[-1].rmw, entry) else []
        writers = seen + [a for a in written.values() if a is not array and a not in seen]
        sole = adds.get(id(array)) == len(group)  # the group's adds are all the kernel makes into the array
        made += _combine(model, warp, group, exclusive(model, entry, array, seen, one_dimensional=False),
                         exclusive(model, entry, array, writers) if sole else None)
    return made


def _accessed_after(last: Instruction, entry: Function) -> bool:
    """Whether the thread may read or write global memory (but by commuting adds) after ``last``: in its
    block after it, or in a block reachable from there (its own again through a loop)."""
    block = last.parent
    assert block is not None
    insts = block.instructions
    if any(_touches_memory(i, entry) for i in insts[insts.index(last) + 1:]):
        return True
    seen: set[int] = set()
    todo = list(block.successors)
    while todo:
        b = todo.pop()
        if id(b) in seen:
            continue
        seen.add(id(b))
        if any(_touches_memory(i, entry) for i in b.instructions):
            return True
        todo.extend(b.successors)
    return False


def _written(entry: Function) -> dict[int, Argument]:
    """The array arguments ``entry`` writes into: by stores and atomics, commuting adds included (another
    array's add may reach a lane's element through a view of the same buffer)."""
    out: dict[int, Argument] = {}
    for inst in entry.instructions():
        if inst.opcode in ("store", "atomicrmw", "cmpxchg"):
            what = array_of(inst.pointer_operand, entry)  # pyright: ignore[reportArgumentType]
            if isinstance(what, Argument):
                out[id(what)] = what
    return out


def _adds_per_array(entry: Function) -> dict[int, int]:
    """How many commuting atomic adds of ``entry`` go into each array argument."""
    out: dict[int, int] = {}
    for inst in entry.instructions():
        if _commutes(inst):
            what = array_of(inst.pointer_operand, entry)  # pyright: ignore[reportArgumentType]
            if isinstance(what, Argument):
                out[id(what)] = out.get(id(what), 0) + 1
    return out


def _commutes(inst: Instruction) -> bool:
    """Whether ``inst`` is a relaxed atomic add whose old value is unused: the order of such adds is not seen."""
    return (inst.opcode == "atomicrmw" and inst.operation in _ADDED and not inst.users and not inst.is_volatile
            and _relaxed(inst))


def _relaxed(inst: Instruction) -> bool:
    tail = inst.parts[-1]
    return type(tail) is str and "monotonic" in tail.split(",", 1)[0].split()


def _accessed(entry: Function) -> dict[int, Argument] | None:
    """The array arguments ``entry`` reads or writes otherwise than by commuting adds, None when the kernel
    must stay as it is (an unknown call, a fence, an ordering stronger than relaxed, an access of unknown
    reach)."""
    out: dict[int, Argument] = {}
    for inst in entry.instructions():
        op = inst.opcode
        if op in ("call", "invoke", "callbr"):
            if not safe_call(inst):
                return None
            continue
        if op == "fence" or op == "cmpxchg" or (op in ("load", "store") and inst.is_atomic) \
                or (op == "atomicrmw" and not _relaxed(inst)):
            return None
        if op not in _MEMORY or _commutes(inst):
            continue
        what = array_of(inst.pointer_operand, entry)  # pyright: ignore[reportArgumentType]
        if isinstance(what, Argument):
            out[id(what)] = what
        elif what is not None:
            return None
    return out


def _groups(block: BasicBlock, entry: Function, global_space: int, width: int,
            accessed: dict[int, Argument]) -> list[list[_Add]]:
    """The groups of ``block``, the one whose last add comes last first (so that rewriting a group leaves the
    others in ``block``)."""
    found: dict[tuple[int, str, str, str], list[_Add]] = {}
    for inst in block.instructions:
        if not (_commutes(inst) and eligible(inst, entry, global_space)
                and str(inst.type) in _ADDED[str(inst.operation)]):
            continue
        at = _element(inst, entry, width)
        if at is None or id(at[0]) in accessed or (inst.alignment or 0) > SIZES[str(inst.type)]:
            continue  # (an alignment beyond the element's: the lane's own element may not have it)
        scope = str(inst.parts[-1]).split(",", 1)[0]
        found.setdefault((id(at[0]), str(inst.type), str(inst.operation), scope), []).append(_Add(inst, *at))
    insts = block.instructions
    where = {id(inst): k for k, inst in enumerate(insts)}
    groups = []
    for group in found.values():
        offsets = [a.offset for a in group]
        if len(group) < 2 or len(set(offsets)) < len(offsets):
            continue
        first, last = where[id(group[0].rmw)], where[id(group[-1].rmw)]
        if any(_touches_memory(inst, entry) for inst in insts[first + 1:last]):
            continue
        groups.append((last, group))
    return [g for _, g in sorted(groups, key=lambda lg: -lg[0])]


def _touches_memory(inst: Instruction, entry: Function) -> bool:
    """Whether ``inst`` may read or write global memory that a group's add must not move past."""
    if inst.opcode not in _MEMORY or _commutes(inst):
        return False
    return array_of(inst.pointer_operand, entry) is not None  # pyright: ignore[reportArgumentType]


def _element(rmw: Instruction, entry: Function, width: int) -> tuple[Argument, int] | None:
    """``(array, c)`` when ``rmw`` adds at byte ``(G + c) * s`` of ``array``'s data (``s``: the access's size,
    ``|c| < width``), else None."""
    size = SIZES[str(rmw.type)]
    scale, offset = 0, 0
    p = stripped(rmw.operands[0])
    while isinstance(p, Instruction) and p.opcode == "getelementptr":
        unit = SIZES.get(str(p.source_element_type))
        form = _affine(p.operands[1], [64]) if len(p.operands) == 2 else None
        if unit is None or form is None:
            return None
        scale, offset = scale + unit * form[0], offset + unit * form[1]
        p = stripped(p.operands[0])
    if not (isinstance(p, Instruction) and p.opcode == "extractvalue"):
        return None
    array = array_of(p, entry)
    if not isinstance(array, Argument) or scale != size or offset % size or abs(offset // size) >= width:
        return None
    return array, offset // size


def _affine(v: Value, budget: list[int]) -> tuple[int, int] | None:
    """``(k, d)`` when ``v`` is ``k * G + d`` (constants ``k``, ``d``) in 64-bit arithmetic, else None."""
    if grid_x(v):
        return 1, 0
    c = constant_int(v)
    if c is not None:
        return 0, c
    budget[0] -= 1
    if not isinstance(v, Instruction) or str(v.type) != "i64" or budget[0] < 0 or len(v.operands) != 2:
        return None
    op, (a, b) = v.opcode, v.operands
    if op in ("add", "sub"):
        x, y = _affine(a, budget), _affine(b, budget)
        if x is None or y is None:
            return None
        sign = 1 if op == "add" else -1
        return x[0] + sign * y[0], x[1] + sign * y[1]
    if op == "mul" and constant_int(a) is not None:
        a, b = b, a
    n = constant_int(b)
    factor = n if op == "mul" else (1 << n if op == "shl" and n is not None and 0 <= n < 64 else None)
    x = _affine(a, budget) if factor is not None and op in ("mul", "shl") else None
    return (x[0] * factor, x[1] * factor) if x is not None and factor is not None else None


def _combine(model, warp: WarpIntrinsics, group: list[_Add], flag: Value, alone: Value | None) -> list[Instruction]:
    """Rewrite ``group`` (the module docstring); the atomics of the warp's path. ``alone``: where it holds (a
    one-dimensional launch, the group the only adds into its array), a lane's element that takes shares from
    its own warp alone gets a plain add."""
    last = group[-1].rmw
    head = last.parent
    assert head is not None and head.parent is not None
    fn = head.parent
    own = next((a for a in group if a.offset == 0), None)
    # (the array's only other accesses are the group's adds, into other elements: the block's start will do)
    early = early_load(own.rmw) if own is not None and alone is not None else None
    lanes, join = split_after(last)
    for add in group[:-1]:  # the lanes' path: the group's atomics, as written, at the last one
        add.rmw.remove_from_parent()
        add.rmw.insert_before(last)
    c = Collectives(model, warp, last)
    b, i32, width = c.b, LT.i32, warp.width
    together = BasicBlock("", fn)
    fn.blocks.insert(fn.blocks.index(lanes), together)
    b.position_at_end(head)
    ok = b.binop("and", b.icmp("eq", c.call(warp.active_mask, i32, []), const_int(i32, -1)),
                 b.icmp("eq", b.binop("and", c.call(_SREG + "ntid.x", i32, []), const_int(i32, width - 1)),
                        const_int(i32, 0)))
    if constant_int(flag) != 1:
        ok = b.binop("and", flag, ok)
    b.cond_br(ok, together, lanes)
    b.position_at_end(together)
    lane = c.call(warp.lane_id, i32, [])
    t = last.type
    neutral = const_int(t, 0) if t.is_integer else constant(t, "-0.0" if t is LT.double else "0x8000000000000000")
    total: Value | None = None
    valid: list[Value] = []
    for add in group:
        v = add.rmw.operands[1]
        if add.offset:
            source = b.binop("sub", lane, const_int(i32, add.offset))
            inside = b.icmp("ult", source, const_int(i32, width))
            v = b.select(inside, c.shuffle(warp.shuffle_index, v, source), neutral)
            valid.append(inside)
        else:
            valid.append(const_int(LT.i1, 1))
        total = v if total is None else b.binop(str(last.operation), total, v)
    assert total is not None
    made = []
    covered = all(any(0 <= n - a.offset < width for a in group) for n in range(width))
    after = BasicBlock("", fn) if not covered else None
    if after is not None:  # offsets of one sign: the lanes at one end own no contribution
        mine = BasicBlock("", fn)
        fn.blocks[fn.blocks.index(lanes):fn.blocks.index(lanes)] = [mine, after]
        some = valid[0]
        for inside in valid[1:]:
            some = b.binop("or", some, inside)
        b.cond_br(some, mine, after)
        b.position_at_end(mine)
    if own is not None:
        rmw, at = own.rmw, own.rmw.operands[0]
    else:
        rmw = group[0].rmw
        at = b.gep(LT.i8, rmw.operands[0], [const_int(LT.i64, -group[0].offset * SIZES[str(t)])])
    if alone is None:
        made.append(_add_like(b, rmw, at, total))
    else:  # every share of the element from a lane of this warp: nobody else adds into it
        inner = alone
        for inside in valid:
            inner = b.binop("and", inner, inside)
        plain, atomic, added = BasicBlock("", fn), BasicBlock("", fn), BasicBlock("", fn)
        current = b.block
        assert current is not None
        here = fn.blocks.index(current) + 1  # (in the order control goes: the blocks after it come later)
        fn.blocks[here:here] = [plain, atomic, added]
        b.cond_br(inner, plain, atomic)
        b.position_at_end(plain)
        size = SIZES[str(t)]
        old = early if early is not None else b.load(t, at, align=size)
        b.store(b.binop(str(rmw.operation), old, total), at, align=size)
        b.br(added)
        b.position_at_end(atomic)
        made.append(_add_like(b, rmw, at, total))
        b.br(added)
        b.position_at_end(added)
    if after is not None:
        b.br(after)
        b.position_at_end(after)
    for add in group:  # the warp's edges: elements of a lane of another warp
        if not add.offset:
            continue
        edge, rest = BasicBlock("", fn), BasicBlock("", fn)
        fn.blocks[fn.blocks.index(lanes):fn.blocks.index(lanes)] = [edge, rest]
        outside = b.icmp("uge", b.binop("add", lane, const_int(i32, add.offset)), const_int(i32, width))
        b.cond_br(outside, edge, rest)
        b.position_at_end(edge)
        made.append(_add_like(b, add.rmw, add.rmw.operands[0], add.rmw.operands[1]))
        b.br(rest)
        b.position_at_end(rest)
    b.br(join)
    return made


def _add_like(b, rmw: Instruction, p: Value, v: Value) -> Instruction:
    """A copy of atomic ``rmw`` (its ordering, scope, alignment, metadata) adding ``v`` at ``p``."""
    copy = rmw.detached_copy("")
    copy.append_operand(p)
    copy.append_operand(v)
    copy.metadata = dict(rmw.metadata)
    b.insert(copy)
    return copy


__all__ = ["neighbour_adds"]
