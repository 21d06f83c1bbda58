"""Lowering of ``for`` loops over anything but a plain ``range``: arrays, tuples, ``enumerate``, ``zip``.

Every iterable becomes a length and an item function of the position, and
the loop a counted loop over the positions: ``for v in a`` reads ``a[i]``
(the first axis: rows of a 2-D array are views), ``enumerate(it, start)``
pairs ``start + i`` with the item, ``zip(a, b, ...)`` runs to the shortest
length. The iterables are evaluated once, before the loop, as in Python.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import intrinsics as K
from .builder import LoweringState
from .ir import Const, Value

Item = Callable[[Value], Value]


class Iteration(LoweringState):
    """Mixin of the AST lowerer: ``for target in <iterable>`` as a counted loop."""

    if TYPE_CHECKING:  # defined by the statement half
        def loop(self, node, cond, body_prologue=None) -> None: ...
        def assign_to(self, target, value, node) -> None: ...

    def builtin_call(self, node, name: str) -> bool:
        """Whether ``node`` calls the builtin ``name`` (not shadowed by a local)."""
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
                and name not in self.locals)

    def iterate(self, node: ast.For) -> None:
        generic = not self._special(node.iter)
        seq, (length, item) = self._generic(node.iter) if generic else (None, self.iterable(node.iter))
        counter, stop = self.temp(), self.temp()
        self.write(counter, Const(0))
        self.write(stop, length)

        def cond():
            if seq is None:
                return self.emit(operator.lt, [self.read(counter), self.read(stop)], node)
            # the length again at every step: a list that grows is walked to its end (CPython's list
            # iterator); a dict whose size changed is CPython's RuntimeError
            n = self.emit(K.iter_len, [self.read(seq), self.read(stop)], node)
            return self.emit(operator.lt, [self.read(counter), n], node)

        def prologue():
            i = self.read(counter)
            self.write(counter, self.emit(operator.add, [i, Const(1)], node))
            self.assign_to(node.target, item(i), node)

        self.loop(node, cond, prologue)

    def iterable(self, node) -> tuple[Value, Item]:
        """``(length, item)`` of the iterable expression ``node``; ``item(i)`` emits the ``i``-th item."""
        if node.__class__ is ast.Call and node.keywords and any(self.builtin_call(node, n) for n in
                                                                 ("range", "enumerate", "zip")):
            self.unsupported(node.keywords[0], "keyword arguments", "pass arguments by position")
        if self.builtin_call(node, "range") and 1 <= len(node.args) <= 3:
            return self._range(node)
        if self.builtin_call(node, "enumerate") and 1 <= len(node.args) <= 2:
            return self._enumerate(node)
        if self.builtin_call(node, "zip") and node.args:
            return self._zip(node)
        return self._generic(node)[1]

    def _special(self, node) -> bool:
        """Whether ``node`` is a ``range``, ``enumerate`` or ``zip`` call lowered as such."""
        return (self.builtin_call(node, "range") and 1 <= len(node.args) <= 3) or (
            self.builtin_call(node, "enumerate") and 1 <= len(node.args) <= 2) or (
            self.builtin_call(node, "zip") and bool(node.args))

    def _generic(self, node) -> tuple[str, tuple[Value, Item]]:
        """The variable holding the iterable ``node`` (evaluated once), its length and its item function."""
        if node.__class__ is ast.Call and node.keywords and any(self.builtin_call(node, n) for n in
                                                                 ("range", "enumerate", "zip")):
            self.unsupported(node.keywords[0], "keyword arguments", "pass arguments by position")
        var = self.temp()
        self.write(var, self.expr(node))
        return var, (self.emit(len, [self.read(var)], node),
                     lambda i: self.emit(K.getitem_unchecked, [self.read(var), i], node))

    def _saved(self, values: list[Value]) -> list[str]:
        names = []
        for v in values:
            names.append(self.temp())
            self.write(names[-1], v)
        return names

    def _range(self, node) -> tuple[Value, Item]:
        args = [self.expr(a) for a in node.args]
        start, stop, step = (self.emit(f, args, node) for f in (K.range_start, K.range_stop, K.range_step))
        length = self.emit(K.range_length, [start, stop, step], node)
        first, by = self._saved([start, step])
        return length, lambda i: self.emit(operator.add, [
            self.read(first), self.emit(operator.mul, [i, self.read(by)], node)], node)

    def _enumerate(self, node) -> tuple[Value, Item]:
        length, inner = self.iterable(node.args[0])
        start = self._saved([self.expr(node.args[1]) if len(node.args) > 1 else Const(0)])[0]
        return length, lambda i: self.emit(K.build_tuple, [
            self.emit(operator.add, [self.read(start), i], node), inner(i)], node)

    def _zip(self, node) -> tuple[Value, Item]:
        parts = [self.iterable(a) for a in node.args]
        lengths = [p[0] for p in parts]
        length = lengths[0] if len(lengths) == 1 else self.emit(min, lengths, node)
        return length, lambda i: self.emit(K.build_tuple, [item(i) for _, item in parts], node)
