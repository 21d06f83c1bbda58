"""On-the-fly SSA construction (Braun et al., "Simple and Efficient Construction
of Static Single Assignment Form", CC 2013).

Variables are written and read per block; reading in a block whose
predecessors are not all known yet leaves an incomplete phi, filled when the
block is sealed. Trivial phis are removed at the end.
"""

from __future__ import annotations

from . import intrinsics as K
from .ir import Block, Branch, Call, Const, Function, Phi, Return, Undef, Value, successors


class SSABuilder:
    """Blocks, variable definitions and sealing for one function."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.defs: dict[str, dict[Block, Value]] = {}
        self.sealed: set[Block] = set()
        self.incomplete: dict[Block, list[Phi]] = {}
        self.reads: list[tuple] = []
        """(block, position, value, name, loc) of every read of a local variable by name"""

    def note_read(self, value: Value, block: Block, name: str, loc) -> None:
        """A Python-level read of ``name`` here: if unbound, UnboundLocalError is raised at this
        point (before anything the expression computes next), as in CPython."""
        self.reads.append((block, len(block.insts), value, name, loc))

    def new_block(self) -> Block:
        block = Block(len(self.fn.blocks))
        self.fn.blocks.append(block)
        return block

    def write(self, var: str, block: Block, value: Value) -> None:
        self.defs.setdefault(var, {})[block] = value

    def read(self, var: str, block: Block) -> Value:
        value = self.defs.get(var, {}).get(block)
        return value if value is not None else self._read_recursive(var, block)

    def _read_recursive(self, var: str, block: Block) -> Value:
        if block not in self.sealed:
            value = self._phi(var, block)
            self.incomplete.setdefault(block, []).append(value)
        elif len(block.preds) == 1:
            value = self.read(var, block.preds[0])
        elif not block.preds:
            value = Undef(var)
        else:
            value = self._phi(var, block)
            self.write(var, block, value)
            self._fill(value, block)
        self.write(var, block, value)
        return value

    def _phi(self, var: str, block: Block) -> Phi:
        phi = Phi(var)
        phi.block = block
        block.phis.append(phi)
        return phi

    def _fill(self, phi: Phi, block: Block) -> None:
        for pred in block.preds:
            phi.incoming[pred] = self.read(phi.var, pred)

    def seal(self, block: Block) -> None:
        self.sealed.add(block)
        for phi in self.incomplete.pop(block, []):
            self._fill(phi, block)

    def finish(self) -> None:
        """Drop unreachable blocks and trivial phis, then renumber."""
        reachable = _reachable(self.fn.entry)
        self.fn.blocks = [b for b in self.fn.blocks if b in reachable]
        for b in self.fn.blocks:
            b.preds = [p for p in b.preds if p in reachable]
            for phi in b.phis:
                phi.incoming = {p: v for p, v in phi.incoming.items() if p in reachable}
        subst: dict[Value, Value] = {}

        def resolve(v: Value) -> Value:
            while v in subst:
                v = subst[v]
            return v

        changed = True
        while changed:
            changed = False
            for b in self.fn.blocks:
                for phi in b.phis:
                    if phi in subst:
                        continue
                    vals = {resolve(v) for v in phi.incoming.values()} - {phi}
                    if len(vals) == 1:
                        subst[phi] = vals.pop()
                        changed = True
        for b in self.fn.blocks:
            b.phis = [p for p in b.phis if p not in subst]
            for phi in b.phis:
                phi.incoming = {p: resolve(v) for p, v in phi.incoming.items()}
            for inst in b.insts:
                inst.fn = resolve(inst.fn)
                inst.args = [resolve(a) for a in inst.args]
            term = b.term
            if isinstance(term, Branch):
                term.cond = resolve(term.cond)
            elif isinstance(term, Return):
                term.value = resolve(term.value)
        _check_unbound_reads(self.fn, [(b, k, resolve(v), n, loc) for b, k, v, n, loc in self.reads
                                       if b in reachable])
        self.fn.renumber()


def _unbound_message(name: str) -> str:
    return f"cannot access local variable {name!r} where it is not associated with a value"


def _check_unbound_reads(fn: Function, reads) -> None:
    """Before every use of a variable that may be unbound, a check raising UnboundLocalError.

    A phi is maybe-unbound when some incoming value is :class:`Undef` or a
    maybe-unbound phi; each gets a parallel bool phi saying whether it is
    bound. Uses of bound values cost nothing; a read that is never bound
    raises unconditionally (the interpreter stops the block there).
    """
    maybe: set[Phi] = set()
    changed = True
    while changed:
        changed = False
        for b in fn.blocks:
            for phi in b.phis:
                if phi not in maybe and any(isinstance(v, Undef) or v in maybe
                                            for v in phi.incoming.values()):
                    maybe.add(phi)
                    changed = True
    flags: dict[Phi, Phi] = {}
    for phi in [phi for b in fn.blocks for phi in b.phis if phi in maybe]:  # in order: the same text in every process
        flag = Phi("$bound." + phi.var, phi.loc)
        flag.block = phi.block
        phi.block.phis.append(flag)
        flags[phi] = flag
    for phi, flag in flags.items():
        flag.incoming = {p: Const(False) if isinstance(v, Undef) else flags.get(v, Const(True))
                         for p, v in phi.incoming.items()}

    def bound_flag(v: Value) -> Value | None:
        if isinstance(v, Undef):
            return Const(False)
        return flags.get(v) if isinstance(v, Phi) else None

    def check(flag, name, loc, block):
        call = Call(Const(K.check_bound), [flag, Const("UnboundLocalError"), Const(_unbound_message(name))], loc)
        call.block = block
        return call

    # at the read, where CPython raises (the latest read first: positions stay valid)
    for b, k, v, name, loc in sorted(reads, key=lambda r: -r[1]):
        flag = bound_flag(v)
        if flag is not None:
            b.insts.insert(k, check(flag, name, loc, b))
    # and before every use (reads the frontend did not note: loop bookkeeping)
    for b in fn.blocks:
        insts = []
        for inst in [*b.insts, *([b.term] if b.term is not None else [])]:
            seen = set()
            for v in inst.operands:
                flag = bound_flag(v)
                if flag is None or v in seen:
                    continue
                seen.add(v)
                name = v.name if isinstance(v, Undef) else getattr(v, "var", "?")
                guard = Call(Const(K.check_bound), [flag, Const("UnboundLocalError"),
                                              Const(_unbound_message(name))], inst.loc)
                guard.block = b
                insts.append(guard)
            if inst is not b.term:
                insts.append(inst)
        b.insts = insts


def _reachable(entry: Block) -> set[Block]:
    seen, stack = {entry}, [entry]
    while stack:
        for s in successors(stack.pop().term):
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return seen
