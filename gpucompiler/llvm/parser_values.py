"""Parsing of types, values, constants and generic operand lists.

The parser keeps the current line's tokens in ``self.toks`` and a cursor
``self.i``. Spellings are collected by an :class:`Emitter` into a part list
(strings, operand slots, types, metadata and attribute-group references).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn, TypeAlias, TypeVar

from ..errors import IRParseError, UnsupportedIRError
from . import types as T
from .lexer import unquote
from .metadata import AttributeGroup, MDNode
from .values import (ConstantAggregate, ConstantExpr, InlineAsm, Part, PendingUses, Placeholder, User, Value,
                     constant)

if TYPE_CHECKING:
    from .module import BasicBlock, Module

_NO_SPACE_BEFORE = frozenset(",):")
_NO_SPACE_AFTER = frozenset("(!")
CONST_WORDS = frozenset("true false null undef poison zeroinitializer none".split())
CONSTEXPR = frozenset(
    "getelementptr trunc zext sext fptrunc fpext fptoui fptosi uitofp sitofp ptrtoint ptrtoaddr inttoptr "
    "bitcast addrspacecast add sub mul shl xor and or lshr ashr udiv sdiv icmp fcmp select extractelement "
    "insertelement shufflevector splat ptrauth dso_local_equivalent no_cfi blockaddress".split()
)
VALUE_WORDS = CONST_WORDS | CONSTEXPR | {"asm"}
#: one-token types: ``ptr`` (when no ``addrspace`` follows), the simple types and the common integers
_SCALAR_TYPES: dict[str, T.Type] = {**T.SIMPLE, "ptr": T.ptr(), **{str(t): t for t in (T.i1, T.i8, T.i16, T.i32, T.i64)}}
#: tokens after which a one-token type is read otherwise (a function type, an address space) or is no type
_NOT_SCALAR_AFTER = frozenset(("(", ":", "addrspace"))
#: literal aggregate types by their tokens (none naming a struct type), for every parse of the process
AGGREGATE_TYPES: dict[tuple[str, ...], T.Type] = {}
_MAX_AGGREGATE_TYPES = 4096
_OPENERS = frozenset("{[<")
_CLOSERS = frozenset("}]>")
#: how an operand was spelled: one token naming a local value, a block, a global or a simple constant
LOCAL, BLOCK, GLOBAL, CONSTANT = range(4)
_U = TypeVar("_U", bound=User)
Source: TypeAlias = "tuple[int, int, T.Type]"
"""(token index, LOCAL/BLOCK/GLOBAL/CONSTANT, the operand's type) of one operand."""


class Emitter:
    """Accumulates a part list with LLVM-like spacing."""

    __slots__ = ("parts", "buf", "ops", "last")

    def __init__(self):
        self.parts: list[Part] = []
        self.buf = ""
        self.ops: list[Value] = []
        self.last = "("

    def raw(self, tok: str) -> None:
        if tok[0] in _NO_SPACE_BEFORE or tok == "(" or self.last in _NO_SPACE_AFTER:
            self.buf += tok
        else:
            self.buf += " " + tok
        self.last = tok[-1]

    def slot(self, value: Value) -> None:
        buf = self.buf if self.last in _NO_SPACE_AFTER else self.buf + " "
        ops = self.ops
        if buf:
            self.parts += (buf, len(ops))
        else:
            self.parts.append(len(ops))
        ops.append(value)
        self.buf, self.last = "", "x"

    def obj(self, x: Part) -> None:
        buf = self.buf if self.last in _NO_SPACE_AFTER else self.buf + " "
        if buf:
            self.parts += (buf, x)
        else:
            self.parts.append(x)
        self.buf, self.last = "", "x"

    def text(self) -> str:
        """The spelling of an emitter that received words only (:meth:`raw`)."""
        return "".join(p for p in self.done() if type(p) is str)

    def done(self) -> list[Part]:
        parts = self.parts
        if self.buf:
            parts.append(self.buf)
        if parts and type(parts[0]) is str:
            parts[0] = parts[0].lstrip(" ")
        return parts


class ValueParser:
    """Types, values and generic operand lists over ``self.toks[self.i:]``."""

    # set by the module parser (parser.py)
    toks: list[str]
    i: int
    lines: list[str]
    lineno: int
    module: Module
    gvals: dict[str, Value]
    gfwd: dict[str, Placeholder]
    fwd: dict[str, Placeholder]
    #: the uses of every user this parse makes, registered on first need
    pending: PendingUses
    #: users made while holding a forward reference, patched when it is defined
    patches: list[User]
    mds: dict[str, MDNode]
    md_lines: dict[str, int]
    groups: dict[str, AttributeGroup]
    #: where the operands of the instruction being parsed came from (:class:`Source` per operand, in
    #: order), None when one came from several tokens (an aggregate, a constant expression)
    sources: list[Source] | None = None

    if TYPE_CHECKING:  # defined by the instruction parser
        def local(self, tok: str, ty: T.Type) -> Value: ...
        def block(self, tok: str) -> BasicBlock: ...

    def made(self, user: _U, operands: list[Value]) -> _U:
        """``user`` (made with no operands) given ``operands``, their uses pending; noted in
        :attr:`patches` if one is a forward reference."""
        self.pending.add(user, operands)
        if self.fwd or self.gfwd:
            for v in operands:
                if v.__class__ is Placeholder:
                    self.patches.append(user)
                    break
        return user

    # -- errors --------------------------------------------------------------
    def error(self, msg: str, cls: type[IRParseError] = IRParseError, token: str | None = None) -> NoReturn:
        """Raise ``cls`` at the current line and the token under the cursor (or ``token``'s first
        occurrence in the line)."""
        raise self.located(msg, cls, token)

    def located(self, msg: str, cls: type[IRParseError] = IRParseError, token: str | None = None) -> IRParseError:
        """The error :meth:`error` raises."""
        line = self.lines[self.lineno] if self.lineno < len(self.lines) else None
        return cls(msg, self.lineno + 1, line, column=self._column(line, token))

    def _column(self, line: str | None, token: str | None) -> int | None:
        if line is None:
            return None
        if token is not None:
            k = line.find(token)
            return k + 1 if k >= 0 else None
        toks, pos, k = self.toks, 0, 0
        for t in toks[: self.i + 1]:
            k = line.find(t, pos)
            if k < 0:
                return None
            pos = k + len(t)
        return k + 1 if self.i < len(toks) else len(line.rstrip()) + 1

    def expect(self, tok: str) -> None:
        got = self.toks[self.i] if self.i < len(self.toks) else "end of line"
        if got != tok:
            self.error(f"expected {tok!r}, found {got!r}")
        self.i += 1

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ""

    # -- types ---------------------------------------------------------------
    def is_type_start(self, t: str) -> bool:
        if t in T.SIMPLE or t == "ptr" or t == "target":
            return True
        c = t[0]
        if c == "i":
            return t[1:].isdigit()
        if c == "%":
            return unquote(t[1:]) in self.module.struct_types
        if c == "[" or c == "<":
            n = self.peek(1)
            return n.isdigit() or n == "vscale" or (c == "<" and n == "{")
        return c == "{"

    def ptype(self) -> T.Type:
        toks = self.toks
        t = toks[self.i]
        self.i += 1
        ty = _SCALAR_TYPES.get(t)
        if ty is not None and t == "ptr" and self.i < len(toks) and toks[self.i] == "addrspace":
            ty = None
        if ty is None:
            c = t[0]
            if c == "i" and t[1:].isdigit():
                bits = int(t[1:])
                if not 0 < bits <= T.MAX_INT_BITS:
                    self.i -= 1
                    self.error(f"integer type {t} out of range (i1 to i{T.MAX_INT_BITS})")
                ty = T.int_type(bits)
            elif t == "ptr":
                ty = T.ptr(self._addrspace())
            elif c == "%":
                ty = self.module.get_struct(unquote(t[1:]))
            elif c == "<" or c == "[" or c == "{":
                ty = self._cached_aggregate_type(c)
            elif t == "target":
                ty = self._target_type()
            else:
                self.i -= 1
                self.error(f"expected a type, found {t!r}")
        while self.i < len(toks) and toks[self.i] == "(":
            ty = self._function_type(ty)
        return ty

    def _addrspace(self) -> int:
        if self.peek() == "addrspace":
            n = self.toks[self.i + 2]
            self.i += 4
            return int(n)
        return 0

    def _cached_aggregate_type(self, c: str) -> T.Type:
        """:meth:`_aggregate_type`, from :data:`AGGREGATE_TYPES` where the same tokens, naming no struct
        type of a module, were read before."""
        toks = self.toks
        start = self.i - 1
        depth, j, n = 0, start, len(toks)
        while j < n:
            t = toks[j]
            j += 1
            if t in _OPENERS:
                depth += 1
            elif t in _CLOSERS:
                depth -= 1
                if depth == 0:
                    break
            elif t[0] == "%":
                return self._aggregate_type(c)
        key = tuple(toks[start:j])
        ty = AGGREGATE_TYPES.get(key)
        if ty is not None:
            self.i = j
            return ty
        ty = self._aggregate_type(c)
        if self.i == j:
            if len(AGGREGATE_TYPES) >= _MAX_AGGREGATE_TYPES:
                AGGREGATE_TYPES.clear()
            AGGREGATE_TYPES[key] = ty
        return ty

    def _aggregate_type(self, c: str) -> T.Type:
        if c == "{" or (c == "<" and self.peek() == "{"):
            packed = c == "<"
            self.i += packed
            elems: list[T.Type] = []
            if self.peek() == "}":
                self.i += 1
            else:
                while True:
                    elems.append(self.ptype())
                    t = self.toks[self.i]
                    self.i += 1
                    if t == "}":
                        break
            if packed:
                self.expect(">")
            return T.struct(elems, packed)
        scalable = self.peek() == "vscale"
        if scalable:
            self.i += 2
        n = int(self.toks[self.i])
        self.i += 1
        self.expect("x")
        elem = self.ptype()
        self.expect("]" if c == "[" else ">")
        return T.array(n, elem) if c == "[" else T.vector(n, elem, scalable)

    def _function_type(self, ret: T.Type) -> T.FunctionType:
        self.i += 1
        params: list[T.Type] = []
        vararg = False
        while self.peek() != ")":
            if self.peek() == "...":
                vararg = True
                self.i += 1
            else:
                params.append(self.ptype())
            if self.peek() == ",":
                self.i += 1
        self.i += 1
        return T.function(ret, params, vararg)

    def _target_type(self) -> T.Type:
        start = self.i - 1
        self.skip_group()
        return T.TargetExtType(_join(self.toks[start : self.i]))

    def skip_attr(self) -> None:
        """Skip one word and its ``(...)`` arguments, if any."""
        self.i += 1
        if self.i < len(self.toks) and self.toks[self.i] == "(":
            self.skip_group()

    def skip_group(self) -> None:
        """Skip a balanced ``(...)`` starting at the cursor."""
        depth = 0
        toks = self.toks
        while True:
            t = toks[self.i]
            self.i += 1
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
                if depth == 0:
                    return

    # -- values --------------------------------------------------------------
    def is_value_start(self, t: str) -> bool:
        c = t[0]
        return c in "%@-0123456789<[{" or t in VALUE_WORDS or t.startswith('c"')

    def pvalue(self, ty: T.Type) -> Value:
        toks = self.toks
        t = toks[self.i]
        self.i += 1
        c = t[0]
        sources = self.sources
        if c == "%":
            if ty is T.label:
                if sources is not None:
                    sources.append((self.i - 1, BLOCK, ty))
                return self.block(t)
            if sources is not None:
                sources.append((self.i - 1, LOCAL, ty))
            return self.local(t, ty)
        if c == "@":
            if sources is not None:
                sources.append((self.i - 1, GLOBAL, ty))
            return self.global_ref(t)
        if c in "-0123456789" or t in CONST_WORDS or t[:2] == 'c"':
            if sources is not None:
                sources.append((self.i - 1, CONSTANT, ty))
            return constant(ty, t)
        self.sources = None
        if c == "<" or c == "[" or c == "{":
            return self._aggregate(c, ty)
        if t in CONSTEXPR:
            return self._constexpr(t, ty)
        if t == "asm":
            start = self.i - 1
            while toks[self.i] != "(":
                self.i += 1
            return self.pending.own(InlineAsm(ty, _join(toks[start : self.i])))
        self.i -= 1
        self.error(f"unsupported value {t!r}", UnsupportedIRError)

    def _aggregate(self, c: str, ty: T.Type) -> Value:
        if c == "<" and self.peek() == "{":
            self.i += 1
        close = {"<": ">", "[": "]", "{": "}"}[c]
        elems: list[Value] = []
        while self.toks[self.i] not in (close, "}"):
            ety = self.ptype()
            elems.append(self.pvalue(ety))
            if self.toks[self.i] == ",":
                self.i += 1
        self.i += 1
        if isinstance(ty, T.StructType) and ty.packed:
            self.expect(">")
        return self.made(ConstantAggregate(ty), elems)

    def _constexpr(self, op: str, ty: T.Type) -> Value:
        em = Emitter()
        em.raw(op)
        if op in ("dso_local_equivalent", "no_cfi"):
            em.slot(self.global_ref(self.toks[self.i]))
            self.i += 1
            return self.made(ConstantExpr(ty, op, em.done(), ()), em.ops)
        if op == "blockaddress":
            start = self.i
            self.skip_group()
            em.raw(_join(self.toks[start : self.i]))
            return self.made(ConstantExpr(ty, op, em.done(), ()), [])
        while self.toks[self.i] != "(":
            if self.toks[self.i] == "inrange":
                start = self.i
                self.i += 1
                self.skip_group()
                em.raw(_join(self.toks[start : self.i]))
            else:
                em.raw(self.toks[self.i])
                self.i += 1
        em.raw("(")
        self.i += 1
        self.items(em, ")")
        em.raw(")")
        self.i += 1
        return self.made(ConstantExpr(ty, op, em.done(), ()), em.ops)

    # -- generic operand lists -----------------------------------------------
    def items(self, em: Emitter, closer: str | None = None, tys: list[T.Type] | None = None,
              words: frozenset[str] | None = None) -> None:
        """Emit tokens until ``closer`` at depth 0 (not consumed) or the end of the line.

        Types followed by a value become a type and an operand slot; ``!N`` and
        ``#N`` become node / group references; everything else stays spelled.
        ``tys`` collects the top-level types in order; ``words``, when given, is
        the set of keywords allowed outside brackets (others raise).
        """
        toks = self.toks
        n = len(toks)
        depth = 0
        while self.i < n:
            t = toks[self.i]
            c = t[0]
            if depth == 0 and t == closer:
                return
            ty = _SCALAR_TYPES.get(t)
            if ty is not None:  # a one-token type (what ptype reads it as, when no '(', ':' or addrspace follows)
                j = self.i + 1
                nxt = toks[j] if j < n else ""
                if nxt not in _NOT_SCALAR_AFTER:
                    self.i = j
                    if tys is not None and depth == 0:
                        tys.append(ty)
                    em.obj(ty)
                    if j < n and self.is_value_start(nxt):
                        em.slot(self.pvalue(ty))
                    continue
            if c in "({[<%" or t in T.SIMPLE or c == "i" or t == "ptr" or t == "target":
                if self.is_type_start(t) and self.peek(1) != ":":
                    ty = self.ptype()
                    if tys is not None and depth == 0:
                        tys.append(ty)
                    em.obj(ty)
                    if self.i < n and self.is_value_start(toks[self.i]):
                        em.slot(self.pvalue(ty))
                    continue
                if c == "%":
                    if self.sources is not None:
                        self.sources.append((self.i, LOCAL, T.void))
                    em.slot(self.local(t, T.void))
                    self.i += 1
                    continue
            if c == "!":
                if t == "!" and self.peek(1) == "{":
                    em.raw("!")
                    em.raw("{")
                    depth += 1
                    self.i += 2
                    continue
                if len(t) > 1 and t[1].isdigit():
                    em.obj(self.md(t))
                    self.i += 1
                    continue
            elif c == "@":
                if self.sources is not None:
                    self.sources.append((self.i, GLOBAL, T.void))
                em.slot(self.global_ref(t))
                self.i += 1
                continue
            elif c == "#":
                em.obj(self.attr_group(t))
                self.i += 1
                continue
            if words is not None and ((c.isalpha() and t not in words and t[:2] != 'c"') or c == "<" or c == "{"):
                self.error(f"unknown keyword or type {t!r}")
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    return
                depth -= 1
            em.raw(t)
            self.i += 1

    # -- references (filled by the module parser) ----------------------------
    def md(self, tok: str) -> MDNode:
        node = self.mds.get(tok)
        if node is None:
            node = self.mds[tok] = self.pending.own(MDNode())
            self.md_lines[tok] = self.lineno
        return node

    def attr_group(self, tok: str) -> AttributeGroup:
        g = self.groups.get(tok)
        if g is None:
            g = self.groups[tok] = AttributeGroup([])
        return g

    def global_ref(self, tok: str) -> Value:
        v = self.gvals.get(tok)
        if v is None:
            v = self.gvals[tok] = self.gfwd[tok] = Placeholder(T.ptr(), self.lineno)
        return v


def _join(toks: list[str]) -> str:
    """``toks`` spelled with :class:`Emitter`'s spacing."""
    out: list[str] = []
    last = "("
    for t in toks:
        out.append(t if t[0] in _NO_SPACE_BEFORE or t == "(" or last in _NO_SPACE_AFTER else " " + t)
        last = t[-1]
    return "".join(out)
