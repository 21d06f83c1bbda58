"""Analyses computed before any rule runs: control flow, activity, memory types.

* :class:`CFG`: reverse post-order, loops, dominators, blocks that run once.
* :class:`Activity`: which values carry a derivative (``is_constant_value``),
  which pointers have a shadow, which instructions need a rule
  (``is_constant_instruction``). Forward propagation from the active
  arguments to a fixed point; across calls a call is active when any
  argument is.
* :func:`memory_type`: the scalar type a pointer's memory holds, as seen by
  the loads, stores and GEPs reached from its base object.

Enzyme's rule holds here: an instruction the engine does not model is an
``ADError`` naming it (:data:`MODELED` lists the LangRef instructions it
models and how; :data:`NOT_MODELED` the rest), never inactive by default.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from gpucompiler.graphs import immediate_dominators, postorder, strongly_connected_components
from gpucompiler.llvm import Argument, Function, Instruction, types as T

from .emit import has_float, is_float_like
from . import allocators
from .errors import unsupported
from .helpers import PREFIX

if TYPE_CHECKING:
    from .typeinfo import MemoryTypes

class ArgKind(enum.Enum):
    """How a differentiated function takes one argument (Enzyme's ``enzyme_const`` /
    ``enzyme_dup`` / ``enzyme_out``)."""

    CONST = "const"
    """no derivative"""
    DUP = "dup"
    """a pointer with a shadow (the derivative lives in the shadow's memory)"""
    OUT = "out"
    """an active scalar (its adjoint is returned)"""

    @property
    def letter(self) -> str:
        """One letter for generated names: ``c``, ``d``, ``o``."""
        return self.value[0]


CONST, DUP, OUT = ArgKind.CONST, ArgKind.DUP, ArgKind.OUT

#: the engine's own block allocator (malloc that traps on failure), left as a call where an outer derivative
#: sees an inner one's code before the inliner ran (AD in the pipeline at -O0)
TAPE_ALLOC = PREFIX + "tape_alloc"
ALLOCATORS = frozenset(("malloc", "calloc", "realloc", "_Znwm", "_Znam", TAPE_ALLOC))

_INT = "integer result: carries no derivative (float bits reach integers only through checked bitcasts and loads)"
#: Every instruction of the LLVM LangRef the engine models, and how (``tests/enzyme/test_opcode_coverage.py``
#: holds this table against the LangRef's list and the rule tables).
MODELED: dict[str, str] = {
    # terminators
    "ret": "control flow; seeds the adjoint of the returned value",
    "br": "control flow (the reverse sweep branches back along the recorded edge)",
    "switch": "control flow (as br)",
    "unreachable": "control flow",
    # unary and binary floating-point operations
    **{op: "derivative rule (rules/arith.py)" for op in "fneg fadd fsub fmul fdiv frem".split()},
    # integer binary and bitwise operations
    **{op: _INT for op in "add sub mul udiv sdiv urem srem shl lshr ashr and or xor".split()},
    # vector operations
    **{op: "derivative rule lane by lane (rules/arith.py)" for op in "extractelement insertelement shufflevector".split()},
    # aggregate operations
    "extractvalue": "derivative rule member by member (rules/aggregate.py)",
    "insertvalue": "derivative rule member by member (rules/aggregate.py)",
    # memory
    "alloca": "a shadow allocation when the memory may hold floats or pointers",
    "load": "shadow load / adjoint accumulation into the shadow (memory.py)",
    "store": "shadow store / adjoint taken from the shadow (memory.py)",
    "fence": "orders memory only: no derivative",
    "cmpxchg": "on memory with a shadow: ADError (gpu.py)",
    "atomicrmw": "fadd/fsub into memory with a shadow (gpu.py); other operations on it: ADError",
    "getelementptr": "the same address computation on the shadow",
    # conversions
    **{op: _INT for op in "trunc zext sext fptoui fptosi".split()},
    "uitofp": "from an integer: no derivative",
    "sitofp": "from an integer: no derivative",
    "fptrunc": "derivative rule (rules/arith.py)",
    "fpext": "derivative rule (rules/arith.py)",
    "ptrtoint": "an integer; an address with a shadow stored or rebuilt from it is an ADError (sweep.py)",
    "inttoptr": "a pointer without shadow; one rebuilt from an address with a shadow is an ADError (sweep.py)",
    "bitcast": "derivative rule; an active float's bits as an integer are an ADError",
    "addrspacecast": "the same cast of the shadow",
    # other operations
    "icmp": "a boolean: no derivative",
    "fcmp": "a boolean: no derivative",
    "phi": "a phi of shadows / tangents; adjoints go back along the incoming edge",
    "select": "derivative rule; a select of pointers selects their shadows",
    "freeze": "value-preserving: the shadow, tangent or adjoint passes through unchanged",
    "call": "per callee (calls.py): math rules, allocation, memory intrinsics, defined functions "
            "differentiated; an unknown callee with a derivative flowing in or out is an ADError",
}
#: LangRef instructions the engine does not model: exceptions and funclets, indirect branches, variadic
#: argument reads. A function to differentiate that contains one is an ADError naming it.
NOT_MODELED = frozenset("indirectbr invoke callbr resume catchswitch catchret cleanupret va_arg landingpad "
                        "catchpad cleanuppad".split())


class CFG:
    """Blocks of a function: order, loops, dominance."""

    def __init__(self, fn):
        self.fn = fn
        succ: dict = {}  # block -> distinct successors; blocks in order of first appearance
        for b in fn.blocks:
            succ[b] = list(dict.fromkeys(b.successors))
            for s in succ[b]:
                succ.setdefault(s, [])
        pred: dict = {b: [] for b in succ}
        for b in fn.blocks:
            for s in succ[b]:
                pred[s].append(b)
        #: block -> its distinct successors (in the terminator's order)
        self.succ = succ
        self._pred = pred
        entry = fn.entry
        self.rpo = postorder(succ, entry)[::-1]
        reachable = set(self.rpo)
        self.rpo += [b for b in fn.blocks if b not in reachable]
        self.in_loop = set()
        for scc in strongly_connected_components(succ):
            if len(scc) > 1:
                self.in_loop |= scc
            else:
                (b,) = scc
                if b in succ[b]:
                    self.in_loop.add(b)
        self.idom = immediate_dominators(succ, entry)
        #: blocks reachable from the entry
        self.reachable = reachable
        rets = [b for b in fn.blocks if b.terminator is not None and b.terminator.opcode == "ret"]
        self.exit = rets[0] if len(rets) == 1 else None
        once = set()
        if self.exit is not None and self.exit in self.idom:
            b = self.exit
            while True:
                if b not in self.in_loop:
                    once.add(b)
                nxt = self.idom[b]
                if nxt is b:
                    break
                b = nxt
        #: blocks that run exactly once on every path to the return
        self.once = once

    def preds(self, block):
        """Predecessors in a fixed order (function block order)."""
        return list(self._pred[block])

    def deciding_branch(self, block):
        """``(cond, k_true, k_false)`` when the conditional branch of ``block``'s immediate dominator decides
        which of its two predecessors (indices in :meth:`preds`) the flow came from: each is the dominator
        itself (the edge of one side) or reachable from one side of the branch only, without passing the
        dominator again (an ``if`` without ``else``, a diamond, a loop behind a guard); else None."""
        preds = self.preds(block)
        d = self.idom.get(block)
        if len(preds) != 2 or d is None or d is block or block not in self.reachable:
            return None
        term = d.terminator
        if term is None or term.opcode != "br" or len(term.operands) != 3:
            return None
        cond, if_true, if_false = term.operands
        if not isinstance(cond, (Instruction, Argument)) or if_true is if_false:
            return None
        sides = []
        for p in preds:
            if p is d:
                sides.append(if_true is block)
                continue
            on_true, on_false = p in self._reach(if_true, d), p in self._reach(if_false, d)
            if on_true == on_false:
                return None
            sides.append(on_true)
        if sides[0] == sides[1]:
            return None
        k = sides.index(True)
        return cond, k, 1 - k

    def _reach(self, start, barrier) -> set:
        """Blocks reachable from ``start`` (itself included) on paths that do not pass ``barrier``."""
        if start is barrier:
            return set()
        seen, stack = {start}, [start]
        while stack:
            for s in self.succ[stack.pop()]:
                if s is not barrier and s not in seen:
                    seen.add(s)
                    stack.append(s)
        return seen


def holds_derivative_data(t: T.Type) -> bool:
    """Whether memory of type ``t`` may hold floats or pointers."""
    k = t.kind
    if k in ("float", "ptr"):
        return True
    if isinstance(t, (T.VectorType, T.ArrayType)):
        return holds_derivative_data(t.element)
    if isinstance(t, T.StructType):
        return t.elements is None or any(holds_derivative_data(e) for e in t.elements)
    return False


def callee_name(inst) -> str | None:
    c = inst.callee
    return getattr(c, "name", None) if c is not None and c.sigil == "@" else None


class Activity:
    """Activity of one function for one argument signature (``kinds``, one per argument)."""

    def __init__(self, fn, kinds, inactive_calls=frozenset(), shadowed_constants=(), mem=None):
        self.fn = fn
        #: byte-level type analysis (:class:`~.typeinfo.MemoryTypes`): memory declared as integers
        #: that receives floats or pointers (a memcpy, an integer copy) has a shadow too
        self.mem: MemoryTypes | None = mem
        self.kinds = list(kinds)
        self.active: set = set()
        #: pointers with a shadow: arguments, instructions, and globals given one (``shadowed_constants``)
        self.shadowed: set = set(shadowed_constants)
        for a, k in zip(fn.args, self.kinds):
            if k == OUT and is_float_like(a.type):
                self.active.add(a)
            elif k == DUP:
                (self.shadowed if a.type.kind == "ptr" else self.active).add(a)
        self._inactive_calls = inactive_calls
        self._run()

    # -- queries -------------------------------------------------------------
    def is_constant_value(self, v) -> bool:
        """No derivative flows through ``v`` (an inactive float, an integer, a pointer without shadow)."""
        return v not in self.active and v not in self.shadowed

    def is_active(self, v) -> bool:
        return v in self.active

    def has_shadow(self, v) -> bool:
        return v in self.shadowed

    def is_constant_instruction(self, inst) -> bool:
        """``inst`` needs no derivative rule: it neither produces a derivative nor moves one through memory."""
        if not self.is_constant_value(inst):
            return False
        op = inst.opcode
        if op == "store":
            return not self.has_shadow(inst.pointer_operand) and not self.is_active(inst.value_operand)
        if op == "call":
            return not any(not self.is_constant_value(a) for a in inst.args)
        return True

    # -- propagation ---------------------------------------------------------
    def _run(self) -> None:
        insts = list(self.fn.instructions())
        for inst in insts:
            if inst.opcode not in MODELED:
                what = "does not model" if inst.opcode in NOT_MODELED else "does not know"
                raise unsupported(f"the AD engine {what} the instruction '{inst.opcode}'", inst, self.fn)
        changed = True
        while changed:
            changed = False
            for inst in insts:
                if inst in self.active or inst in self.shadowed:
                    continue
                kind = self._classify(inst)
                if kind == "active":
                    self.active.add(inst)
                    changed = True
                elif kind == "shadow":
                    self.shadowed.add(inst)
                    changed = True

    def _holds_floats(self, p) -> bool:
        """Whether the bytes of ``p``'s memory are floats or pointers somewhere (type analysis)."""
        return self.mem is not None and any(t.kind in ("float", "ptr") for t in self.mem.types_at(p, None))

    def _any_varied(self, values) -> bool:
        return any(v in self.active or v in self.shadowed for v in values)

    def _classify(self, inst) -> str | None:
        t = inst.type
        op = inst.opcode
        if t.kind == "vector" and t.scalar.kind == "ptr":  # the vectorizers' lanes of addresses
            return "shadow" if self._any_varied(inst.operands) else None
        if t.kind == "ptr":
            return self._classify_pointer(inst)
        if not is_float_like(t):
            if t.kind in ("struct", "array"):
                return self._classify_aggregate(inst)
            # integers (and void, tokens): no derivative. Float bits reach an integer only through a bitcast
            # (an ADError when active), an integer load of memory holding floats (retyped or an ADError) or
            # an intrinsic of an integer result (calls.py): nothing is lost here.
            return None
        if op in ("sitofp", "uitofp"):
            return None
        if op == "load":
            return "active" if inst.pointer_operand in self.shadowed else None
        if op == "call":
            name = callee_name(inst)
            if name in self._inactive_calls:
                return None
            return "active" if self._any_varied(inst.args) else None
        if op == "phi":
            return "active" if any(v in self.active for v, _ in inst.incoming) else None
        if op in ("atomicrmw", "cmpxchg"):  # reads memory: active when it has a shadow (gpu.py's rules)
            return "active" if self._any_varied(inst.operands) else None
        # arithmetic, casts, select, freeze, vector and aggregate reads: active from an active operand
        return "active" if any(v in self.active for v in inst.operands) else None

    def _classify_pointer(self, inst) -> str | None:
        op = inst.opcode
        if op == "alloca":  # or a byte buffer merged with memory that has a shadow (an inline tape)
            if holds_derivative_data(inst.allocated_type) or self._holds_floats(inst) or any(
                    isinstance(u, Instruction) and u.opcode in ("phi", "select") and self._any_varied(u.operands)
                    for u in inst.users):
                return "shadow"
            return None
        if op in ("getelementptr", "bitcast", "addrspacecast", "freeze", "extractvalue"):
            return "shadow" if inst.operands[0] in self.shadowed else None
        if op == "phi":
            return "shadow" if any(v in self.shadowed for v, _ in inst.incoming) else None
        if op == "select":
            return "shadow" if inst.operands[1] in self.shadowed or inst.operands[2] in self.shadowed else None
        if op == "load":
            return "shadow" if inst.pointer_operand in self.shadowed else None
        if op == "call":
            name = callee_name(inst)
            target = allocators.initial_callee(inst) if name is None else None
            if name in ALLOCATORS or (target is not None and target.name in ALLOCATORS):
                return "shadow"
            if isinstance(inst.callee, Function) and allocators.returns_allocation(inst.callee, ALLOCATORS):
                return "shadow"
            if name in self._inactive_calls:
                return None
            return "shadow" if self._any_varied(inst.args) else None
        if op == "inttoptr":  # one rebuilt from an address with a shadow is an ADError (sweep.py)
            return None
        if not self._any_varied(inst.operands):
            return None  # built from values without derivative (a constant, memory without shadow)
        raise unsupported(f"a pointer made by '{op}' from values that carry derivatives: the AD engine has no "
                          "rule giving it a shadow", inst, self.fn)

    def _classify_aggregate(self, inst) -> str | None:
        """Structs and arrays: active when they hold floats and one flows in. One holding pointers (an
        array's descriptor) has a shadow when a pointer with a shadow is put in it (the same aggregate with
        the pointers' shadows: the pointers taken out have theirs); one holding floats and pointers with
        shadows, or made by a call, is an ADError (not modeled)."""
        t, op = inst.type, inst.opcode
        operands = list(inst.args) if op == "call" else list(inst.operands)
        if op == "phi":
            operands = [v for v, _ in inst.incoming]
        elif op == "select":
            operands = operands[1:]
        shadowed = any(o in self.shadowed for o in operands) or (op == "load" and inst.pointer_operand in self.shadowed)
        if holds_pointer(t) and shadowed:
            if op == "call" and callee_name(inst) in self._inactive_calls:
                return None
            if has_float(t) or op not in ("insertvalue", "extractvalue", "phi", "select", "freeze", "load"):
                raise unsupported(f"a {t} holding pointers made from values with shadows ('{op}'): shadows of "
                                  "pointers inside aggregates are modeled for aggregates without floats, built "
                                  "and taken apart in the function", inst, self.fn)
            return "shadow"
        if not self._any_varied(operands) or not has_float(t):
            return None
        if op == "call" and callee_name(inst) in self._inactive_calls:
            return None
        if op in ("call", "insertvalue", "extractvalue", "load", "phi", "select", "freeze", "atomicrmw", "cmpxchg"):
            return "active"  # atomics and cmpxchg on memory with a shadow: gpu.py's rules raise
        return None


def holds_pointer(t: T.Type) -> bool:
    """Whether a value of type ``t`` holds a pointer."""
    if t.kind == "ptr":
        return True
    if isinstance(t, (T.VectorType, T.ArrayType)):
        return holds_pointer(t.element)
    if isinstance(t, T.StructType):
        return any(holds_pointer(e) for e in t.elements or ())
    return False


def _base_object(p):
    seen = set()
    while isinstance(p, Instruction) and p.opcode in ("getelementptr", "bitcast", "addrspacecast", "freeze") and p not in seen:
        seen.add(p)
        p = p.operands[0]
    return p


def memory_type(p) -> T.Type | None:
    """The scalar type held where ``p`` points: the float type if any access of the base object
    reads or writes floats, else a pointer type if pointers, else an integer type, else None."""
    base = _base_object(p)
    found: set = set()
    if isinstance(base, Instruction) and base.opcode == "alloca":
        _collect_type(base.allocated_type, found)
    work, seen = [base], set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for u in v.users:
            if not isinstance(u, Instruction):
                continue
            if u.opcode in ("getelementptr", "bitcast", "addrspacecast", "freeze", "phi", "select"):
                if u.opcode == "getelementptr":
                    _collect_type(u.source_element_type, found)
                work.append(u)
            elif u.opcode == "load" and u.pointer_operand is v:
                _collect_type(u.type, found)
            elif u.opcode == "store" and u.pointer_operand is v:
                _collect_type(u.operands[0].type, found)
    for kind in ("float", "ptr", "int"):
        ts = [t for t in found if t.kind == kind]
        if ts:
            return max(ts, key=str) if kind != "float" else (T.double if T.double in ts else ts[0])
    return None


def _collect_type(t: T.Type | None, out: set) -> None:
    if t is None:
        return
    if isinstance(t, (T.VectorType, T.ArrayType)):
        _collect_type(t.element, out)
    elif isinstance(t, T.StructType):
        for e in t.elements or ():
            _collect_type(e, out)
    elif t.kind in ("float", "ptr", "int"):
        out.add(t)


def is_argument(v) -> bool:
    return isinstance(v, Argument)
