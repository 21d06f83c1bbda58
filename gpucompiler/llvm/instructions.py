"""Instructions and debug records.

An instruction's spelling after ``%x =`` is kept as ``parts``: strings,
``int`` slots into ``operands``, :class:`Type` objects and :class:`MDNode`
references. Operands are tracked :class:`Value` objects, so renaming or
replacing a value changes every instruction that prints it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UnsupportedIRError
from . import types as T
from .values import User, Value

if TYPE_CHECKING:
    from .module import BasicBlock

TERMINATORS = frozenset(
    "ret br switch indirectbr invoke resume unreachable cleanupret catchret catchswitch callbr".split()
)
BINARY = frozenset("add sub mul udiv sdiv urem srem shl lshr ashr and or xor fadd fsub fmul fdiv frem".split())
CASTS = frozenset(
    "trunc zext sext fptrunc fpext fptoui fptosi uitofp sitofp ptrtoint ptrtoaddr inttoptr bitcast "
    "addrspacecast".split())
FLAG_WORDS = frozenset(
    "nuw nsw exact disjoint nneg samesign inbounds nusw volatile weak tail musttail notail "
    "fast nnan ninf nsz arcp contract afn reassoc".split()
)


class Instruction(User):
    """One instruction; ``parent`` is its :class:`BasicBlock` (None when detached)."""

    __slots__ = ("opcode", "parts", "parent", "metadata", "debug_records")

    def __init__(self, opcode: str, type: T.Type, parts: list, operands=(), name: str = ""):
        User.__init__(self, type, operands, name)
        self.opcode = opcode
        #: spelling after ``%x = ``: str, int operand slot, Type or MDNode
        self.parts = parts
        self.parent: BasicBlock | None = None
        #: attachments ``!dbg !N`` -> {"dbg": MDNode}
        self.metadata: dict = {}
        #: ``#dbg_value(...)`` records printed before this instruction
        self.debug_records: list[DebugRecord] = []

    # -- queries -------------------------------------------------------------
    @property
    def is_terminator(self) -> bool:
        return self.opcode in TERMINATORS

    @property
    def flags(self) -> list[str]:
        """Keyword flags spelled in the instruction (``nsw``, ``inbounds``, ``fast``...)."""
        return [w for p in self.parts if type(p) is str for w in p.replace(",", " ").split() if w in FLAG_WORDS]

    @property
    def _head(self) -> list[str]:
        """The words of the spelling before the first operand (``load volatile``, ``store atomic``...)."""
        first = self.parts[0] if self.parts else ""
        return first.split() if type(first) is str else []

    @property
    def is_volatile(self) -> bool:
        """A ``volatile`` load or store (the optimiser keeps it as written)."""
        return "volatile" in self._head

    @property
    def is_atomic(self) -> bool:
        """An ``atomic`` load or store."""
        return "atomic" in self._head

    def has_attribute(self, name: str) -> bool:
        """Whether a parameter or call attribute ``name`` (``sret``, ``byval``...) is spelled."""
        return any(type(p) is str and (f"{name}(" in p or f" {name} " in f" {p} ") for p in self.parts)

    @property
    def predicate(self) -> str | None:
        """The comparison predicate of ``icmp``/``fcmp``."""
        if self.opcode not in ("icmp", "fcmp"):
            return None
        words = [w for w in self.parts[0].split() if w not in FLAG_WORDS]
        return words[1]

    @property
    def successors(self) -> list:
        """Blocks this terminator may branch to, in operand order."""
        from .module import BasicBlock

        return list(dict.fromkeys(op for op in self.operands if type(op) is BasicBlock))

    @property
    def incoming(self) -> list[tuple[Value, object]]:
        """``phi`` incoming ``(value, block)`` pairs."""
        ops = self.operands
        return [(ops[i], ops[i + 1]) for i in range(0, len(ops), 2)]

    @property
    def callee(self) -> Value | None:
        """The called value of ``call``/``invoke``/``callbr``."""
        if self.opcode not in ("call", "invoke", "callbr"):
            return None
        return self.operands[self.callee_slot()]

    @property
    def args(self) -> list[Value]:
        """Call arguments (operands after the callee, before any bundle)."""
        k = self.callee_slot()
        return self.operands[k + 1 : k + 1 + self._nargs()]

    def callee_slot(self) -> int:
        for p in self.parts:
            if type(p) is int:
                return p
        raise UnsupportedIRError(f"{self.opcode} without a callee")

    def _nargs(self) -> int:
        k = self.callee_slot()
        depth, n, seen = 0, 0, False
        for p in self.parts[self.parts.index(k) + 1 :]:
            if type(p) is str:
                for ch in p:
                    if ch == "(":
                        depth += 1
                        seen = True
                    elif ch == ")":
                        depth -= 1
                if seen and depth == 0:
                    return n
            elif type(p) is int and depth == 1:
                n += 1
        return n

    # -- per-kind accessors ----------------------------------------------------
    @property
    def pointer_operand(self) -> Value | None:
        """The address of ``load``/``store``/``getelementptr``/``atomicrmw``/``cmpxchg``."""
        if self.opcode in ("load", "getelementptr"):
            return self.operands[0]
        if self.opcode == "store":
            return self.operands[1]
        if self.opcode in ("atomicrmw", "cmpxchg"):
            return self.operands[0]
        return None

    @property
    def value_operand(self) -> Value | None:
        """The stored value of ``store`` (the operand of ``atomicrmw``)."""
        if self.opcode == "store":
            return self.operands[0]
        if self.opcode == "atomicrmw":
            return self.operands[1]
        return None

    def _first_type(self) -> T.Type:
        return next(p for p in self.parts if isinstance(p, T.Type))

    @property
    def source_element_type(self) -> T.Type | None:
        """The source element type of ``getelementptr``."""
        return self._first_type() if self.opcode == "getelementptr" else None

    @property
    def indices(self) -> list[Value]:
        """The index operands of ``getelementptr``."""
        return self.operands[1:] if self.opcode == "getelementptr" else []

    @property
    def aggregate_indices(self) -> tuple[int, ...]:
        """The constant index path of ``extractvalue``/``insertvalue``."""
        if self.opcode not in ("extractvalue", "insertvalue"):
            return ()
        tail = self.parts[-1]
        return tuple(int(w) for w in tail.replace(",", " ").split()) if type(tail) is str else ()

    @property
    def allocated_type(self) -> T.Type | None:
        """The element type of ``alloca``."""
        return self._first_type() if self.opcode == "alloca" else None

    @property
    def alignment(self) -> int | None:
        """``align N`` of ``load``/``store``/``alloca``, if spelled."""
        for p in self.parts:
            if type(p) is str and "align " in p:
                words = p.replace(",", " ").split()
                for k, w in enumerate(words[:-1]):
                    if w == "align":
                        return int(words[k + 1])
        return None

    def add_flags(self, *words: str) -> None:
        """Spell keyword flags (``fast``, ``nsw``...) after the opcode; words already present stay once.
        On calls the flags follow ``call`` (fast-math flags of a call)."""
        head = self.parts[0]
        tokens = head.split()
        at = tokens.index("call") + 1 if self.opcode == "call" else 1
        new = [w for w in words if w not in tokens[at:]]
        if new:
            tokens[at:at] = new
            self.parts[0] = " ".join(tokens) + (" " if head.endswith(" ") else "")

    def add_incoming(self, value: Value, block) -> None:
        """Append ``[value, %block]`` to a ``phi``."""
        if self.opcode != "phi":
            raise ValueError(f"add_incoming on {self.opcode}")
        parts = self.parts
        sep = ", [ " if len(self.operands) else " [ "
        if type(parts[-1]) is str:
            parts[-1] += sep
        else:
            parts.append(sep)
        parts.append(self.append_operand(value))
        parts.append(", ")
        parts.append(self.append_operand(block))
        parts.append(" ]")

    @property
    def function(self):
        return self.parent.parent if self.parent is not None else None

    # -- mutation ------------------------------------------------------------
    def erase(self) -> None:
        """Remove from the block and drop operands; the value must be unused."""
        if self._uses:
            users = ", ".join(sorted({getattr(u.user, "opcode", "?") for u in self._uses}))
            raise ValueError(f"cannot erase {self!r}: still used by {len(self._uses)} use(s) ({users})")
        self.remove_from_parent()
        self.drop_operands()

    def remove_from_parent(self) -> None:
        """Detach from the block (operands stay); debug records move to the next instruction."""
        block = self.parent
        if block is None:
            return
        insts = block.instructions
        i = insts.index(self)
        del insts[i]
        if self.debug_records and i < len(insts):
            insts[i].debug_records[:0] = self.debug_records
        else:
            for r in self.debug_records:
                r.drop_operands()
        self.debug_records = []
        self.parent = None

    def insert_before(self, other: Instruction) -> None:
        """Insert ``self`` (detached) just before ``other``."""
        assert other.parent is not None, "insert before a detached instruction"
        insts = other.parent.instructions
        insts.insert(insts.index(other), self)
        self.parent = other.parent

    def insert_after(self, other: Instruction) -> None:
        """Insert ``self`` (detached) just after ``other``."""
        assert other.parent is not None, "insert after a detached instruction"
        insts = other.parent.instructions
        insts.insert(insts.index(other) + 1, self)
        self.parent = other.parent

    def __repr__(self) -> str:
        return f"<Instruction {self.ref or ''} {self.opcode}: {self.type}>"


class DebugRecord(User):
    """``#dbg_value(...)``, ``#dbg_declare(...)``, ``#dbg_assign(...)``, ``#dbg_label(...)``."""

    __slots__ = ("kind", "parts")

    def __init__(self, kind: str, parts: list, operands=()):
        User.__init__(self, T.void, operands)
        self.kind, self.parts = kind, parts
