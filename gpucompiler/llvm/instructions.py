"""Instructions and debug records.

An instruction's spelling after ``%x =`` is kept as ``parts``: strings,
``int`` slots into ``operands``, :class:`Type` objects and :class:`MDNode`
references. Operands are tracked :class:`Value` objects, so renaming or
replacing a value changes every instruction that prints it. Parsed
instructions spelled alike share one ``parts`` tuple (and an empty
``debug_records`` tuple); the methods that change them copy first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeAlias

from ..errors import UnsupportedIRError
from . import types as T
from .values import Part, User, Value, quote_name

if TYPE_CHECKING:
    from .metadata import MDNode
    from .module import BasicBlock, Function

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


#: words of an instruction's head that are flags (``atomic`` besides :data:`FLAG_WORDS`)
_HEAD_FLAGS = FLAG_WORDS | {"atomic"}
_NO_FLAGS: frozenset[str] = frozenset()
_NO_WORDS: tuple[str, ...] = ()
_NO_RECORDS: tuple[DebugRecord, ...] = ()
#: opcodes whose spelling may end in ``, align N``
_ALIGNED = frozenset(("load", "store", "alloca", "atomicrmw", "cmpxchg"))
CALLS = frozenset(("call", "invoke", "callbr"))


Fields: TypeAlias = "tuple[tuple[str, ...], str | None, str | None, int | None, T.Type | None, tuple[int, ...]]"
"""flags, predicate, operation, alignment, element type, aggregate indices."""


class CallSite:
    """What a ``call``/``invoke``/``callbr`` spells besides its operands: where the callee is, how
    many value arguments follow it, metadata arguments and the attribute names."""

    __slots__ = ("callee_index", "nargs", "metadata_args", "attributes")

    def __init__(self, callee_index: int, nargs: int, metadata_args: tuple[tuple[int, str], ...] = (),
                 attributes: frozenset[str] = _NO_FLAGS):
        #: operand index of the called value
        self.callee_index = callee_index
        #: the number of value arguments (operands after the callee, before any bundle)
        self.nargs = nargs
        #: ``metadata`` arguments: (the number of value arguments before it, its spelling ``!"x"``)
        self.metadata_args = metadata_args
        #: attribute names spelled on the call, its return and its arguments (``sret``, ``noundef``...)
        self.attributes = attributes


class Instruction(User):
    """One instruction; ``parent`` is its :class:`BasicBlock` (None when detached).

    Besides the spelling (``parts``, kept for printing) an instruction holds typed fields, filled
    when it is made (parsed, built or copied): ``flags``, ``predicate``, ``operation``,
    ``alignment``, ``element_type``, ``aggregate_indices`` and, for calls, ``call``.
    """

    __slots__ = ("opcode", "parts", "parent", "metadata", "debug_records", "flags", "predicate", "operation",
                 "alignment", "element_type", "aggregate_indices", "call")

    def __init__(self, opcode: str, type: T.Type, parts: Sequence[Part], operands: Iterable[Value] = (),
                 name: str = "", call: CallSite | None = None):
        User.__init__(self, type, operands, name)
        self.opcode = opcode
        #: spelling after ``%x = ``: str, int operand slot, Type or MDNode (a tuple may be shared: assign
        #: a new sequence rather than change it in place)
        self.parts = parts
        self.parent: BasicBlock | None = None
        #: attachments ``!dbg !N`` -> {"dbg": MDNode}
        self.metadata: dict[str, MDNode] = {}
        #: ``#dbg_value(...)`` records printed before this instruction (assign a new sequence to change)
        self.debug_records: Sequence[DebugRecord] = _NO_RECORDS
        #: keyword flags in spelling order (``nsw``, ``inbounds``, ``fast``, ``volatile``, ``atomic``, ``tail``...)
        self.flags: tuple[str, ...] = _NO_WORDS
        #: the comparison predicate of ``icmp``/``fcmp`` (``slt``, ``olt``...)
        self.predicate: str | None = None
        #: the operation of ``atomicrmw`` (``add``, ``fadd``, ``xchg``...)
        self.operation: str | None = None
        #: ``align N`` of ``load``/``store``/``alloca``/``atomicrmw``/``cmpxchg``, if spelled
        self.alignment: int | None = None
        #: the source element type of ``getelementptr``, the allocated type of ``alloca``
        self.element_type: T.Type | None = None
        #: the constant index path of ``extractvalue``/``insertvalue``
        self.aggregate_indices: tuple[int, ...] = ()
        #: the call's spelled shape (:class:`CallSite`), None for other opcodes
        self.call: CallSite | None = call if call is not None or opcode not in CALLS else _call_site(parts)
        _decode(self, opcode, parts)

    @classmethod
    def parsed(cls, opcode: str, type: T.Type, parts: Sequence[Part], name: str, call: CallSite | None,
               fields: Fields) -> Instruction:
        """An instruction whose typed fields are known (:meth:`fields` of one spelled alike), for the
        parser to give its operands (:meth:`PendingUses.add`)."""
        self = cls.__new__(cls)
        self.type = type
        self._name = name
        self.ref = quote_name("%", name) if name else None
        self.opcode, self.parts, self.parent, self.call = opcode, parts, None, call
        self.metadata = {}
        self.debug_records = _NO_RECORDS
        self.flags, self.predicate, self.operation, self.alignment, self.element_type, self.aggregate_indices = fields
        return self

    def fields(self) -> Fields:
        """The typed fields decoded from the spelling, as :meth:`parsed` takes them."""
        return self.flags, self.predicate, self.operation, self.alignment, self.element_type, self.aggregate_indices

    def detached_copy(self, name: str | None = None) -> Instruction:
        """A copy without operands, block or metadata (operands are appended by the caller)."""
        c = Instruction.__new__(Instruction)
        User.__init__(c, self.type, (), self.name if name is None else name)
        c.opcode, c.parts, c.parent, c.metadata, c.debug_records = self.opcode, tuple(self.parts), None, {}, _NO_RECORDS
        c.flags, c.predicate, c.operation = self.flags, self.predicate, self.operation
        c.alignment, c.element_type, c.aggregate_indices = self.alignment, self.element_type, self.aggregate_indices
        c.call = self.call
        return c

    # -- queries -------------------------------------------------------------
    @property
    def is_terminator(self) -> bool:
        return self.opcode in TERMINATORS

    @property
    def is_volatile(self) -> bool:
        """A ``volatile`` memory access (the optimiser keeps it as written)."""
        return "volatile" in self.flags

    @property
    def is_atomic(self) -> bool:
        """An ``atomic`` load or store."""
        return "atomic" in self.flags

    def has_attribute(self, name: str) -> bool:
        """Whether a call spells the attribute ``name`` (``sret``, ``byval``...) on itself, its return
        or an argument."""
        return self.call is not None and name in self.call.attributes

    @property
    def successors(self) -> list[BasicBlock]:
        """Blocks this terminator may branch to, in operand order."""
        from .module import BasicBlock

        return list(dict.fromkeys(op for op in self.operands if type(op) is BasicBlock))

    @property
    def incoming(self) -> list[tuple[Value, Value]]:
        """``phi`` incoming ``(value, block)`` pairs."""
        ops = self.operands
        return [(ops[i], ops[i + 1]) for i in range(0, len(ops), 2)]

    @property
    def callee(self) -> Value | None:
        """The called value of ``call``/``invoke``/``callbr``."""
        call = self.call
        return self.operands[call.callee_index] if call is not None else None

    @property
    def args(self) -> list[Value]:
        """Call arguments (operands after the callee, before any bundle)."""
        call = self.call
        if call is None:
            return []
        k = call.callee_index
        return self.operands[k + 1 : k + 1 + call.nargs]

    def callee_slot(self) -> int:
        """The operand index of the called value."""
        if self.call is None:
            raise UnsupportedIRError(f"{self.opcode} without a callee")
        return self.call.callee_index

    # -- per-kind accessors ----------------------------------------------------
    @property
    def pointer_operand(self) -> Value | None:
        """The address of ``load``/``store``/``getelementptr``/``atomicrmw``/``cmpxchg``."""
        op = self.opcode
        if op == "store":
            return self.operands[1]
        if op in ("load", "getelementptr", "atomicrmw", "cmpxchg"):
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

    @property
    def source_element_type(self) -> T.Type | None:
        """The source element type of ``getelementptr``."""
        return self.element_type if self.opcode == "getelementptr" else None

    @property
    def indices(self) -> list[Value]:
        """The index operands of ``getelementptr``."""
        return self.operands[1:] if self.opcode == "getelementptr" else []

    @property
    def allocated_type(self) -> T.Type | None:
        """The element type of ``alloca``."""
        return self.element_type if self.opcode == "alloca" else None

    def set_operand_type(self, index: int, ty: T.Type) -> None:
        """Spell operand ``index``'s type as ``ty`` (e.g. a pointer moved to another address space)."""
        parts = self._own_parts()
        k = parts.index(index, 1) if type(parts[0]) is str else parts.index(index)
        while not isinstance(parts[k], T.Type):
            k -= 1
        parts[k] = ty

    def add_flags(self, *words: str) -> None:
        """Spell keyword flags (``fast``, ``nsw``...) after the opcode; words already present stay once.
        On calls the flags follow ``call`` (fast-math flags of a call)."""
        head = self.parts[0]
        if type(head) is not str:
            raise ValueError(f"add_flags on {self.opcode} spelled without a head")
        tokens = head.split()
        at = tokens.index("call") + 1 if self.opcode == "call" else 1
        new = [w for w in words if w not in tokens[at:]]
        if new:
            tokens[at:at] = new
            self._own_parts()[0] = " ".join(tokens) + (" " if head.endswith(" ") else "")
            self.flags = tuple(w for w in tokens if w in _HEAD_FLAGS)

    def add_incoming(self, value: Value, block: BasicBlock) -> None:
        """Append ``[value, %block]`` to a ``phi``."""
        if self.opcode != "phi":
            raise ValueError(f"add_incoming on {self.opcode}")
        parts = self._own_parts()
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
    def function(self) -> Function | None:
        """The function holding this instruction (None when detached)."""
        return self.parent.parent if self.parent is not None else None

    # -- mutation ------------------------------------------------------------
    def _own_parts(self) -> list[Part]:
        """``parts`` as a list of this instruction's own (copied first if shared)."""
        parts = self.parts
        if isinstance(parts, list):
            return parts
        own: list[Part] = list(parts)
        self.parts = own
        return own

    def erase(self) -> None:
        """Remove from the block and drop operands; the value must be unused."""
        uses = self.use_dict()
        if uses:
            users = ", ".join(sorted({getattr(u.user, "opcode", "?") for u in uses}))
            raise ValueError(f"cannot erase {self!r}: still used by {len(uses)} use(s) ({users})")
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
            insts[i].debug_records = [*self.debug_records, *insts[i].debug_records]
        else:
            for r in self.debug_records:
                r.drop_operands()
        self.debug_records = _NO_RECORDS
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


