"""Recomputation in the reverse sweep instead of caching on the tape.

A value the reverse sweep needs is rebuilt from its operands when that is
cheaper than a tape slot (a store in the forward sweep, a load in the
reverse): address arithmetic (GEPs of primal and shadow pointers), integer
and cheap float arithmetic, selects, casts, cheap math calls (fabs, minnum, floor...), and loads of memory the function never
writes (function arguments and globals when every store of the function goes
to its own allocations; combined mode only, where nothing can run between the
sweeps). Operands are fetched recursively the same way, so a loop's reverse
typically needs only its induction variable from the tape.
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
#: longest chain of recomputed instructions behind one value
MAX_DEPTH = 10
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

    def _rebuild(self, key, v, operands):
        if self._depth >= MAX_DEPTH:
            return None
        hit = self.memo.get(key)
        if hit is not None:
            return hit
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
