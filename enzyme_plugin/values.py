"""Python values as :func:`enzyme_plugin.dispatch.autodiff` sees them: scalars and arrays, and tuples, ``NamedTuple``
and dataclass records of them walked member by member (their nesting, their leaves, shadows written back)."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpucompiler import types as T


def shape(v):
    """The nesting of a value: None for a leaf, ``(tuple, members)`` for a plain tuple and ``(class, field
    names, members)`` for a ``NamedTuple`` or dataclass (part of the entry's identity)."""
    fields = T.record_fields(v)
    if fields is not None:
        return (type(v), tuple(n for n, _ in fields), tuple(shape(x) for _, x in fields))
    if isinstance(v, tuple):
        return (tuple, tuple(shape(x) for x in v))
    return None


def nesting(v):
    """The positional nesting of a value: None for a leaf, a tuple of its members' for a tuple or record (a tuple
    seed fits a record result by position)."""
    fields = T.record_fields(v)
    if fields is not None:
        return tuple(nesting(x) for _, x in fields)
    return tuple(nesting(x) for x in v) if isinstance(v, tuple) else None


def member_paths(expr: str, spec) -> list[str]:
    """Source text of each leaf of the value ``expr`` of nesting ``spec`` (:func:`shape`): ``r[0]``, ``r.w``."""
    if spec is None:
        return [expr]
    return [p for step, m in zip(_steps(spec), spec[-1]) for p in member_paths(expr + step, m)]


def _steps(spec) -> list[str]:
    """How each member of a value of nesting ``spec`` (:func:`shape`) is read: ``.name`` or ``[k]``."""
    return [f".{n}" for n in spec[1]] if len(spec) == 3 else [f"[{k}]" for k in range(len(spec[1]))]


def leaves(v) -> list:
    """The scalars and arrays of ``v`` (tuples and records walked in member order)."""
    fields = T.record_fields(v)
    if fields is not None:
        return [y for _, x in fields for y in leaves(x)]
    return [y for x in v for y in leaves(x)] if isinstance(v, tuple) else [v]


def is_float(x) -> bool:
    """A Python or NumPy float scalar (a record field whose derivative a dataclass shadow receives)."""
    return isinstance(x, float) or type(x).__name__ in ("float32", "float64")


def plain(expr: str, spec) -> str:
    """Source text of the value ``expr`` of nesting ``spec`` as nested plain tuples (the entry returns no records:
    compiled code would import a record's class to build it, and a class made in a function has no import)."""
    if spec is None:
        return expr
    return "(" + "".join(plain(expr + step, s) + ", " for step, s in zip(_steps(spec), spec[-1])) + ")"


def record_like(v, d):
    """``d`` (nested plain tuples) with the tuples and records of ``v``'s type."""
    fields = T.record_fields(v)
    if fields is not None:
        made = {n: record_like(x, y) for (n, x), y in zip(fields, d)}
        return type(v)(*made.values()) if isinstance(v, tuple) else dataclasses.replace(v, **made)
    if isinstance(v, tuple):
        return tuple(record_like(x, y) for x, y in zip(v, d))
    return d


def add_into(shadow, derivs) -> None:
    """Add ``derivs`` (one per float scalar member of ``shadow``, in member order) into ``shadow``'s fields."""
    for name, x in T.record_fields(shadow) or list(enumerate(shadow)):
        if is_float(x):
            kind: Any = type(x)  # float, np.float64 or np.float32: the field keeps its type
            setattr(shadow, str(name), kind(x + next(derivs)))
        elif shape(x) is not None:
            add_into(x, derivs)


def holds_array(v) -> bool:
    return any(type(x).__name__ == "ndarray" or hasattr(x, "__cuda_array_interface__") for x in leaves(v))


def init_less_dataclass(v) -> str:
    """The name of a dataclass in ``v`` with a field its ``__init__`` does not take, else ''."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type) and not all(fl.init for fl in dataclasses.fields(v)):
        return type(v).__qualname__
    fields = T.record_fields(v)
    items = [x for _, x in fields] if fields is not None else list(v) if isinstance(v, tuple) else []
    return next((n for n in map(init_less_dataclass, items) if n), "")


def writable_floats(shadow) -> bool:
    """Every float scalar of ``shadow`` is a field of a dataclass that is not frozen."""
    fields = T.record_fields(shadow)
    writable = fields is not None and not isinstance(shadow, tuple) and not getattr(
        getattr(type(shadow), "__dataclass_params__", None), "frozen", False)
    items = [x for _, x in fields] if fields is not None else list(shadow)
    return all((writable if is_float(x) else writable_floats(x) if shape(x) is not None else True) for x in items)


def shown(v) -> str:
    """A value's type as an error shows it: ``ndarray of dtype float64, shape (3,)``, ``Point(float, ndarray)``."""
    if hasattr(v, "dtype") and hasattr(v, "shape"):
        return f"{type(v).__name__} of dtype {v.dtype}, shape {tuple(v.shape)}"
    fields = T.record_fields(v)
    if fields is not None or isinstance(v, tuple):
        items = [x for _, x in fields] if fields is not None else list(v)
        return f"{type(v).__qualname__}(" + ", ".join(shown(x) for x in items) + ")"
    return type(v).__name__


def copied(v):
    """``v`` with its NumPy arrays copied (tuples and records rebuilt around the copies)."""
    fields = T.record_fields(v)
    if fields is not None:
        made = {n: copied(x) for n, x in fields}
        return type(v)(*made.values()) if isinstance(v, tuple) else dataclasses.replace(v, **made)
    if isinstance(v, tuple):
        return tuple(map(copied, v))
    return v.copy() if type(v).__name__ == "ndarray" else v


__all__ = ["shape", "nesting", "member_paths", "leaves", "plain", "is_float", "record_like", "add_into", "holds_array",
           "init_less_dataclass", "writable_floats", "shown", "copied"]
