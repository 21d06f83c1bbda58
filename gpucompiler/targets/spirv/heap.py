"""The AD tape's heap on Vulkan: one storage buffer the runtime hands over, taken from by an atomic add.

A gradient whose loop tape grows as the loop runs calls ``malloc``/``free``
(:mod:`enzyme_plugin.ad.tape`) and keeps the tape's blocks in its loop
states. Vulkan has no device heap and its logical addressing keeps no
pointer in memory, so a shader whose every ``malloc`` and ``free`` is the
tape's, or that keeps pointers in memory (:func:`keeps_pointers`), gets one
more storage buffer, the *heap* (binding :func:`binding`: after the
parameter block), of 32-bit words:

* the header (:data:`HEADER` bytes) is written by the runtime before each
  launch: the next free 16-byte unit (the header's units come first, so
  that offset 0 is ``null``), the capacity in units, the status the shader
  sets (:data:`EXHAUSTED`, :data:`STOPPED`), two words that stay zero and
  two the shader writes and nobody reads;
* ``malloc(n)`` takes ``n`` bytes rounded up to 16 with one atomic add on
  the first word and returns ``null`` when they do not fit, setting
  :data:`EXHAUSTED` and the thread's ``spent`` variable (below); ``free``
  gives nothing back: a launch's tapes live as long as it;
* a pointer into the heap is its byte offset: stored to memory as an
  ``i64``, and a pointer loaded from memory is one (closed world: a pointer
  into anything else stored to memory stays a ``LOGICAL_POINTER`` error);
* a local (``alloca``) whose pointer meets heap pointers (the tape arena
  and inline segment, chosen between with the tape's blocks) is taken from
  the heap at the shader's start;
* ``llvm.memcpy``/``llvm.memset`` become byte loops;
* ``llvm.trap`` (the tape's out-of-heap, overrun and size checks) does not
  end the thread: LLVM's SPIR-V back end miscompiles or refuses a return
  from inside the tape's branches. It sets :data:`STOPPED` and the thread's
  ``spent`` variable and goes on where the check's branch would have: from
  then on every heap read of the thread gives zero and every write goes to
  the discarded words, so that its loops whose counts come from the tape
  end at once and no other thread's blocks are touched. A plain access to
  the header (through ``null``) is redirected alike, so only the atomics
  write the header. Its results are
  garbage: the runtime (:mod:`gpucompiler.runtime.vulkan`) reads the
  status after the launch and raises
  :class:`~gpucompiler.errors.DeviceHeapError` or
  :class:`~gpucompiler.errors.LaunchError`.
"""

from __future__ import annotations

from ...llvm import BasicBlock, Builder, Function, Instruction, Value, const_int, types as LT
from .entry import BUFFER
from .logical import size_of

UNIT = 16
"""Bytes of a heap unit: every block starts on one."""
HEADER = 32
"""Bytes of the header (two units)."""
COUNTER, CAPACITY, STATUS = 0, 4, 8
"""Byte offsets of the header's words."""
ZERO, DISCARD = 4, 6
"""Word indices of the two zero words a spent thread reads and the two it writes."""
EXHAUSTED, STOPPED = 1, 2
"""Status bits: a ``malloc`` did not fit; a thread stopped (a failed check, or the heap)."""
MALLOC, CALLOC, FREE = "gpuc.spirv.malloc", "gpuc.spirv.calloc", "gpuc.spirv.free"
"""The tape's ``malloc``/``free`` renamed before LLVM optimises (so that it fuses nothing into them)."""
TAPE_MD = "gpuc.ad.tape"
_MEMSET = "llvm.memset.p0.i64"


def binding(arrays: int) -> int:
    """The heap's binding in a shader with ``arrays`` array arguments (after the parameter block)."""
    return arrays + 1


def tape_heap(model) -> bool | str:
    """Whether ``model`` allocates (True when every ``malloc``/``free`` call is the AD tape's; a ``calloc``
    is one LLVM made of a tape ``malloc`` and a ``memset`` (higher-order gradients): renamed to
    :data:`MALLOC`, :data:`CALLOC`, :data:`FREE`), or the problem (an allocation that is not the tape's)."""
    calls = [u for name in ("malloc", "free") if name in model.functions
             for u in model.functions[name].users if isinstance(u, Instruction)]
    if not calls:
        return False
    if any(TAPE_MD not in c.metadata for c in calls):
        return "a call of malloc or free that is not the AD tape's"
    for name, new in (("malloc", MALLOC), ("calloc", CALLOC), ("free", FREE)):
        fn = model.functions.get(name)
        if fn is not None:
            model.rename_function(fn, new)
    return True


