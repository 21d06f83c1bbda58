"""Recomputation in the reverse sweep instead of caching on the tape.

A value the reverse sweep needs is rebuilt from its operands when that is
cheaper than a tape slot (a store in the forward sweep, a load in the
reverse): address arithmetic (GEPs of primal and shadow pointers), integer
and cheap float arithmetic, selects, casts, cheap math calls (fabs, minnum, floor...), and loads of memory the function never
writes (function arguments and globals when every store of the function goes
to its own allocations; combined mode only, where nothing can run between the
sweeps). Operands are fetched recursively the same way, so a loop's reverse
typically needs only its induction variable from the tape.

On a device, a loop whose trip count is not a constant keeps its tape in
memory (the arena, the heap), where a slot costs a store and a load per
iteration and thread. There a division or any math call (``exp``, ``sqrt``...)
is recomputed too when everything it depends on is rebuilt without the tape
(the loop counter, values from before the loop, memory the function never
writes): a loop over a neighbour list then keeps nothing on its tape. A value
that needs a taped one is still taped: recomputing it would add work and save
no memory traffic (a Newton step's quotient needs no slot for another reason:
its adjoints take the reciprocal and the residual, :mod:`.carried`).
"""

from __future__ import annotations

from gpucompiler.llvm import Argument, GlobalVariable, Instruction

from .analysis import callee_name
from .host import ReverseState
from .typeinfo import locate

#: opcodes recomputed from their operands
PURE = frozenset("getelementptr addrspacecast add sub mul shl lshr ashr and or xor trunc zext sext icmp fcmp select "
                 "fadd fsub fmul fneg fpext fptrunc sitofp uitofp extractelement insertelement "
                 "shufflevector".split())
#: math calls cheap enough to run again rather than tape (a square root or an fma chain is not:
#: recomputed every reverse iteration, they made n-body and polynomial gradients slower)
CHEAP_MATH = frozenset("fabs copysign floor ceil trunc round maxnum minnum".split())
#: recomputed, besides the above, in a loop whose tape is in memory on a device (see the module docstring)
COSTLY = frozenset(("fdiv", "frem"))
#: longest chain of recomputed instructions behind one value (an element read through an index read from
#: another array is about a dozen deep: comparison, select, add, shift and address of each access)
MAX_DEPTH = 32
#: :meth:`Recompute._chain` of a value the reverse sweep cannot rebuild without the tape
_TAPED = MAX_DEPTH + 1
#: calls that write no memory of the caller
_NO_WRITE = frozenset(("math", "ignored", "passthrough", "inactive", "alloc", "calloc", "barrier"))


def _own_allocation(base) -> bool:
    if not isinstance(base, Instruction):
        return False
    if base.opcode == "alloca":
        return True
    return base.opcode == "call" and getattr(base.callee, "name", None) in ("malloc", "calloc", "_Znwm", "_Znam")


def writes_outside(fn) -> bool:
    """Whether ``fn`` may write memory it did not allocate itself."""
    from .calls import classify

    for inst in fn.instructions():
        op = inst.opcode
        if op in ("store", "atomicrmw", "cmpxchg"):
            if not _own_allocation(locate(inst.pointer_operand)[0]):
                return True
        elif op == "call":
            kind = classify(inst)
            if kind in _NO_WRITE:
                continue
            if kind in ("memcpy", "memset") and _own_allocation(locate(inst.args[0])[0]):
                continue
            return True
    return False


class Recompute(ReverseState):
    """Mixed into :class:`~.reverse.Reverse`: ``_recompute(v)`` / ``_recompute_shadow(v)`` return the
    value rebuilt at the reverse builder's position, or None when it must come from the tape."""

    _reads_only = None
    _depth = 0

    def _loads_recomputable(self) -> bool:
        if self._reads_only is None:
            self._reads_only = self.combined and not writes_outside(self.fn)
        return self._reads_only

    def _recomputable(self, v) -> bool:
        if self._cheap(v):
            return True
        return self._costly(v) and self._chain(v) <= MAX_DEPTH - self._depth

    def _cheap(self, v) -> bool:
        """Whether ``v`` is rebuilt rather than taped wherever the reverse sweep needs it."""
        op = v.opcode
        if op in PURE:
            return True
        if op == "call":
            from .calls import classify, math_name

            name = callee_name(v)
            return name is not None and classify(v) == "math" and math_name(name) in CHEAP_MATH
        if op == "load" and self._loads_recomputable() and not v.is_volatile:
            base = locate(v.pointer_operand)[0]
            return isinstance(base, (Argument, GlobalVariable))
        return False

    def _costly(self, v) -> bool:
        """Whether ``v`` is a division or a math call of the innermost counted loop around the current
        reverse block, a loop whose tape is in memory on a device."""
        if v.opcode == "call":
            from .calls import classify

            if classify(v) != "math" or any(a.type.is_pointer for a in v.args):
                return False  # (frexp writes its exponent: not run twice)
        elif v.opcode not in COSTLY:
            return False
        lp = self._counted(self.cur)
        if not self.engine.options.device_tape or lp is None or self._counted(v.parent) is not lp:
            return False
        return self._tape_in_memory(lp)

    def _chain(self, v) -> int:
        """The longest chain of instructions the reverse of the current block rebuilds for ``v`` (costly
        ones included), or :data:`_TAPED` when that needs a value of its loop from the tape."""
        lp = self._counted(self.cur)
        if not isinstance(v, Instruction) or lp is None or v.parent not in lp.blocks or self._iv_here(v):
            return 0  # from before the loop (read once per execution of it), or rebuilt from the counter
        key = ("chain", self.cur, v)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        self.memo[key] = _TAPED  # (SSA cycles go through phis, which are not rebuilt: a guard only)
        out = _TAPED
        if self._cheap(v) or self._costly(v):
            out = min(_TAPED, 1 + max((self._chain(o) for o in v.operands), default=0))
        self.memo[key] = out
        return out

    def _rebuild(self, key, v, operands):
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        if self._depth >= MAX_DEPTH:
            return None
        self._depth += 1
        try:
            ops = [f(o) for f, o in operands]
        finally:
            self._depth -= 1
        if any(o is None for o in ops):
            return None
        clone = v.detached_copy("")
        for o in ops:
            clone.append_operand(o)
        self.b.insert(clone)
        self.memo[key] = clone
        return clone

    def _recompute(self, v):
        if not self._recomputable(v):
            return None
        return self._rebuild(("re", self.cur, v), v, [(self.fwd, o) for o in v.operands])

    def _recompute_shadow(self, v):
        if not isinstance(v, Instruction) or v.opcode != "getelementptr":
            return None
        ops = [(self.fwd_shadow, v.operands[0])] + [(self.fwd, o) for o in v.operands[1:]]
        return self._rebuild(("resh", self.cur, v, self.sweep.lane), v, ops)
