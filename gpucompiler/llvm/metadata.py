"""Metadata nodes, named metadata and attribute groups.

A node's body is kept as a light template (``parts``): strings, references to
other :class:`MDNode` objects, :class:`Type` objects, and ``int`` slots of the
node's tracked ``operands`` (values such as ``ptr @kernel``). Nodes are
renumbered when printed, so cloning or deleting nodes keeps references right.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import types as T
from .values import Part, User, Value


class MDNode(User):
    """``!N = [distinct] !{...}`` or a specialised node ``!DILocation(...)``."""

    __slots__ = ("parts", "distinct", "slot")
    released_with_users = True

    def __init__(self, parts: list[Part] | None = None, operands: Iterable[Value] = (), distinct: bool = False):
        User.__init__(self, T.metadata, operands)
        self.parts = parts if parts is not None else []
        self.distinct = distinct
        #: number assigned by the printer
        self.slot = -1

    @property
    def kind(self) -> str:
        """``"tuple"`` for ``!{...}``, else the specialised name (``"DILocation"``)."""
        head = self.parts[0] if self.parts else "!{"
        if type(head) is not str or head.startswith("!{"):
            return "tuple"
        return head[1:].split("(", 1)[0]

    def references(self) -> list[MDNode]:
        """The nodes this node refers to."""
        return [p for p in self.parts if type(p) is MDNode]

    def field(self, key: str) -> str | MDNode | None:
        """The value of ``key:`` in a specialised node (raw text or node), if present."""
        want = f"{key}: "
        parts = self.parts
        for i, p in enumerate(parts):
            if type(p) is str and p.endswith(want) and (len(p) == len(want) or p[-len(want) - 1] in " ,("):
                nxt = parts[i + 1] if i + 1 < len(parts) else None
                return nxt if type(nxt) is MDNode else None
            if type(p) is str and want in p:
                rest = p.split(want, 1)[1]
                return rest.split(",", 1)[0].rstrip(")").strip() or None
        return None

    def copy(self) -> MDNode:
        node = MDNode(list(self.parts), self.operands, self.distinct)
        return node

    def __repr__(self) -> str:
        return f"<MDNode {self.kind} !{self.slot}>"


class NamedMetadata:
    """``!name = !{!0, !1}``."""

    __slots__ = ("name", "nodes")

    def __init__(self, name: str, nodes: list[MDNode] | None = None):
        self.name = name
        self.nodes = nodes if nodes is not None else []


class AttributeGroup:
    """``attributes #N = { ... }``; ``attrs`` is a list of attribute spellings."""

    __slots__ = ("attrs", "slot")

    def __init__(self, attrs: list[str]):
        self.attrs = attrs
        self.slot = -1

    def __contains__(self, key: str) -> bool:
        return any(attr_key(a) == key for a in self.attrs)


def attr_key(attr: str) -> str:
    """``"target-cpu"="sm_80"`` -> ``"target-cpu"``; ``memory(none)`` -> ``memory``."""
    for sep in ("=", "("):
        attr = attr.split(sep, 1)[0]
    return attr.strip('"')