def keeps_pointers(fn: Function) -> bool:
    """Whether ``fn`` stores a pointer to memory or loads one (the tape's loop states that LLVM did not
    keep in registers): they are then heap offsets, and what they point to is taken from the heap."""
    return any((i.opcode == "store" and i.operands[0].type.is_pointer) or (i.opcode == "load" and i.type.is_pointer)
               for i in fn.instructions())


class Heap:
    """The heap of one shader's ``entry``: :meth:`lower` rewrites everything the module docstring lists."""

    def __init__(self, model, entry: Function, arrays: int):
        self.model, self.entry = model, entry
        top = Builder()
        top.position_before(entry.entry.instructions[0])
        fn = model.functions[BUFFER]
        self.spent = top.alloca(LT.i1, "gpuc.heap.spent")
        top.store(const_int(LT.i1, 0), self.spent)
        self.buffer = top.call(fn, [const_int(LT.i32, binding(arrays))])
        self.base = top.cast("addrspacecast", self.buffer, LT.ptr())

    def lower(self) -> list[str]:
        """Rewrite the shader; the problems found (allocas that cannot move to the heap)."""
        for call in self._calls(FREE):
            call.erase()
        for call in self._calls(MALLOC) + self._calls(CALLOC):
            b = Builder()
            b.position_before(call)
            n = call.args[0]
            if len(call.args) == 2:  # calloc(count, size), zeroed; a factor past 2**31 cannot fit (and the
                count, size = call.args  # product of two below it does not wrap)
                wide = b.binop("or", b.icmp("ugt", count, const_int(LT.i64, 1 << 31)),
                               b.icmp("ugt", size, const_int(LT.i64, 1 << 31)))
                n = b.select(wide, const_int(LT.i64, 1 << 62), b.binop("mul", count, size))
            p, failed = self._take(b, n)
            if len(call.args) == 2:
                memset = self.model.functions.get(_MEMSET) or self.model.add_function(
                    Function(_MEMSET, LT.function(LT.void, [LT.ptr(), LT.i8, LT.i64, LT.i1])))
                b.call(memset, [p, const_int(LT.i8, 0), b.select(failed, const_int(LT.i64, 0), n),
                                const_int(LT.i1, 0)])
            call.replace_all_uses_with(p)
            call.erase()
        self._memory_intrinsics()
        self._pointers_in_memory()
        problems = self._relocate()
        self._traps()
        for name in (MALLOC, CALLOC, FREE):
            if name in self.model.functions:
                self.model.remove_function(self.model.functions[name])
        return problems

    def _calls(self, name: str) -> list[Instruction]:
        fn = self.model.functions.get(name)
        return [] if fn is None else [u for u in fn.users if isinstance(u, Instruction) and u.opcode == "call"]

    def _word(self, b: Builder, offset: int) -> Value:
        return b.gep(LT.i8, self.base, [const_int(LT.i64, offset)])

    def _take(self, b: Builder, n: Value) -> tuple[Value, Value]:
        """``(pointer, failed)``: ``n`` bytes from the heap (``null``, the status and ``spent`` set when they do
        not fit), without branches. The counter is 32 bits of units: a request that cannot fit as the
        counter stands, or from a spent thread, adds nothing, and one that overshot is taken back, so that
        the counter stays near the capacity and does not wrap."""
        i32, i64 = LT.i32, LT.i64
        # read atomically: a spent thread's plain reads of the heap give zero
        cap = b.cast("zext", _atomic(b, "or", self._word(b, CAPACITY), const_int(i32, 0)), i64)
        now = b.cast("zext", _atomic(b, "or", self._word(b, COUNTER), const_int(i32, 0)), i64)
        units = b.binop("lshr", b.binop("add", n, const_int(i64, UNIT - 1)), const_int(i64, 4))
        spent = b.load(LT.i1, self.spent)
        huge = b.binop("or", b.icmp("ugt", n, const_int(i64, 1 << 40)), b.icmp("ugt", units, cap))
        hopeless = b.binop("or", b.binop("or", huge, spent), b.icmp("ugt", b.binop("add", now, units), cap))
        ask = b.select(hopeless, const_int(i32, 0), b.cast("trunc", units, i32))
        old = b.cast("zext", _atomic(b, "add", self._word(b, COUNTER), ask), i64)
        failed = b.binop("or", hopeless, b.icmp("ugt", b.binop("add", old, units), cap))
        _atomic(b, "sub", self._word(b, COUNTER), b.select(failed, ask, const_int(i32, 0)))  # an overshoot back
        _atomic(b, "or", self._word(b, STATUS), b.select(failed, const_int(i32, EXHAUSTED), const_int(i32, 0)))
        b.store(b.binop("or", spent, failed), self.spent)  # (not only through the trap)
        offset = b.select(failed, const_int(i64, 0), b.binop("shl", old, const_int(i64, 4)))
        return b.gep(LT.i8, self.base, [offset]), failed

    def _traps(self) -> None:
        """``call @llvm.trap(); unreachable`` sets :data:`STOPPED` and ``spent`` and branches where the check
        that led there would have gone otherwise (see the module docstring); a trap no check leads to
        returns."""
        trap = self.model.functions.get("llvm.trap")
        for call in self._calls("llvm.trap"):
            block = call.parent
            assert block is not None
            after = block.instructions[block.instructions.index(call) + 1:]
            for inst in reversed(after):
                inst.erase()
            call.erase()
            b = Builder(block)
            _atomic(b, "or", self._word(b, STATUS), const_int(LT.i32, STOPPED))
            b.store(const_int(LT.i1, 1), self.spent)
            preds = block.predecessors
            term = preds[0].terminator if len(preds) == 1 else None
            others = [] if term is None else [o for o in term.successors if o is not block]
            if len(others) != 1:
                b.ret()
                continue
            b.br(others[0])
            for phi in others[0].instructions:
                if phi.opcode != "phi":
                    break
                value = next(v for v, k in phi.incoming if k is preds[0])
                phi.add_incoming(value, block)
        if trap is not None and not trap.users:
            self.model.remove_function(trap)

    def _memory_intrinsics(self) -> None:
        """``llvm.memcpy`` and ``llvm.memset`` as byte loops."""
        for fn in [f for f in self.model.functions.values() if f.name.startswith(("llvm.memcpy.", "llvm.memset."))]:
            for call in self._calls(fn.name):
                dst, src, n = call.args[:3]
                head = call.parent
                assert head is not None
                after = _tail(head, head.instructions.index(call) + 1)
                assert head is not None
                loop = self.entry.append_block("")
                b = Builder()
                b.position_before(call)
                b.cond_br(b.icmp("eq", n, const_int(n.type, 0)), after, loop)
                call.erase()
                b.position_at_end(loop)
                k = b.phi(n.type)
                value = (src if fn.name.startswith("llvm.memset.")
                         else b.load(LT.i8, b.gep(LT.i8, src, [k]), align=1))
                b.store(value, b.gep(LT.i8, dst, [k]), align=1)
                k1 = b.binop("add", k, const_int(n.type, 1))
                k.add_incoming(const_int(n.type, 0), head)
                k.add_incoming(k1, loop)
                b.cond_br(b.icmp("ult", k1, n), loop, after)
            if not fn.users:
                self.model.remove_function(fn)

    def _pointers_in_memory(self) -> None:
        """A pointer stored to memory as its ``i64`` (``ptrtoint``: the heap's offset, an error for any
        other object); a pointer loaded from memory, or made from an integer, as a heap offset."""
        for inst in list(self.entry.instructions()):
            op = inst.opcode
            b = Builder()
            b.position_before(inst)
            if op == "store" and inst.operands[0].type.is_pointer:
                v = inst.operands[0]
                word = (const_int(LT.i64, 0) if getattr(v, "text", None) == "null"
                        else b.cast("ptrtoint", v, LT.i64))
                b.store(word, inst.operands[1], align=inst.alignment)
                inst.erase()
            elif op == "load" and inst.type.is_pointer:
                offset = b.load(LT.i64, inst.operands[0], align=inst.alignment)
                inst.replace_all_uses_with(b.gep(LT.i8, self.base, [offset]))
                inst.erase()
            elif op == "inttoptr":
                inst.replace_all_uses_with(b.gep(LT.i8, self.base, [inst.operands[0]]))
                inst.erase()

    def _relocate(self) -> list[str]:
        """Take from the heap every ``alloca`` whose pointer meets a heap pointer (a phi, a select or a
        compare with one) or becomes an integer; a thread whose heap is spent then stops at once."""
        moved: set[Instruction] = set()
        while True:
            more = _meeting(self.entry, self.base, moved)
            if not more:
                break
            moved |= more
        if not moved:
            return []
        problems = [f"a local variable whose address is kept with the AD tape's, allocated inside a loop: "
                    f"%{a.name}" for a in moved if a.parent is not self.entry.entry]
        if problems:
            return problems
        block = self.entry.entry
        b = Builder()
        b.position_after(self.base)
        taken = []
        for a in sorted(moved, key=block.instructions.index):
            t = a.allocated_type
            assert t is not None
            p, _ = self._take(b, const_int(LT.i64, size_of(t)))
            taken.append((a, p))
        for a, p in taken:
            a.replace_all_uses_with(p)
            a.erase()
        return []


