"""Instruction parsing: dispatch by opcode, result types by table."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UnsupportedIRError
from . import types as T
from .instructions import BINARY, CASTS, FLAG_WORDS, CallSite, DebugRecord, Instruction
from .lexer import unquote
from .module import BasicBlock
from .parser_values import BLOCK, CONSTANT, GLOBAL, LOCAL, VALUE_WORDS, Emitter, Source, ValueParser, _join
from .values import Placeholder, Value, constant

_I1 = T.i1


def _cmp_type(tys, toks):
    t = tys[0]
    return T.vector(t.count, _I1, t.scalable) if t.kind == "vector" else _I1


def _extractvalue_type(tys, toks):
    t = tys[0]
    depth, k = 0, len(toks)
    for j, tok in enumerate(toks):  # the first comma outside the aggregate's type ends the operand
        depth += (tok in ("{", "[", "<", "(", "<{")) - (tok in ("}", "]", ">", ")", "}>"))
        if tok == "," and depth == 0:
            k = j
            break
    for tok in toks[k + 1 :]:
        if tok.isdigit():
            t = t.elements[int(tok)] if t.kind == "struct" else t.element
    return t


def _gep_type(tys, toks):
    base = tys[1].scalar
    for t in tys[1:]:
        if t.kind == "vector":
            return T.vector(t.count, base, t.scalable)
    return base


def _alloca_type(tys, toks):
    if "addrspace" in toks:
        return T.ptr(int(toks[toks.index("addrspace") + 2]))
    return T.ptr()


def _shuffle_type(tys, toks):
    return T.vector(tys[2].count, tys[0].element, tys[2].scalable)


_FIRST = lambda tys, toks: tys[0]  # noqa: E731
_LAST = lambda tys, toks: tys[-1]  # noqa: E731
_VOID = lambda tys, toks: T.void  # noqa: E731
_TOKEN = lambda tys, toks: T.SIMPLE["token"]  # noqa: E731

#: words an instruction may spell besides types and values
KEYWORDS = frozenset(
    "to align volatile atomic unordered monotonic acquire release acq_rel seq_cst syncscope weak xchg nand max "
    "min umax umin fmax fmin fmaximum fminimum uinc_wrap udec_wrap usub_cond usub_sat inrange label unwind "
    "within caller none cleanup catch filter addrspace inalloca swifterror x vscale tail musttail notail".split()
) | FLAG_WORDS | VALUE_WORDS | {"from"}

#: opcode -> result type from (top-level types in order, tokens)
RESULT_TYPE = {
    **{op: _FIRST for op in BINARY},
    **{op: _LAST for op in CASTS},
    "fneg": _FIRST, "freeze": _FIRST, "load": _FIRST, "phi": _FIRST, "landingpad": _FIRST,
    "insertelement": _FIRST, "insertvalue": _FIRST,
    "select": lambda tys, toks: tys[1],
    "extractelement": lambda tys, toks: tys[0].element,
    "extractvalue": _extractvalue_type, "shufflevector": _shuffle_type,
    "getelementptr": _gep_type, "alloca": _alloca_type,
    "icmp": _cmp_type, "fcmp": _cmp_type,
    "atomicrmw": _LAST, "va_arg": _LAST,
    "cmpxchg": lambda tys, toks: T.struct((tys[1], _I1)),
    "catchpad": _TOKEN, "cleanuppad": _TOKEN, "catchswitch": _TOKEN,
    **{op: _VOID for op in "ret br switch indirectbr resume unreachable store fence cleanupret catchret".split()},
}

KEYWORDS |= RESULT_TYPE.keys()


class InstructionParser(ValueParser):
    """Parses one instruction from ``self.toks`` (attachments already split off)."""

    # the function being parsed (set by the module parser)
    locals: dict[str, Value]
    fwd: dict[str, Placeholder]
    blocks: dict[str, BasicBlock]
    block_lines: dict[str, int]
    #: ``get`` of :attr:`locals`, :attr:`blocks` and the globals, for the function being parsed
    lookups: tuple[Callable[[str], Value | None], Callable[[str], BasicBlock | None], Callable[[str], Value | None]]
    #: the call site of the call being parsed
    site: CallSite | None = None
    #: this parse's shapes of the instructions parsed so far, by :func:`shape_key` (the portable ones
    #: are in :data:`SHAPES`)
    shapes: dict[tuple[str, ...], Shape]
    reuse_shapes: bool

    def local(self, tok: str, ty: T.Type) -> Value:
        v = self.locals.get(tok)
        if v is None:
            v = self.locals[tok] = self.fwd[tok] = Placeholder(ty, self.lineno)
        return v

    def block(self, tok: str) -> BasicBlock:
        b = self.blocks.get(tok)
        if b is None:
            name = unquote(tok[1:])
            b = self.blocks[tok] = self.pending.own(BasicBlock("" if name.isdigit() else name))
            self.block_lines[tok] = self.lineno
        return b

    def instruction(self, name_tok: str | None, key: tuple[str, ...], shape: Shape | None) -> Instruction:
        """The instruction spelled by ``self.toks[self.i:]``, named by ``name_tok`` (``%x``) if given,
        parsed in full: ``shape``, the shape of its :func:`shape_key` ``key`` if any, could not make it.

        The shape of what it parses is kept (:meth:`Shape.of`): as the key's shape, by this parse or,
        where nothing in it belongs to this module, by every parse of the process (:data:`SHAPES`);
        else as a variant of ``shape`` (the same spelling but for its fixed tokens).
        """
        toks, i = self.toks, self.i
        name = "" if name_tok is None or name_tok[1:].isdigit() else unquote(name_tok[1:])
        if not self.reuse_shapes:
            return self._parse_instruction(name)
        self.sources = []
        inst = self._parse_instruction(name)
        sources, self.sources = self.sources, None
        new = None if sources is None else Shape.of(self, inst, key, sources, toks, i)
        if shape is None:
            if new is None:
                self.shapes[key] = _UNSHAPED
            elif new.portable:
                if len(SHAPES) >= _MAX_SHAPES:
                    SHAPES.clear()
                SHAPES[key] = new
            else:
                self.shapes[key] = new
        elif new is not None:
            if shape.portable and not new.portable:  # this parse's own shape for the key, from now on
                self.shapes[key] = new
            else:
                shape.add_variant(new)
        return inst

    def _parse_instruction(self, name: str) -> Instruction:
        toks = self.toks
        op = toks[self.i]
        if op in ("tail", "musttail", "notail"):
            op = toks[self.i + 1]
        special = _SPECIAL.get(op)
        em = Emitter()
        self.site = None
        if special is not None:
            ty = special(self, em)
        else:
            rule = RESULT_TYPE.get(op)
            if rule is None:
                if not op[0].isalpha():
                    self.error(f"expected an instruction, found {op!r}")
                self.error(f"unsupported instruction {op!r}", UnsupportedIRError)
            tys: list[T.Type] = []
            self.items(em, None, tys, KEYWORDS)
            ty = rule(tys, toks)
        if self.i < len(toks):
            self.error(f"unexpected {toks[self.i]!r} after the instruction")
        return self.made(Instruction(op, ty, em.done(), (), name, self.site), em.ops)

    def _words_until_type(self, em: Emitter, names: list[str] | None = None) -> None:
        """Emit keywords (flags, predicates, attributes with groups) up to the first type; ``names``
        collects the words."""
        toks = self.toks
        while not self.is_type_start(toks[self.i]):
            start = self.i
            if not (toks[self.i][0].isalnum() or toks[self.i][0] == '"'):
                self.error(f"expected a type, found {toks[self.i]!r}")
            if names is not None:
                names.append(toks[start])
            if self.peek(1) == "(":
                self.i += 1
                self.skip_group()
                em.raw(_join(toks[start : self.i]))
            else:
                em.raw(toks[self.i])
                self.i += 1

    def _binary(self, em: Emitter) -> T.Type:
        self._words_until_type(em)
        ty = self.ptype()
        em.obj(ty)
        em.slot(self.pvalue(ty))
        if self.peek() == ",":
            self.i += 1
            em.raw(",")
            em.slot(self.pvalue(ty))
        return ty

    def _cmp(self, em: Emitter) -> T.Type:
        ty = self._binary(em)
        return T.vector(ty.count, _I1, ty.scalable) if isinstance(ty, T.VectorType) else _I1

    def _phi(self, em: Emitter) -> T.Type:
        self._words_until_type(em)
        ty = self.ptype()
        em.obj(ty)
        toks = self.toks
        while self.i < len(toks):
            em.raw(toks[self.i])  # "[" or ","
            if toks[self.i] == ",":
                self.i += 1
                continue
            self.i += 1
            em.slot(self.pvalue(ty))
            self.expect(",")
            em.raw(",")
            if self.sources is not None:
                self.sources.append((self.i, BLOCK, T.label))
            em.slot(self.block(toks[self.i]))
            self.i += 1
            self.expect("]")
            em.raw("]")
        return ty

    def _call(self, em: Emitter) -> T.Type:
        names: list[str] = []
        self._words_until_type(em, names)
        ty = self.ptype()
        em.obj(ty)
        callee = len(em.ops)
        em.slot(self.pvalue(T.ptr()))
        toks = self.toks
        self.expect("(")
        em.raw("(")
        nargs = 0
        mds: list[tuple[int, str]] = []
        while toks[self.i] != ")":
            aty = self.ptype()
            em.obj(aty)
            if aty is T.metadata:
                start = self.i
                self.items(em, ",")
                mds.append((nargs, _join(toks[start : self.i])))
            else:
                self._param_attrs(em, names)
                em.slot(self.pvalue(aty))
                nargs += 1
            if toks[self.i] == ",":
                em.raw(",")
                self.i += 1
        em.raw(")")
        self.i += 1
        tail = self.i
        self.items(em, None, None, KEYWORDS)
        names.extend(t for t in toks[tail : self.i] if t[0].isalpha())
        self.site = CallSite(callee, nargs, tuple(mds), frozenset(names))
        return ty.ret if isinstance(ty, T.FunctionType) else ty

    def _param_attrs(self, em: Emitter, names: list[str]) -> None:
        toks = self.toks
        while not self.is_value_start(toks[self.i]) or toks[self.i - 1] == "align":
            start = self.i
            names.append(toks[start])
            if self.peek(1) == "(":
                self.i += 1
                self.skip_group()
                em.raw(_join(toks[start : self.i]))
            else:
                em.raw(toks[self.i])
                self.i += 1

    def debug_record(self) -> DebugRecord:
        kind = self.toks[0][5:]
        em = Emitter()
        self.i = 1
        self.items(em)
        return self.made(DebugRecord(kind, em.done()), em.ops)


_SPECIAL = {
    **{op: InstructionParser._binary for op in BINARY},
    "fneg": InstructionParser._binary,
    "freeze": InstructionParser._binary,
    "icmp": InstructionParser._cmp,
    "fcmp": InstructionParser._cmp,
    "phi": InstructionParser._phi,
    "call": InstructionParser._call,
    "invoke": InstructionParser._call,
    "callbr": InstructionParser._call,
}


def shape_key(toks: list[str], i: int) -> tuple[str, ...]:
    """``toks[i:]`` with every token spelled ``%...`` as ``%``, ``@...`` as ``@`` and every number as
    ``0``: lines with one key parse alike but for those tokens."""
    marker = _MARKER.get
    return tuple([marker(t[0], t) for t in toks[i:]])


#: a token's first character -> its marker in a shape key
_MARKER = {"%": "%", "@": "@", **dict.fromkeys("-0123456789", "0")}
_MARKERS = frozenset(_MARKER.values())


class Shape:
    """What every instruction spelled with one :func:`shape_key` shares: opcode, type, parts, typed
    fields, call site, where each operand's token is, and the tokens behind a marker that are not
    operands (an alignment, an index, a named struct type), which must match: spellings alike but
    for those are the shape's variants, by the fixed tokens. A shape is ``portable`` (valid in any
    parse) when nothing it holds belongs to one module: no named struct type, metadata node,
    attribute group or target type, and no fixed ``%`` or ``@`` token."""

    __slots__ = ("opcode", "type", "parts", "fields", "call", "sources", "fixed", "portable", "variants")

    def __init__(self, inst: Instruction, sources: list[Source], fixed: list[tuple[int, str]]):
        self.opcode, self.type, self.parts, self.call = inst.opcode, inst.type, tuple(inst.parts), inst.call
        self.fields = inst.fields()
        self.sources = tuple(sources)
        self.fixed = tuple(fixed)
        self.portable = _portable(self, fixed)
        self.variants: dict[tuple[str, ...], Shape] | None = None

    @classmethod
    def of(cls, p: InstructionParser, inst: Instruction, key: tuple[str, ...], sources: list[Source],
           toks: list[str], i: int) -> Shape | None:
        """The shape of ``inst`` just parsed from ``toks[i:]``, None unless every operand is found
        again from its token alone."""
        ops = inst.operands
        if len(sources) != len(ops) or (inst.call is not None and inst.call.metadata_args):
            return None
        rel: list[Source] = []
        for (pos, kind, ty), op in zip(sources, ops):
            if (key[pos - i] == "@") != (kind == GLOBAL) or (key[pos - i] == "%") != (kind in (LOCAL, BLOCK)):
                return None
            if _resolve(p, kind, toks[pos], ty) is not op:
                return None
            rel.append((pos - i, kind, ty))
        taken = {pos for pos, _, _ in rel}
        fixed = [(k, toks[i + k]) for k, marker in enumerate(key) if marker in _MARKERS and k not in taken]
        return cls(inst, rel, fixed)

    def add_variant(self, other: Shape) -> None:
        """Keep ``other``, spelled like this shape but for its fixed tokens, as a variant."""
        if other.portable < self.portable or [k for k, _ in other.fixed] != [k for k, _ in self.fixed]:
            return
        if self.variants is None:
            self.variants = {}
        elif len(self.variants) >= _MAX_VARIANTS:
            return
        self.variants[tuple([t for _, t in other.fixed])] = other

    def make(self, p: InstructionParser, toks: list[str], name: str) -> Instruction | None:
        """The instruction of this shape (or of its variant) spelled by ``toks`` (from its opcode on),
        None if it has no variant with these fixed tokens or an operand's token names a struct type
        of this module."""
        for k, t in self.fixed:
            if toks[k] != t:
                if self.variants is None:
                    return None
                variant = self.variants.get(tuple([toks[k] for k, _ in self.fixed]))
                return None if variant is None else variant.make(p, toks, name)
        if self.portable and p.module.struct_types and self._names_a_struct(p, toks):
            return None
        ops: list[Value] = []
        append = ops.append
        local, block, glob = p.lookups
        for k, kind, ty in self.sources:
            t = toks[k]
            if kind == LOCAL:
                v = local(t)
                append(v if v is not None else p.local(t, ty))
            elif kind == CONSTANT:
                append(constant(ty, t))
            elif kind == BLOCK:
                v = block(t)
                append(v if v is not None else p.block(t))
            else:
                v = glob(t)
                append(v if v is not None else p.global_ref(t))
        inst = Instruction.parsed(self.opcode, self.type, self.parts, name, self.call, self.fields)
        p.pending.add(inst, ops)
        if p.fwd or p.gfwd:
            for v in ops:
                if v.__class__ is Placeholder:
                    p.patches.append(inst)
                    break
        return inst

    def _names_a_struct(self, p: InstructionParser, toks: list[str]) -> bool:
        """Whether an operand's ``%`` token names a struct type of this module (which the shape, made
        where it did not, read as a value)."""
        structs = p.module.struct_types
        return any(kind == LOCAL and unquote(toks[k][1:]) in structs for k, kind, _ in self.sources)


class _Unshaped(Shape):
    """The mark of a key whose instruction has no shape in this parse (an operand spelled over
    several tokens, a ``metadata`` argument): parsed in full each time."""

    def __init__(self):
        self.fixed, self.variants, self.portable = (), None, False

    def add_variant(self, other: Shape) -> None:
        pass

    def make(self, p: InstructionParser, toks: list[str], name: str) -> Instruction | None:
        return None


_UNSHAPED = _Unshaped()
#: portable shapes, by key, for every parse of the process (cleared when it reaches its bound)
SHAPES: dict[tuple[str, ...], Shape] = {}
_MAX_SHAPES = 20000
_MAX_VARIANTS = 64


def _portable_type(t: T.Type) -> bool:
    s = t._s  # pyright: ignore[reportPrivateUsage]
    return "%" not in s and "target(" not in s


def _portable(shape: Shape, fixed: list[tuple[int, str]]) -> bool:
    """Whether nothing ``shape`` holds belongs to one module."""
    for _, t in fixed:
        if t[0] == "%" or t[0] == "@":
            return False
    if not _portable_type(shape.type):
        return False
    element = shape.fields[4]
    if element is not None and not _portable_type(element):
        return False
    for part in shape.parts:
        c = type(part)
        if c is not str and c is not int and not (isinstance(part, T.Type) and _portable_type(part)):
            return False
    return True


def _resolve(p: InstructionParser, kind: int, tok: str, ty: T.Type) -> Value:
    if kind == LOCAL:
        return p.local(tok, ty)
    if kind == BLOCK:
        return p.block(tok)
    if kind == GLOBAL:
        return p.global_ref(tok)
    return constant(ty, tok)
