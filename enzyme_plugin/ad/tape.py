"""Loop cache arrays and loop-invariant values: the parts of the tape that are
not a stack.

Mixed into :class:`~.reverse.Reverse`. For each loop in canonical form
(:mod:`.loops`) the forward sweep numbers iterations ``k = 0, 1, ...``; the
blocks of the loop store what their reverses need at ``base + k * frame +
offset`` in one array per loop execution: allocated in the preheader when
the trip count is known there (and checked at the exit), grown from the
header otherwise: starting in an inline ``alloca`` segment of
:data:`INLINE_SEGMENT` bytes when the loop runs once per call and the
reverse runs in the same call, then by ``malloc`` of twice the size, a copy
and ``free`` (a device has no ``realloc``, which cannot move an ``alloca``
either); by ``realloc`` from the first frame on the host where there is no
segment or the derivative is differentiated again. Each exit block's frame records
``k`` and ``base``; the reverse sweep counts ``k`` down, leaves the loop at
``k == 0`` and frees the array. Affine induction variables are rebuilt from
``k`` instead of being stored.

A value defined outside a loop and needed by the reverse of a block inside
it is recorded once per loop execution, in the frames of the loop's exit
blocks, and kept in a slot of the reverse function while the loop's reverse
runs.
"""

from __future__ import annotations

from typing import Any

from gpucompiler.llvm import Builder, Instruction, Value, const_int, constant, types as T

from .calls import classify
from .emit import declare, sizeof, zero
from .gpu import add_to_shadow
from .host import ReverseState
from .recompute import MAX_DEPTH, PURE
from .loops import Loop, body_runs_every_iteration, emit_trip_count, find_loops, plan_nests, static_trip_count

#: a loop array's forward state: base, capacity in frames (growth), inline segment (or null)
_STATE = T.struct([T.ptr(), T.i64, T.ptr()])
#: the tape arena's state: next free byte, end, start
#: opcodes (besides loads and inactive calls) a search loop may hold: integer and float arithmetic, casts,
#: comparisons, selects, address arithmetic and branches
_INERT = frozenset("phi br switch select icmp fcmp getelementptr add sub mul sdiv udiv srem urem shl lshr ashr "
                   "and or xor trunc zext sext fadd fsub fmul fdiv frem fneg fpext fptrunc sitofp uitofp "
                   "fptosi fptoui ptrtoint inttoptr bitcast addrspacecast freeze extractvalue".split())
_ARENA = T.struct([T.ptr(), T.ptr(), T.ptr()])
#: active instructions a loop that skips iterations (:meth:`LoopTape._skippable`) may hold besides its chains,
#: when their adjoints come only from a chain select's other arm
_ARM_OPS = frozenset(("load", "fneg", "fpext", "fptrunc", "fadd", "fsub"))
_NULL = constant(T.ptr(), "null")
#: largest nest array (bytes per call) kept in an ``alloca`` when every trip count is a constant
MAX_STACK_TAPE = 1024
#: bytes of the inline segment (an ``alloca``) a growing loop array starts in before it needs the heap
INLINE_SEGMENT = 256


def _invariant(v, lp, depth: int = 0) -> bool:
    """Whether ``v`` has one value throughout loop ``lp``: defined outside it, or pure arithmetic of such
    values (up to MAX_DEPTH deep)."""
    if not isinstance(v, Instruction) or v.parent not in lp.blocks:
        return True
    if v.opcode not in PURE or depth >= MAX_DEPTH:
        return False
    return all(_invariant(o, lp, depth + 1) for o in v.operands)


def _exact_trip(lp) -> bool:
    """Whether loop ``lp`` runs exactly its computed trip count (it has no exit besides the counted test)."""
    return lp.trip is not None and not lp.bounded


def _first_non_phi(block):
    return next(i for i in block.instructions if i.opcode != "phi")


class LoopState:
    """One counted loop's tape: made by the forward sweep, read and updated by the reverse sweep (a plain
    class, as :class:`Chain`: an ``attrs`` class took ~0.3 ms to make at a process's first compile)."""

    __slots__ = ("k", "state", "trip", "kslot", "bslot", "exit_base", "base_iter", "flush", "free")

    def __init__(self, k: Value, state: Value, trip: Value | None, kslot: Value, bslot: Value):
        self.k = k
        """the forward sweep's iteration counter (a phi)"""
        self.state = state
        """the ``{ptr base, i64 capacity, ptr segment}`` ``alloca`` of its growing frames"""
        self.trip = trip
        """its trip count where known before it runs (frames sized once), else None (grown)"""
        self.kslot = kslot
        """the reverse sweep's counter slot"""
        self.bslot = bslot
        """the reverse sweep's slot of the frames' base"""
        self.exit_base: dict[Any, Value] = {}
        """exit block -> the load of the frames' base there"""
        self.base_iter: Value | None = None
        """the current iteration's frame base (forward)"""
        self.flush: tuple[Any, Any] | None = None
        """the reverse's (flush block, continuation) where deferred adjoints are added"""
        self.free: Instruction | None = None
        """the call freeing its frames in the reverse sweep (None: its nest's root frees them)"""


