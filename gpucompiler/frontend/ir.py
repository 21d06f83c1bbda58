"""The untyped SSA IR the frontend produces.

Every operation is a :class:`Call` of a Python object (``operator.add``,
``math.sin``, ``len``, a user function), as in Julia's lowered code: method
tables and plugins then decide what a call means. Values are instructions,
arguments, constants and globals; phis sit at the top of blocks.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from .printer import format_function

Loc = tuple  # (filename, line, col)


class Value:
    """Base of SSA values."""

    __slots__ = ("id", "loc")

    def __init__(self, loc: Loc | None = None):
        self.id = -1
        """number assigned by :meth:`Function.renumber` (stable printing)"""
        self.loc = loc
        """(file, line, col) of the Python source, or None"""

    operands: tuple = ()

    def ref(self) -> str:
        return f"%{self.id}"


class Arg(Value):
    """The ``index``-th parameter of the function."""

    __slots__ = ("index", "name")

    def __init__(self, index: int, name: str, loc=None):
        super().__init__(loc)
        self.index, self.name = index, name

    def ref(self) -> str:
        return f"%{self.name}"


class Const(Value):
    """A compile-time constant: a number, ``None``, a string, or any Python object."""

    __slots__ = ("value",)

    def __init__(self, value: Any, loc=None):
        super().__init__(loc)
        self.value = value

    def ref(self) -> str:
        return _show(self.value)


class Global(Value):
    """A non-local name, resolved by the interpreter in the function's globals."""

    __slots__ = ("name",)

    def __init__(self, name: str, loc=None):
        super().__init__(loc)
        self.name = name

    def ref(self) -> str:
        return f"@{self.name}"


class Undef(Value):
    """A variable read on a path where it was never assigned."""

    __slots__ = ("name",)

    def __init__(self, name: str, loc=None):
        super().__init__(loc)
        self.name = name


class Inst(Value):
    """A value computed inside a block."""

    __slots__ = ("block",)


class Call(Inst):
    """``fn(*args)``: fn and args are values."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: Value, args: list[Value], loc=None):
        super().__init__(loc)
        self.fn, self.args = fn, list(args)

    @property
    def operands(self):
        return (self.fn, *self.args)


class Phi(Inst):
    """Merge of ``var`` at a block entry: ``incoming`` maps predecessor blocks to values."""

    __slots__ = ("var", "incoming")

    def __init__(self, var: str, loc=None):
        super().__init__(loc)
        self.var, self.incoming = var, {}

    @property
    def operands(self):
        return tuple(self.incoming.values())


class Jump(Inst):
    __slots__ = ("target",)

    def __init__(self, target: Block, loc=None):
        super().__init__(loc)
        self.target = target

    def text(self) -> str:
        return f"goto {self.target!r}"


class Branch(Inst):
    """Conditional branch on a bool value."""

    __slots__ = ("cond", "then", "orelse")

    def __init__(self, cond: Value, then: Block, orelse: Block, loc=None):
        super().__init__(loc)
        self.cond, self.then, self.orelse = cond, then, orelse

    @property
    def operands(self):
        return (self.cond,)

    def text(self) -> str:
        return f"if {self.cond.ref()} goto {self.then!r} else {self.orelse!r}"


class Return(Inst):
    __slots__ = ("value",)

    def __init__(self, value: Value, loc=None):
        super().__init__(loc)
        self.value = value

    @property
    def operands(self):
        return (self.value,)

    def text(self) -> str:
        return f"return {self.value.ref()}"


def successors(term: Inst | None) -> tuple:
    if isinstance(term, Jump):
        return (term.target,)
    if isinstance(term, Branch):
        return (term.then, term.orelse)
    return ()


class Block:
    """A basic block: phis, then instructions, then one terminator."""

    __slots__ = ("id", "phis", "insts", "term", "preds")

    def __init__(self, id: int):
        self.id = id
        self.phis: list[Phi] = []
        self.insts: list[Call] = []
        self.term: Inst | None = None
        self.preds: list[Block] = []

    def __repr__(self) -> str:
        return f"bb{self.id}"


class Function:
    """A Python function in SSA form."""

    __slots__ = ("name", "filename", "line", "args", "blocks", "pyfunc")

    def __init__(self, name: str, filename: str, line: int, args: list[Arg], pyfunc=None):
        self.name, self.filename, self.line = name, filename, line
        self.args = args
        self.blocks: list[Block] = []
        self.pyfunc = pyfunc
        """the Python function this was built from"""

    @property
    def entry(self) -> Block:
        return self.blocks[0]

    def renumber(self) -> None:
        n = 0
        for block in self.blocks:
            for inst in (*block.phis, *block.insts):
                inst.id, n = n, n + 1

    def __str__(self) -> str:
        return format_function(self)


def _show(value: Any) -> str:
    name = getattr(value, "__qualname__", None)
    if name is not None and not isinstance(value, type(None)):
        mod = getattr(value, "__module__", None) or getattr(value, "__name__", "")
        mod = "operator" if mod == "_operator" else mod
        return f"{mod}.{name}" if mod and mod != "builtins" else name
    if isinstance(value, ModuleType):
        return f"module {value.__name__}"
    return repr(value)
