"""Loop structure for the tape: natural loops, which of them get a per-loop
cache array, their induction variables and trip counts.

A loop gets a cache array when it is in canonical form: one preheader whose
only successor is the header, one latch, and exits whose predecessors all
belong to the loop itself (not to a loop nested in it). Its iterations are
numbered by a counter ``k`` (0, 1, ...) added to the forward sweep; the
values its blocks' reverses need are stored at ``base + k * frame``, and
the reverse sweep counts ``k`` down instead of reading the loop's exit
decisions back.

The array is sized before the loop when the trip count is known there (the
latch or the header tests an affine induction variable against a value
defined outside the loop); with early exits besides (``break``, ``return``)
that count is an upper bound, enough to size the array. So is a constant cap
tested beside a data-dependent condition (``while r > tol and k < 60``:
:attr:`Loop.capped`), when the array it sizes is small. Otherwise it grows.

Nests share one array: a loop whose trip count is known before the outermost
loop of its nest (a rectangular nest) and which runs on every iteration of
its parent (its preheader dominates the parent's latch) is *hosted* by the
parent (:func:`plan_nests`); the nest's root allocates once, before the
nest, a region per loop indexed by the product of the iteration counters.
"""

from __future__ import annotations

from gpucompiler.llvm import Instruction, const_int, types as T


class Loop:
    """A natural loop of the primal function."""

    def __init__(self, header, blocks):
        self.header = header
        #: blocks of the loop, nested loops included
        self.blocks = set(blocks)
        self.parent: Loop | None = None
        self.latch = None
        self.preheader = None
        #: blocks outside the loop with a predecessor inside, in function order
        self.exits: list = []
        #: whether the loop gets a cache array indexed by its iteration counter
        self.counted = False
        #: (phi, start, step) of the header's affine induction variables
        self.ivs: list = []
        #: how the trip count is computed before the loop: (iv tuple, bound, predicate, offset) or None
        self.trip = None
        #: the block whose test ends the loop (with ``trip``): the latch or the header
        self.exiting = None
        #: whether the loop has other exits too (``break``, ``return``): ``trip`` is then an upper bound
        self.bounded = False
        #: whether that bound is a cap tested together with a condition that usually ends the loop first
        #: (``while r > tol and k < 60``): its array is sized by the bound only when that is small (tape.py)
        #: and it is never hosted in a nest
        self.capped = False
        #: the enclosing loop whose nest array holds this loop's frames (None: an array of its own)
        self.host = None
        #: the outermost loop of the nest this loop's frames live in (itself when not hosted)
        self.root = self

    def __repr__(self):
        return f"<Loop {self.header.name} ({len(self.blocks)} blocks)>"


def _int_value(v):
    ref = getattr(v, "ref", None)
    if ref is None or v.type.kind != "int" or isinstance(v, Instruction):
        return None
    try:
        return int(ref)
    except ValueError:
        return {"true": 1, "false": 0}.get(ref)


def find_loops(cfg) -> tuple[list, dict]:
    """``(loops, innermost)``: natural loops (outermost first) and each block's innermost loop.

    Both are empty when some cycle is not a natural loop (irreducible flow):
    the tape is then a stack for the whole function."""
    idom = cfg.idom

    def dominates(a, b):
        while True:
            if a is b:
                return True
            nb = idom.get(b)
            if nb is None or nb is b:
                return False
            b = nb

    bodies: dict = {}
    for u, h in ((u, h) for u, succ in cfg.succ.items() for h in succ):
        if u in cfg.reachable and dominates(h, u):
            body = bodies.setdefault(h, {h})
            stack = [u]
            while stack:
                x = stack.pop()
                if x in body:
                    continue
                body.add(x)
                stack.extend(p for p in cfg.preds(x) if p in cfg.reachable)
    covered = set().union(*bodies.values()) if bodies else set()
    if any(b in cfg.reachable and b not in covered for b in cfg.in_loop):
        return [], {}
    loops = sorted((Loop(h, body) for h, body in bodies.items()), key=lambda lp: -len(lp.blocks))
    innermost: dict = {}
    for lp in loops:  # outermost first: later (smaller) loops overwrite
        for b in lp.blocks:
            innermost[b] = lp
    for lp in loops:
        enclosing = [o for o in loops if o is not lp and lp.blocks < o.blocks]
        lp.parent = min(enclosing, key=lambda o: len(o.blocks)) if enclosing else None
    for lp in loops:
        _classify(cfg, lp, innermost)
    return loops, innermost