def _decode(inst: Instruction, opcode: str, parts: Sequence[Part]) -> None:
    """Fill the typed fields of ``inst`` from its spelling (once, when it is made)."""
    head = parts[0] if parts and type(parts[0]) is str else ""
    words = head.split()
    if len(words) > 1:
        flags = tuple(w for w in words if w in _HEAD_FLAGS)
        if flags:
            inst.flags = flags
        if opcode in ("icmp", "fcmp"):
            inst.predicate = next(w for w in words[1:] if w not in FLAG_WORDS)
        elif opcode == "atomicrmw":
            inst.operation = next(w for w in words[1:] if w != "volatile")
    if opcode in _ALIGNED:
        tail = parts[-1]
        if type(tail) is str:
            k = tail.rfind("align ")
            if k >= 0:
                inst.alignment = int(tail[k + 6 :].split(",", 1)[0])
        if opcode == "alloca":
            inst.element_type = _first_type(parts)
    elif opcode == "getelementptr":
        inst.element_type = _first_type(parts)
    elif opcode in ("extractvalue", "insertvalue"):
        tail = parts[-1]
        if type(tail) is str:
            inst.aggregate_indices = tuple(int(w) for w in tail.replace(",", " ").split())


def _first_type(parts: Sequence[Part]) -> T.Type:
    return next(p for p in parts if isinstance(p, T.Type))


def _call_site(parts: Sequence[Part]) -> CallSite:
    """The :class:`CallSite` of a call's spelling (the parser and the builder pass theirs)."""
    k = next(p for p in parts if type(p) is int)
    depth, n, seen = 0, 0, False
    for p in parts[parts.index(k) + 1 :]:
        if type(p) is str:
            for ch in p:
                if ch == "(":
                    depth += 1
                    seen = True
                elif ch == ")":
                    depth -= 1
            if seen and depth == 0:
                break
        elif type(p) is int and depth == 1:
            n += 1
    words: set[str] = set()
    for p in parts:
        if type(p) is str:
            words.update(_ATTRIBUTE.findall(p))
    return CallSite(k, n, (), frozenset(words))


_ATTRIBUTE = re.compile(r"(?<![!%@#\w.\"-])([a-z_][a-z_0-9]*)(?=[\s(),]|$)")


class DebugRecord(User):
    """``#dbg_value(...)``, ``#dbg_declare(...)``, ``#dbg_assign(...)``, ``#dbg_label(...)``."""

    __slots__ = ("kind", "parts")

    def __init__(self, kind: str, parts: list[Part], operands: Iterable[Value] = ()):
        User.__init__(self, T.void, operands)
        self.kind, self.parts = kind, parts
