"""LLVM types, interned: equal types are the same object, so ``is`` compares them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar


class Type:
    """Base of all types; ``str(t)`` is LLVM's spelling."""

    __slots__ = ("_s",)
    kind = "type"

    def __str__(self) -> str:
        return self._s

    def __repr__(self) -> str:
        return f"<Type {self._s}>"

    @property
    def is_integer(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_pointer(self) -> bool:
        return self.kind == "ptr"

    @property
    def is_vector(self) -> bool:
        return self.kind == "vector"

    @property
    def scalar(self) -> Type:
        """The element type of a vector, else the type itself."""
        return self.element if self.kind == "vector" else self  # type: ignore[attr-defined]


class SimpleType(Type):
    """void, label, metadata, token and the floating-point kinds."""

    __slots__ = ("kind",)

    def __init__(self, name: str, kind: str):
        self._s = name
        self.kind = kind


class IntType(Type):
    __slots__ = ("bits",)
    kind = "int"

    def __init__(self, bits: int):
        self.bits = bits
        self._s = f"i{bits}"


class PointerType(Type):
    __slots__ = ("addrspace",)
    kind = "ptr"

    def __init__(self, addrspace: int):
        self.addrspace = addrspace
        self._s = f"ptr addrspace({addrspace})" if addrspace else "ptr"


class VectorType(Type):
    __slots__ = ("count", "element", "scalable")
    kind = "vector"

    def __init__(self, count: int, element: Type, scalable: bool):
        self.count, self.element, self.scalable = count, element, scalable
        self._s = f"<{'vscale x ' if scalable else ''}{count} x {element}>"


class ArrayType(Type):
    __slots__ = ("count", "element")
    kind = "array"

    def __init__(self, count: int, element: Type):
        self.count, self.element = count, element
        self._s = f"[{count} x {element}]"


class StructType(Type):
    """A literal struct ``{ i32, ptr }`` / ``<{ ... }>`` or a named one ``%T``.

    A named struct keeps ``elements is None`` while opaque.
    """

    __slots__ = ("elements", "packed", "name")
    kind = "struct"

    def __init__(self, elements: tuple[Type, ...] | None, packed: bool, name: str | None = None):
        self.elements, self.packed, self.name = elements, packed, name
        self._s = f"%{_quote(name)}" if name is not None else _struct_body(elements, packed)

    def body(self) -> str:
        """The definition text: ``{ i32 }`` or ``opaque``."""
        return "opaque" if self.elements is None else _struct_body(self.elements, self.packed)


class FunctionType(Type):
    __slots__ = ("ret", "params", "vararg")
    kind = "function"

    def __init__(self, ret: Type, params: tuple[Type, ...], vararg: bool):
        self.ret, self.params, self.vararg = ret, params, vararg
        args = [str(p) for p in params] + (["..."] if vararg else [])
        self._s = f"{ret} ({', '.join(args)})"


class TargetExtType(Type):
    """``target("name", types..., ints...)``, kept as its spelling."""

    __slots__ = ()
    kind = "target"

    def __init__(self, text: str):
        self._s = text


def _struct_body(elements: tuple[Type, ...] | None, packed: bool) -> str:
    inner = "{ " + ", ".join(map(str, elements)) + " }" if elements else "{}"
    return f"<{inner}>" if packed else inner


_PLAIN = r"[-a-zA-Z$._][-a-zA-Z$._0-9]*"


def _quote(name: str) -> str:
    """Quote an identifier body when LLVM needs it."""
    if re.fullmatch(_PLAIN, name) or name.isdigit():
        return name
    return escape_string(name)


def escape_string(s: str) -> str:
    """``"..."`` with LLVM's ``\\XX`` escapes for non-printable bytes, quotes and backslashes."""
    data = s.encode("utf-8", "surrogateescape")
    return '"' + "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:02X}" for c in data) + '"'


FLOAT_KINDS = ("half", "bfloat", "float", "double", "x86_fp80", "fp128", "ppc_fp128")
SIMPLE: dict[str, Type] = {n: SimpleType(n, "float") for n in FLOAT_KINDS}
SIMPLE.update({n: SimpleType(n, n) for n in ("void", "label", "metadata", "token", "x86_amx")})

void = SIMPLE["void"]
label = SIMPLE["label"]
metadata = SIMPLE["metadata"]
half, bfloat, float_, double = SIMPLE["half"], SIMPLE["bfloat"], SIMPLE["float"], SIMPLE["double"]

#: the widest integer type LLVM accepts
MAX_INT_BITS = (1 << 23) - 1
_ints: dict[int, IntType] = {}
_ptrs: dict[int, PointerType] = {}
_cache: dict[tuple[object, ...], Type] = {}


def int_type(bits: int) -> IntType:
    t = _ints.get(bits)
    if t is None:
        t = _ints[bits] = IntType(bits)
    return t


def ptr(addrspace: int = 0) -> PointerType:
    t = _ptrs.get(addrspace)
    if t is None:
        t = _ptrs[addrspace] = PointerType(addrspace)
    return t


_T = TypeVar("_T", bound=Type)


def _interned(key: tuple[object, ...], make: Callable[[], _T]) -> _T:
    t = _cache.get(key)
    if t is None:
        t = _cache[key] = make()
    return t  # type: ignore[return-value]  # the key's first item fixes the class


def vector(count: int, element: Type, scalable: bool = False) -> VectorType:
    return _interned(("v", count, element, scalable), lambda: VectorType(count, element, scalable))


def array(count: int, element: Type) -> ArrayType:
    return _interned(("a", count, element), lambda: ArrayType(count, element))


def struct(elements: Iterable[Type], packed: bool = False) -> StructType:
    items = tuple(elements)
    return _interned(("s", items, packed), lambda: StructType(items, packed))


def function(ret: Type, params: Iterable[Type], vararg: bool = False) -> FunctionType:
    items = tuple(params)
    return _interned(("f", ret, items, vararg), lambda: FunctionType(ret, items, vararg))


i1, i8, i16, i32, i64 = (int_type(b) for b in (1, 8, 16, 32, 64))
