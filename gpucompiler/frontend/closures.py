"""Nested ``def`` and lambdas bound to local names: specialised like any callee, locals passed in.

A nested function becomes a Python function of its own whose first
parameters are the enclosing function's locals it reads (its free
variables); a call ``g(x)`` passes their values *at the call*, which is
Python's late binding. The nested function is compiled like any other
callee (a specialisation per argument types) and LLVM inlines it where that
pays. A nested function may call the nested functions defined before it.
Using one as a value (passing or returning it), decorating it, rebinding its
name, ``nonlocal`` and defaults other than constants raise
:class:`~gpucompiler.errors.UnsupportedError`.
"""

from __future__ import annotations

import ast
import functools
import sys
import types as pytypes
from collections import Counter

from .builder import LoweringState
from .ir import Const, Value

SOURCE_ATTRIBUTE = "__gpuc_source__"
"""``(def node, file name, line offset)`` on a function made from a nested definition (read by the parser)"""
CLOSURES_ATTRIBUTE = "__gpuc_closures__"
"""the nested functions defined before it, which a nested function may call"""

Closure = tuple[pytypes.FunctionType, tuple[str, ...]]


def own_bindings(node: ast.FunctionDef | ast.Lambda) -> Counter[str]:
    """How many times each parameter and local of ``node``'s own scope is bound (nested scopes'
    names are theirs)."""
    a = node.args
    names = Counter(p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs))
    todo: list[ast.AST] = list(node.body) if isinstance(node.body, list) else [node.body]
    while todo:
        sub = todo.pop()
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names[sub.id] += 1
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[sub.name] += 1
            todo.extend(sub.decorator_list)
            continue
        if isinstance(sub, ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(sub))
    return names


def _loads(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


@functools.lru_cache(maxsize=512)
def nested_function(outer, node: ast.FunctionDef | ast.Lambda, name: str, captured: tuple[str, ...],
                    filename: str, offset: int, inherited: tuple[tuple[str, Closure], ...]) -> pytypes.FunctionType:
    """The function ``def name(*captured, *params)`` with ``node``'s body, in ``outer``'s globals
    (one object per definition: specialisations and cache keys stay the same)."""
    params = node.args
    args = ast.arguments(posonlyargs=[], args=[ast.copy_location(ast.arg(arg=c), node) for c in captured]
                         + [*params.posonlyargs, *params.args], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=list(params.defaults))
    body: list[ast.stmt] = (node.body if isinstance(node.body, list)
                            else [ast.copy_location(ast.Return(node.body), node.body)])
    fdef = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None, type_comment=None,
                           **({"type_params": []} if sys.version_info >= (3, 12) else {}))
    fdef = ast.fix_missing_locations(ast.copy_location(fdef, node))
    code = compile(ast.Module(body=[fdef], type_ignores=[]), filename, "exec")
    fn_code = next(c for c in code.co_consts if isinstance(c, pytypes.CodeType))
    defaults = tuple(d.value for d in params.defaults if isinstance(d, ast.Constant))
    fn = pytypes.FunctionType(fn_code, outer.__globals__, name, defaults or None)
    fn.__qualname__ = f"{outer.__qualname__}.<locals>.{name}"
    setattr(fn, SOURCE_ATTRIBUTE, (fdef, filename, offset))
    setattr(fn, CLOSURES_ATTRIBUTE, dict(inherited))
    return fn


class Closures(LoweringState):
    """Mixin of the AST lowerer: nested ``def``, lambdas bound to names, calls of them."""

    #: name -> (the nested function, the enclosing locals it reads), in definition order
    closures: dict[str, Closure]
    #: how many times each name is bound in the function (a nested function's name only once)
    bindings: dict[str, int]

    def stmt_FunctionDef(self, node: ast.FunctionDef):
        if node.decorator_list:
            self.unsupported(node, "decorated nested function", "call the decorator's result at module level")
        self.define_closure(node.name, node)

    def define_closure(self, name: str, node: ast.FunctionDef | ast.Lambda) -> None:
        if self.bindings.get(name, 0) > 1 or name in self.params:
            self.unsupported(node, "nested function whose name is bound more than once",
                             "give the nested function a name of its own")
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs:
            self.unsupported(node, "nested function with *args, **kwargs or keyword-only parameters",
                             "use positional parameters")
        if not all(isinstance(d, ast.Constant) for d in a.defaults):
            self.unsupported(node, "nested function default that is not a constant",
                             "pass the value as an argument")
        rebinding = next((n for n in ast.walk(node) if isinstance(n, ast.Nonlocal)), None)
        if rebinding is not None:
            self.unsupported(rebinding, "nonlocal in a nested function",
                             "return the new value from the nested function and assign it in the enclosing one")
        own = set(own_bindings(node))
        outer = self.fn.pyfunc
        assert outer is not None, "the lowerer lowers a Python function"
        visible = self.locals | self.params | set(outer.__code__.co_freevars)
        free = (_loads(node) - own)
        inherited = tuple((n, self.closures[n]) for n in sorted(free & set(self.closures)))
        captured = set(free & visible) - set(self.closures)
        for _, (_, more) in inherited:
            captured |= set(more)
        self.closures[name] = (nested_function(outer, node, name, tuple(sorted(captured)), self.filename,
                                               self.offset, inherited), tuple(sorted(captured)))

    def call_closure(self, node: ast.Call, closure: Closure) -> Value:
        """``g(args)`` of a nested function: the captured locals' values now, then the arguments."""
        fn, captured = closure
        if node.keywords:
            self.unsupported(node.keywords[0], "keyword arguments to a nested function", "pass them by position")
        values = [self.expr(ast.copy_location(ast.Name(id=c, ctx=ast.Load()), node)) for c in captured]
        return self.emit(Const(fn), values + [self.expr(a) for a in node.args], node)
