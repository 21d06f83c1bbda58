"""Basic blocks of normalised bytecode, each run symbolically into Python statements and a terminator.

The operand stack holds AST expressions (built lazily, so ``a * b + c`` comes back as one expression).
Values still on the stack where a block ends go to its successor through variables, one per successor
and stack slot (``__bc_s<offset>_<slot>``), so every join is an assignment and ternaries or ``and``/``or``
values need no pattern. Iterators and a call's NULL pass through as markers. Before any statement, the
values still pending are evaluated into temporaries in stack order, which keeps Python's order of
evaluation (``x, y = y, x``; a call left under a store).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from types import CodeType
from typing import Any

from ...errors import UnsupportedError
from .opcodes import EXIT_KEEPS_ITERATOR, NULL_ABOVE, QUALNAME_ON_STACK, Op

_OPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "//": ast.FloorDiv, "%": ast.Mod,
        "**": ast.Pow, "@": ast.MatMult, "<<": ast.LShift, ">>": ast.RShift, "&": ast.BitAnd, "|": ast.BitOr,
        "^": ast.BitXor}
_CMP = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq, "!=": ast.NotEq, "is": ast.Is,
        "is not": ast.IsNot, "in": ast.In, "not in": ast.NotIn}
_UNARY = {"-": ast.USub, "+": ast.UAdd, "not": ast.Not, "~": ast.Invert}
PREFIX = "__bc_"


class Null:
    """The NULL (or self) slot of a call."""


class Iterator:
    """``iter(expr)`` of a ``for`` loop, kept on the stack while the loop runs."""

    __slots__ = ("expr",)

    def __init__(self, expr: ast.expr):
        self.expr = expr


class Function:
    """A nested ``def`` or lambda being made: its code and the defaults found on the stack."""

    __slots__ = ("code", "defaults", "kwdefaults")

    def __init__(self, code: CodeType):
        self.code = code
        self.defaults: list[ast.expr] = []
        self.kwdefaults: dict[str, ast.expr] = {}


class Block:
    """Statements and how the block ends: ``("return", expr)``, ``("goto", succ)``,
    ``("if", test, then, else)`` or ``("for", iterable, body, exit)``.

    The frontend's records are plain classes: a dataclass took ~0.3-0.5 ms to make at a process's first
    compile."""

    __slots__ = ("start", "ops", "entry", "stmts", "term", "succs", "origins")

    def __init__(self, start: int, ops: list[Op]):
        self.start, self.ops = start, ops
        self.entry: list[Any] | None = None
        self.stmts: list[ast.stmt] = []
        self.term: tuple = ()
        self.succs: list[int] = []
        self.origins: dict[int, str | None] = {}


def slot_name(block: int, slot: int) -> str:
    return f"{PREFIX}s{block}_{slot}"


def split(ops: list[Op]) -> dict[int, Block]:
    """The basic blocks, by starting offset."""
    leaders = {ops[0].offset}
    for i, op in enumerate(ops):
        if op.target is not None:
            leaders.add(op.target)
        if op.kind == "for_iter":
            leaders.add(op.offset)
        if op.kind in ("jump", "cjump", "jump_or_pop", "for_iter", "return") and i + 1 < len(ops):
            leaders.add(ops[i + 1].offset)
    blocks: dict[int, Block] = {}
    for op in ops:
        if op.offset in leaders:
            current = blocks[op.offset] = Block(op.offset, [])
        current.ops.append(op)
    return blocks


class Runner:
    """Runs the blocks of one code object, in offset order (CPython lays blocks out forward, so a block's
    entry stack is known from an earlier predecessor, except at loop heads, reached first from above)."""

    def __init__(self, code: CodeType, blocks: dict[int, Block],
                 nested: Callable[[CodeType, list[ast.expr], dict[str, ast.expr]], ast.FunctionDef]):
        self.code, self.blocks, self.ntemp, self.nested = code, blocks, 0, nested
        self.order = sorted(blocks)
        self.next_of = {a: b for a, b in zip(self.order, self.order[1:])}

    def error(self, what: str, op: Op):
        raise UnsupportedError(f"{what} in a function without source", (self.code.co_filename, op.line, op.col),
                               self.code.co_name, "define the function in a file, or keep to assignments, "
                               "arithmetic, calls, if/for/while and return")

    def run(self) -> None:
        self.blocks[self.order[0]].entry = []
        for start in self.order:
            block = self.blocks[start]
            if block.entry is None:
                continue  # unreachable (code after an infinite loop)
            self.block(block)

    # -- expressions ---------------------------------------------------------
    def at(self, node, op: Op):
        node.lineno, node.col_offset = op.line, op.col
        node.end_lineno, node.end_col_offset = op.line, op.col
        return node

    def temp(self, value: ast.expr, op: Op) -> ast.Name:
        name = f"{PREFIX}t{self.ntemp}"
        self.ntemp += 1
        self.stmts.append(self.at(ast.Assign([self.at(ast.Name(name, ast.Store()), op)], value), op))
        return self.at(ast.Name(name, ast.Load()), op)

    def settle(self, op: Op, statement: bool = True) -> None:
        """Evaluate the pending stack values into temporaries before a statement (which may store to a
        name still pending: ``x, y = y, x``; a slot variable stays, but no longer equals a local), or
        before the end of a block (names stay)."""
        done: dict[int, ast.Name] = {}  # a value copied on the stack is one temporary
        for i, v in enumerate(self.stack):
            if isinstance(v, ast.Name) and (v.id.startswith(PREFIX) or not statement):
                if statement and getattr(v, "origin", None) is not None:
                    self.stack[i] = done.setdefault(id(v), self.name(v.id, op))
            elif isinstance(v, ast.expr) and not isinstance(v, ast.Constant):
                if getattr(v, "inplace", False):
                    self.error("in-place operator used as a value", op)
                if id(v) not in done:
                    done[id(v)] = self.temp(v, op)
                self.stack[i] = done[id(v)]

    def pop(self, op: Op) -> Any:
        if not self.stack:
            self.error("stack shape the decompiler does not follow", op)
        return self.stack.pop()

    def value(self, op: Op) -> ast.expr:
        v = self.pop(op)
        if isinstance(v, Function):  # a lambda passed on: `gradient(lambda x: x * k, 1.0)`
            node = self.nested(v.code, v.defaults, v.kwdefaults)
            if len(node.body) != 1 or not isinstance(node.body[0], ast.Return) or node.body[0].value is None:
                self.error("nested function used as a value (bind it to a name first)", op)
            assert isinstance(node.body[0], ast.Return) and node.body[0].value is not None
            return self.at(ast.Lambda(node.args, node.body[0].value), op)
        if not isinstance(v, ast.expr):
            self.error("stack shape the decompiler does not follow", op)
        if getattr(v, "inplace", False):
            self.error("in-place operator used as a value", op)
        return v

    def emit(self, stmt: ast.stmt, op: Op) -> None:
        self.settle(op)
        self.stmts.append(self.at(stmt, op))

    def store(self, target: ast.expr, op: Op, value: ast.expr | None = None) -> None:
        value = self.pop(op) if value is None else value
        if getattr(value, "inplace", False):
            assert isinstance(value, ast.BinOp)
            bare = ast.dump(target).replace("Store()", "Load()")
            if ast.dump(value.left) == bare:
                self.emit(ast.AugAssign(target, value.op, value.right), op)  # pyright: ignore[reportArgumentType]
            elif isinstance(target, ast.Name) and getattr(value.left, "origin", None) == target.id:
                self.emit(ast.AugAssign(target, value.op, value.right), op)  # the name, unchanged since read
            elif isinstance(target, ast.Subscript):  # the element went through a join: a[i] = a[i] - v is the same
                plain = self.at(ast.BinOp(value.left, value.op, value.right), op)
                self.emit(ast.Assign([target], plain), op)
            else:
                self.error("in-place operator whose result is stored elsewhere", op)
        elif isinstance(value, ast.expr):
            self.emit(ast.Assign([target], value), op)
        else:
            self.error("stack shape the decompiler does not follow", op)

    def name(self, ident: str, op: Op, ctx=None) -> ast.Name:
        return self.at(ast.Name(ident, ctx or ast.Load()), op)

    # -- one block -----------------------------------------------------------
    def block(self, block: Block) -> None:
        assert block.entry is not None
        self.stack: list[Any] = [self.name(slot_name(block.start, i), block.ops[0]) if v == "value" else v
                                 for i, v in enumerate(block.entry)]
        for i, v in enumerate(self.stack):
            if isinstance(v, ast.Name):
                v.origin = block.origins.get(i)  # pyright: ignore[reportAttributeAccessIssue]
        self.stmts = block.stmts
        kw: tuple[str, ...] = ()
        skip = 0
        for i, op in enumerate(block.ops):
            k, last = op.kind, i == len(block.ops) - 1
            if skip:
                skip -= 1
                k = "nop"
            if k == "nop":
                pass
            elif k == "load_fast" or k == "load_deref":
                self.stack.append(self.name(op.arg, op))
            elif k == "load_global":
                ident, null = op.arg
                if null and not NULL_ABOVE:
                    self.stack.append(Null())
                self.stack.append(self.name(ident, op))
                if null and NULL_ABOVE:
                    self.stack.append(Null())
            elif k == "load_const" and isinstance(op.arg, CodeType):
                self.stack.append(op.arg)
            elif k == "load_closure":
                self.stack.append(Null())  # the cell: free names are read by name, as in source
            elif k == "make_function":
                if QUALNAME_ON_STACK:
                    self.pop(op)
                code = self.pop(op)
                if not isinstance(code, CodeType):
                    self.error("stack shape the decompiler does not follow", op)
                if code.co_name in ("<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"):
                    self.error("comprehension or generator expression", op)
                made = Function(code)
                for flag in (8, 4, 2, 1):
                    if op.arg & flag:
                        self.attribute(made, flag, self.pop(op), op)
                self.stack.append(made)
            elif k == "set_function_attribute":
                made, extra = self.pop(op), self.pop(op)
                if not isinstance(made, Function):
                    self.error("stack shape the decompiler does not follow", op)
                self.attribute(made, op.arg, extra, op)
                self.stack.append(made)
            elif k == "load_const":
                if not isinstance(op.arg, (int, float, complex, bool, str, bytes, tuple, type(None))):
                    self.error(f"constant of type {type(op.arg).__name__}", op)
                self.stack.append(self.at(ast.Constant(op.arg), op))  # pyright: ignore[reportArgumentType]
            elif k == "load_attr":
                ident, method = op.arg
                attr = self.at(ast.Attribute(self.value(op), ident, ast.Load()), op)
                self.stack.extend([attr, Null()] if NULL_ABOVE else [Null(), attr]) if method else \
                    self.stack.append(attr)
            elif k in ("store_fast", "store_deref") and self.stack and isinstance(self.stack[-1], Function):
                made = self.stack.pop()
                node = self.nested(made.code, made.defaults, made.kwdefaults)
                node.name = op.arg
                self.emit(node, op)
            elif k == "store_fast":
                self.store(self.name(op.arg, op, ast.Store()), op)
            elif k == "store_deref":
                if op.arg in self.code.co_freevars:
                    self.error("assignment to a variable of the enclosing function (nonlocal)", op)
                self.store(self.name(op.arg, op, ast.Store()), op)
            elif k == "store_attr":
                obj = self.value(op)
                self.store(self.at(ast.Attribute(obj, op.arg, ast.Store()), op), op)
            elif k == "store_subscr":
                index, obj = self.value(op), self.value(op)
                self.store(self.at(ast.Subscript(obj, index, ast.Store()), op), op)
            elif k == "delete_subscr":
                index, obj = self.value(op), self.value(op)
                self.emit(ast.Delete([self.at(ast.Subscript(obj, index, ast.Del()), op)]), op)
            elif k == "store_slice":
                hi, lo, obj = self.value(op), self.value(op), self.value(op)
                sl = self.at(ast.Slice(self._none(lo), self._none(hi), None), op)
                self.store(self.at(ast.Subscript(obj, sl, ast.Store()), op), op)
            elif k == "binary_subscr":
                index, obj = self.value(op), self.value(op)
                self.stack.append(self.at(ast.Subscript(obj, index, ast.Load()), op))
            elif k == "binary_slice":
                hi, lo, obj = self.value(op), self.value(op), self.value(op)
                sl = self.at(ast.Slice(self._none(lo), self._none(hi), None), op)
                self.stack.append(self.at(ast.Subscript(obj, sl, ast.Load()), op))
            elif k == "build_slice":
                parts = [self.value(op) for _ in range(op.arg)][::-1]
                self.stack.append(self.at(ast.Slice(*map(self._none, parts), *([None] * (3 - op.arg))), op))
            elif k == "binop":
                right, left = self.value(op), self.value(op)
                sym = op.arg.rstrip("=") if op.arg not in ("==",) else op.arg
                if sym not in _OPS:
                    self.error(f"operator {op.arg}", op)
                node = self.at(ast.BinOp(left, _OPS[sym](), right), op)
                if op.arg.endswith("="):
                    node.inplace = True  # pyright: ignore[reportAttributeAccessIssue]
                self.stack.append(node)
            elif k == "unary":
                self.stack.append(self.at(ast.UnaryOp(_UNARY[op.arg](), self.value(op)), op))
            elif k == "compare":
                right, left = self.value(op), self.value(op)
                if op.arg not in _CMP:
                    self.error(f"comparison {op.arg}", op)
                self.stack.append(self.at(ast.Compare(left, [_CMP[op.arg]()], [right]), op))
            elif k == "kw_names":
                kw = op.arg
            elif k in ("call", "call_kw"):
                if k == "call_kw":
                    names = self.value(op)
                    kw = names.value if isinstance(names, ast.Constant) and isinstance(names.value, tuple) else ()
                args = [self.value(op) for _ in range(op.arg)][::-1]
                if NULL_ABOVE and self.stack and isinstance(self.stack[-1], Null):
                    self.stack.pop()
                func = self.value(op)
                if not NULL_ABOVE and self.stack and isinstance(self.stack[-1], Null):
                    self.stack.pop()
                npos = len(args) - len(kw)
                keywords = [self.at(ast.keyword(str(n), a), op) for n, a in zip(kw, args[npos:])]
                self.stack.append(self.at(ast.Call(func, args[:npos], keywords), op))
                kw = ()
            elif k == "build_tuple" and op.arg and all(isinstance(v, Null) for v in self.stack[-op.arg:]):
                del self.stack[-op.arg:]
                self.stack.append(Null())  # a closure's cells
            elif k == "build_tuple":
                items = [self.value(op) for _ in range(op.arg)][::-1]
                self.stack.append(self.at(ast.Tuple(items, ast.Load()), op))
            elif k == "unpack":
                names = block.ops[i + 1:i + 1 + op.arg]
                if len(names) != op.arg or any(n.kind != "store_fast" for n in names):
                    self.error("unpacking into anything but plain names", op)
                targets: list[ast.expr] = [self.name(n.arg, n, ast.Store()) for n in names]
                self.store(self.at(ast.Tuple(targets, ast.Store()), op), op, self.value(op))
                skip = op.arg
            elif k == "copy":
                v = self.stack[-op.arg]
                if isinstance(v, ast.expr) and not isinstance(v, (ast.Name, ast.Constant)):
                    self.settle(op, statement=False)
                    v = self.stack[-op.arg]
                self.stack.append(v)
            elif k == "swap":
                self.stack[-1], self.stack[-op.arg] = self.stack[-op.arg], self.stack[-1]
            elif k == "rot":
                self.stack.insert(len(self.stack) - op.arg, self.stack.pop())
            elif k == "push_null":
                self.stack.append(Null())
            elif k == "pop":
                v = self.pop(op)
                if isinstance(v, ast.expr) and not isinstance(v, (ast.Name, ast.Constant)):
                    self.emit(ast.Expr(v), op)
            elif k == "end_for":
                for _ in range(op.arg):
                    self.pop(op)
            elif k == "get_iter":
                self.stack.append(Iterator(self.value(op)))
            elif k == "return":
                self.emit(ast.Return(self.value(op)), op)
                block.term = ("return",)
            elif k == "jump":
                self.leave(block, op, [(op.target, self.stack)])
                block.term = ("goto", op.target)
            elif k == "cjump":
                test = self.value(op)
                fall = self.fall(block, op)
                if op.arg in ("none", "notnone"):
                    test = self.at(ast.Compare(test, [ast.IsNot() if op.arg == "notnone" else ast.Is()],
                                               [ast.Constant(None)]), op)
                test = self.leave(block, op, [(op.target, self.stack), (fall, self.stack)], test)
                block.term = ("if", test, fall, op.target) if op.arg == "false" else ("if", test, op.target, fall)
            elif k == "jump_or_pop":
                self.settle(op, statement=False)
                kept = self.stack[-1] if self.stack else None
                if not isinstance(kept, ast.expr):
                    self.error("stack shape the decompiler does not follow", op)
                fall = self.fall(block, op)
                test = self.leave(block, op, [(op.target, list(self.stack)), (fall, self.stack[:-1])], kept)
                block.term = ("if", test, fall, op.target) if op.arg == "false" else ("if", test, op.target, fall)
            elif k == "for_iter":
                it = self.stack[-1] if self.stack else None
                if not isinstance(it, Iterator) or len(block.ops) != 1:
                    self.error("loop over something other than an iterator", op)
                body = self.fall(block, op)
                after = list(self.stack) if EXIT_KEEPS_ITERATOR else self.stack[:-1]
                self.leave(block, op, [(body, [*self.stack, "item"]), (op.target, after)])
                block.term = ("for", it.expr, body, op.target)
            if last and k not in ("return", "jump", "cjump", "jump_or_pop", "for_iter"):
                fall = self.fall(block, op)
                self.leave(block, op, [(fall, self.stack)])
                block.term = ("goto", fall)

    def attribute(self, made: Function, flag: int, extra: Any, op: Op) -> None:
        """Defaults (1) and keyword defaults (2) of a function being made; its closure (8) is read by
        name; annotations (4) are dropped."""
        if flag == 1:
            if isinstance(extra, ast.Tuple):
                made.defaults = list(extra.elts)
            elif isinstance(extra, ast.Constant) and isinstance(extra.value, tuple):
                made.defaults = [ast.Constant(v) for v in extra.value]
            else:
                self.error("defaults the decompiler does not follow", op)
        elif flag == 2:
            self.error("keyword-only defaults of a nested function", op)

    def _none(self, v: ast.expr) -> ast.expr | None:
        return None if isinstance(v, ast.Constant) and v.value is None else v

    def fall(self, block: Block, op: Op) -> int:
        nxt = self.next_of.get(block.start)
        if nxt is None:
            self.error("control falling off the end of the code", op)
        return nxt  # pyright: ignore[reportReturnType]

    def leave(self, block: Block, op: Op, edges, test: ast.expr | None = None):
        """Hand the stack to each successor: values through its slot variables (assigned here, after a
        test that uses them is evaluated into a temporary), markers as they are."""
        def pending():
            return [(succ, i, v) for succ, stack in edges for i, v in enumerate(stack)
                    if isinstance(v, ast.expr) and not (isinstance(v, ast.Name) and v.id == slot_name(succ, i))]
        if any(isinstance(v, (Function, CodeType)) for _, stack in edges for v in stack):
            self.error("nested function made across branches", op)
        if any(succ == block.start for succ, _ in edges) and pending():
            self.error("stack shape the decompiler does not follow", op)
        if pending():
            before = list(self.stack)
            self.settle(op, statement=False)
            settled = {id(a): b for a, b in zip(before, self.stack)}
            edges = [(succ, [settled.get(id(v), v) for v in stack]) for succ, stack in edges]
            if test is not None and not isinstance(test, (ast.Name, ast.Constant)):
                test = self.temp(test, op)
            for succ, i, v in pending():
                self.stmts.append(self.at(ast.Assign([self.name(slot_name(succ, i), op, ast.Store())], v), op))
        for succ, stack in edges:
            shape = [v if isinstance(v, (Null, Iterator, str)) else "value" for v in stack]
            shape = ["value" if v == "item" else v for v in shape]
            target = self.blocks.get(succ)
            if target is None:
                self.error("jump outside the code", op)
            assert target is not None
            for i, v in enumerate(stack):  # the local a value on the stack still equals, if any
                if isinstance(v, ast.expr):
                    origin = (getattr(v, "origin", None) if v.id.startswith(PREFIX) else v.id) \
                        if isinstance(v, ast.Name) else None
                    target.origins[i] = origin if target.origins.get(i, origin) == origin else None
            if target.entry is None:
                target.entry = shape
            elif len(target.entry) != len(shape) or any(
                    (a is not b) if not isinstance(a, str) else a != b for a, b in zip(target.entry, shape)):
                self.error("stack shape the decompiler does not follow", op)
            block.succs.append(succ)
        return test


__all__ = ["Block", "Function", "Iterator", "Null", "PREFIX", "Runner", "slot_name", "split"]