HEAP = "heap"


def _meeting(fn: Function, base: Value, moved: set) -> set[Instruction]:
    """The allocas of ``fn`` a pointer derived from which meets a heap pointer (derived from ``base`` or
    from an alloca in ``moved``: in one phi or select, or compared with one) or becomes an integer."""
    origins: dict[Value, set] = {}
    work: list[Value] = []

    def reach(v: Value, more: set) -> None:
        have = origins.setdefault(v, set())
        if not more <= have:
            have |= more
            work.append(v)

    reach(base, {HEAP})
    for inst in fn.instructions():
        if inst.opcode == "alloca":
            reach(inst, {HEAP} if inst in moved else {inst})
    while work:
        v = work.pop()
        for use in v.uses:
            u = use.user
            if isinstance(u, Instruction) and u.type.is_pointer and (
                    (u.opcode == "getelementptr" and use.index == 0) or u.opcode in ("bitcast", "addrspacecast",
                                                                                     "freeze", "phi")
                    or (u.opcode == "select" and use.index in (1, 2))):
                reach(u, origins[v])
    found: set[Instruction] = set()
    for v, os in origins.items():
        mine = {o for o in os if o != HEAP}
        if HEAP in os or any(isinstance(u, Instruction) and u.opcode == "ptrtoint" for u in v.users):
            found |= mine
        for u in v.users:
            if (isinstance(u, Instruction) and u.opcode == "icmp"
                    and any(HEAP in origins.get(o, ()) for o in u.operands[:2])):
                found |= mine
    return found - moved


