"""Lowering of expressions: operators as calls, short-circuit forms as control flow."""

from __future__ import annotations

import ast
import builtins
import operator
from typing import TYPE_CHECKING

from . import intrinsics as K
from .builder import LoweringState
from .ir import Const, Global, Value
from .powerloops import exponent

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.MatMult: operator.matmul,
}
_CMPOPS = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
          ast.Invert: operator.invert}


class Expressions(LoweringState):
    """Mixin of the AST lowerer: one ``expr_<Node>`` method per expression kind."""

    if TYPE_CHECKING:  # defined by the closure half
        closures: dict
        def call_closure(self, node: ast.Call, closure) -> Value: ...
        def bound_value(self, node) -> Value: ...  # the statements half

    def expr(self, node) -> Value:
        handler = getattr(self, "expr_" + type(node).__name__, None)
        if handler is None:
            self.unsupported(node)
        return handler(node)

    def expr_Constant(self, node):
        if not isinstance(node.value, (bool, int, float, complex, type(None), str)) and node.value is not Ellipsis:
            self.unsupported(node, f"constant of type {type(node.value).__name__}")
        return Const(node.value, self.loc(node))

    def expr_Name(self, node):
        if node.id in self.closures:
            self.unsupported(node, "nested function used as a value",
                             "call it here; pass values, not functions, to other functions")
        if node.id in self.locals:
            value = self.read(node.id)
            self.ssa.note_read(value, self.current(), node.id, self.loc(node))
            return value
        value = Global(node.id, self.loc(node))
        if not self._defined(node.id):  # CPython's NameError belongs here, before any later effect
            self.emit(K.read_global, [value], node)
        return value

    def _defined(self, name: str) -> bool:
        """Whether ``name`` finds a closure cell, a global or a builtin of the function now (as the
        interpreter resolves it)."""
        fn = self.fn.pyfunc
        if fn is None:
            return True
        g = fn.__globals__
        if name in fn.__code__.co_freevars or name in g:
            return True
        b = g.get("__builtins__", builtins)
        return name in (b if isinstance(b, dict) else vars(b))

    def expr_Tuple(self, node):
        """A tuple's items are bound values: an array expression in one is evaluated into an array."""
        return self.emit(K.build_tuple, [self.bound_value(e) for e in node.elts], node)

    def expr_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            self.unsupported(node, type(node.op).__name__)
        if self.power_flag is not None and op is operator.pow:  # an unchecked copy (powerloops.py)
            n = exponent(node.right)
            if n is not None:
                return self.power(node, n)
        return self.emit(op, [self.expr(node.left), self.expr(node.right)], node)

    def expr_UnaryOp(self, node):
        operand = node.operand
        value = operand.value if isinstance(operand, ast.Constant) else None
        if (isinstance(node.op, ast.USub) and isinstance(value, (int, float))
                and not isinstance(value, bool)):  # -9223372036854775808 is an int64
            return Const(-value, self.loc(node))
        return self.emit(_UNARY[type(node.op)], [self.expr(operand)], node)

    def expr_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.closures:
            return self.call_closure(node, self.closures[func.id])
        if isinstance(node.func, ast.Attribute) and self._runtime_value(node.func.value):
            receiver = self.expr(node.func.value)  # a method of a value: rules key on call_method
            fn, args = K.call_method, [receiver, Const(node.func.attr, self.loc(node))]
            args += [self.expr(a) for a in node.args]
            if not node.keywords:
                return self.emit(fn, args, node)
            fn = Const(fn, self.loc(node))  # a.sum(axis=0): call_kw(call_method, names, a, "sum", 0)
        else:
            fn = self.expr(func)
            args = [self.expr(a) for a in node.args]
        if not node.keywords:
            return self.emit(fn, args, node)
        for kw in node.keywords:
            if kw.arg is None:
                self.unsupported(kw, "**keyword arguments", "pass arguments by name or position")
        names = Const(tuple(kw.arg for kw in node.keywords), self.loc(node))
        return self.emit(K.call_kw, [fn, names, *args, *(self.expr(kw.value) for kw in node.keywords)], node)

    def _runtime_value(self, node) -> bool:
        """Whether ``node`` computes a run-time value (not a chain of attributes of a global: a module)."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return not (isinstance(node, ast.Name) and node.id not in self.locals)

    def expr_Slice(self, node):
        parts = [self.expr(p) if p is not None else Const(None, self.loc(node))
                 for p in (node.lower, node.upper, node.step)]
        return self.emit(K.build_slice, parts, node)

    def expr_Attribute(self, node):
        return self.emit(getattr, [self.expr(node.value), Const(node.attr)], node)

    def expr_Subscript(self, node):
        fn = K.getitem_unchecked if id(node) in self.unchecked else operator.getitem
        return self.emit(fn, [self.expr(node.value), self.expr(node.slice)], node)

    def select(self, node, first: Value, rest) -> Value:
        """``first`` if ``rest`` is None, else ``rest[0]()`` when ``first`` decides to go on.

        ``rest = (make_value, take_when_true)``: shared shape of ``and``, ``or``,
        chained comparisons and conditional expressions.
        """
        var = self.temp()
        self.write(var, first)
        make, when_true = rest
        more, after = self.ssa.new_block(), self.ssa.new_block()
        if when_true:
            self.branch(first, more, after, node)
        else:
            self.branch(first, after, more, node)
        self.ssa.seal(more)
        self.block = more
        self.write(var, make())
        self.goto(after, node)
        self.ssa.seal(after)
        self.block = after
        return self.ssa.read(var, after)

    def expr_BoolOp(self, node):
        value = self.expr(node.values[0])
        for operand in node.values[1:]:
            value = self.select(node, value, (lambda o=operand: self.expr(o),
                                              isinstance(node.op, ast.And)))
        return value

    def expr_Compare(self, node):
        rhs = self.temp()  # the previous right-hand side, evaluated once
        self.write(rhs, self.expr(node.left))
        value = None
        for op, comp in zip(node.ops, node.comparators):
            def make(op=op, comp=comp):
                left, right = self.read(rhs), self.expr(comp)
                self.write(rhs, right)
                return self._compare(node, op, left, right)

            value = make() if value is None else self.select(node, value, (make, True))
        return value

    def _compare(self, node, op, left, right):
        if isinstance(op, (ast.In, ast.NotIn)):  # Python's `x in c` is c.__contains__(x)
            found = self.emit(operator.contains, [right, left], node)
            return self.emit(operator.not_, [found], node) if isinstance(op, ast.NotIn) else found
        fn = _CMPOPS.get(type(op))
        if fn is None:
            self.unsupported(node, f"comparison {type(op).__name__}")
        return self.emit(fn, [left, right], node)

    def expr_IfExp(self, node):
        cond = self.expr(node.test)
        var = self.temp()
        then, orelse, after = self.ssa.new_block(), self.ssa.new_block(), self.ssa.new_block()
        self.branch(cond, then, orelse, node)
        for block, sub in ((then, node.body), (orelse, node.orelse)):
            self.ssa.seal(block)
            self.block = block
            self.write(var, self.expr(sub))
            self.goto(after, node)
        self.ssa.seal(after)
        self.block = after
        return self.ssa.read(var, after)