def dominates(cfg, a, b) -> bool:
    """Whether block ``a`` dominates block ``b`` (both reachable)."""
    idom = cfg.idom
    while True:
        if a is b:
            return True
        nb = idom.get(b)
        if nb is None or nb is b:
            return False
        b = nb


def plan_nests(cfg, loops) -> None:
    """Set ``host``/``root`` of each loop (``loops`` outermost first): a counted loop with a known
    trip count is hosted by its parent when the parent has one too, the loop runs on every
    iteration of the parent, and its trip count depends only on values defined before the root."""
    for lp in loops:
        p = lp.parent
        if lp.trip is None or p is None or p.trip is None or p.bounded or lp.root is not lp or lp.capped:
            continue  # (a parent that may break before its body: the count need not mean anything)
        if not dominates(cfg, lp.preheader, p.latch):
            continue
        if isinstance(lp.trip, ConstantTrip):
            start = bound = None  # a constant: defined before anything
        else:
            (_, start, _, _), bound, _, _ = lp.trip
        if any(isinstance(v, Instruction) and v.parent in p.root.blocks for v in (start, bound)):
            continue
        lp.host, lp.root = p, p.root
    for lp in loops:  # a hosted loop's own children follow it
        if lp.host is not None:
            lp.root = lp.host.root


def _classify(cfg, lp, innermost):
    preds = cfg.preds(lp.header)
    latches = [p for p in preds if p in lp.blocks]
    outside = [p for p in preds if p not in lp.blocks]
    exits = []
    for b in cfg.fn.blocks:
        if b in lp.blocks:
            continue
        if any(p in lp.blocks for p in cfg.preds(b)):
            exits.append(b)
    lp.exits = exits
    if len(latches) != 1 or len(outside) != 1:
        return
    pre = outside[0]
    if list(pre.successors) != [lp.header]:
        return
    for e in exits:
        if any(p not in lp.blocks or innermost.get(p) is not lp for p in cfg.preds(e)):
            return
    lp.latch, lp.preheader, lp.counted = latches[0], pre, True
    for phi in lp.header.instructions:
        if phi.opcode != "phi":
            break
        if phi.type.kind != "int":
            continue
        inc = dict((id(blk), v) for v, blk in phi.incoming)
        start, nxt = inc.get(id(pre)), inc.get(id(lp.latch))
        if not isinstance(nxt, Instruction) or nxt.opcode not in ("add", "sub") or len(inc) != 2:
            continue
        a, c = nxt.operands
        if a is not phi:
            a, c = c, a
            if nxt.opcode == "sub":
                continue
        step = _int_value(c)
        if a is not phi or step is None:
            continue
        if nxt.opcode == "sub":
            step = -step
        lp.ivs.append((phi, start, step, nxt))
    lp.trip = _trip(lp)
    if lp.trip is None:
        lp.trip = _constant_bound(cfg, lp)
        lp.bounded = lp.trip is not None  # other exits may leave earlier


_SWAP = {"eq": "eq", "ne": "ne", "slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle",
         "ult": "ugt", "ugt": "ult", "ule": "uge", "uge": "ule"}
_NEGATE = {"eq": "ne", "ne": "eq", "slt": "sge", "sge": "slt", "sgt": "sle", "sle": "sgt",
           "ult": "uge", "uge": "ult", "ugt": "ule", "ule": "ugt"}


def _trip(lp):
    """The exit test of the latch or the header as ``(iv, bound, continue-predicate, offset)``
    when it fixes the trip count."""
    exiting = [p for p in lp.blocks if any(s not in lp.blocks for s in p.successors)]
    for block in (lp.latch, lp.header):  # with early exits elsewhere the count is an upper bound
        if block in exiting:
            found = _counted_exit(lp, block)
            if found is not None:
                lp.bounded = len(exiting) > 1
                return found
    return None


