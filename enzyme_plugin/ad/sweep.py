"""The forward sweep: a copy of the primal function's body into a derivative
function, with shadows of pointers and, in forward mode, tangents of floats.

Used by forward mode (tangents on) and by reverse mode's augmented forward
sweep (shadows only; float adjoints live in the reverse sweep). Rules are
looked up by family: memory and calls in their modules, arithmetic in
``rules``.
"""

from __future__ import annotations

from gpucompiler.llvm import Builder, Instruction, Value, constant

from . import calls, explain, memory, openmp
from .analysis import CFG, holds_pointer
from .emit import Emit, is_float_like, zero
from .errors import VectorizedCodeError, unsupported
from .rules import ARITH_FORWARD, ARITH_REVERSE, derived_forward

#: metadata of the AD tape's own malloc/free (the GPU validator accepts those)
TAPE_MARK = "gpuc.ad.tape"
#: opcodes that only move integers, pointers or control: copied, no rule
PASSIVE = frozenset("add sub mul udiv sdiv urem srem shl lshr ashr and or xor icmp fcmp trunc zext sext "
                    "fptoui fptosi uitofp sitofp ptrtoint inttoptr br switch unreachable".split())


class Sweep(Emit):
    """Copies ``fn`` (analysed by ``act``) into ``target`` starting at block ``into``."""

    def __init__(self, engine, fn, act, target, args, shadows: list[dict], tangents: bool):
        Emit.__init__(self, engine.module, Builder())
        self.engine, self.fn, self.act, self.target = engine, fn, act, target
        self.cfg = CFG(fn)
        self.tangents = tangents
        #: primal value -> its copy
        self.vmap: dict = dict(args)
        #: per lane of a batch (``shadows``: one map of argument shadows per lane), primal pointer ->
        #: shadow pointer / primal float -> tangent (forward mode)
        self.lane_maps: list[dict] = [{**engine.global_operands(fn), **lane} for lane in shadows]
        #: the map of the lane being emitted (:meth:`set_lane`)
        self.shadow_map: dict = self.lane_maps[0]
        self.lane = 0
        self._phis: list = []
        #: realloc -> bytes of the old shadow it copied (reverse mode)
        self.realloc_bytes: dict = {}
        #: stack helper call -> offset of its shadow frame in the shadow stack (reverse mode, :mod:`.stack`)
        self.frame_offsets: dict = {}
        #: shadows of allocas on the heap (split reverse mode: the reverse runs in another function)
        self.heap_shadows = False
        #: the tape pointer of the forward sweep (reverse mode; set by Reverse)
        self.tape: Value | None = None
        #: the lanes' shadows share one buffer per argument (:mod:`.leaf`): addresses move ``width`` times as far
        self.leaf_lanes = False

    # -- lanes of a batch ------------------------------------------------------
    @property
    def width(self) -> int:
        """How many shadows every value has (Enzyme's vector mode: one sweep, ``width`` derivatives)."""
        return len(self.lane_maps)

    def set_lane(self, k: int) -> None:
        """Emit the derivative of lane ``k`` from now on."""
        self.lane, self.shadow_map = k, self.lane_maps[k]

    # -- values --------------------------------------------------------------
    def val(self, v):
        return self.vmap.get(v, v)

    def op(self, inst, k):
        return self.val(inst.args[k] if inst.opcode == "call" else inst.operands[k])

    def res(self, inst):
        return self.vmap[inst]

    def at_hand(self, v) -> bool:
        return True  # the forward sweep has every primal value at hand

    def taped(self, v) -> bool:
        return False

    def shadow(self, v, inst=None):
        """The shadow (pointer) or tangent (float) of primal ``v``."""
        s = self.shadow_map.get(v)
        if s is not None:
            return s
        if is_float_like(v.type) or v.type.kind in ("int", "struct", "array"):
            return zero(v.type)
        if getattr(v, "ref", None) in ("null", "undef", "poison"):
            return v
        raise unsupported("pointer without a shadow used where a derivative is needed", inst or v, self.fn)

    def member_shadow(self, v, inst):
        """What stands for ``v`` in the shadow of a pointer or of an aggregate holding pointers: its shadow;
        an integer itself (the shadow of an array's descriptor has the array's shape); a constant
        aggregate or null pointer itself. A pointer or aggregate without shadow there is an ADError (the
        pointer taken out would be the primal's)."""
        s = self.shadow_map.get(v)
        if s is not None:
            return s
        t = v.type
        if t.kind == "int" or (t.kind == "vector" and t.scalar.kind == "int"):
            return self.val(v)
        if getattr(v, "ref", None) in ("null", "undef", "poison", "zeroinitializer"):
            return v
        if t.kind in ("struct", "array") and not holds_pointer(t):
            return self.val(v)
        raise unsupported("a pointer without a shadow put where pointers with shadows are (select, phi or "
                          "aggregate)", inst, self.fn)

    def tangent(self, v):
        return self.shadow_map.get(v) if v in self.act.active else None

    # -- driver --------------------------------------------------------------
    def copy_blocks(self, prefix: str = ""):
        """Create the copies of every block and instruction (operands mapped)."""
        pairs = []
        for block in self.fn.blocks:
            self.vmap[block] = self.target.append_block(prefix + block.name if block.name else "")
        for block in self.fn.blocks:
            nb = self.vmap[block]
            for inst in block.instructions:
                ni = inst.detached_copy()
                if TAPE_MARK in inst.metadata:  # an inner derivative's tape allocation stays one
                    ni.metadata[TAPE_MARK] = inst.metadata[TAPE_MARK]
                nb.append(ni)
                self.vmap[inst] = ni
                pairs.append((inst, ni))
        for inst, ni in pairs:
            for op in inst.operands:
                ni.append_operand(self.vmap.get(op, op))

    def run(self):
        """Copy the body, then emit the shadow/tangent rule after each copied instruction."""
        self.copy_blocks()
        for block in self.cfg.rpo:
            for inst in list(block.instructions):
                for k in range(self.width):
                    self.set_lane(k)
                    self.b.position_after(self.vmap[inst])
                    self.forward_rule(inst)
        for inst, phi, k in self._phis:
            self.set_lane(k)
            for v, blk in inst.incoming:
                phi.add_incoming(self._phi_incoming(inst, v), self.vmap[blk])
        self.set_lane(0)
        self._carry_again()

    def _carry_again(self) -> None:
        """The loop-carried values rebuilt at their headers for the reverse sweep (:mod:`.carried`) carried by
        a phi again in this copy, bitwise the same: the copy of ``g(y)`` is left to dead-code elimination."""
        for c in self.engine.carried.get(self.fn.name, ()):
            copy = self.vmap[c.value]
            b = Builder()
            b.position_before(self._first_non_phi(copy.parent))
            phi = b.phi(c.value.type, [(self.val(c.start), self.vmap[c.preheader]), (self.val(c.back), self.vmap[c.latch])])
            copy.replace_all_uses_with(phi)
            self.vmap[c.value] = phi

    def _phi_incoming(self, inst, v):
        if inst.type.kind in ("struct", "array") and inst in self.act.shadowed:
            return self.member_shadow(v, inst)
        if inst.type.kind == "ptr":
            if v in self.shadow_map:
                return self.shadow_map[v]
            if getattr(v, "ref", None) in ("null", "undef", "poison"):
                return v
            raise unsupported("phi mixes pointers with and without shadow", inst, self.fn)
        return self.shadow_map.get(v) or zero(inst.type)

    def forward_rule(self, inst):
        op = inst.opcode
        if inst.type.kind == "vector" and inst in self.act.shadowed:
            raise unsupported(f"no derivative rule for a vector of addresses of memory with a shadow{calls.VECTORIZED}",
                              inst, self.fn, VectorizedCodeError)
        if op in _CHECKED:
            _CHECKED[op](self, inst)
        if op in PASSIVE or op == "ret":
            return
        handler = memory.FORWARD.get(op) or (calls.forward if op == "call" else None)
        if handler is not None:
            handler(self, inst)
            return
        if op == "phi":
            if inst in self.act.shadowed or (self.tangents and inst in self.act.active):
                self.b.position_before(self._first_non_phi(self.vmap[inst.parent]))
                phi = self.b.phi(inst.type)
                self.shadow_map[inst] = phi
                self._phis.append((inst, phi, self.lane))
            return
        if inst in self.act.shadowed and op == "freeze":  # value-preserving: the pointer's shadow
            self.shadow_map[inst] = self.member_shadow(inst.operands[0], inst)
            return
        if inst in self.act.shadowed and op == "select":
            self.shadow_map[inst] = self.b.select(self.val(inst.operands[0]), self.member_shadow(inst.operands[1], inst),
                                                  self.member_shadow(inst.operands[2], inst))
            return
        if inst in self.act.shadowed and op in ("insertvalue", "extractvalue"):  # an aggregate holding pointers
            agg = self.member_shadow(inst.operands[0], inst)
            if op == "extractvalue":
                self.shadow_map[inst] = self.b.extractvalue(agg, inst.aggregate_indices)
            else:
                self.shadow_map[inst] = self.b.insertvalue(agg, self.member_shadow(inst.operands[1], inst),
                                                           inst.aggregate_indices)
            return
        if self.act.is_constant_value(inst):  # the activity analysis vouched for it (it refuses what it does not model)
            if op in ARITH_REVERSE or op in ("extractvalue", "insertvalue", "select"):
                return
            if is_float_like(inst.type) or inst.type.kind == "ptr":
                return
            raise unsupported(f"no rule for instruction '{op}'", inst, self.fn)
        if not self.tangents:
            if op in ARITH_REVERSE:
                return
            raise unsupported(f"no derivative rule for '{op}'", inst, self.fn)
        self.shadow_map[inst] = self.tangent_rule(inst)

    def tangent_rule(self, inst):
        op = inst.opcode
        ts = [self.tangent(v) for v in inst.operands]
        if op in ARITH_FORWARD:
            return ARITH_FORWARD[op](self, inst, ts)
        rule = ARITH_REVERSE.get(op)
        if rule is None:
            raise unsupported(f"no derivative rule for '{op}'", inst, self.fn)
        return derived_forward(rule, self, inst, ts) or zero(inst.type)

    @staticmethod
    def _first_non_phi(block):
        return next(i for i in block.instructions if i.opcode != "phi")


