"""Outlining of ``prange`` loops: the loop body becomes a function of a chunk of iterations.

``for i in prange(start, stop, step): body`` is lowered as a call of
:func:`~.intrinsics.parallel_region` with two generated functions:

* the *body* ``(lo, hi, start, step, captured..., reductions...)`` runs the
  iterations ``lo <= k < hi`` (``i = start + k * step``) and returns the
  partial values of the loop's reductions (a tuple), or nothing;
* the *combine* ``(a, b)`` joins two tuples of partials.

Each runs on its own chunk of iterations (in parallel where the job asks
for it, see :mod:`gpucompiler.language.python.parallel`); the partials are combined in
chunk order and then with the values the variables had before the loop. A
*reduction* is a variable every assignment of which in the body has one of
Numba's shapes: ``s += e``, ``s -= e``, ``s *= e``, ``s /= e``, ``s = s + e``
(``-``, ``*``, ``/``; ``e + s``, ``e * s``), ``s = min(s, e)`` or
``s = max(s, e)``; it must not be read anywhere else in the body. Other
variables assigned in the body are private to each iteration; reading one
before the body assigns it (a value carried from another iteration) is refused.
The generated functions keep the user's file and line numbers, so their
errors point at the loop's source.
"""

from __future__ import annotations

import ast
import copy
import enum
import sys
import types as pytypes
from collections.abc import Callable

from ..errors import UnsupportedError
from .closures import SOURCE_ATTRIBUTE
from .reads import read_after

LO, HI, START, STEP, K = "__gpuc_lo", "__gpuc_hi", "__gpuc_start", "__gpuc_step", "__gpuc_k"


class Reduction(enum.Enum):
    """How a reduction variable's partials start, combine and join the value before the loop."""

    ADD = "+"
    """``+=``, ``-=``: partials start at zero, combine and join with ``+``"""
    MUL = "*"
    """``*=``, ``/=``: partials start at one, combine and join with ``*``"""
    MIN = "min"
    """``s = min(s, e)``: partials start at the value before the loop, combine with ``min``"""
    MAX = "max"
    """``s = max(s, e)``: as MIN with ``max``"""


_AUG = {ast.Add: Reduction.ADD, ast.Sub: Reduction.ADD, ast.Mult: Reduction.MUL, ast.Div: Reduction.MUL}
_COMMUTES = (ast.Add, ast.Mult)


class Region:
    """An outlined ``prange`` loop: the generated functions and what the parent passes and gets back (a plain
    class: an ``attrs`` class took ~0.4 ms to make at a process's first compile)."""

    __slots__ = ("body", "combine", "captured", "reductions")

    def __init__(self, body: pytypes.FunctionType, combine: pytypes.FunctionType | None, captured: tuple[str, ...],
                 reductions: tuple[tuple[str, Reduction], ...]):
        self.body, self.combine = body, combine
        self.captured = captured
        """parent variables the body reads (passed by value after ``lo, hi, start, step``)"""
        self.reductions = reductions
        """reduction variables (passed after the captured ones; their partials come back in this order)"""


def is_prange(node: ast.For, local_names: set[str]) -> bool:
    """Whether ``node`` loops over ``prange(...)`` (a name or ``module.prange``)."""
    it = node.iter
    if not isinstance(it, ast.Call):
        return False
    f = it.func
    return ((isinstance(f, ast.Name) and f.id == "prange" and "prange" not in local_names)
            or (isinstance(f, ast.Attribute) and f.attr == "prange"))