class Chain:
    """A select that carries one value through the iterations of a counted loop and has no other active use
    there (``m = max(m, x[i])``: ``m = select(x[i] > m, x[i], m)``). An adjoint enters such a chain only where
    the loop ends; going back, the first iteration whose select took the other arm takes all of it, and
    nothing flows on. So the reverse of the select needs only that iteration, which the forward sweep keeps
    (one integer per execution of the loop) instead of each iteration's condition or the values it
    compared."""

    __slots__ = ("loop", "takes_true", "last", "rslot", "exit_last")

    def __init__(self, loop: Loop, takes_true: bool, last: Value, rslot: Value):
        self.loop = loop
        self.takes_true = takes_true
        """whether the other arm (not the carried value) is the select's true operand"""
        self.last = last
        """the forward sweep's slot: the last iteration that took the other arm (-1: none)"""
        self.rslot = rslot
        """the reverse sweep's slot of that iteration"""
        self.exit_last: dict[Any, Value] = {}
        """exit block -> the load of ``last`` there"""


class LoopTape(ReverseState):
    """Forward and reverse bookkeeping of counted loops (see the module docstring)."""

    def _setup_loops(self):
        self.loops, self.innermost = find_loops(self.cfg)
        #: loops the reverse sweep leaves out (:meth:`_searches`), their blocks
        self.searches = self._searches()
        self.search_blocks = set().union(*(lp.blocks for lp in self.searches)) if self.searches else set()
        plan_nests(self.cfg, self.loops)
        #: the tape arena's state ``{ptr top, ptr end, ptr start}`` (created on first use; see :meth:`_arena`)
        self.arena = None
        #: loop -> [(accumulator slot, shadow pointer slot, type)] of the adjoints :meth:`defer_adjoint` holds
        self.deferred: dict = {}
        #: counted loop -> its tape's state (:class:`LoopTape`)
        self.lstate: dict[Loop, LoopState] = {}
        #: select -> its :class:`Chain`
        self.chains: dict[Instruction, Chain] = {}
        #: loops whose reverse visits only the iterations their chains need (:meth:`_skippable`)
        self.skipping: set = set()
        for lp in self.loops:
            if lp.counted:
                self._setup_forward(lp)
                self._setup_chains(lp)

    def _searches(self) -> list:
        """Loops whose reverse does nothing (a search: no store, no call but inactive math, no active
        value; in canonical form): neither counted nor taped. The reverse
        sweep goes from an exit straight to the preheader (:meth:`past_searches`); a value of the loop
        used after it is read from the tape once per execution of the loop, in the exit's frame."""
        found = []
        for lp in self.loops:  # outermost first: a loop inside a search is left out with it
            if any(lp.blocks <= o.blocks for o in found):
                lp.counted, lp.trip = False, None
                continue
            if not lp.counted:  # (an enclosing loop an exit leaves is not counted: see loops._classify)
                continue
            if all(self._inert(inst) for block in lp.blocks for inst in block.instructions):
                lp.counted, lp.trip = False, None
                found.append(lp)
        return found

    def _inert(self, inst) -> bool:
        """Whether the reverse of ``inst`` does nothing and reading it again is not needed."""
        if inst in self.act.active:
            return False
        op = inst.opcode
        if op == "load":
            return not inst.is_volatile
        if op == "call":
            return classify(inst) in ("math", "inactive")
        return op in _INERT

    def past_searches(self, pred):
        """Where the reverse edge from the current block into ``pred`` leads: ``pred``, or the preheader of
        the outermost search loop (:meth:`_searches`) holding ``pred`` but not the current block."""
        for lp in self.searches:
            if pred in lp.blocks and self.cur not in lp.blocks:
                return lp.preheader
        return pred

    def _fwd_alloca(self, t, init):
        entry = self.aug.blocks[0]
        b = Builder()
        b.position_before(entry.instructions[0])
        a = b.alloca(t)
        b.store(init, a)
        return a

    def _fwd_alloca_bytes(self, size):
        b = Builder()
        b.position_before(self.aug.blocks[0].instructions[0])
        return b.alloca(T.array(size, T.i8), align=8)

    def _rev_alloca(self, t, init):
        b = Builder()
        b.position_before(self.rev_entry.instructions[0])
        a = b.alloca(t)
        b.store(init, a)
        return a

    def _setup_forward(self, lp):
        sw, b = self.sweep, Builder()
        head, pre, latch = sw.vmap[lp.header], sw.vmap[lp.preheader], sw.vmap[lp.latch]
        b.position_before(head.instructions[0])
        k = b.phi(T.i64)
        b.position_before(latch.terminator)
        k1 = b.add(k, const_int(T.i64, 1))
        k.add_incoming(const_int(T.i64, 0), pre)
        k.add_incoming(k1, latch)
        state = self._fwd_alloca(_STATE, constant(_STATE, "zeroinitializer"))
        b.position_before(pre.terminator)
        trip = emit_trip_count(b, lp.trip, sw.val) if lp.trip is not None else None
        b.store(_NULL, state)
        b.store(const_int(T.i64, 0), b.gep(T.i8, state, [const_int(T.i64, 8)]))
        b.store(_NULL, b.gep(T.i8, state, [const_int(T.i64, 16)]))
        st = LoopState(k, state, trip, self._rev_alloca(T.i64, const_int(T.i64, 0)), self._rev_alloca(T.ptr(), _NULL))
        for e in lp.exits:
            ee = sw.vmap[e]
            b.position_before(_first_non_phi(ee))
            st.exit_base[e] = b.load(T.ptr(), state)
            if trip is not None and e in self.cfg.reachable:  # k < trip; exactly trip - 1 where _last_k needs it
                one = const_int(T.i64, 1)
                check = [b.sub(b.sub(trip, one), k), one] if _exact_trip(lp) else [k, trip]
                b.call(self.engine.helper("trip_check"), check)
        self.lstate[lp] = st

    def _setup_chains(self, lp):
        """Find the :class:`Chain` selects of counted loop ``lp`` and keep, in the forward sweep, the last
        iteration at which each took its other arm."""
        sw, st, b = self.sweep, self.lstate[lp], Builder()
        for phi in lp.header.instructions:
            if phi.opcode != "phi":
                break
            found = self._chain_select(lp, phi)
            if found is None:
                continue
            sel, takes_true = found
            last = self._fwd_alloca(T.i64, const_int(T.i64, -1))
            b.position_before(sw.vmap[lp.preheader].terminator)
            b.store(const_int(T.i64, -1), last)
            b.position_after(sw.vmap[sel])
            took = sw.val(sel.operands[0])
            kept = b.load(T.i64, last)
            b.store(b.select(took, st.k, kept) if takes_true else b.select(took, kept, st.k), last)
            ch = self.chains[sel] = Chain(lp, takes_true, last, self._rev_alloca(T.i64, const_int(T.i64, -1)))
            for e in lp.exits:
                b.position_before(_first_non_phi(sw.vmap[e]))
                ch.exit_last[e] = b.load(T.i64, last)
        if self._skippable(lp):
            self.skipping.add(lp)

    def _skippable(self, lp) -> bool:
        """Whether the reverse of an iteration of ``lp`` does something only at a :class:`Chain`'s last
        iteration that took the other arm: besides its chains, the loop (no loop inside) holds only
        what a search may hold (:meth:`_inert`) and values whose adjoints come only from the other arm
        of a chain select (the element loaded, negated, converted, shifted by a constant). Going back,
        an iteration between two such ones passes the chain's adjoint on unchanged, and one before
        all of them passes zero: the reverse visits the last iteration, those iterations and the
        first (:meth:`_next_k`)."""
        sels = {ch_sel for ch_sel, ch in self.chains.items() if ch.loop is lp}
        if not sels or any(self.innermost.get(b) is not lp for b in lp.blocks):
            return False
        carried = sels | {u for sel in sels for u in sel.users if isinstance(u, Instruction) and u.opcode == "phi"
                          and u.parent is lp.header}
        for inst in (i for block in lp.blocks for i in block.instructions):
            if inst in carried or self._inert(inst):
                continue
            if inst not in self.act.active or inst.opcode not in _ARM_OPS:
                return False
            for u in inst.users:
                if not isinstance(u, Instruction) or u.parent not in lp.blocks:
                    return False
                if u in sels:
                    if u.operands[1 if self.chains[u].takes_true else 2] is not inst:
                        return False  # only the other arm
                elif u in self.act.active and u.opcode not in _ARM_OPS:
                    return False
        return True

    def _next_k(self, lp, k):
        """The iteration the reverse of skipping loop ``lp`` visits after ``k`` (> 0): the latest last
        iteration of its chains before ``k``, else the first."""
        best = const_int(T.i64, 0)
        for ch in (ch for ch in self.chains.values() if ch.loop is lp):
            last = self.b.load(T.i64, ch.rslot)
            later = self.b.and_(self.b.icmp("slt", last, k), self.b.icmp("sgt", last, best))
            best = self.b.select(later, last, best)
        return best

    def _chain_select(self, lp, phi):
        """``(select, takes_true)`` when header phi ``phi`` of ``lp`` is carried by a :class:`Chain` select."""
        incoming = dict((id(blk), v) for v, blk in phi.incoming)
        sel = incoming.get(id(lp.latch))
        if len(phi.incoming) != 2 or not isinstance(sel, Instruction) or sel.opcode != "select":
            return None
        if sel not in self.act.active or self.innermost.get(sel.parent) is not lp:
            return None
        cond, a, c = sel.operands
        if (a is phi) == (c is phi) or not isinstance(cond.type, T.IntType):  # (a vector of conditions)
            return None
        for v, carried_to in ((phi, sel), (sel, phi)):  # no other active use inside the loop
            for u in v.users:
                if u is not carried_to and isinstance(u, Instruction) and u.parent in lp.blocks and \
                        u in self.act.active:
                    return None
        return sel, c is phi

    def chain_condition(self, sel):
        """The condition the reverse of :class:`Chain` select ``sel`` uses (None: ``sel`` is none): at the
        iteration that took the other arm last, that arm; at every other, the carried value, whose
        adjoint is then either all of it (later iterations) or zero (earlier ones)."""
        ch = self.chains.get(sel)
        if ch is None:
            return None
        key = ("chain", self.cur, sel)
        hit = self.memo.get(key)
        if hit is None:
            k = self._slot_load(T.i64, self.lstate[ch.loop].kslot, ("k", self.cur, ch.loop))
            last = self._slot_load(T.i64, ch.rslot, ("last", self.cur, sel))
            hit = self.memo[key] = self.b.icmp("eq" if ch.takes_true else "ne", k, last)
        return hit

    # -- reverse ---------------------------------------------------------------
    def _counted(self, block):
        lp = self.innermost.get(block) if block is not None else None
        return lp if lp is not None and lp.counted else None

    def _enter_loop(self, pred):
        """On the reverse edge from exit block ``self.cur`` into ``pred``: load the loop's k and base."""
        lp = self._counted(pred)
        if lp is None or self.cur in lp.blocks:
            return
        st = self.lstate[lp]
        k = self._last_k(lp)
        base = self._from_forward(self.cur, st.exit_base[self.cur])
        self.b.store(k, st.kslot)
        self.b.store(base, st.bslot)
        for ch in self.chains.values():
            if ch.loop is lp:
                self.b.store(self._from_forward(self.cur, ch.exit_last[self.cur]), ch.rslot)

    def _last_k(self, lp):
        """``k`` of the loop's last iteration: ``trip - 1`` rebuilt in the reverse sweep when the loop leaves
        only through the test its trip count counts (the forward sweep checks that at the exit), else read
        from the tape (once per execution of the loop: every outer iteration for an inner loop)."""
        if _exact_trip(lp):
            saved = dict(self.memo)
            try:
                trip = emit_trip_count(self.b, lp.trip, self.fwd)
            finally:  # what it rebuilt lies in this edge's block, which the other edges do not pass
                self.memo = saved
            if trip is not None:
                return self.b.sub(trip, const_int(T.i64, 1))
        return self._from_forward(lp.header, self.lstate[lp].k)

    def _reverse_header(self, block, ds):
        """The reverse of a counted loop's header: back to the latch while ``k > 0``, else leave."""
        lp = self._counted(block)
        if lp is None or lp.header is not block:
            return False
        st = self.lstate[lp]
        k = self.b.load(T.i64, st.kslot)
        leave, again = self.rev.append_block(""), self.rev.append_block("")
        self.b.cond_br(self.b.icmp("eq", k, const_int(T.i64, 0)), leave, again)
        self.b.position_at_end(leave)
        flush, cont = self.rev.append_block(""), self.rev.append_block("")
        self.b.br(flush)  # filled by _flush_deferred
        st.flush = (flush, cont)
        self.b.position_at_end(cont)
        if lp.host is None:  # a hosted loop's frames are freed with its nest's root
            st.free = self.b.call(self.engine.helper("tape_free"), [self.b.load(T.ptr(), st.bslot)])
        self._edge(ds, lp.preheader)
        self.b.position_at_end(again)
        self.b.store(self._next_k(lp, k) if lp in self.skipping else self.b.sub(k, const_int(T.i64, 1)), st.kslot)
        self._edge(ds, lp.latch)
        return True

    def defer_adjoint(self, inst, sp, d) -> bool:
        """Add ``d``, the adjoint of load ``inst`` through shadow pointer ``sp``, into a slot while the
        reverse of the innermost counted loop around it runs, when the load's address is defined outside
        that loop and the loop writes no memory (its reverse then only adds adjoints, which commute):
        one atomic add where the loop's reverse ends (:meth:`_flush_deferred`), not one per iteration."""
        lp = self._counted(inst.parent)
        p = inst.pointer_operand
        if lp is None or lp.header not in self.cfg.reachable or not _invariant(p, lp):
            return False  # (a reachable counted loop's header is reversed by _reverse_header: it flushes)
        if not all(self._writes_nothing(i) for block in lp.blocks for i in block.instructions):
            return False
        key = ("defer", lp, p, self.sweep.lane)
        slots = self.memo.get(key)
        if slots is None:
            null = constant(sp.type, "null")
            slots = self.memo[key] = (self._rev_alloca(d.type, zero(d.type)), self._rev_alloca(sp.type, null), d.type,
                                      sp.type)
            self.deferred.setdefault(lp, []).append(slots)
        acc, at, t, _ = slots
        self.b.store(self.b.fadd(self.b.load(t, acc), d), acc)
        self.b.store(sp, at)
        return True

    @staticmethod
    def _writes_nothing(inst) -> bool:
        op = inst.opcode
        if op in ("store", "atomicrmw", "cmpxchg", "fence"):
            return False
        return op != "call" or classify(inst) in ("math", "inactive")

    def _flush_deferred(self):
        """At the end of each counted loop's reverse: the adjoints :meth:`defer_adjoint` held, each added
        with one atomic into the shadow it was read through (if the loop's reverse read any), then reset."""
        for lp, st in self.lstate.items():
            if st.flush is None:
                assert lp not in self.deferred, "a loop holding adjoints has an end"
                continue
            block, cont = st.flush
            b = self.b
            b.position_at_end(block)
            for acc, at, t, pt in self.deferred.get(lp, ()):
                sp, v = b.load(pt, at), b.load(t, acc)
                add, done = self.rev.append_block(""), self.rev.append_block("")
                b.cond_br(b.icmp("ne", sp, constant(sp.type, "null")), add, done)
                b.position_at_end(add)
                add_to_shadow(self, sp, v)  # (warp-aggregated where the reads were: one add per warp)
                b.store(zero(t), acc)
                b.store(constant(sp.type, "null"), at)
                b.br(done)
                b.position_at_end(done)
            b.br(cont)

    def _in_pop(self, inst):
        pop = self.pop_blocks[self.cur]
        pop.instructions.insert(len(pop.instructions) - 1, inst)
        inst.parent = pop
        return inst

    def _slot_load(self, t, slot, key):
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = self._in_pop(
                Instruction("load", t, ["load ", t, ", ", T.ptr(), " ", 0, ", align 8"], (slot,)))
        return hit

    def _tape_in_memory(self, lp) -> bool:
        """Whether the frames of counted loop ``lp`` live in memory (the arena, the heap) rather than in an
        ``alloca`` of constant size: they do unless every trip count of its nest is a constant and the nest
        is not inside another loop (:meth:`_allocate_nest`, whose size limit is not checked here) and is not
        capped (:meth:`_cap_fits` decides only once the frames are known)."""
        root = lp.root
        if root.parent is not None or not self.combined or root.capped:
            return True
        return any(o.trip is None or static_trip_count(o.trip) is None for o in self.loops if o.root is root)

    def _iv_here(self, v):
        """``(loop, iv)`` when ``v`` is an affine induction variable of a counted loop around the current
        reverse block (:meth:`_iv` rebuilds it from the reverse counter), else None."""
        if v.opcode != "phi":
            return None
        lp = self._counted(v.parent)
        if lp is None or lp.header is not v.parent or self.cur not in lp.blocks:
            return None
        iv = next((iv for iv in lp.ivs if iv[0] is v), None)
        return None if iv is None else (lp, iv)

    def _iv(self, v):
        """An affine induction variable of a counted loop, rebuilt from the reverse counter."""
        found = self._iv_here(v)
        if found is None:
            return None
        lp, iv = found
        key = ("iv", self.cur, v)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        _, start, step, _ = iv
        start = self.fwd(start)
        k = self._slot_load(T.i64, self.lstate[lp].kslot, ("k", self.cur, lp))
        if v.type.bits < 64:
            k = self.b.trunc(k, v.type)
        out = self.b.add(start, self.b.mul(k, const_int(v.type, step)))
        self.memo[key] = out
        return out

    def _hoist_loop(self, block):
        """The outermost loop around the current reverse block that does not contain ``block``."""
        if block is None or not self.innermost:
            return None
        lp, found = self.innermost.get(self.cur), None
        while lp is not None:
            if block not in lp.blocks and all(p in lp.blocks for e in lp.exits for p in self.cfg.preds(e)):
                found = lp
            lp = lp.parent
        return found

    def _hoisted(self, lp, block, fv):
        """A slot holding ``fv`` (defined outside ``lp``) while ``lp``'s reverse runs, set at its exits."""
        key = ("hoist", lp, fv)
        slot = self.memo.get(key)
        if slot is not None:
            return slot
        slot = self.memo[key] = self._rev_alloca(fv.type, constant(fv.type, "poison"))
        saved = self.cur
        try:
            for e in lp.exits:
                if e not in self.cfg.reachable:
                    continue
                self.cur = e
                v = self._from_forward(block, fv)
                self._in_pop(Instruction("store", T.void, ["store ", fv.type, " ", 0, ", ", T.ptr(), " ", 1,
                                                          ", align 8"], (v, slot)))
        finally:
            self.cur = saved
        return slot

    # -- materialization -------------------------------------------------------
    def _loop_frames(self):
        """Frame size per counted loop and offset per block; allocations and growth emitted here."""
        self._drop_unused_bases()
        frames, offsets = {}, {}
        for block in self.requests:
            lp = self._counted(block)
            if lp is None:
                continue
            offsets[block] = frames.get(lp, 0)
            frames[lp] = offsets[block] + self.request_bytes[block]
        b = Builder()
        for lp, st in self.lstate.items():
            if lp.host is not None:
                continue
            if st.trip is not None and lp.capped and not self._cap_fits(lp, frames.get(lp, 0)):
                st.trip = None  # (the exits' checks of k against the cap stay true)
            if st.trip is None:
                if frames.get(lp, 0):
                    arena = self._arena()
                    b.position_before(_first_non_phi(self.sweep.vmap[lp.header]))
                    if arena is None:
                        inline = self._inline_segment(lp, st, frames[lp])
                        grow = "loop_grow_device" if inline and not self.engine.options.device_tape else "loop_grow"
                        st.base_iter = b.call(self.engine.helper(grow), [st.state, st.k, const_int(T.i64, frames[lp])])
                    else:
                        st.base_iter = b.call(self._helper("loop_grow_arena"),
                                                 [st.state, st.k, const_int(T.i64, frames[lp]), arena])
                continue
            nest = [o for o in self.loops if o.root is lp]
            if any(frames.get(o, 0) for o in nest):
                self._allocate_nest(nest, frames)
        for lp, st in self.lstate.items():
            if st.trip is not None and frames.get(lp, 0):
                b.position_before(_first_non_phi(self.sweep.vmap[lp.header]))
                st.base_iter = b.load(T.ptr(), st.state)
            free = st.free if self.arena is not None else None
            if free is not None:  # a block of the arena is not the heap's
                b.position_before(free)
                st.free = b.call(self._helper("arena_free"), [self.arena, free.args[0]])
                free.erase()
        return frames, offsets

    def _cap_fits(self, lp, frame) -> bool:
        """Whether capped loop ``lp`` (``while r > tol and k < 60``: :attr:`.loops.Loop.capped`) gets its
        array once before it, sized by the cap: when the loop is inside no other one (which would take a
        block of the cap's size at each of its iterations) and the array is small: at most
        :data:`MAX_STACK_TAPE` bytes, or the tape arena's size on a device. Otherwise it grows."""
        options = self.engine.options
        limit = max(MAX_STACK_TAPE, options.tape_arena if options.device_tape and self.combined else 0)
        count = static_trip_count(lp.trip)
        return lp.parent is None and count is not None and count * frame <= limit

    def _drop_unused_bases(self):
        """A loop none of whose blocks stores anything has no array (its base stays null): its exits do not
        record the base (a loop inside another one would record it on every iteration of the outer)."""
        null = constant(T.ptr(), "null")
        for lp in reversed(self.loops):  # innermost first: dropping an inner base may empty the outer loop
            st = self.lstate.get(lp)
            if st is None or any(self.requests.get(b) for b in lp.blocks):
                continue
            for e, base in st.exit_base.items():
                reqs = self.requests.get(e)
                kept = [r for r in reqs or () if r[0] is not base]
                if reqs is None or len(kept) == len(reqs):
                    continue
                for fv, ld, _ in reqs:
                    if fv is base:
                        ld.replace_all_uses_with(null)
                        ld.erase()
                off = 0  # the remaining values packed again
                for k, (fv, ld, _) in enumerate(kept):
                    kept[k] = (fv, ld, off)
                    off += (sizeof(fv.type) + 7) // 8 * 8
                self.requests[e], self.request_bytes[e] = kept, off
                if not kept:
                    del self.requests[e]

    def _arena(self):
        """The tape arena (combined mode on a device, ``EngineOptions.tape_arena`` bytes): an ``alloca`` of
        the derivative, bumped by ``{ptr top, ptr end, ptr start}``, from which the loop cache arrays of
        the call are carved before any reaches the heap; None when there is none."""
        size = self.engine.options.tape_arena
        if self.arena is None and self.engine.options.device_tape and self.combined and size > 0:
            b = Builder()
            b.position_before(self.aug.blocks[0].instructions[0])
            mem = b.alloca(T.array(size, T.i8), align=16)
            state = b.alloca(_ARENA)
            b.store(mem, state)
            b.store(b.gep(T.i8, mem, [const_int(T.i64, size)]), b.gep(T.i8, state, [const_int(T.i64, 8)]))
            b.store(mem, b.gep(T.i8, state, [const_int(T.i64, 16)]))
            self.arena = state
        return self.arena

    def _inline_segment(self, lp, st, frame) -> bool:
        """Start a growing array in an ``alloca`` of :data:`INLINE_SEGMENT` bytes when the reverse
        runs in the same call (combined mode) and the loop runs once per call (no enclosing loop):
        trip counts up to ``INLINE_SEGMENT // frame`` then never touch the heap. Whether it does: the
        array then grows by ``malloc``, a copy and ``free`` (``loop_grow_device``; ``realloc`` cannot move
        an ``alloca``), on the host too unless the derivative is differentiated again (its tape stays with
        ``realloc``, whose rule the next level has: ``EngineOptions.differentiated_again``)."""
        options = self.engine.options
        if (not options.device_tape and options.differentiated_again) or not self.combined or lp.parent is not None \
                or frame > INLINE_SEGMENT:
            return False
        mem = self._fwd_alloca_bytes(INLINE_SEGMENT)
        b = Builder()
        b.position_before(self.sweep.vmap[lp.preheader].terminator)
        b.store(mem, st.state)
        b.store(const_int(T.i64, INLINE_SEGMENT // frame), b.gep(T.i8, st.state, [const_int(T.i64, 8)]))
        b.store(mem, b.gep(T.i8, st.state, [const_int(T.i64, 16)]))
        free, st.free = st.free, None
        if free is not None:  # the reverse frees the array only if it left the inline segment
            b.position_before(free)
            b.call(self.engine.helper("loop_free"), [free.args[0], mem])
            free.erase()
        return True

    def _allocate_nest(self, nest, frames):
        """One array for the loops of ``nest`` (its root first): a region per loop with frames,
        ``frame * product of the trip counts`` from the root down, allocated before the root
        (an ``alloca`` when every trip count is a constant and the array is small, else ``malloc``);
        each loop's preheader stores the start of its rows in the loop's state."""
        root, sw = nest[0], self.sweep
        b = Builder()
        b.position_before(sw.vmap[root.preheader].terminator)
        static = _nest_layout(nest, frames, _StaticSizes())
        st = self.lstate[root]
        if static is not None and static[0] <= MAX_STACK_TAPE and self.combined and root.parent is None:
            total, regions = static
            mem = self._fwd_alloca_bytes(max(total, 8))
            regions = {lp: const_int(T.i64, off) for lp, off in regions.items()}
            free, st.free = st.free, None
            if free is not None:
                free.erase()
        else:
            emitted = _nest_layout(nest, frames, _EmittedSizes(self, b))
            assert emitted is not None, "emitted sizes are never unknown"
            total, regions = emitted
            arena = self._arena()
            mem = (b.call(self._helper("tape_alloc"), [total]) if arena is None
                   else b.call(self._helper("arena_alloc"), [arena, total]))
        b.store(mem, st.state)
        rows: dict = {root: None}
        for lp in nest:
            if lp is root:
                continue
            pst, lst = self.lstate[lp.host], self.lstate[lp]
            b.position_before(sw.vmap[lp.preheader].terminator)
            at = pst.k if rows[lp.host] is None else b.add(rows[lp.host], pst.k)
            assert lst.trip is not None, "a hosted loop's trip count is known before its host runs"
            rows[lp] = b.mul(at, lst.trip)
            if lp in regions:
                off = b.add(regions[lp], b.mul(rows[lp], const_int(T.i64, frames[lp])))
                b.store(b.gep(T.i8, mem, [off]), lst.state)

    def _helper(self, key):
        """``engine.helper(key)`` with the intrinsics its body calls declared."""
        m = self.engine.module
        declare(m, "llvm.trap", T.function(T.void, []))
        if key.startswith("arena") or key == "loop_grow_arena":  # they call these helpers
            declare(m, "llvm.memcpy.p0.p0.i64", T.function(T.void, [T.ptr(), T.ptr(), T.i64, T.i1]))
            for inner in ("tape_alloc", "tape_free", "arena_spill", "arena_release", "arena_alloc", "arena_free"):
                if inner != key:
                    self.engine.helper(inner)
        if key.startswith("size_"):
            op = {"size_mul": "umul", "size_add": "uadd"}[key]
            declare(m, f"llvm.{op}.with.overflow.i64", T.function(T.struct([T.i64, T.i1]), [T.i64, T.i64]))
        return self.engine.helper(key)

    def _loop_push(self, block, b, frames, offsets):
        """The frame address of ``block`` in its loop's array, in the forward sweep (None: on the stack)."""
        lp = self._counted(block)
        if lp is None:
            return None
        st = self.lstate[lp]
        off = b.add(b.mul(st.k, const_int(T.i64, frames[lp])), const_int(T.i64, offsets[block]))
        return b.gep(T.i8, st.base_iter, [off])

    def _loop_pop(self, block, b, frames, offsets):
        lp = self._counted(block)
        if lp is None:
            return None
        st = self.lstate[lp]
        k = b.load(T.i64, st.kslot)
        base = b.load(T.ptr(), st.bslot)
        off = b.add(b.mul(k, const_int(T.i64, frames[lp])), const_int(T.i64, offsets[block]))
        return b.gep(T.i8, base, [off])


class _StaticSizes:
    """Sizes of a nest array as Python integers (None: some trip count is not a constant)."""

    def trip(self, lp):
        return static_trip_count(lp.trip)

    zero = 0

    def root_trip(self, lp):
        return self.trip(lp)

    def mul(self, a, c):
        return a * c

    def add(self, a, c):
        return a + c

    def entered(self, cond, sized_parent):
        runs = sized_parent > 1
        return runs if cond is None else (cond and runs)

    def select(self, cond, t):
        return t if cond else 0


class _EmittedSizes:
    """Sizes of a nest array computed in the forward sweep before the nest's root."""

    zero = const_int(T.i64, 0)

    def __init__(self, tape, b):
        self.tape, self.b = tape, b

    def root_trip(self, lp):
        return self.tape.lstate[lp].trip

    def trip(self, lp):
        return emit_trip_count(self.b, lp.trip, self.tape.sweep.val)

    def mul(self, a, c):
        if isinstance(c, int):
            c = const_int(T.i64, c)
        return self.b.call(self.tape._helper("size_mul"), [a, c])

    def add(self, a, c):
        return self.b.call(self.tape._helper("size_add"), [a, c])

    def entered(self, cond, sized_parent):
        runs = self.b.icmp("ugt", sized_parent, const_int(T.i64, 1))
        return runs if cond is None else self.b.and_(cond, runs)

    def select(self, cond, t):
        return self.b.select(cond, t, const_int(T.i64, 0))


def _nest_layout(nest, frames, ops) -> tuple[Any, dict] | None:
    """``(total bytes, {loop: offset of its region})`` of the nest array, or None.

    A hosted loop's trip count counts only when the loop runs (its parent's body runs on
    every iteration when the latch holds the exit test; otherwise on all but the last, and
    not at all when the parent's own count is 0 or 1): a count computed before the root for
    a loop that never runs need not mean anything."""
    root = nest[0]
    sized = {root: ops.root_trip(root)}
    if sized[root] is None:
        return None
    entered: dict = {root: None}
    count, regions = {root: sized[root]}, {}
    total: Any = None
    for lp in nest:
        if lp is not root:
            p = lp.host
            t = ops.trip(lp)
            if t is None:
                return None
            cond = entered[p] if body_runs_every_iteration(p) else ops.entered(entered[p], sized[p])
            entered[lp] = cond
            sized[lp] = t if cond is None else ops.select(cond, t)
            count[lp] = ops.mul(count[p], sized[lp])
        if frames.get(lp, 0):
            nbytes = ops.mul(count[lp], frames[lp])
            regions[lp] = total if total is not None else ops.zero
            total = nbytes if total is None else ops.add(total, nbytes)
    return total, regions