def _bits_of_active(s, inst):
    """``bitcast`` of an active float to an integer, or to a float of integer bits read from memory with a
    shadow (where the type analysis saw only integers): the derivative would be lost."""
    v = inst.operands[0]
    if v in s.act.active and not is_float_like(inst.type) and not openmp.passed_to_fork(inst):
        raise unsupported(f"bit pattern of an active float used as an integer: the bits of {explain.describe(v)} "
                          f"({v.type}) become {inst.type}, which would lose its derivative{explain.settle(inst)}",
                          inst, s.fn, quote=False)
    load = _loaded_from_shadowed(s, v) if is_float_like(inst.type) and v.type.scalar.kind == "int" else None
    if load is not None:
        p = load.pointer_operand
        raise unsupported(f"a float made of integer bits read from memory with a shadow: {explain.describe(p)} is "
                          f"read as {load.type} and its bits become {inst.type}, which would lose the derivative of "
                          f"what is stored there{explain.settle(inst, p)}", inst, s.fn, quote=False)


def _loaded_from_shadowed(s, v):
    """The load of memory with a shadow that integer ``v`` is computed from (through integer arithmetic,
    casts, selects and phis), else None."""
    work, seen = [v], set()
    while work:
        v = work.pop()
        if not isinstance(v, Instruction) or v in seen:
            continue
        seen.add(v)
        if v.opcode == "load":
            if v.pointer_operand in s.act.shadowed:
                return v
        elif v.opcode in _INT_FLOW:
            work += v.operands
    return None