def _reduction_of(stmt: ast.stmt) -> tuple[str, Reduction, ast.expr] | None:
    """``(name, kind, operand)`` when ``stmt`` has a reduction's shape."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and type(stmt.op) in _AUG:
        return stmt.target.id, _AUG[type(stmt.op)], stmt.value
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return None
    name, value = stmt.targets[0].id, stmt.value
    if isinstance(value, ast.BinOp) and type(value.op) in _AUG:
        if isinstance(value.left, ast.Name) and value.left.id == name:
            return name, _AUG[type(value.op)], value.right
        if isinstance(value.op, _COMMUTES) and isinstance(value.right, ast.Name) and value.right.id == name:
            return name, _AUG[type(value.op)], value.left
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("min", "max")
            and len(value.args) == 2 and not value.keywords):
        kind = Reduction.MIN if value.func.id == "min" else Reduction.MAX
        for k, arg in enumerate(value.args):
            if isinstance(arg, ast.Name) and arg.id == name:
                return name, kind, value.args[1 - k]
    return None


def _stored(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _loaded(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


class _Outliner:
    def __init__(self, node: ast.For, pyfunc, local_names: set[str], loc: Callable[[ast.AST], tuple]):
        self.node, self.pyfunc, self.local_names, self.loc = node, pyfunc, local_names, loc

    def refuse(self, at: ast.AST, construct: str, hint: str):
        raise UnsupportedError(construct, self.loc(at), self.pyfunc.__qualname__, hint)

    def reductions(self) -> dict[str, Reduction]:
        """Every reduction variable of the body, checked (each is assigned only in reduction shapes
        of one kind and read nowhere else)."""
        shapes: dict[str, list[tuple[ast.stmt, Reduction, ast.expr]]] = {}
        stores: dict[str, int] = {}
        for sub in ast.walk(ast.Module(body=self.node.body, type_ignores=[])):
            if isinstance(sub, ast.stmt):
                found = _reduction_of(sub)
                if found is not None:
                    shapes.setdefault(found[0], []).append((sub, found[1], found[2]))
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                stores[sub.id] = stores.get(sub.id, 0) + 1
        out: dict[str, Reduction] = {}
        for name, found in shapes.items():
            if len(found) != stores.get(name, 0):
                continue  # also assigned otherwise: a private variable
            kinds = {kind for _, kind, _ in found}
            if len(kinds) > 1:
                self.refuse(found[-1][0], f"prange reduction of {name!r} with both "
                            + " and ".join(sorted(k.value for k in kinds)),
                            "reduce each variable with one operation (+/- or *// or min or max)")
            for stmt, _, operand in found:
                if name in _loaded(operand):
                    self.refuse(stmt, f"prange reduction of {name!r} that reads {name!r} in its operand",
                                "compute the operand without the reduction variable")
            out[name] = kinds.pop()
        inside = {id(n) for name in out for stmt, _, _ in shapes[name]
                  for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name}
        for sub in ast.walk(ast.Module(body=self.node.body, type_ignores=[])):
            if (isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in out
                    and id(sub) not in inside):
                self.refuse(sub, f"read of the prange reduction variable {sub.id!r} inside the loop",
                            "its value is known only after the loop: read it there")
        return out

    def check_body(self, reductions: dict[str, Reduction]) -> None:
        target = self.node.target
        if not isinstance(target, ast.Name):
            self.refuse(target, "prange over " + type(target).__name__, "loop over prange with one name")
        if self.node.orelse:
            self.refuse(self.node, "prange-else", "move the else part after the loop")
        self._no_escape(self.node.body, in_loop=False)
        stored = _stored(ast.Module(body=self.node.body, type_ignores=[])) - set(reductions)
        assigned: set[str] = {target.id}
        for stmt in self.node.body:
            if isinstance(stmt, ast.Assign):
                reads = _loaded(stmt.value)
            elif isinstance(stmt, (ast.For, ast.While, ast.If)):  # names it assigns count as its own
                reads = _loaded(stmt) - _stored(stmt)
            else:
                reads = _loaded(stmt)
            carried = sorted((reads & stored) - assigned)
            if carried:
                self.refuse(stmt, f"prange body that reads {carried[0]!r} before assigning it",
                            "each iteration must assign its own variables first (the value would come "
                            "from another iteration); reductions are `s += ...`, `s *= ...`, "
                            "`s = min(s, ...)`, `s = max(s, ...)`")
            assigned |= _stored(stmt)

    def _no_escape(self, stmts, in_loop: bool) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.Return):
                self.refuse(stmt, "return inside a prange loop", "compute a result and return after the loop")
            if isinstance(stmt, ast.Break) and not in_loop:
                self.refuse(stmt, "break out of a prange loop", "iterations run in any order: use a range loop")
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    self._no_escape(inner, in_loop or isinstance(stmt, (ast.For, ast.While)))

    def outline(self, offset: int, filename: str, function_body: list[ast.stmt]) -> Region:
        reductions = self.reductions()
        self.check_body(reductions)
        target = self.node.target
        assert isinstance(target, ast.Name)
        reads = _loaded(ast.Module(body=self.node.body, type_ignores=[]))
        private = _stored(ast.Module(body=self.node.body, type_ignores=[]))  # assigned before read (checked)
        stale = sorted(read_after(function_body, self.node, (private | {target.id}) - set(reductions)))
        if stale:  # it kept its value from before the loop: Python's would be the last iteration's
            self.refuse(self.node, f"{stale[0]!r} assigned in a prange loop and read after it",
                        "a prange loop's own variables have no value after it (its iterations run in any "
                        "order): make it a reduction (s += ...), or compute it after the loop")
        captured = tuple(sorted((reads & self.local_names) - private - set(reductions) - {target.id}))
        red = tuple(sorted(reductions.items()))
        body = self._body_def(target.id, captured, red)
        combine = self._combine_def(red) if red else None
        at = self.node
        fns = [function_from_ast(d, at, self.pyfunc, filename, offset) for d in ([body, combine] if combine else [body])]
        return Region(fns[0], fns[1] if combine else None, captured, red)

    def _body_def(self, var: str, captured, red) -> ast.FunctionDef:
        stmts = [_inner_ranges(copy.deepcopy(s)) for s in self.node.body]
        index = ast.Assign(targets=[ast.Name(var, ast.Store())],
                           value=ast.BinOp(ast.Name(START, ast.Load()), ast.Add(),
                                           ast.BinOp(ast.Name(K, ast.Load()), ast.Mult(), ast.Name(STEP, ast.Load()))))
        loop = ast.For(target=ast.Name(K, ast.Store()),
                       iter=ast.Call(ast.Name("range", ast.Load()), [ast.Name(LO, ast.Load()), ast.Name(HI, ast.Load())],
                                     []),
                       body=[index, *stmts], orelse=[])
        body: list[ast.stmt] = [loop]
        if red:
            body.append(ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n, _ in red], ast.Load())))
        params = [LO, HI, START, STEP, *captured, *(n for n, _ in red)]
        name = f"{self.pyfunc.__name__}.prange_line{self.loc(self.node)[1]}"
        return _def(name, params, body)

    def _combine_def(self, red) -> ast.FunctionDef:
        items = []
        for k, (_, kind) in enumerate(red):
            a, b = (ast.Subscript(ast.Name(v, ast.Load()), ast.Constant(k), ast.Load()) for v in "ab")
            if kind in (Reduction.MIN, Reduction.MAX):
                items.append(ast.Call(ast.Name(kind.value, ast.Load()), [a, b], []))
            else:
                items.append(ast.BinOp(a, ast.Add() if kind is Reduction.ADD else ast.Mult(), b))
        name = f"{self.pyfunc.__name__}.prange_line{self.loc(self.node)[1]}.combine"
        return _def(name, ["a", "b"], [ast.Return(ast.Tuple(items, ast.Load()))])


def _inner_ranges(stmt: ast.stmt) -> ast.stmt:
    """A nested ``prange`` runs serially inside its parallel iteration (as in Numba): it becomes ``range``."""
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.For) and is_prange(sub, set()):
            assert isinstance(sub.iter, ast.Call)
            sub.iter.func = ast.Name("range", ast.Load())
    return stmt


def _def(name: str, params, body) -> ast.FunctionDef:
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])
    node = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None, type_comment=None)
    if sys.version_info >= (3, 12):
        node.type_params = []
    return node


def function_from_ast(node: ast.FunctionDef, at: ast.AST, pyfunc, filename: str, offset: int) -> pytypes.FunctionType:
    """A Python function object for the generated ``node`` (the parent's globals and closure cells); the
    frontend lowers it from ``node`` itself (``SOURCE_ATTRIBUTE``), with the parent's file and lines."""
    ast.copy_location(node, at)
    ast.fix_missing_locations(node)
    pycode = pyfunc.__code__
    free = list(pycode.co_freevars)
    wrapper = _def("__gpuc_outer", [], [*([ast.Assign([ast.Name(v, ast.Store()) for v in free], ast.Constant(None))]
                                          if free else []), node, ast.Return(ast.Name(node.name, ast.Load()))])
    ast.copy_location(wrapper, at)
    ast.fix_missing_locations(wrapper)
    module = compile(ast.Module(body=[wrapper], type_ignores=[]), filename, "exec")
    outer = next(c for c in module.co_consts if isinstance(c, pytypes.CodeType))
    code = next(c for c in outer.co_consts if isinstance(c, pytypes.CodeType))
    cells = dict(zip(free, pyfunc.__closure__ or ()))
    fn = pytypes.FunctionType(code, pyfunc.__globals__, node.name, None,
                              tuple(cells[v] for v in code.co_freevars) or None)
    fn.__qualname__ = pyfunc.__qualname__ + node.name[len(pyfunc.__name__):]
    fn.__module__ = pyfunc.__module__
    setattr(fn, SOURCE_ATTRIBUTE, (node, filename, offset))
    return fn


def from_template(source: str, name: str, cells: dict[str, object], qualname: str,
                  module: str) -> pytypes.FunctionType:
    """The function ``name`` that ``source`` (a ``def``) defines, its free names bound to ``cells``:
    a compiled helper made from a template (``parallel_reduce``'s chunk loop, a reduction kernel)."""
    tree = ast.parse(source)
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef) and node.name == name, "a template defines one function"
    filename = f"<gpucompiler {qualname}>"
    outer = _def("__gpuc_outer", list(cells), [node, ast.Return(ast.Name(name, ast.Load()))])
    ast.copy_location(outer, node)
    ast.fix_missing_locations(outer)
    space: dict[str, object] = {}
    exec(compile(ast.Module(body=[outer], type_ignores=[]), filename, "exec"), space)
    fn = space["__gpuc_outer"](*cells.values())  # pyright: ignore[reportCallIssue]
    assert isinstance(fn, pytypes.FunctionType)
    fn.__qualname__, fn.__module__ = qualname, module
    setattr(fn, SOURCE_ATTRIBUTE, (node, filename, 0))
    return fn


def outline(node: ast.For, pyfunc, local_names: set[str], loc: Callable[[ast.AST], tuple],
            filename: str, offset: int, function_body: list[ast.stmt]) -> Region:
    """The :class:`Region` of the ``prange`` loop ``node`` of ``pyfunc`` (whose body is ``function_body``)."""
    return _Outliner(node, pyfunc, local_names, loc).outline(offset, filename, function_body)


__all__ = ["Reduction", "Region", "from_template", "function_from_ast", "is_prange", "outline"]
