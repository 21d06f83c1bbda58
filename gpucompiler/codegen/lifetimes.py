"""Where the SSA values holding managed arrays die: liveness over the reachable blocks.

Every such value owns one reference (language/numpy/arraymem.py),
except a view whose viewed value is live wherever the view is (``borrowed``).
Codegen gives it back after the value's last use: right after an
instruction (``after``), at the start of a block for phis nobody reads
(``at_start``), or on an edge where the value is live out of the
predecessor but not live into the successor (``on_edge``). A value a
``return`` uses is moved to the caller instead.
"""

from __future__ import annotations

from ..frontend.ir import Arg, Call, Phi, Return
from ..language.numpy.arraymem import holds_managed
from ..interpreter.lattice import BOTTOM


class Lifetimes:
    """The places where references are given back (see the module docstring; a plain class: an ``attrs``
    class took ~0.3 ms to make at a process's first compile)."""

    __slots__ = ("after", "at_start", "on_edge", "params", "borrowed")

    def __init__(self, params: list | None = None):
        self.after: dict = {}
        """instruction (or ``return`` terminator) -> values whose last use it is"""
        self.at_start: dict = {}
        """block -> its phis that are never read"""
        self.on_edge: dict = {}
        """(block, successor) -> values live out of the block and dead in the successor"""
        self.params: list = [] if params is None else params
        """arguments holding managed arrays (the callee takes its own reference of each)"""
        self.borrowed: set = set()
        """views that hold no reference: the value they view is live wherever they are"""

    def any(self) -> bool:
        return bool(self.after or self.at_start or self.on_edge or self.params)


def plan(frame) -> Lifetimes:
    """The lifetimes of the values of ``frame`` (an inferred specialization) holding managed arrays."""
    def tracked(v) -> bool:
        t = frame.typeof(v) if not isinstance(v, (Call, Phi)) else frame.types.get(v, BOTTOM)
        return t is not BOTTOM and holds_managed(t)

    out = Lifetimes(params=[a for a in frame.ir.args if tracked(a)])
    blocks = [bl for bl in frame.ir.blocks if frame.executable(bl)]
    if not out.params and not any(tracked(v) for bl in blocks for v in (*bl.phis, *bl.insts)):
        return out
    succs = {bl: [s for s in dict.fromkeys(_successors(bl)) if (bl, s) in frame.edges] for bl in blocks}
    uses, defs = {}, {}
    for bl in blocks:
        defined, used = {p for p in bl.phis if tracked(p)}, set()
        for inst in (*bl.insts, bl.term):
            for v in _operands(inst):
                if tracked(v) and v not in defined:
                    used.add(v)
            if isinstance(inst, Call) and tracked(inst):
                defined.add(inst)
        uses[bl], defs[bl] = used, defined
    live_in = {bl: set() for bl in blocks}
    live_out = {bl: set() for bl in blocks}
    changed = True
    while changed:
        changed = False
        for bl in reversed(blocks):
            lo = set()
            for s in succs[bl]:
                lo |= live_in[s]
                lo |= {p.incoming[bl] for p in s.phis if bl in p.incoming and tracked(p.incoming[bl])}
            li = uses[bl] | (lo - defs[bl])
            if lo != live_out[bl] or li != live_in[bl]:
                live_out[bl], live_in[bl], changed = lo, li, True
    entry_args = set(out.params)
    lasts = {}
    for bl in blocks:
        last = lasts[bl] = {}
        candidates = set(live_in[bl]) | defs[bl] | (entry_args if bl is frame.ir.entry else set())
        for inst in (*bl.insts, bl.term):
            for v in _operands(inst):
                if v in candidates:
                    last[v] = inst
        for v in candidates - live_out[bl]:
            where = last.get(v)
            if where is None:
                if isinstance(v, Phi) or v in entry_args:
                    out.at_start.setdefault(bl, []).append(v)
                else:  # defined here, never read: dies at once
                    out.after.setdefault(v, []).append(v)
            elif not (isinstance(where, Return) and where.value is v):
                out.after.setdefault(where, []).append(v)
        for s in succs[bl]:
            dead = sorted((v for v in live_out[bl] if v not in live_in[s]), key=_order)
            if dead:
                out.on_edge[(bl, s)] = dead
    for values in (*out.after.values(), *out.at_start.values()):  # sets gave them: the IR's order, every process
        values.sort(key=_order)
    out.borrowed = _borrowers(frame, blocks, tracked, live_in, live_out, defs, lasts)
    return out


def _borrowers(frame, blocks, tracked, live_in, live_out, defs, lasts) -> set:
    """The views (a rule result marked ``returns_view`` with one managed operand) that need no reference
    of their own: the operand they view is live wherever they are, and they are not returned (a return
    moves a reference). A row ``a[i]`` taken in a loop then costs no count updates."""
    where = {}
    for bl in blocks:
        for k, inst in enumerate(bl.insts):
            where[inst] = (bl, k)
    returned = {bl.term.value for bl in blocks if isinstance(bl.term, Return)}
    out, source = set(), {}
    for bl in blocks:
        for inst in bl.insts:
            res = frame.calls.get(inst)
            if (inst not in defs[bl] or inst in returned or res is None or res.callee is not None
                    or not getattr(res.lower, "returns_view", False)):
                continue
            sources = {v for v in _operands(inst) if tracked(v)}
            if len(sources) != 1:
                continue
            src = sources.pop()
            while src is not None:  # a view of a borrowing view: the value that holds the reference may cover it
                if _covers(src, inst, blocks, live_in, live_out, defs, lasts, where):
                    out.add(inst)
                    source[inst] = src
                    break
                src = source.get(src) if src in out else None
    return out


def _covers(src, v, blocks, live_in, live_out, defs, lasts, where) -> bool:
    """Whether ``src`` is live wherever ``v`` is."""
    def pos(bl, x, default):
        inst = lasts[bl].get(x)
        if inst is None:
            return default
        return len(bl.insts) if inst is bl.term else bl.insts.index(inst)

    for bl in blocks:
        if v not in live_in[bl] and v not in defs[bl]:
            continue
        if v in live_in[bl] and src not in live_in[bl]:
            return False
        if src in live_out[bl]:
            continue
        if v in live_out[bl]:
            return False
        start = where[v][1] if v in defs[bl] else -1
        if pos(bl, src, -1) < pos(bl, v, start):
            return False
    return True


def _order(v) -> tuple[int, int]:
    """A value's place in the function (parameters, numbered -1, by position): the order references are released
    in, the same in every process (sets of values iterate in the order of their addresses)."""
    return v.id, v.index if isinstance(v, Arg) else -1


def _successors(bl) -> tuple:
    term = bl.term
    if isinstance(term, Return) or term is None:
        return ()
    return (term.target,) if hasattr(term, "target") else (term.then, term.orelse)


def _operands(inst) -> tuple:
    if isinstance(inst, Call):  # the callee too: a method value holds its receiver
        return (inst.fn, *inst.args)
    if isinstance(inst, Return):
        return (inst.value,)
    return ()