def _from_shadowed_pointer(s, v):
    """Whether integer ``v`` is computed from ``ptrtoint`` of a pointer with a shadow (through integer
    arithmetic, casts, selects, phis and freezes, at any depth). The difference of two such addresses is
    a distance (a slot's offset in a tape that may move), not an address."""
    work, seen = [v], set()
    while work:
        v = work.pop()
        if not isinstance(v, Instruction) or v in seen:
            continue
        seen.add(v)
        if v.opcode == "ptrtoint":
            if v.operands[0] in s.act.shadowed:
                return True
        elif v.opcode == "sub" and all(_from_shadowed_pointer(s, o) for o in v.operands):
            continue
        elif v.opcode in _INT_FLOW:
            work += v.operands
    return False


def _int_to_pointer(s, inst):
    """``inttoptr`` of an address taken from memory with a shadow: the new pointer would have none."""
    if _from_shadowed_pointer(s, inst.operands[0]):
        raise unsupported("pointer with a shadow rebuilt from an integer (inttoptr)", inst, s.fn)


def _store_check(s, inst):
    if inst.value_operand.type.scalar.kind == "int" and _from_shadowed_pointer(s, inst.value_operand):
        raise unsupported("address of memory with a shadow stored as an integer", inst, s.fn)


#: integer instructions whose result is computed from their operands' bits
_INT_FLOW = ("add", "sub", "and", "or", "xor", "shl", "lshr", "mul", "trunc", "zext", "sext", "select", "phi", "freeze")

#: checks of instructions that are otherwise copied without a rule
_CHECKED = {"bitcast": _bits_of_active, "inttoptr": _int_to_pointer, "store": _store_check}


def undef(t):
    return constant(t, "undef")
