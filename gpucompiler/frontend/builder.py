"""The lowerer's state and the helpers its statement and expression halves share.

:class:`Statements` and :class:`Expressions` are the two halves of the AST
lowerer; both derive from :class:`LoweringState`, which declares every field
the lowerer sets and the emission helpers both halves call.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..errors import UnsupportedError
from .ir import Block, Branch, Call, Const, Function, Inst, Jump, Value
from .ssa import SSABuilder

_HINTS = {
    "Set": "sets are not supported in compiled code: a dict of its members to True works",
    "SetComp": "sets are not supported in compiled code: a dict comprehension {x: True for x in ...} works",
    "Lambda": "bind the lambda to a name (f = lambda x: ...) and call it, or define a function",
    "Try": "compiled code cannot catch exceptions",
    "With": "context managers are not supported", "Slice": "index elements one at a time",
    "Starred": "pass arguments explicitly",
    "Global": "read module constants without declaring them; compiled code cannot rebind globals",
    "JoinedStr": "strings are not supported in compiled code", "Yield": "generators are not supported",
}


class LoweringState:
    """Fields of one function's lowering, and the helpers that emit into its current block."""

    node: ast.FunctionDef
    filename: str
    offset: int
    fn: Function
    ssa: SSABuilder
    #: the block being filled; None after a terminator (code after it never runs)
    block: Block | None
    #: names assigned anywhere in the function (locals), and its parameters
    locals: set[str]
    params: set[str]
    #: (continue target, break target) of the enclosing loops
    loops: list[tuple[Block, Block]]
    #: variables of the enclosing range loops
    range_vars: list[str]
    #: ids of subscripts proven in bounds (versioning.py)
    unchecked: set[int]
    #: the flag the powers being lowered record into (None: the checked operator; powerloops.py)
    power_flag: str | None
    #: the array stores held back while a block of a power loop is lowered (powerloops.py), else None
    held: list | None
    ntemp: int

    if TYPE_CHECKING:  # defined by the halves and the lowerer
        def expr(self, node: ast.AST) -> Value: ...
        def body(self, stmts: list[ast.stmt]) -> None: ...
        def power(self, node: ast.BinOp, n: int | float) -> Value: ...
        def power_loop(self, node: ast.For, args: list, versioned) -> None: ...
        def store(self, fn, args: list, node) -> None: ...

    def loc(self, node) -> tuple:
        return (self.filename, node.lineno + self.offset, node.col_offset)

    def unsupported(self, node, construct: str | None = None, hint: str = ""):
        name = construct or type(node).__name__
        raise UnsupportedError(name, self.loc(node) if hasattr(node, "lineno") else None,
                               self.fn.name if hasattr(self, "fn") else "",
                               hint or _HINTS.get(name, ""))

    def current(self) -> Block:
        """The block being filled (the lowerer never emits after a terminator)."""
        block = self.block
        assert block is not None, "emission after a terminator"
        return block

    def emit(self, fn, args, node) -> Call:
        block = self.current()
        inst = Call(fn if isinstance(fn, Value) else Const(fn), args, self.loc(node))
        inst.block = block
        block.insts.append(inst)
        return inst

    def terminate(self, term: Inst, *targets: Block) -> None:
        block = self.current()
        term.block = block
        block.term = term
        for t in targets:
            t.preds.append(block)
        self.block = None

    def goto(self, target: Block, node) -> None:
        if self.block is not None:
            self.terminate(Jump(target, self.loc(node)), target)

    def branch(self, cond: Value, then: Block, orelse: Block, node) -> None:
        truth = self.emit(bool, [cond], node)
        self.terminate(Branch(truth, then, orelse, self.loc(node)), then, orelse)

    def temp(self) -> str:
        self.ntemp += 1
        return f"${self.ntemp}"

    def read(self, var: str) -> Value:
        return self.ssa.read(var, self.current())

    def write(self, var: str, value: Value) -> None:
        self.ssa.write(var, self.current(), value)
