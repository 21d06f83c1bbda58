"""Lowering of statements: assignment, control flow, loops, returns."""

from __future__ import annotations

import ast
import operator
from typing import TYPE_CHECKING

from . import intrinsics as K
from .builder import LoweringState
from .expressions import _BINOPS
from .ir import Const, Return
from .parallel import Reduction, is_prange, outline
from .powerloops import plan
from .versioning import covered_accesses, step_sign


class Statements(LoweringState):
    if TYPE_CHECKING:  # defined by the iteration and closure halves
        def iterate(self, node: ast.For) -> None: ...
        def define_closure(self, name: str, node: ast.FunctionDef | ast.Lambda) -> None: ...

    """Mixin of the AST lowerer: one ``stmt_<Node>`` method per statement kind."""

    def stmt_Pass(self, node):
        pass

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def stmt_Return(self, node):
        value = self.bound_value(node.value) if node.value is not None else Const(None)
        self.terminate(Return(value, self.loc(node)))

    def stmt_Assign(self, node):
        if isinstance(node.value, ast.Lambda) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.define_closure(node.targets[0].id, node.value)  # f = lambda ...: a nested function
            return
        named = any(not isinstance(t, ast.Subscript) for t in node.targets)
        value = self.bound_value(node.value) if named else self.expr(node.value)
        for target in node.targets:
            self.assign_to(target, value, node)

    def stmt_AnnAssign(self, node):
        if node.value is None:
            return
        named = not isinstance(node.target, ast.Subscript)
        self.assign_to(node.target, self.bound_value(node.value) if named else self.expr(node.value), node)

    def bound_value(self, node):
        """The value of ``node`` bound to a name or returned: an array expression is evaluated
        there (:func:`~.intrinsics.materialize`); names, constants and subscripts are never one."""
        value = self.expr(node)
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.IfExp)):
            value = self.emit(K.materialize, [value], node)
        return value

    def stmt_AugAssign(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            self.unsupported(node.op)
        target = node.target
        if isinstance(target, ast.Name):  # an array is updated in place, as NumPy does
            old = self.expr(target)
            new = self.emit(op, [old, self.expr(node.value)], node)
            self.assign_to(target, self.emit(K.inplace, [old, new], node), node)
        elif isinstance(target, ast.Subscript):
            obj, index = self.expr(target.value), self.expr(target.slice)
            unchecked = id(target) in self.unchecked
            old = self.emit(K.getitem_unchecked if unchecked else operator.getitem, [obj, index], node)
            new = self.emit(op, [old, self.expr(node.value)], node)
            self.store(K.setitem_unchecked if unchecked else operator.setitem, [obj, index, new], node)
        elif isinstance(target, ast.Attribute):  # a field of an element of a structured array: p.v += dv
            obj = self.expr(target.value)
            new = self.emit(op, [self.emit(getattr, [obj, Const(target.attr)], node), self.expr(node.value)], node)
            self.store(setattr, [obj, Const(target.attr), new], node)
        else:
            self.unsupported(target, "augmented assignment to " + type(target).__name__)

    def assign_to(self, target, value, node):
        if isinstance(target, ast.Name):
            self.write(target.id, value)
        elif isinstance(target, ast.Tuple):
            checked = self.emit(K.unpack, [value, Const(len(target.elts))], node)
            for i, elt in enumerate(target.elts):
                self.assign_to(elt, self.emit(operator.getitem, [checked, Const(i)], node), node)
        elif isinstance(target, ast.Subscript):
            fn = K.setitem_unchecked if id(target) in self.unchecked else operator.setitem
            self.store(fn, [self.expr(target.value), self.expr(target.slice), value], node)
        elif isinstance(target, ast.Attribute):  # rules decide: a field of a structured array's element
            self.store(setattr, [self.expr(target.value), Const(target.attr), value], node)
        else:
            self.unsupported(target, "assignment to " + type(target).__name__,
                             "assign to local names, tuples of names or array elements")

    def stmt_Delete(self, node):
        """``del obj[index]`` (a list's item or slice, a dict's key): ``operator.delitem``."""
        for target in node.targets:
            if not isinstance(target, ast.Subscript):
                self.unsupported(target, "del of " + type(target).__name__,
                                 "del removes items of lists and dicts (del xs[i], del d[k]); rebind a name instead")
            self.emit(operator.delitem, [self.expr(target.value), self.expr(target.slice)], node)

    def stmt_If(self, node):
        then, after = self.ssa.new_block(), self.ssa.new_block()
        orelse = self.ssa.new_block() if node.orelse else after
        self.branch(self.expr(node.test), then, orelse, node)
        for block, stmts in ((then, node.body), (orelse, node.orelse)):
            if stmts:
                self.ssa.seal(block)
                self.block = block
                self.body(stmts)
                self.goto(after, node)
        self.ssa.seal(after)
        self.block = after

    def loop(self, node, cond, body_prologue=None):
        """``while cond(): body``; ``body_prologue`` runs first in each iteration."""
        if node.orelse:
            self.unsupported(node, type(node).__name__ + "-else", "move the else part after the loop")
        header, body, after = self.ssa.new_block(), self.ssa.new_block(), self.ssa.new_block()
        self.goto(header, node)
        self.block = header
        self.branch(cond(), body, after, node)
        self.ssa.seal(body)
        self.block = body
        if body_prologue:
            body_prologue()
        self.loops.append((header, after))
        self.body(node.body)
        self.loops.pop()
        self.goto(header, node)
        self.ssa.seal(header)
        self.ssa.seal(after)
        self.block = after

    def stmt_While(self, node):
        self.loop(node, lambda: self.expr(node.test))

    def stmt_For(self, node):
        if is_prange(node, self.locals):
            return self._prange(node)
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords and "range" not in self.locals):
            self.iterate(node)  # arrays, tuples, enumerate, zip (iteration.py)
            return
        args = [self.expr(a) for a in it.args]
        sign = step_sign(it)
        covered = covered_accesses(node, self.params, self.range_vars) if sign else []
        self.range_vars.append(node.target.id if isinstance(node.target, ast.Name) else "")
        versioned = plan(node, [sub for sub, _, _ in covered], sign)  # powers (powerloops.py)
        if covered:
            fast, slow, after = self.ssa.new_block(), self.ssa.new_block(), self.ssa.new_block()
            self.branch(self._range_test(node, args, sign, covered), fast, slow, node)
            for block, unchecked in ((fast, {id(sub) for sub, _, _ in covered}), (slow, set())):
                self.ssa.seal(block)
                self.block, saved, self.unchecked = block, self.unchecked, self.unchecked | unchecked
                if unchecked and versioned:
                    self.power_loop(node, args, versioned)
                else:
                    self._range_loop(node, it, args)
                self.unchecked = saved
                self.goto(after, node)
            self.ssa.seal(after)
            self.block = after
        elif versioned:
            self.power_loop(node, args, versioned)
        else:
            self._range_loop(node, it, args)
        self.range_vars.pop()

    def _prange(self, node):
        """A ``prange`` loop: its body outlined (frontend/parallel.py) and called through
        ``parallel_region``; the reductions' partials then join the values before the loop."""
        it = node.iter
        if not 1 <= len(it.args) <= 3 or it.keywords:
            self.unsupported(it, "prange with these arguments", "call prange(stop), prange(start, stop) or "
                             "prange(start, stop, step)")
        region = outline(node, self.fn.pyfunc, self.locals, self.loc, self.filename, self.offset, self.node.body)
        args = [self.expr(a) for a in it.args]
        start, stop, step = (self.emit(fn, args, it) for fn in (K.range_start, K.range_stop, K.range_step))
        if len(args) < 3:  # known start and step: the body's index arithmetic folds (and vectorises)
            step = Const(1)
            start = Const(0) if len(args) == 1 else start
        n = self.emit(K.prange_count, [start, stop, step], it)
        inits = []
        for name, kind in region.reductions:
            value = self.read(name)
            self.ssa.note_read(value, self.current(), name, self.loc(node))
            start_fn = {Reduction.ADD: K.zero_of, Reduction.MUL: K.one_of}.get(kind)
            inits.append(self.emit(start_fn, [value], node) if start_fn else value)
        captured = [self.read(name) for name in region.captured]
        out = self.emit(K.parallel_region, [Const(region.body), Const(region.combine), n, start, step,
                                            *captured, *inits], node)
        for k, (name, kind) in enumerate(region.reductions):
            part = self.emit(operator.getitem, [out, Const(k)], node)
            join = {Reduction.ADD: operator.add, Reduction.MUL: operator.mul}.get(kind)
            self.write(name, self.emit(join, [self.read(name), part], node) if join else part)

    def _range_test(self, node, args, sign, covered):
        """``all_in_bounds`` of every covered access over the values the loop variable takes."""
        start, stop = self.emit(K.range_start, args, node.iter), self.emit(K.range_stop, args, node.iter)
        one = Const(1)
        lo, hi = ((start, self.emit(operator.sub, [stop, one], node)) if sign > 0
                  else (self.emit(operator.add, [stop, one], node), start))
        quads = []
        for _sub, array, comps in covered:
            for axis, name, c in comps:
                if name is None:
                    low = high = Const(c)
                else:
                    base = (lo, hi) if name == node.target.id else (self.read(name),) * 2
                    low, high = (self.emit(operator.add, [b, Const(c)], node) if c else b for b in base)
                quads += [self.read(array), Const(axis), low, high]
        return self.emit(K.all_in_bounds, quads, node)

    def _range_loop(self, node, it, args):
        counter, stop, step = self.temp(), self.temp(), self.temp()
        self.write(counter, self.emit(K.range_start, args, it))
        self.write(stop, self.emit(K.range_stop, args, it))
        self.write(step, self.emit(K.range_step, args, it))
        read = self.read

        def cond():
            return self.emit(K.range_cond, [read(counter), read(stop), read(step)], node)

        def prologue():
            value = read(counter)
            self.write(counter, self.emit(operator.add, [value, read(step)], node))
            self.assign_to(node.target, value, node)

        self.loop(node, cond, prologue)

    def stmt_Raise(self, node):
        exc = node.exc
        if exc is None or node.cause is not None:
            self.unsupported(node, "bare raise" if exc is None else "raise ... from",
                             "raise SomeError('constant message')")
        cls, message = exc, None
        if isinstance(exc, ast.Call):
            cls, message = exc.func, self._constant_message(exc, exc.args, exc.keywords)
        self.emit(K.raise_exception, [self.expr(cls), Const(message)], node)
        self.terminate(Return(Const(None), self.loc(node)))  # never reached: the call always raises

    def stmt_Assert(self, node):
        message = self._constant_message(node, [node.msg] if node.msg is not None else [], [])
        self.emit(K.assert_, [self.emit(bool, [self.expr(node.test)], node), Const(message)], node)

    def _constant_message(self, node, args, keywords):
        if keywords or len(args) > 1 or (args and not (isinstance(args[0], ast.Constant)
                                                       and isinstance(args[0].value, str))):
            self.unsupported(node, "exception message that is not one constant string",
                             "raise SomeError('constant text'): compiled code cannot format messages")
        return args[0].value if args else None

    def stmt_Break(self, node):
        self._jump_out(node, 1)

    def stmt_Continue(self, node):
        self._jump_out(node, 0)

    def _jump_out(self, node, which):
        if not self.loops:
            self.unsupported(node, type(node).__name__ + " outside a loop")
        self.goto(self.loops[-1][which], node)
