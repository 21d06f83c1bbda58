"""Reverse mode: an augmented forward sweep that pushes, at the end of each
block, the values the block's reverse needs (and which predecessor it came
from), then one reverse block per primal block that pops them, runs the
adjoint rules in reverse order and branches to the reverse of the recorded
predecessor. The tape is a stack (``{ptr base, i64 sp, i64 cap, ptr fixed}``, grown by
``malloc`` + copy + ``free``: a device has no ``realloc``), which is correct for any CFG: loops of any trip count,
recursion through calls (callees push on the same tape) and early exits.

Adjoints are accumulated in ``alloca`` slots; LLVM's SROA/mem2reg turns them
into registers. When forward and reverse share one function, values that run
exactly once and dominate the return are used directly, not taped.
"""

from __future__ import annotations

from gpucompiler.llvm import Argument, Builder, Instruction, const_int, constant, types as T

from . import calls, memory, stack
from .emit import Emit, fconst, is_float_like, sizeof, zero
from .errors import unsupported
from .recompute import Recompute
from .rules import ARITH_REVERSE
from .rules.polynomial import PolynomialTrees, leaf_adjoint
from .sweep import PASSIVE, Sweep
from .tape import LoopTape

TAPE = T.struct([T.ptr(), T.i64, T.i64, T.ptr()])
"""The tape stack's header: base, bytes in use, capacity, and a block of the caller's memory (or null) that
growth never frees (:data:`.helpers.TAPE_INLINE`)."""


