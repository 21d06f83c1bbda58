"""Module-level parsing: ``parse(text) -> Module``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice

from ..errors import IRParseError, UnsupportedIRError
from . import types as T
from .lexer import tokenize, tokenize_lines, unquote
from .metadata import MDNode, NamedMetadata
from .module import Function, GlobalAlias, GlobalVariable, Module, no_cyclic_gc
from .parser_instructions import _MARKER, SHAPES, InstructionParser
from .parser_values import Emitter, _join
from .values import Argument, PendingUses, Placeholder, constant

_GLOBAL_KINDS = frozenset(("global", "constant", "alias", "ifunc"))
_PRE_ATTRS = frozenset(("unnamed_addr", "local_unnamed_addr"))
_POST_WORDS = frozenset("section partition comdat align gc prefix prologue personality".split())
_CONTINUED = {"landingpad": frozenset(("catch", "filter", "cleanup")), "invoke": {"to"}, "callbr": {"to"}}
#: a body line that is a closing brace after indentation (a body LLVM did not print)
_INDENTED_BRACE = re.compile(r"\n[ \t]+\}")
#: constant expressions LLVM reads as an aliasee without a leading type
_TYPELESS_ALIASEES = frozenset(("getelementptr", "bitcast", "addrspacecast", "inttoptr"))
#: instructions LLVM may print over several lines
_MULTILINE = frozenset(("switch", *_CONTINUED))
_NO_SHAPES: dict = {}


def parse(text: str, *, lazy: bool = False) -> Module:
    """Parse LLVM's printed IR into a :class:`Module`; malformed text raises :class:`IRParseError` at
    its line and column.

    ``lazy=True`` leaves each function body to its first use (``fn.blocks``, asking a global for its
    uses), as LLVM's lazy bitcode reader does: an error inside a body is raised then. Printing is
    not a use: a body nothing read is written from its text, its metadata and attribute groups
    renumbered (for text LLVM printed, which LLVM reads back; an error in it is LLVM's to find).
    """
    with no_cyclic_gc():
        p = Parser(text, lazy=lazy)
        with p.reading():
            m = p.run()
        del p  # freed before the collector, enabled again, looks at what the parse made
    return m


#: in a body's text: a string, a comment, or a metadata node, attribute group or unnamed global by number
_NUMBERED = re.compile(r'"[^"]*"|;[^\n]*|[!#@][0-9]+')


class _LeftBody:
    """A body :meth:`Parser._leave_body` skipped: parsed when called; printed from its text while
    nothing asked for it (a lazy parse's untouched bodies cost neither a parse nor a print)."""

    __slots__ = ("parser", "names", "start")

    def __init__(self, parser: Parser, names: list, start: int):
        self.parser, self.names, self.start = parser, names, start

    def __call__(self, fn: Function) -> None:
        self.parser._parse_left_body(fn, self.names, self.start)

    def printed(self, fn, text, ref, md, group) -> str | None:
        """``text`` with each ``!N`` and ``#N`` the parse would read numbered by ``md`` and ``group``,
        without comments and blank lines, as the printer writes a parsed body; None where the arguments no longer print as the text names them, or where it names an
        unnamed global (``@N``: numbered anew in every print) or a number the parse never read."""
        if [ref(a) for a in fn.args] != self.names:
            return None
        mds, groups = self.parser.mds, self.parser.groups
        unknown = False

        def number(match: re.Match[str]) -> str:
            nonlocal unknown
            tok = match.group()
            kind = tok[0]
            if kind == "!" and tok in mds:
                return md(mds[tok])
            if kind == "#" and tok in groups:
                return group(groups[tok])
            if kind == ";":
                return ""  # LLVM's comments (`; preds = ...`), which the printer does not write
            if kind != '"':
                unknown = True
            return tok

        lines = [line.rstrip() for line in _NUMBERED.sub(number, text).split("\n")]
        return None if unknown else "".join(f"\n{line}" for line in lines if line)


def split_attachments(toks: list[str], comma: bool = True) -> list[tuple[str, str]]:
    """Remove trailing ``[,] !name !N`` pairs (and ``!name !{}``, an empty node spelled inline) from
    ``toks``; return them in order."""
    out = []
    while len(toks) > 2 + comma:
        if toks[-1] == "}" and toks[-2] == "{" and toks[-3] == "!":  # !name !{}
            k = len(toks) - 4
            node = "!{}"
        else:
            k = len(toks) - 2
            node = toks[-1]
            if node[0] != "!" or not node[1:2].isdigit():
                break
        name = toks[k] if k > 0 else ""
        if not (name[:1] == "!" and name[1:2].isalpha()) or (comma and toks[k - 1] != ","):
            break
        out.append((name[1:], node))
        del toks[k - comma :]
    out.reverse()
    return out


def attr_list(toks: list[str], i: int, stop) -> tuple[list[str], int]:
    """Group attribute tokens (``k``, ``k=v``, ``k(...)``, ``"k"="v"``) up to a token in ``stop``."""
    out = []
    n = len(toks)
    while i < n and toks[i] not in stop:
        start = i
        i += 1
        if i < n and toks[i] == "=":
            i += 2
        elif i < n and toks[i] == "(":
            depth = 0
            while True:
                depth += (toks[i] == "(") - (toks[i] == ")")
                i += 1
                if depth == 0:
                    break
        out.append(_join(toks[start:i]).replace(" = ", "="))
    return out, i


class Parser(InstructionParser):
    """One parse of one module text. ``reuse_shapes=False`` parses every instruction in full (the
    reference the shape reuse is tested against)."""

    def __init__(self, text: str, *, reuse_shapes: bool = True, lazy: bool = False):
        self.reuse_shapes = reuse_shapes
        self.lazy = lazy
        self.lines = text.split("\n")
        self.lineno = 0
        self.module = Module()
        self.toks: list[str] = []
        self.i = 0
        self.gvals: dict = {}
        self.gfwd: dict = {}
        #: forward-referenced globals -> the first call of each (an undeclared intrinsic's type)
        self.undeclared_calls: dict = {}
        self.mds: dict[str, MDNode] = {}
        self.md_lines: dict[str, int] = {}
        self.groups: dict = {}
        self.locals: dict = {}
        self.fwd: dict = {}
        self.blocks: dict = {}
        self.block_lines: dict = {}
        self.shapes: dict = {}
        self.pending = PendingUses()
        self.patches: list = []

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Internal errors of a parse (a line that ends early, a malformed number) raised as
        :class:`IRParseError` at the current line."""
        try:
            yield
        except IRParseError:
            raise
        except (IndexError, KeyError, ValueError, TypeError, AttributeError, RecursionError) as exc:
            why = "the line ends early" if isinstance(exc, IndexError) else f"malformed text ({exc})"
            raise self.located(f"cannot read this line: {why}") from None

    def run(self) -> Module:
        lines = self.lines
        handlers = _TOP
        while self.lineno < len(lines):
            toks = tokenize(lines[self.lineno])
            if toks:
                self.toks, self.i = toks, 0
                t = toks[0]
                h = handlers.get(t) or handlers.get(t[0])
                if h is None:
                    self.error(f"unsupported top-level entity {t!r}", UnsupportedIRError)
                h(self)
            self.lineno += 1
        self._finish()
        return self.module

    def _finish(self) -> None:
        self._declare_intrinsics()
        for tok, ph in self.gfwd.items():
            self.lineno = ph.line
            self.error(f"use of undefined value {tok}", token=tok)
        for tok, node in self.mds.items():
            if not node.parts:
                self.lineno = self.md_lines[tok]
                self.error(f"use of undefined metadata {tok}", token=tok)
        self.patches = self.pending.resolve(self.patches)

    def _declare_intrinsics(self) -> None:
        """Declare each intrinsic (``@llvm.*``) that calls name without a declaration, typed by its first
        call, as LLVM's parser does (in the bodies parsed with the module: a body left for its first use
        must declare its intrinsics)."""
        for tok, ph in list(self.gfwd.items()):
            inst = self.undeclared_calls.get(ph)
            if inst is None or not tok.startswith("@llvm.") or inst.call.metadata_args:
                continue
            k = inst.call.callee_index
            params = [v.type for v in inst.operands[k + 1 : k + 1 + inst.call.nargs]]
            fn = Function(unquote(tok[1:]), T.function(inst.type, params, False))
            fn.module = self.module
            self.module.functions[fn.name] = fn
            self._define(fn, tok)

    # -- simple entities -----------------------------------------------------
    def _target(self) -> None:
        what, value = self.toks[1], self.toks[3]
        setattr(self.module, "triple" if what == "triple" else "datalayout", unquote(value))

    def _source_filename(self) -> None:
        self.module.source_filename = unquote(self.toks[2])

    def _module_asm(self) -> None:
        self.module.asm.append(self.lines[self.lineno].strip())

    def _comdat(self) -> None:
        self.module.comdats.append(_join(self.toks))

    def _attributes(self) -> None:
        g = self.attr_group(self.toks[1])
        g.attrs, self.i = attr_list(self.toks, 4, ("}",))
        self.expect("}")
        self.module.attribute_groups.append(g)

    def _struct(self) -> None:
        st = self.module.get_struct(unquote(self.toks[0][1:]))
        self.i = 3
        if self.peek() == "opaque":
            return
        body = self.ptype()
        if not isinstance(body, T.StructType):
            self.error(f"struct type {st} defined as {body}")
        st.elements, st.packed = body.elements, body.packed

    def _metadata(self) -> None:
        toks = self.toks
        head = toks[0]
        if head[1:2].isdigit():
            node = self.md(head)
            self.i = 2
            if self.peek() == "distinct":
                node.distinct = True
                self.i += 1
            em = Emitter()
            self.items(em)
            node.parts = em.done()
            self.made(node, em.ops)
            self.module.metadata.append(node)
        else:
            nodes = [self.md(t) for t in toks[3:] if t[0] == "!" and t[1:2].isdigit()]
            self.module.named_metadata[unquote(head[1:])] = NamedMetadata(unquote(head[1:]), nodes)

    def _define(self, value, tok: str) -> None:
        ph = self.gfwd.pop(tok, None)
        if ph is not None:
            ph.value = value
        elif tok in self.gvals:
            self.error(f"redefinition of {tok}", token=tok)
        self.gvals[tok] = value

    # -- globals -------------------------------------------------------------
    def _global(self) -> None:
        toks = self.toks
        name_tok = toks[0]
        name = "" if name_tok[1:].isdigit() else unquote(name_tok[1:])
        attachments = split_attachments(toks)
        self.i = 2
        while toks[self.i] not in _GLOBAL_KINDS:
            self.skip_attr()
        prefix = _join(toks[2 : self.i])
        kind = toks[self.i]
        self.i += 1
        ty = self.ptype()
        if kind in ("alias", "ifunc"):
            self.expect(",")
            # LLVM also reads a constant expression aliasee without its type (`alias i32, getelementptr (...)`)
            aty = T.ptr() if toks[self.i] in _TYPELESS_ALIASEES else self.ptype()
            aliasee = self.pvalue(aty)  # the alias is made with a stand-in, its operand given pending
            gv = GlobalAlias(name, kind, ty, constant(aliasee.type, "poison"), prefix, _join(toks[self.i :]))
            self.made(gv, [aliasee])
            self.module.aliases[name or name_tok] = gv
        else:
            init = None
            if self.i < len(toks) and toks[self.i] != ",":
                init = self.pvalue(ty)
            space = 0
            if "addrspace" in toks[2:]:
                space = int(toks[toks.index("addrspace") + 2])
            gv = GlobalVariable(name, ty, prefix=prefix, is_constant=kind == "constant",
                                suffix=_join(toks[self.i :]), addrspace=space)
            self.made(gv, [init] if init is not None else [])
            self.module.globals[name or name_tok] = gv
        gv.module = self.module
        gv.metadata = {k: self.md(v) for k, v in attachments}
        self._define(gv, name_tok)

    # -- functions -----------------------------------------------------------
    def _function(self) -> None:
        toks = self.toks
        is_define = toks[0] == "define"
        body = is_define and toks[-1] == "{"
        if body:
            toks.pop()
        attachments = split_attachments(toks, comma=False)
        self.i = 1
        while not is_define and toks[self.i][:1] == "!" and toks[self.i + 1][:1] == "!":
            attachments.append((toks[self.i][1:], toks[self.i + 1]))  # declare !dbg !20 double @f(...)
            self.i += 2
        em = Emitter()
        self._words_until_type(em)
        prefix = em.text()
        ret = self.ptype()
        name_tok = toks[self.i]
        self.i += 2
        params, names, attrs, vararg = [], [], [], False
        while toks[self.i] != ")":
            if toks[self.i] == "...":
                vararg = True
                self.i += 1
                continue
            params.append(self.ptype())
            start = self.i
            while toks[self.i] not in (",", ")"):
                self.skip_attr()
            last = toks[self.i - 1] if self.i > start else ""
            named = last[:1] == "%"
            names.append(last if named else None)
            attrs.append(_join(toks[start : self.i - named]))
            if toks[self.i] == ",":
                self.i += 1
        self.i += 1
        space = 0
        pre = []
        while self.peek() in _PRE_ATTRS or self.peek() == "addrspace":
            if self.peek() == "addrspace":
                space = int(toks[self.i + 2])
                pre.append(f"addrspace({space})")
                self.i += 4
            else:
                pre.append(toks[self.i])
                self.i += 1
        fn_name = "" if name_tok[1:].isdigit() else unquote(name_tok[1:])
        fn = Function(fn_name, T.function(ret, params, vararg), prefix=prefix, addrspace=space)
        fn.pre_attrs = " ".join(pre)
        inline, self.i = attr_list(toks, self.i, _POST_WORDS | {t for t in toks if t[0] == "#"})
        fn.attributes = inline
        while self.peek()[:1] == "#":
            fn.attribute_groups.append(self.attr_group(toks[self.i]))
            self.i += 1
            more, self.i = attr_list(toks, self.i, _POST_WORDS | {t for t in toks if t[0] == "#"})
            fn.attributes.extend(more)
        post = Emitter()
        self.items(post)
        fn.post = post.done()
        self.made(fn, post.ops)
        for arg in fn.args:
            self.pending.own(arg)
        fn.metadata = {k: self.md(v) for k, v in attachments}
        for arg, n, a in zip(fn.args, names, attrs):
            arg.attrs = a
            if n is not None and not n[1:].isdigit():
                arg.name = unquote(n[1:])
        self.module.functions[fn_name or name_tok] = fn
        fn.module = self.module
        self._define(fn, name_tok)
        if body:
            if self.lazy and self._leave_body(fn, names):
                return
            self._body(fn, names)

    def _leave_body(self, fn: Function, names: list) -> bool:
        """Skip the body of ``fn`` (to its closing brace alone on a line), to be parsed on first use;
        False where the body does not end so (it is parsed now)."""
        lines = self.lines
        first = last = self.lineno + 1
        while last < len(lines) and lines[last][:1] != "}":
            last += 1
        text = "\n" + "\n".join(lines[first:last])
        if last == len(lines) or _INDENTED_BRACE.search(text):
            return False
        fn.body_parser = _LeftBody(self, names, self.lineno)
        self.module.unparsed[fn] = text
        self.lineno = last
        return True

    def _parse_left_body(self, fn: Function, names: list, start: int) -> None:
        parser, fn.body_parser = fn.body_parser, None
        mds = len(self.mds)
        made = len(self.pending.users)
        self.lineno = start
        try:
            with no_cyclic_gc(), self.reading():
                self._body(fn, names)
                for tok, node in islice(self.mds.items(), mds, None):
                    if not node.parts:
                        self.lineno = self.md_lines[tok]
                        self.error(f"use of undefined metadata {tok}", token=tok)
                for tok, ph in self.gfwd.items():  # an undeclared intrinsic too: declaring it now would change
                    self.lineno = ph.line           # the module's functions while a caller may iterate over them
                    self.error(f"use of undefined value {tok}", token=tok)
                self.patches = self.pending.resolve(self.patches)
        except IRParseError:  # the body stays unparsed; what it began is undone
            for tok in self.gfwd:
                del self.gvals[tok]
            self.gfwd.clear()
            if self.pending.registered:
                for b in fn._blocks:
                    for inst in b.instructions:
                        inst.drop_operands()
            else:
                del self.pending.users[made:]
            self.patches = []
            fn.body_parser, fn._blocks = parser, []
            raise
        del self.module.unparsed[fn]

    def _body(self, fn: Function, names: list) -> None:
        self.locals = {n: a for n, a in zip(names, fn.args) if n is not None}
        self.fwd, self.blocks, self.block_lines = {}, {}, {}
        self.lookups = (self.locals.get, self.blocks.get, self.gvals.get)
        lines = self.lines
        first = self.lineno + 1
        last = first
        while last < len(lines) and lines[last][:1] != "}":  # LLVM prints the closing brace alone
            last += 1
        body = tokenize_lines(lines[first:last])
        if last < len(lines):
            body.append(["}"])
        block = None
        records: list = []
        blocks = fn.blocks
        fwd, local_values, shapes = self.fwd, self.locals, self.shapes
        marker = _MARKER.get
        portable = SHAPES.get if self.reuse_shapes else _NO_SHAPES.get
        insts: list = []
        size = len(body)
        k = -1
        while True:
            k += 1
            if k >= size:
                self.lineno = max(n for n, line in enumerate(lines) if line.strip())
                self.error("missing '}' at the end of the function body", token="")
            toks = body[k]
            if not toks:
                continue
            self.lineno = first + k
            t0 = toks[0]
            if t0 == "}":
                break
            if len(toks) == 2 and toks[1] == ":":
                block = self.block("%" + t0)
                if block.parent is not None:
                    self.error(f"redefinition of block {t0}", token=t0)
                block.parent = fn
                blocks.append(block)
                insts = block.instructions
                self.block_lines.pop("%" + t0, None)
                continue
            if t0[0] == "#" and t0[:5] == "#dbg_":
                self.toks, self.i = toks, 0
                records.append(self.debug_record())
                continue
            name_tok = None
            i = 0
            if t0[0] == "%" and len(toks) > 1 and toks[1] == "=":
                name_tok, i = t0, 2
                if len(toks) == 2:
                    self.toks, self.i = toks, 2
                    self.error("expected an instruction after '='")
            if toks[i] in _MULTILINE:
                self.toks, self.i = toks, i
                k = self._continuation(toks, body, k)
            last_tok = toks[-1]
            attachments = split_attachments(toks) if last_tok[0] == "!" or last_tok == "}" else None
            # an instruction spelled like an earlier one up to value names and numbers is made from
            # that one's shape; the first of each shape is parsed in full (InstructionParser.instruction)
            rest = toks[2:] if i else toks
            key = tuple([marker(t[0], t) for t in rest])
            shape = shapes.get(key) or portable(key)
            inst = None
            if shape is not None:
                if name_tok is None or name_tok[1:].isdigit():
                    name = ""
                else:
                    name = name_tok[1:] if name_tok[1] != '"' else unquote(name_tok[1:])
                inst = shape.make(self, rest, name)
            if inst is None:
                self.toks, self.i = toks, i
                inst = self.instruction(name_tok, key, shape)
            if attachments:
                inst.metadata = {a: self.md(v) if v != "!{}" else MDNode(["!{}"]) for a, v in attachments}
            if records:
                inst.debug_records, records = records, []
            if block is None:  # unlabelled entry: numbered after the unnamed arguments
                entry = f"%{_next_number(names)}"
                block = self.block(entry)
                self.block_lines.pop(entry)
                block.parent = fn
                blocks.append(block)
                insts = block.instructions
            call = inst.call
            if call is not None and type(inst.operands[call.callee_index]) is Placeholder:
                self.undeclared_calls.setdefault(inst.operands[call.callee_index], inst)
            insts.append(inst)
            inst.parent = block
            if name_tok is not None:
                ph = fwd.pop(name_tok, None) if fwd else None
                if ph is not None:
                    ph.value = inst
                elif name_tok in local_values:
                    self.error(f"redefinition of value {name_tok}", token=name_tok)
                local_values[name_tok] = inst
        for tok, ph in self.fwd.items():
            self.lineno = ph.line
            self.error(f"use of undefined value {tok}", token=tok)
        for tok, line in self.block_lines.items():
            self.lineno = line
            self.error(f"use of undefined block {tok}", token=tok)

    def _continuation(self, toks: list[str], body: list[list[str]], k: int) -> int:
        """Append the tokens of the lines after ``body[k]`` that continue a ``switch`` or ``landingpad``;
        the index of the last line taken."""
        op = toks[self.i]
        if op == "switch" and toks[-1] == "[":
            while True:
                k += 1
                if k >= len(body) or body[k][:1] == ["}"]:
                    self.error("missing ']' at the end of the switch")
                nxt = body[k]
                toks.extend(nxt)
                if nxt and nxt[0] == "]":
                    break
        elif op in _CONTINUED:
            while k + 1 < len(body):
                nxt = body[k + 1]
                if not nxt or nxt[0] not in _CONTINUED[op]:
                    break
                toks.extend(nxt)
                k += 1
        return k


def _next_number(names: list) -> int:
    """The number an unlabelled entry block takes: one past the last numbered argument (``%0, %x, %2``:
    3; LLVM reads numbers with gaps), an argument without a name taking the next number."""
    n = 0
    for tok in names:
        if tok is None:
            n += 1
        elif tok[1:].isdigit():
            n = int(tok[1:]) + 1
    return n


_TOP = {
    "define": Parser._function,
    "declare": Parser._function,
    "target": Parser._target,
    "source_filename": Parser._source_filename,
    "module": Parser._module_asm,
    "attributes": Parser._attributes,
    "@": Parser._global,
    "%": Parser._struct,
    "!": Parser._metadata,
    "$": Parser._comdat,
}

__all__ = ["Argument", "parse"]