def _counted_exit(lp, block):
    """The exit test of ``block`` (the latch or the header) as ``(iv, bound, predicate, offset)``."""
    # the test runs once per iteration (top-tested: once more than the body)
    term = block.terminator
    if term is None or term.opcode != "br" or len(term.operands) != 3:
        return None
    cond, if_true, if_false = term.operands
    if not isinstance(cond, Instruction) or cond.opcode != "icmp":
        return None
    pred = cond.predicate
    if pred is None:
        return None
    if if_true in lp.blocks and if_false not in lp.blocks:
        pass
    elif if_false in lp.blocks and if_true not in lp.blocks:
        pred = _NEGATE[pred]
    else:
        return None
    a, n = cond.operands
    for _ in range(2):  # as written, then with the operands swapped
        for iv in lp.ivs:
            phi, _start, step, nxt = iv
            if a is phi or a is nxt:
                if isinstance(n, Instruction) and n.parent in lp.blocks:
                    return None
                if step == 0:
                    return None
                lp.exiting = block
                return iv, n, pred, (step if a is nxt else 0)
        a, n = n, a
        pred = _SWAP[pred]
    return None


class ConstantTrip:
    """A trip count bound known at compile time (see :func:`_constant_bound`)."""

    def __init__(self, count: int):
        self.count = count


#: iterations :func:`_constant_bound` simulates at most
MAX_SIMULATED = 1 << 16


def _constant_bound(cfg, lp):
    """A constant bound of the trip count when exit tests elsewhere than the header or the latch
    compare a constant-start induction variable (plus a constant) with a constant, as LLVM's
    partial unrolling leaves them (``for k in range(13)`` unrolled 4 times tests ``k + 1``, ``k + 2``
    ... in the body): the first iteration at which a test that runs on every iteration (its block
    dominates the latch) exits, plus one. None when no such test exits within MAX_SIMULATED."""
    tests = []
    for block in (b for b in cfg.fn.blocks if b in lp.blocks and any(x not in lp.blocks for x in b.successors)):
        if not dominates(cfg, block, lp.latch):
            continue
        term = block.terminator
        if term is None or term.opcode != "br" or len(term.operands) != 3:
            continue
        cond, if_true, if_false = term.operands
        exit_when = if_true not in lp.blocks
        if exit_when == (if_false not in lp.blocks):
            continue
        for test in _exiting_tests(cond, exit_when):
            a, n = test.operands
            pred = test.predicate
            if pred is None:
                continue
            if _int_value(a) is not None:
                a, n, pred = n, a, _SWAP[pred]
            bound = _int_value(n)
            shifted = _iv_plus_constant(lp, a)
            if bound is None or shifted is None:
                continue
            tests.append((shifted, pred, bound, exit_when))
            lp.capped = lp.capped or test is not cond
    first = None
    for (start, step, bits), pred, bound, exit_when in tests:
        for k in range(MAX_SIMULATED if first is None else first):
            if _compare(pred, start + step * k, bound, bits) == exit_when:
                first = k
                break
    return ConstantTrip(first + 1) if first is not None else None


def _exiting_tests(cond, exit_when: bool) -> list:
    """The ``icmp`` tests each of which leaves the loop alone when its value is ``exit_when``: ``cond``
    itself, or the operands of the ``or`` (exit on true) or ``and`` (exit on false) it is, with
    ``select`` as the logical form of either (``while r > tol and k < 60``)."""
    if not isinstance(cond, Instruction):
        return []
    if cond.opcode == "icmp":
        return [cond]
    one_bit = isinstance(cond.type, T.IntType) and cond.type.bits == 1
    if cond.opcode in ("and", "or") and one_bit:
        parts = cond.operands if (cond.opcode == "or") == exit_when else []
    elif cond.opcode == "select" and one_bit:
        c, t, f = cond.operands  # c or f when t is true; c and t when f is false
        short = t if exit_when else f
        parts = [c, f if exit_when else t] if _int_value(short) == (1 if exit_when else 0) else []
    else:
        parts = []
    return [test for part in parts for test in _exiting_tests(part, exit_when)]


