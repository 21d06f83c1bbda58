"""Lowering of list and dict displays and comprehensions: ``[a, b]``, ``{k: v}``,
``[f(x) for x in a if c]``, ``{k: f(k) for k in a}``.

A display is one call of ``build_list(site, *items)`` (``build_dict(site,
k1, v1, ...)``). A comprehension is the loop a Python user would write: an
empty container, then one ``for`` per generator (its ``if`` clauses nested
inside) around ``append(element)`` (``d[key] = value``).
Its loop variables belong to the comprehension, as in Python 3: they are
renamed (``x`` becomes ``x$c1``), so a name of the same spelling outside
keeps its value and its type. A generator expression is lowered as the list
comprehension it equals (``sum(x * x for x in a)`` sums a list).
"""

from __future__ import annotations

import ast
import copy
from typing import TYPE_CHECKING

from . import intrinsics as K
from .builder import LoweringState
from .ir import Const, Value


class Comprehensions(LoweringState):
    """Mixin of the AST lowerer: list and dict displays and comprehensions."""

    if TYPE_CHECKING:  # defined by the statement half
        def stmt_For(self, node) -> None: ...

    def site(self, node) -> Const:
        """Where a list is made (``(line, column)``): the key of its item type while it is empty."""
        return Const(self.loc(node)[1:], self.loc(node))

    def expr_List(self, node):
        if not isinstance(node.ctx, ast.Load):
            self.unsupported(node, "assignment to a list display", "assign to a tuple of names: a, b = ...")
        if any(isinstance(e, ast.Starred) for e in node.elts):
            self.unsupported(node, "Starred")
        return self.emit(K.build_list, [self.site(node), *(self.expr(e) for e in node.elts)], node)

    def expr_Dict(self, node):
        if any(k is None for k in node.keys):
            self.unsupported(node, "**mapping in a dict display", "set the items one by one: d[k] = v")
        items = [self.expr(v) for kv in zip(node.keys, node.values) for v in kv]
        return self.emit(K.build_dict, [self.site(node), *items], node)

    def expr_DictComp(self, node):
        return self.comprehension(node, K.build_dict, lambda out, key, value: ast.Assign(
            [ast.Subscript(ast.Name(out, ast.Load()), key, ast.Store())], value))

    def expr_ListComp(self, node):
        return self.comprehension(node, K.build_list, lambda out, element: ast.Expr(ast.Call(
            ast.Attribute(ast.Name(out, ast.Load()), "append", ast.Load()), [element], [])))

    expr_GeneratorExp = expr_ListComp

    def comprehension(self, node, make, add) -> Value:
        """An empty container made by ``make``, then the loops of ``node``'s generators around the statement
        ``add(name of the container, *renamed elements)``."""
        if any(g.is_async for g in node.generators):
            self.unsupported(node, "async comprehension")
        self.ntemp += 1
        suffix = f"$c{self.ntemp}"
        bound = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        renamed = _Rename(bound, suffix).copy
        generators = [ast.comprehension(renamed(g.target), g.iter if k == 0 else renamed(g.iter),
                                        [renamed(c) for c in g.ifs], 0)
                      for k, g in enumerate(node.generators)]
        elements = [renamed(e) for e in ((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,))]
        self.locals |= {name + suffix for name in bound}
        out = self.temp()
        self.locals.add(out)
        self.write(out, self.emit(make, [self.site(node)], node))
        stmt: ast.stmt = add(out, *elements)
        for g in reversed(generators):
            for cond in reversed(g.ifs):
                stmt = ast.If(cond, [stmt], [])
            stmt = ast.For(g.target, g.iter, [stmt], [])
        _locate(stmt, node)
        self.stmt_For(stmt)
        return self.read(out)


def _locate(tree: ast.AST, at: ast.AST) -> None:
    """Give the nodes the lowerer made the comprehension's location (the user's own nodes keep theirs)."""
    for n in ast.walk(tree):
        if "lineno" in n._attributes and not hasattr(n, "lineno"):
            ast.copy_location(n, at)


class _Rename(ast.NodeTransformer):
    """A copy of an expression with the comprehension's loop variables renamed."""

    def __init__(self, names: set[str], suffix: str):
        self.names, self.suffix = names, suffix

    def copy(self, node):
        """A renamed copy of ``node`` (the function's tree is shared: it must not change)."""
        return self.visit(copy.deepcopy(node))

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Name(node.id + self.suffix, node.ctx), node)
        return node