class Reverse(Emit, Recompute, LoopTape):
    """Emits the derivative of ``fn`` (activity ``act``).

    ``aug``/``rev`` are the functions receiving the forward and reverse
    sweeps (the same function in combined mode). ``fwd_args``/``rev_args``
    map primal arguments to values, ``fwd_shadows``/``rev_shadows`` map
    primal pointer arguments to their shadows, one map per lane of a batch
    (vector mode: every rule runs once per lane), ``dret`` is the return seed
    (None when the return is inactive) and ``fwd_tape``/``rev_tape`` point to
    the tape.
    """

    def __init__(self, engine, fn, act, aug, rev, *, fwd_args, fwd_shadows, rev_args, rev_shadows,
                 dret, fwd_tape, rev_tape, rev_entry):
        Emit.__init__(self, engine.module, Builder())
        self.engine, self.fn, self.act = engine, fn, act
        self.aug, self.rev = aug, rev
        self.combined = aug is rev
        self.sweep = Sweep(engine, fn, act, aug, fwd_args, fwd_shadows, tangents=False)
        self.sweep.tape = fwd_tape
        self.cfg = self.sweep.cfg
        self.rev_args, self.rev_lanes = rev_args, rev_shadows
        self.rev_shadows: dict = rev_shadows[0]
        #: the return's seed per lane (one value for every lane unless a list is given)
        self.drets = dret if isinstance(dret, list) else [dret] * len(rev_shadows)
        self.tape = rev_tape
        #: the block holding adjoint slots (start of the reverse function)
        self.rev_entry = rev_entry
        #: adjoint slots per lane; ``slots`` is the lane's being emitted (:meth:`set_lane`)
        self.lane_slots: list[dict] = [{} for _ in rev_shadows]
        self.slots: dict = self.lane_slots[0]
        self.requests: dict = {}  # primal block -> [(forward value, load, offset)]
        self.request_bytes: dict = {}  # primal block -> bytes its requests take so far
        self.memo: dict = {}
        self.cur = None
        #: values whose adjoints are zero: only comparisons use them (:func:`_compared_only`)
        self.compared_only = _compared_only(fn)
        #: polynomial expressions whose adjoints are taken whole (:mod:`.rules.polynomial`)
        self.polynomials = PolynomialTrees(fn.instructions())
        # split mode: the reverse runs after the forward function returned, so shadows of allocas live on the heap
        self.sweep.heap_shadows = not self.combined

    @property
    def width(self) -> int:
        return len(self.lane_slots)

    @property
    def lane(self) -> int:
        return self.sweep.lane

    def set_lane(self, k: int) -> None:
        """Emit the adjoints of lane ``k`` of a batch from now on."""
        self.sweep.set_lane(k)
        self.slots, self.rev_shadows = self.lane_slots[k], self.rev_lanes[k]

    # -- values available in the reverse sweep --------------------------------
    def fwd(self, v):
        if isinstance(v, Argument):
            return self.rev_args[v]
        if not isinstance(v, Instruction):
            return v
        fv = self.sweep.vmap[v]
        if not (self.combined and v.parent in self.cfg.once):
            r = self._iv(v)
            if r is not None:
                return r
            r = self._recompute(v)
            if r is not None:
                return r
        return self._from_forward(v.parent, fv)

    def fwd_shadow(self, v, inst=None):
        if v in self.sweep.frame_offsets:
            return stack.shadow_frame(self, v)
        if isinstance(v, Argument):
            s = self.rev_shadows.get(v)
            if s is None:
                raise unsupported("pointer argument without a shadow", inst, self.fn)
            return s
        s = self.sweep.shadow(v, inst)
        if not isinstance(s, (Instruction, Argument)):
            return s
        if isinstance(v, Instruction) and not (self.combined and v.parent in self.cfg.once):
            r = self._recompute_shadow(v)
            if r is not None:
                return r
        return self._from_forward(v.parent if isinstance(v, Instruction) else None, s)

    def op(self, inst, k):
        if k == 0 and inst.opcode == "select":
            chained = self.chain_condition(inst)
            if chained is not None:
                return chained
        return self.fwd(inst.args[k] if inst.opcode == "call" else inst.operands[k])

    def res(self, inst):
        return self.fwd(inst)

    def at_hand(self, v) -> bool:
        """Whether :meth:`fwd` of ``v`` costs nothing more here: a constant or argument, a value of a block run
        once (combined mode), one fetched in this block already or kept for the whole loop around it; not a
        value to read from the tape per iteration or to recompute."""
        if not isinstance(v, Instruction) or (self.combined and v.parent in self.cfg.once):
            return True
        return (self.cur, self.sweep.vmap[v]) in self.memo or ("re", self.cur, v) in self.memo \
            or self._hoist_loop(v.parent) is not None

    def taped(self, v) -> bool:
        """Whether :meth:`fwd` of ``v`` would read a tape slot of the current block's own (kept per
        iteration of its loop), not yet read here."""
        if self.at_hand(v):
            return False
        return self._iv_here(v) is None and not self._recomputable(v)

    def _from_forward(self, block, fv):
        if self.combined and (block is None or block in self.cfg.once):
            return fv
        key = (self.cur, fv)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        lp = self._hoist_loop(block)
        if lp is not None:
            ld = self._slot_load(fv.type, self._hoisted(lp, block, fv), key)
            self.memo[key] = ld
            return ld
        reqs = self.requests.setdefault(self.cur, [])
        off = self.request_bytes.get(self.cur, 0)
        self.request_bytes[self.cur] = off + _slot(fv.type)
        ld = self._in_pop(Instruction("load", fv.type, ["load ", fv.type, ", ", T.ptr(), " ", 0, ", align 8"],
                                      (constant(T.ptr(), "poison"),)))
        reqs.append((fv, ld, off))
        self.memo[key] = ld
        return ld

    # -- adjoints --------------------------------------------------------------
    def slot(self, v):
        s = self.slots.get(v)
        if s is None:
            b = Builder()
            b.position_before(self.rev_entry.instructions[0])
            s = b.alloca(v.type)
            b.store(_slot_zero(v), s)
            self.slots[v] = s
        return s

    def take_adjoint(self, v):
        """The adjoint of ``v`` accumulated so far; the slot is reset to zero."""
        s = self.slot(v)
        d = self.b.load(v.type, s)
        self.b.store(_slot_zero(v), s)
        return d

    def accumulate(self, v, d):
        """``adjoint(v) += d`` (nothing when ``v`` is inactive)."""
        if v not in self.act.active or d is None:
            return
        s = self.slot(v)
        self.b.store(self.fadd(self.b.load(v.type, s), d), s)

    # -- driver ---------------------------------------------------------------
    def run(self, finish):
        """Build both sweeps; ``finish(r, exit_builder)`` emits the end of the reverse of the entry block."""
        sw = self.sweep
        sw.run()
        self._setup_loops()
        fn, cfg = self.fn, self.cfg
        self.pop_blocks, self.rev_blocks = {}, {}
        for block in fn.blocks:
            pb = self.rev.append_block(f"rev.{block.name}" if block.name else "")
            rb = self.rev.append_block("")
            self.pop_blocks[block], self.rev_blocks[block] = pb, rb
            Builder(pb).br(rb)
        self.pred_ids = {}
        for block in fn.blocks:
            preds = cfg.preds(block)
            if len(preds) > 1:
                b = Builder()
                b.position_before(sw.vmap[block].instructions[0])
                # one entry per edge: a switch may reach ``block`` by several of its cases
                fb = sw.vmap[block]
                self.pred_ids[block] = b.phi(T.i32, [(const_int(T.i32, k), sw.vmap[p]) for k, p in enumerate(preds)
                                                     for op in sw.vmap[p].terminator.operands if op is fb])
        for block in fn.blocks:
            self.cur = block
            self.b.position_at_end(self.rev_blocks[block])
            if block in self.search_blocks:  # the reverse sweep passes search loops by (past_searches)
                self.b.unreachable()
                continue
            self.reverse_block(block, finish)
        self._materialize()

    def reverse_block(self, block, finish):
        if block not in self.cfg.reachable:
            self.b.unreachable()
            return
        for inst in reversed(block.instructions):
            if inst.opcode != "phi":
                for k in range(self.width):
                    self.set_lane(k)
                    self.reverse_rule(inst)
        phis = [p for p in block.instructions if p.opcode == "phi" and p in self.act.active]
        ds = []
        for k in range(self.width):
            self.set_lane(k)
            ds += [(k, p, self.take_adjoint(p)) for p in phis]
        self.set_lane(0)
        preds = self.cfg.preds(block)
        if block is self.fn.entry:
            finish(self)
            return
        if len(preds) == 1:
            self._edge(ds, preds[0])
            return
        if self._reverse_header(block, ds):
            return
        pid = self._pred_id(block)
        targets = [self.rev.append_block("") for _ in preds]
        self.b.switch(pid, targets[0], [(const_int(T.i32, k), t) for k, t in enumerate(targets) if k])
        for p, t in zip(preds, targets):
            self.b.position_at_end(t)
            self._edge(ds, p)

    def _pred_id(self, block):
        """Which predecessor the forward sweep came to ``block`` from (its index in ``cfg.preds``): rebuilt
        from the condition of the branch that decided it (:meth:`.analysis.CFG.deciding_branch`; recomputed,
        or read from the tape as the id would be), else the id read from the tape."""
        decided = self.cfg.deciding_branch(block)
        if decided is None:
            return self._from_forward(block, self.pred_ids[block])
        cond, k_true, k_false = decided
        return self.b.select(self.fwd(cond), const_int(T.i32, k_true), const_int(T.i32, k_false))

    def _edge(self, ds, pred):
        to = self.past_searches(pred)
        self._enter_loop(to)
        for k, p, d in ds:
            self.set_lane(k)
            v = next(v for v, blk in p.incoming if blk is pred)
            self.accumulate(v, d)
        self.set_lane(0)
        self.b.br(self.pop_blocks[to])

    def reverse_rule(self, inst):
        op = inst.opcode
        if inst in self.compared_only:
            return
        if op == "ret":
            dret = self.drets[self.lane]
            if inst.operands and dret is not None:
                self.accumulate(inst.operands[0], dret)
            return
        if op in memory.REVERSE:
            memory.REVERSE[op](self, inst)
            return
        if op == "call":
            calls.reverse(self, inst)
            return
        if op in PASSIVE or inst not in self.act.active or inst in self.polynomials.inner:
            return
        polynomial = self.polynomials.roots.get(inst)
        if polynomial is not None:
            d = self.take_adjoint(inst)
            for leaf in polynomial.terms:
                if leaf in self.act.active:
                    self.accumulate(leaf, leaf_adjoint(self, polynomial, leaf, self.fwd(leaf), d))
            return
        rule = ARITH_REVERSE.get(op)
        if rule is None:
            raise unsupported(f"no reverse rule for '{op}'", inst, self.fn)
        d = self.take_adjoint(inst)
        for v, adjoint in zip(inst.operands, rule):
            if adjoint is not None and v in self.act.active:
                self.accumulate(v, adjoint(self, inst, d))

    def _materialize(self):
        """Stores at the end of each forward block (into its loop's array; in combined mode for
        a block outside loops, into an ``alloca``; else pushed on the stack), loads at the
        start of its reverse."""
        frames, offsets = self._loop_frames()
        self._flush_deferred()
        for block, reqs in self.requests.items():
            size = self.request_bytes[block]
            fb = self.sweep.vmap[block]
            b = Builder()
            b.position_before(fb.terminator)
            w = self._loop_push(block, b, frames, offsets)
            once = self.combined and block not in self.cfg.in_loop
            if once:  # runs at most once per call: a frame on the function's stack frame
                w = self._fwd_alloca_bytes(size)
            elif w is None:
                w = b.call(self.engine.helper("push"), [self.sweep.tape, const_int(T.i64, size)])
            for v, _, off in reqs:
                b.store(v, b.gep(T.i8, w, [const_int(T.i64, off)]), align=8)
            pb = self.pop_blocks[block]
            b.position_before(pb.instructions[0])
            frame = w if once else self._loop_pop(block, b, frames, offsets)
            if frame is None:
                frame = b.call(self.engine.helper("pop"), [self.tape, const_int(T.i64, size)])
            for _, ld, off in reqs:
                b.position_before(ld)
                ld.set_operand(0, b.gep(T.i8, frame, [const_int(T.i64, off)]))


