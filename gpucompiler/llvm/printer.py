"""Printing: ``str(module)``. Unnamed values, metadata nodes and attribute
groups are numbered afresh so mutated IR stays valid."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

from ..errors import UnsupportedIRError
from . import types as T
from .instructions import Instruction
from .metadata import AttributeGroup, MDNode
from .module import BasicBlock, Function, Module
from .values import ConstantAggregate, ConstantExpr, Placeholder, Value


from .types import escape_string as _string


class Printer:
    """Holds the numbering of one print."""

    __slots__ = ("slots", "mds", "md_order", "groups", "group_order")

    def __init__(self):
        self.slots: dict[Value, str] = {}
        self.mds: dict[MDNode, str] = {}
        self.md_order: list[MDNode] = []
        self.groups: dict[AttributeGroup, str] = {}
        self.group_order: list[AttributeGroup] = []

    # -- references ----------------------------------------------------------
    def ref(self, v: Value) -> str:
        r = v.ref
        if r is not None:
            return r
        r = self.slots.get(v)
        if r is not None:
            return r
        if type(v) is ConstantAggregate:
            return self._aggregate(v)
        if type(v) is ConstantExpr:
            return self.parts(v.parts, v.operands)
        if type(v) is Placeholder:
            raise UnsupportedIRError(f"unresolved forward reference of type {v.type}")
        raise UnsupportedIRError(f"{v!r} is not defined in the function or module being printed")

    def _aggregate(self, v: ConstantAggregate) -> str:
        ref = self.ref
        inner = ", ".join(f"{e.type._s} {ref(e)}" for e in v.operands)
        t = v.type
        if t.kind == "vector":
            return f"<{inner}>"
        if t.kind == "array":
            return f"[{inner}]"
        body = f"{{ {inner} }}" if inner else "{}"
        return f"<{body}>" if isinstance(t, T.StructType) and t.packed else body

    def md(self, node: MDNode) -> str:
        s = self.mds.get(node)
        if s is None:
            s = self.mds[node] = f"!{len(self.md_order)}"
            self.md_order.append(node)
        return s

    def group(self, g: AttributeGroup) -> str:
        """``#N`` of ``g``; nothing for a group without attributes (one referenced but never defined,
        which LLVM reads as no attributes and refuses to read back as ``attributes #N = { }``)."""
        if not g.attrs:
            return ""
        s = self.groups.get(g)
        if s is None:
            s = self.groups[g] = f"#{len(self.group_order)}"
            self.group_order.append(g)
        return s

    def parts(self, parts: Sequence, ops: list) -> str:
        out = []
        slots = self.slots
        for p in parts:
            tp = type(p)
            if tp is str:
                out.append(p)
            elif tp is int:
                v = ops[p]
                r = v.ref
                if r is None:
                    r = slots.get(v) or self.ref(v)
                out.append(r)
            elif tp is MDNode:
                out.append(self.mds.get(p) or self.md(p))
            elif tp is AttributeGroup:
                out.append(self.group(p))
            else:
                out.append(p._s)
        return "".join(out)

    def attachments(self, md: dict, comma: bool = True) -> str:
        sep = ", " if comma else " "
        return "".join(f"{sep}!{k} {self.md(n)}" for k, n in md.items())

    # -- module --------------------------------------------------------------
    def module(self, m: Module) -> str:
        out: list[str] = []
        if m.source_filename is not None:
            out.append(f"source_filename = {_string(m.source_filename)}")
        if m.datalayout is not None:
            out.append(f"target datalayout = {_string(m.datalayout)}")
        if m.triple is not None:
            out.append(f"target triple = {_string(m.triple)}")
        out.extend(m.asm)
        out.append("")
        out.extend(f"%{t._s[1:]} = type {t.body()}" for t in m.struct_types.values())
        out.extend(m.comdats)
        for g in m.attribute_groups:
            self.group(g)
        for n in m.metadata:
            self.md(n)
        n = 0
        for gv in (*m.globals.values(), *m.functions.values(), *m.aliases.values()):
            if gv.ref is None:
                self.slots[gv] = f"@{n}"
                n += 1
        out.extend(self.global_var(g) for g in m.globals.values())
        out.extend(self.alias(a) for a in m.aliases.values())
        for fn in m.functions.values():
            out.append("")
            self.function_lines(fn, out)
        out.append("")
        out.extend(f"attributes {self.groups[g]} = {{ {' '.join(g.attrs)} }}" for g in self.group_order)
        for nm in m.named_metadata.values():
            nodes = ", ".join(self.md(x) for x in nm.nodes)
            out.append(f"!{nm.name} = !{{{nodes}}}")
        k = 0
        while k < len(self.md_order):  # printing a node may number new ones
            node = self.md_order[k]
            body = self.parts(node.parts, node.operands)
            out.append(f"{self.mds[node]} = {'distinct ' if node.distinct else ''}{body}")
            k += 1
        out.append("")
        return "\n".join(out)

    def global_var(self, g) -> str:
        init = f" {self.ref(g.initializer)}" if g.operands else ""
        kind = "constant" if g.is_constant else "global"
        prefix = f"{g.prefix} " if g.prefix else ""
        return f"{self.ref(g)} = {prefix}{kind} {g.value_type._s}{init}{g.suffix}{self.attachments(g.metadata)}"

    def alias(self, a) -> str:
        prefix = f"{a.prefix} " if a.prefix else ""
        target = a.aliasee
        return (f"{self.ref(a)} = {prefix}{a.kind} {a.value_type._s}, {target.type._s} {self.ref(target)}"
                f"{' ' + a.suffix if a.suffix else ''}")

    # -- functions -----------------------------------------------------------
    def function(self, fn: Function) -> str:
        """The text of ``fn`` (its definition or declaration)."""
        out: list[str] = []
        self.function_lines(fn, out)
        return "\n".join(out)

    def function_lines(self, fn: Function, out: list[str]) -> None:
        """Append the lines of ``fn`` to ``out`` (a body a lazy parse left unparsed: from its text)."""
        self._number(fn)
        left = fn.body_parser
        define = left is not None or bool(fn._blocks)
        args = []
        for a in fn.args:
            s = a.type._s
            if a.attrs:
                s += " " + a.attrs
            if define or a.ref is not None:
                s += " " + (a.ref or self.slots[a])
            args.append(s)
        if fn.function_type.vararg:
            args.append("...")
        head = ["define" if define else "declare"]
        if not define and fn.metadata:  # LLVM reads a declaration's attachments before its type
            head[0] += self.attachments(fn.metadata, comma=False)
        if fn.prefix:
            head.append(fn.prefix)
        head.append(f"{fn.return_type._s} {self.ref(fn)}({', '.join(args)})")
        if fn.pre_attrs:
            head.append(fn.pre_attrs)
        head.extend(fn.attributes)
        head.extend(self.group(g) for g in fn.attribute_groups if g.attrs)
        if fn.post:
            head.append(self.parts(fn.post, fn.operands))
        text = " ".join(head) + (self.attachments(fn.metadata, comma=False) if define else "")
        if not define:
            out.append(text)
            return
        if left is not None:
            unparsed = fn.module.unparsed.get(fn) if fn.module is not None else None
            body = None if unparsed is None else left.printed(fn, unparsed, self.ref, self.md, self.group)
            if body is not None:
                out.append(text + " {" + body)
                out.append("}")
                return
            fn.parse_body()
            self._number(fn)
        out.append(text + " {")
        for k, b in enumerate(fn.blocks):
            self._block(b, k, out)
        out.append("}")

    def _number(self, fn: Function) -> None:
        """Number the unnamed arguments, blocks and non-void instructions of ``fn``; rename a name
        used twice."""
        slots = self.slots
        seen: set[str] = set()
        n = 0
        void = T.void
        for vs in (fn.args, *([b, *[i for i in b.instructions if i.type is not void]] for b in fn._blocks)):
            for v in vs:
                r = v.ref
                if r is None:
                    slots[v] = f"%{n}"
                    n += 1
                elif r in seen:
                    self._rename(v, seen)
                else:
                    seen.add(r)

    @staticmethod
    def _rename(v: Value, seen: set[str]) -> None:
        base, k = v.name, 1
        while f"%{base}.{k}" in seen:
            k += 1
        v.name = f"{base}.{k}"
        seen.add(f"%{v.name}" if v.ref is None else v.ref)

    def _block(self, b: BasicBlock, k: int, out: list[str]) -> None:
        if b.ref is not None:
            out.append(f"{b.ref[1:]}:")
        elif k:
            out.append(f"{self.slots[b][1:]}:")
        slots, mds, att, void = self.slots, self.mds, self.attachments, T.void
        for inst in b.instructions:
            if inst.debug_records:
                for r in inst.debug_records:
                    out.append(f"    #dbg_{r.kind}{self.parts(r.parts, r.operands)}")
            if inst.type is void:
                line = ["  "]
            else:
                r = inst.ref
                line = ["  ", r if r is not None else slots[inst], " = "]
            ops = inst.operands
            parts: Any = inst.parts  # Printer.parts inlined: this loop is most of the printing
            for p in parts:
                c = p.__class__
                if c is str:
                    line.append(p)
                elif c is int:
                    v = ops[p]
                    r = v.ref
                    line.append(r if r is not None else slots.get(v) or self.ref(v))
                elif c is MDNode:
                    line.append(mds.get(p) or self.md(p))
                elif c is AttributeGroup:
                    line.append(self.group(p))
                else:
                    line.append(p._s)
            if inst.metadata:
                line.append(att(inst.metadata))
            out.append("".join(line))


def print_module(m: Module) -> str:
    enabled = gc.isenabled()
    gc.disable()  # printing allocates many short lists; no cycles to find
    try:
        return Printer().module(m)
    finally:
        if enabled:
            gc.enable()


def print_instruction(inst: Instruction) -> str:
    """One instruction in isolation (operands without a number print as ``%?``)."""
    p = Printer()
    fn = inst.function
    if fn is not None:
        p._number(fn)
    return p.parts(inst.parts, inst.operands)
