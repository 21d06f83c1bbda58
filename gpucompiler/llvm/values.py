"""Values, uses and constants.

Every operand slot of a :class:`User` is a :class:`Use` registered in the
used value's ``uses``, so ``replace_all_uses_with`` costs the number of uses.
Simple constants (:class:`ConstantData`: numbers, null, undef, ...) are
interned per type and spelling and record no uses.

A parse registers no uses: the users it makes wait in one :class:`PendingUses`
per parse, which every value it made points to, and are registered together,
in the order they were made, on the first question about uses or the first
change of operands of any of them (most parsed modules are printed, linked or
handed to LLVM without one).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from . import types as T

if TYPE_CHECKING:
    from .metadata import AttributeGroup, MDNode
    from .module import Function

Part: TypeAlias = "str | int | T.Type | MDNode | AttributeGroup"
"""One piece of a spelling: text, an operand slot, a type, a metadata node or an attribute group."""

_V = TypeVar("_V", bound="Value")
_PLAIN = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*\Z")


def quote_name(sigil: str, name: str) -> str:
    """``%name`` / ``@name``, quoted when LLVM needs it."""
    if _PLAIN.match(name):
        return sigil + name
    return sigil + T.escape_string(name) if not name.isdigit() else f'{sigil}"{name}"'


class Use:
    """Operand slot ``index`` of ``user``."""

    __slots__ = ("user", "index")

    def __init__(self, user: User, index: int):
        self.user, self.index = user, index

    @property
    def value(self) -> Value:
        return self.user.operands[self.index]


class PendingUses:
    """The users one parse made, whose operand uses are not registered yet: the ``_opuses`` of each
    such user and the ``_uses`` of each value the parse made point here until :meth:`register`."""

    __slots__ = ("users", "registered")

    def __init__(self):
        self.users: list[User] = []
        #: whether :meth:`register` ran (users added later are registered at once)
        self.registered = False

    def add(self, user: User, operands: list[Value]) -> None:
        """Give ``user`` (made by this parse, with no operands) ``operands``, registered with the others."""
        user._uses = self  # pyright: ignore[reportPrivateUsage]
        user.operands = operands
        if self.registered:
            user._opuses = _register(user, operands)  # pyright: ignore[reportPrivateUsage]
        else:
            user._opuses = self  # pyright: ignore[reportPrivateUsage]
            self.users.append(user)

    def own(self, value: _V) -> _V:
        """``value``, made by this parse: asking for its uses registers the pending ones first."""
        value._uses = self  # pyright: ignore[reportPrivateUsage]
        return value

    def resolve(self, users: list[User]) -> list[User]:
        """Point the operands of ``users`` that are defined :class:`Placeholder` objects at their
        definitions; the users still holding an undefined one."""
        left: list[User] = []
        for user in users:
            ops = user.operands
            undefined = False
            for k, v in enumerate(ops):
                if type(v) is Placeholder:
                    new = v.value
                    if new is None:
                        undefined = True
                    elif user._opuses is self:  # pyright: ignore[reportPrivateUsage]
                        ops[k] = new
                    else:
                        user.set_operand(k, new)
            if undefined:
                left.append(user)
        return left

    def register(self) -> None:
        """Register every pending user's operand uses, in the order the users were made."""
        users, self.users, self.registered = self.users, [], True
        for user in users:
            if user._opuses is self:  # pyright: ignore[reportPrivateUsage]
                user._opuses = _register(user, user.operands)  # pyright: ignore[reportPrivateUsage]


def _register(user: User, operands: list[Value]) -> list[Use | None]:
    opuses: list[Use | None] = []
    for k, v in enumerate(operands):
        if v.__class__ is ConstantData:
            opuses.append(None)
        else:
            use = Use(user, k)
            v.use_dict()[use] = None
            opuses.append(use)
    return opuses


class Value:
    """Anything that can be an operand. ``name`` is ``""`` for unnamed values."""

    __slots__ = ("type", "_name", "ref", "_uses")
    sigil = "%"
    #: a constant made of operands or a metadata node: :meth:`User.release` of a user releases it
    released_with_users = False

    def __init__(self, type: T.Type, name: str = ""):
        self.type = type
        self._uses: dict[Use, None] | PendingUses = {}
        self.name = name

    def use_dict(self) -> dict[Use, None]:
        """The registered uses (insertion-ordered keys), pending ones registered first."""
        d = self._uses
        if isinstance(d, dict):
            return d
        d.register()
        d = self._uses
        if isinstance(d, dict):
            return d
        d = self._uses = {}  # no pending user used this value
        return d

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, name: str) -> None:
        self._name = name
        #: the printed reference, or None when numbered at print time
        self.ref = quote_name(self.sigil, name) if name else None

    @property
    def uses(self) -> list[Use]:
        return list(self.use_dict())

    @property
    def users(self) -> list[User]:
        return list(dict.fromkeys(u.user for u in self.use_dict()))

    def replace_all_uses_with(self, new: Value) -> None:
        """Point every use of ``self`` at ``new``."""
        if new is self:
            return
        for use in list(self.use_dict()):
            use.user.set_operand(use.index, new)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.ref or '(unnamed)'}: {self.type}>"

    def release(self) -> None:
        """Forget the uses (the module is dropped: :meth:`Module.drop`); the value is unusable afterwards."""
        del self._uses


