"""Loop cache arrays and loop-invariant values: the parts of the tape that are
not a stack.

Mixed into :class:`~.reverse.Reverse`. For each loop in canonical form
(:mod:`.loops`) the forward sweep numbers iterations ``k = 0, 1, ...``; the
blocks of the loop store what their reverses need at ``base + k * frame +
offset`` in one array per loop execution: allocated in the preheader when
the trip count is known there (and checked at the exit), grown by
``realloc`` from the header otherwise. Each exit block's frame records
``k`` and ``base``; the reverse sweep counts ``k`` down, leaves the loop at
``k == 0`` and frees the array. Affine induction variables are rebuilt from
``k`` instead of being stored.

A value defined outside a loop and needed by the reverse of a block inside
it is recorded once per loop execution, in the frames of the loop's exit
blocks, and kept in a slot of the reverse function while the loop's reverse
runs.
"""

from __future__ import annotations

from gpucompiler.llvm import Builder, Instruction, const_int, constant, types as T

from .loops import emit_trip_count, find_loops

_STATE = T.struct([T.ptr(), T.i64])
_NULL = constant(T.ptr(), "null")


def _first_non_phi(block):
    return next(i for i in block.instructions if i.opcode != "phi")


class LoopTape:
    """Forward and reverse bookkeeping of counted loops (see the module docstring)."""

    def _setup_loops(self):
        self.loops, self.innermost = find_loops(self.cfg)
        #: loop -> {"k": forward counter phi, "state": {ptr, cap} alloca, "trip": i64 or None,
        #:          "exit_base": {exit block: load of the base}, "kslot"/"bslot": reverse slots}
        self.lstate = {}
        for lp in self.loops:
            if lp.counted:
                self._setup_forward(lp)

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
        st = {"k": k, "state": state, "trip": trip, "exit_base": {}, "kslot": self._rev_alloca(T.i64, const_int(T.i64, 0)),
              "bslot": self._rev_alloca(T.ptr(), _NULL), "base_iter": None}
        for e in lp.exits:
            ee = sw.vmap[e]
            b.position_before(_first_non_phi(ee))
            st["exit_base"][e] = b.load(T.ptr(), state)
            if trip is not None and e in self.cfg.reachable:
                b.call(self.engine.helper("trip_check"), [k, trip])
        self.lstate[lp] = st

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
        k = self._from_forward(lp.header, st["k"])
        base = self._from_forward(self.cur, st["exit_base"][self.cur])
        self.b.store(k, st["kslot"])
        self.b.store(base, st["bslot"])

    def _reverse_header(self, block, ds):
        """The reverse of a counted loop's header: back to the latch while ``k > 0``, else leave."""
        lp = self._counted(block)
        if lp is None or lp.header is not block:
            return False
        st = self.lstate[lp]
        k = self.b.load(T.i64, st["kslot"])
        leave, again = self.rev.append_block(""), self.rev.append_block("")
        self.b.cond_br(self.b.icmp("eq", k, const_int(T.i64, 0)), leave, again)
        self.b.position_at_end(leave)
        self.b.call(self.engine.helper("tape_free"), [self.b.load(T.ptr(), st["bslot"])])
        self._edge(ds, lp.preheader)
        self.b.position_at_end(again)
        self.b.store(self.b.sub(k, const_int(T.i64, 1)), st["kslot"])
        self._edge(ds, lp.latch)
        return True

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

    def _iv(self, v):
        """An affine induction variable of a counted loop, rebuilt from the reverse counter."""
        if v.opcode != "phi":
            return None
        lp = self._counted(v.parent)
        if lp is None or lp.header is not v.parent or self.cur not in lp.blocks:
            return None
        iv = next((iv for iv in lp.ivs if iv[0] is v), None)
        if iv is None:
            return None
        key = ("iv", self.cur, v)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        _, start, step, _ = iv
        start = self.fwd(start)
        k = self._slot_load(T.i64, self.lstate[lp]["kslot"], ("k", self.cur, lp))
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
        frames, offsets = {}, {}
        for block, reqs in self.requests.items():
            lp = self._counted(block)
            if lp is None:
                continue
            offsets[block] = frames.get(lp, 0)
            frames[lp] = offsets[block] + sum(_slot(v.type) for v, _, _ in reqs)
        b = Builder()
        for lp, st in self.lstate.items():
            size = frames.get(lp, 0)
            if size == 0:
                continue
            head = self.sweep.vmap[lp.header]
            if st["trip"] is not None:
                b.position_before(self.sweep.vmap[lp.preheader].terminator)
                nbytes = b.mul(st["trip"], const_int(T.i64, size))
                b.store(b.call(self.engine.helper("tape_alloc"), [nbytes]), st["state"])
                b.position_before(_first_non_phi(head))
                st["base_iter"] = b.load(T.ptr(), st["state"])
            else:
                b.position_before(_first_non_phi(head))
                st["base_iter"] = b.call(self.engine.helper("loop_grow"),
                                         [st["state"], st["k"], const_int(T.i64, size)])
        return frames, offsets

    def _loop_push(self, block, b, frames, offsets):
        """The frame address of ``block`` in its loop's array, in the forward sweep (None: on the stack)."""
        lp = self._counted(block)
        if lp is None:
            return None
        st = self.lstate[lp]
        off = b.add(b.mul(st["k"], const_int(T.i64, frames[lp])), const_int(T.i64, offsets[block]))
        return b.gep(T.i8, st["base_iter"], [off])

    def _loop_pop(self, block, b, frames, offsets):
        lp = self._counted(block)
        if lp is None:
            return None
        st = self.lstate[lp]
        k = b.load(T.i64, st["kslot"])
        base = b.load(T.ptr(), st["bslot"])
        off = b.add(b.mul(k, const_int(T.i64, frames[lp])), const_int(T.i64, offsets[block]))
        return b.gep(T.i8, base, [off])


def _slot(t) -> int:
    from .emit import sizeof

    return (sizeof(t) + 7) // 8 * 8