def _tail(block: BasicBlock, k: int) -> BasicBlock:
    """Move ``block``'s instructions from the ``k``-th on into a new block after it; the phis of its
    successors then come from the new block."""
    fn = block.parent
    assert fn is not None
    new = BasicBlock("", fn)
    blocks = fn.blocks
    blocks.insert(blocks.index(block) + 1, new)
    for inst in block.instructions[k:]:
        new.instructions.append(inst)
        inst.parent = new
    del block.instructions[k:]
    for succ in new.successors:
        _retarget_phis(succ, block, new)
    return new


def _retarget_phis(block: BasicBlock, old: BasicBlock, new: BasicBlock) -> None:
    """The phis of ``block`` take what came from ``old`` from ``new``."""
    for phi in block.instructions:
        if phi.opcode != "phi":
            break
        for i, op in enumerate(phi.operands):
            if op is old:
                phi.set_operand(i, new)


def _atomic(b: Builder, op: str, pointer: Value, value: Value) -> Instruction:
    """``atomicrmw op pointer, value`` (the SPIR-V target rebuilds it at device scope)."""
    parts = [f"atomicrmw {op} ", pointer.type, " ", 0, ", ", value.type, " ", 1, " monotonic, align 4"]
    rmw = Instruction("atomicrmw", value.type, parts, (), "")
    rmw.operation = op
    rmw.alignment = 4
    rmw.append_operand(pointer)
    rmw.append_operand(value)
    return b.insert(rmw)