class User(Value):
    """A value with operands (instructions, constant expressions, globals)."""

    __slots__ = ("operands", "_opuses")

    def __init__(self, type: T.Type, operands: Iterable[Value] = (), name: str = ""):
        Value.__init__(self, type, name)
        self.operands: list[Value] = []
        self._opuses: list[Use | None] | PendingUses = []
        for op in operands:
            self.append_operand(op)

    def _operand_uses(self) -> list[Use | None]:
        opuses = self._opuses
        if isinstance(opuses, list):
            return opuses
        opuses.register()
        opuses = self._opuses
        if isinstance(opuses, list):
            return opuses
        opuses = self._opuses = _register(self, self.operands)  # a user of a body whose parse failed
        return opuses

    def append_operand(self, value: Value) -> int:
        opuses = self._operand_uses()
        index = len(self.operands)
        self.operands.append(value)
        if type(value) is ConstantData:
            opuses.append(None)
        else:
            use = Use(self, index)
            value.use_dict()[use] = None
            opuses.append(use)
        return index

    def set_operand(self, index: int, value: Value) -> None:
        opuses = self._operand_uses()
        old = opuses[index]
        if old is not None:
            del self.operands[index].use_dict()[old]
        self.operands[index] = value
        if type(value) is ConstantData:
            opuses[index] = None
        else:
            use = opuses[index] = old or Use(self, index)
            value.use_dict()[use] = None

    def release(self) -> None:
        """Forget the operands and the uses (the module is dropped), and release the constant expressions,
        aggregates and metadata nodes among the operands (no block holds them); unusable afterwards."""
        operands, opuses = self.operands, self._opuses
        del self.operands, self._opuses, self._uses
        if type(opuses) is PendingUses:
            opuses.users.clear()
        for op in operands:
            if op.released_with_users and hasattr(op, "operands"):  # not released through another user yet
                op.release()

    def drop_operands(self) -> None:
        """Unregister every operand use (before deleting ``self``)."""
        for op, use in zip(self.operands, self._operand_uses()):
            if use is not None:
                op.use_dict().pop(use, None)
        dropped: list[Use | None] = [None] * len(self.operands)
        self._opuses = dropped


class Argument(Value):
    """A function parameter; ``attrs`` is its attribute text (``noundef``, ...). Asking for its uses
    parses the function's body if it was left for its first use."""

    __slots__ = ("function", "attrs")

    def __init__(self, type: T.Type, name: str = "", attrs: str = "", function: Function | None = None):
        Value.__init__(self, type, name)
        self.attrs, self.function = attrs, function

    @property
    def uses(self) -> list[Use]:
        if self.function is not None:
            self.function.parse_body()
        return list(self.use_dict())

    @property
    def users(self) -> list[User]:
        if self.function is not None:
            self.function.parse_body()
        return list(dict.fromkeys(u.user for u in self.use_dict()))

    def replace_all_uses_with(self, new: Value) -> None:
        if self.function is not None:
            self.function.parse_body()
        Value.replace_all_uses_with(self, new)


class ConstantData(Value):
    """A constant with no operands, kept as LLVM's spelling (``42``, ``0x7FF8...``, ``null``)."""

    __slots__ = ()

    ref: str  # a constant's spelling is never None

    @property
    def text(self) -> str:
        return self.ref

    @property
    def value(self) -> int | float | None:
        """The Python number of an integer or float literal, else None."""
        s = self.ref
        if s in ("true", "false"):
            return int(s == "true")
        try:
            return int(s)
        except ValueError:
            pass
        if self.type.kind == "float" and not s.startswith("0x"):
            return float(s)
        if self.type in (T.double, T.float_) and s.startswith("0x"):
                    return struct.unpack(">d", int(s[2:], 16).to_bytes(8, "big"))[0]
        return None


_constants: dict[tuple[T.Type, str], ConstantData] = {}


def constant(type: T.Type, text: str) -> ConstantData:
    """The interned simple constant ``type text``."""
    key = (type, text)
    c = _constants.get(key)
    if c is None:
        c = _constants[key] = ConstantData(type, "")
        c.ref = text
    return c


def const_int(type: T.Type, value: int) -> ConstantData:
    if type is T.i1:
        return constant(type, "true" if value else "false")
    return constant(type, str(value))


def const_float(type: T.Type, value: float) -> ConstantData:
    if math.isfinite(value) and float(repr(value)) == value and "e" not in repr(value) and type is T.double:
        return constant(type, repr(value))
    bits = struct.unpack(">Q", struct.pack(">d", value))[0]
    return constant(type, f"0x{bits:016X}")


class ConstantAggregate(User):
    """``[..]``, ``<..>``, ``{..}``, ``<{..}>`` constants; operands are the elements."""

    __slots__ = ()
    released_with_users = True


class ConstantExpr(User):
    """A constant expression (``getelementptr (...)``, ``ptrtoint (...)``, ``splat``,
    ``blockaddress``, ...). ``parts`` is its spelling with operand slots."""

    __slots__ = ("opcode", "parts")
    released_with_users = True

    def __init__(self, type: T.Type, opcode: str, parts: list[Part], operands: Iterable[Value]):
        User.__init__(self, type, operands)
        self.opcode, self.parts = opcode, parts


class InlineAsm(Value):
    """``asm sideeffect "..." , "..."`` kept as its spelling."""

    __slots__ = ()

    def __init__(self, type: T.Type, text: str):
        Value.__init__(self, type)
        self.ref = text


class Placeholder(Value):
    """A forward reference, replaced once its definition is parsed."""

    __slots__ = ("line", "value")

    def __init__(self, type: T.Type, line: int):
        Value.__init__(self, type)
        #: the line of its first reference (where an undefined one is reported)
        self.line = line
        #: its definition, once parsed
        self.value: Value | None = None