def _iv_plus_constant(lp, v):
    """``(start, step, bits)`` when ``v`` is ``phi + c`` (or ``phi``) of an induction variable of ``lp``
    with a constant start (the value at iteration k is ``start + step * k``), else None."""
    offset = 0
    if isinstance(v, Instruction) and v.opcode == "add" and not any(v is iv[0] for iv in lp.ivs):
        x, c = v.operands
        if _int_value(x) is not None:
            x, c = c, x
        cv = _int_value(c)
        if cv is None:
            return None
        v, offset = x, cv
    t = v.type
    for phi, start, step, nxt in lp.ivs:
        s0 = _int_value(start)
        if s0 is None or not isinstance(t, T.IntType) or t.bits > 64:
            continue
        if v is phi:
            return s0 + offset, step, t.bits
        if v is nxt:
            return s0 + step + offset, step, t.bits
    return None


def _compare(pred: str, value: int, bound: int, bits: int) -> bool:
    """``icmp pred`` of two ``bits``-wide integers given as Python ints."""
    mask = (1 << bits) - 1
    value, bound = value & mask, bound & mask
    if pred[0] == "s":
        value = value - (1 << bits) if value >> (bits - 1) else value
        bound = bound - (1 << bits) if bound >> (bits - 1) else bound
    op = pred[1:] if pred[0] in "su" else pred
    return {"eq": value == bound, "ne": value != bound, "lt": value < bound, "le": value <= bound,
            "gt": value > bound, "ge": value >= bound}[op]


def body_runs_every_iteration(lp) -> bool:
    """Whether every header execution of ``lp`` reaches its latch (the latch holds the exit test)."""
    return lp.exiting is lp.latch and lp.latch is not lp.header


def static_trip_count(trip):
    """The trip count (int) when the start and the bound are constants, the same as :func:`emit_trip_count`."""
    if isinstance(trip, ConstantTrip):
        return trip.count
    (phi, start, step, _), n, pred, off = trip
    s0, n = _int_value(start), _int_value(n)
    if s0 is None or n is None or phi.type.bits > 64:
        return None
    bits = phi.type.bits
    mask = (1 << bits) - 1

    def signed(x):
        x &= mask
        return x - (1 << bits) if x >> (bits - 1) else x

    s0 = (s0 + off) & mask
    n &= mask
    dist = (n - s0) & mask if step > 0 else (s0 - n) & mask
    mag = abs(step)
    sgn = pred[0] == "s"
    a, c = (signed(s0), signed(n)) if sgn else (s0, n)
    enters = {"lt": a < c, "gt": a > c, "le": a <= c, "ge": a >= c}.get(pred[1:])
    up = ("slt", "ult") if step > 0 else ("sgt", "ugt")
    up_eq = ("sle", "ule") if step > 0 else ("sge", "uge")
    if pred == "ne":
        count = (dist // mag + 1) & mask
    elif pred in up:
        count = ((((dist + mag - 1) & mask) // mag + 1) & mask) if enters else 1
    elif pred in up_eq:
        count = ((dist // mag + 2) & mask) if enters else 1
    else:
        return None
    return count


def emit_trip_count(b, trip, val):
    """Emit the trip count (i64) of a loop before its preheader's terminator; ``val`` maps primal values."""
    if isinstance(trip, ConstantTrip):
        return const_int(T.i64, trip.count)
    (phi, start, step, _), n, pred, off = trip
    t = phi.type
    s0 = b.add(val(start), const_int(t, off)) if off else val(start)
    n = val(n)
    # the tested value at iteration k is s0 + step * k; the loop continues while ``s0+step*k pred n``
    dist = b.sub(n, s0) if step > 0 else b.sub(s0, n)  # distance to the bound, in the direction of the steps
    mag, one = const_int(t, abs(step)), const_int(t, 1)

    def steps(d):
        return d if abs(step) == 1 else b.udiv(d, mag)

    up = ("slt", "ult") if step > 0 else ("sgt", "ugt")
    up_eq = ("sle", "ule") if step > 0 else ("sge", "uge")
    if pred == "ne":
        count = b.add(steps(dist), one)
    elif pred in up:  # tests until the first value at or past the bound: ceil(dist / |step|) + 1
        rounded = dist if abs(step) == 1 else b.add(dist, const_int(t, abs(step) - 1))
        count = b.select(b.icmp(pred, s0, n), b.add(steps(rounded), one), one)
    elif pred in up_eq:  # floor(dist / |step|) + 2
        count = b.select(b.icmp(pred, s0, n), b.add(steps(dist), const_int(t, 2)), one)
    else:
        return None
    if t.bits < 64:
        count = b.zext(count, T.i64)
    elif t.bits > 64:
        return None
    return count
