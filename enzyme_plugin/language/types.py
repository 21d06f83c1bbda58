"""The types of activities in compiled code, what a nested job of ``autodiff`` is for, and what a call of
``autodiff`` returns there."""

from __future__ import annotations

import attrs

from gpucompiler import types as T
from gpucompiler.errors import TypeInferenceError
from gpucompiler.interpreter import DeferredMeta, widen

from ..activities import Activity
from ..modes import Mode, Reverse
from .sets import nested_rules


@attrs.frozen(repr=False, cache_hash=True)
class ActivityType(T.TupleType):
    """The type of ``Active(x)`` & co: a tuple (primal[, shadow]) tagged with the activity ``kind``."""

    kind: Activity = Activity.CONST
    batch: bool = False
    """``BatchDuplicated`` (of any width, one included): the call's derivatives come per lane."""

    def __repr__(self) -> str:
        return f"{'batch ' if self.batch else ''}{self.kind.name.lower()}(" + ", ".join(map(repr, self.items)) + ")"


@attrs.frozen
class EnzymeMeta(DeferredMeta):
    """What a nested job of ``autodiff`` is for (part of its job id)."""

    mode: str = "Reverse"
    rules = (nested_rules,)
    error_slot = True  # checks inside f stop it (plain signatures for the engine): see lowering.py
    source_lines = True  # an ADError names the Python line of what it cannot differentiate


def is_float(t) -> bool:
    """A float scalar."""
    t = widen(t)
    return isinstance(t, T.Scalar) and t.kind == "f"


def is_float_array(t) -> bool:
    """A float or complex array, or a structured array with a float or complex field (its shadow, of the same
    dtype, takes the derivatives in those fields)."""
    t = widen(t)
    if isinstance(t, T.StructArrayType):
        return any(scalar.kind in "fc" for _, scalar, _, _ in t.dtype.fields)
    return isinstance(t, T.ArrayType) and t.dtype.kind in "fc"


def members(t) -> tuple | None:
    """The member types of a tuple or a record (``NamedTuple``, dataclass), else None (an activity too)."""
    t = widen(t)
    if isinstance(t, T.RecordType) or (isinstance(t, T.TupleType) and not isinstance(t, ActivityType)):
        return t.items
    return None


def leaf_types(t) -> list:
    """The scalars and arrays of ``t``, nested tuples and records walked in member order (``[t]`` for a leaf)."""
    items = members(t)
    return [widen(t)] if items is None else [x for m in items for x in leaf_types(m)]


def _aggregate_of(t, leaf) -> bool:
    """A non-empty tuple or record whose leaves all satisfy ``leaf``."""
    return bool(members(t)) and all(leaf(x) for x in leaf_types(t))


def float_members(t) -> bool:
    """A tuple or record whose members (nested ones walked) are all float scalars or float arrays."""
    return _aggregate_of(t, lambda x: is_float(x) or is_float_array(x))


def array_members(t) -> bool:
    """Float or complex arrays: one, or a tuple or record of them only."""
    return _aggregate_of(t, is_float_array) or is_float_array(t)


def mixed_members(t) -> bool:
    """A tuple or record of float arrays, float scalars and integers, with a float scalar: in reverse mode its
    arrays have shadows, its float scalars derivatives and its integers none (Enzyme's mixed activity)."""
    leaves = leaf_types(t)
    return _aggregate_of(t, lambda x: is_float(x) or is_float_array(x) or is_integer(x)) and any(
        map(is_float, leaves))


def is_integer(t) -> bool:
    """An integer or boolean scalar."""
    t = widen(t)
    return isinstance(t, T.Scalar) and t.kind in "iub"


def width(acts) -> int:
    """The batch width of a call's activities: the number of shadows of its duplicated arguments."""
    return max((len(a.items) - 1 for a in acts if a.kind.duplicated), default=1)


def float_tuple(t) -> bool:
    """A tuple or record of float scalars (nested ones included): a value with a tuple shadow."""
    return _aggregate_of(t, is_float)


def _holds_float(t) -> bool:
    return any(is_float(x) or is_complex(x) or is_float_array(x) for x in leaf_types(t))


def result_type(mode: Mode, acts, ret) -> T.TupleType:
    """What ``autodiff`` returns in compiled code. A tuple of floats returned by ``f`` has a tuple
    tangent in forward mode, a complex number a complex one; in reverse mode they would need seeds (a typed
    error)."""
    n = width(acts)
    lanes = n > 1 or any(a.batch for a in acts)  # a batch of width 1 too: one lane, as Enzyme.jl
    ret = widen(ret)

    def batch(t):
        return T.TupleType((t,) * n) if lanes else t
    if members(ret) is not None and _holds_float(ret) and (mode is Reverse or not float_tuple(ret)):
        what = ("in reverse mode each element needs its own seed" if mode is Reverse else
                "only a tuple of float scalars has a tangent")
        raise TypeInferenceError(
            f"autodiff: the differentiated function returns {ret!r}: {what}",
            hint="reverse mode: from Python pass one cotangent per element, autodiff(Reverse, f, ..., seed=(s1, "
                 "s2)); in compiled code write the results into an array passed as Duplicated(out, seeds) (the "
                 "seeds are the cotangents), or return one float; forward mode returns the tuple's tangent")
    if is_float_array(ret):  # a new array or a view: no shadow to seed or to hand back
        raise TypeInferenceError(
            f"autodiff: the differentiated function returns an array, {ret!r}: an array result has no shadow",
            hint="write the result into an array passed as Duplicated(out, dout) (reverse: dout holds the "
                 "cotangents; forward: dout receives the tangents) and return nothing or a float")
    if is_complex(ret) and mode is Reverse:  # no seed: its derivatives would be silent zeros
        raise TypeInferenceError(
            f"autodiff: the differentiated function returns a complex number ({ret!r}): reverse mode seeds a real "
            "result", hint="return a real value (z.real, abs(z)), or write the result into an array passed as "
                           "Duplicated(out, dout): dout holds its cotangent, dL/dRe + i dL/dIm")
    if mode is Reverse:  # per Active argument its derivative; per mixed one its float scalars' derivatives
        return T.TupleType(tuple(batch(a.items[0]) if a.kind is Activity.ACTIVE else
                                 batch(T.TupleType(tuple(x for x in leaf_types(a.items[0]) if is_float(x))))
                                 for a in acts if a.kind in (Activity.ACTIVE, Activity.MIXED)))
    return T.TupleType((batch(ret),) if is_float(ret) or is_complex(ret) or float_tuple(ret) else ())


def is_complex(t) -> bool:
    """A complex scalar."""
    t = widen(t)
    return isinstance(t, T.Scalar) and t.kind == "c"


__all__ = ["ActivityType", "EnzymeMeta", "array_members", "float_members", "float_tuple", "is_float", "is_float_array",
           "is_integer", "leaf_types", "members", "mixed_members", "result_type", "width"]