def _slot(t) -> int:
    return (sizeof(t) + 7) // 8 * 8



def _slot_zero(v):
    """What the adjoint slot of ``v`` starts (and is reset) at: ``-0.0`` for a float instruction, the identity
    of ``fadd`` (LLVM folds ``-0.0 + d`` to ``d``, not ``0.0 + d``: the first contribution to an adjoint
    costs no addition on the reverse sweep's chain of dependent operations), else zero (an argument's adjoint
    is returned: ``+0.0`` when nothing reached it)."""
    t = v.type
    if isinstance(v, Instruction) and t.kind == "float" and not isinstance(t, T.VectorType):
        return fconst(t, -0.0)
    return zero(t)


def _compared_only(fn) -> set:
    """Arithmetic and math calls of ``fn`` (not phis) whose results reach only comparisons, directly or through
    one another (``abs(s * w) > tol``): their adjoints are zero, and their reverses are left out. Run, they
    would add zero to their operands' adjoints, or a zero's product with a factor that may be infinite: NaN
    (``s * w`` with ``w = inf``)."""
    candidates = [i for i in fn.instructions() if i.users and (
        (i.opcode in ARITH_REVERSE and i.opcode != "phi") or (i.opcode == "call" and calls.classify(i) == "math"))]
    found: set = set()
    grew = True
    while grew:
        grew = False
        for inst in reversed(candidates):
            if inst not in found and all(isinstance(u, Instruction) and (u.opcode in ("fcmp", "icmp") or u in found)
                                         for u in inst.users):
                found.add(inst)
                grew = True
    return found


__all__ = ["Reverse", "TAPE", "fconst", "is_float_like"]
