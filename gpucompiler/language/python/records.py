"""Records: ``NamedTuple`` and dataclass instances of numbers, arrays, tuples and records.

A record value is the struct of its fields. Fields are read by name
(``p.x``); a named tuple also by constant index, unpacking and ``len``.
Calling a record class with one positional argument per field builds one
(compiled code can return it: runtime/owned.py builds the Python instance);
an array expression passed as a field is evaluated into a new array.
Fields cannot be assigned (a typed error at the assignment).
"""

from __future__ import annotations

import dataclasses
import operator

from llvmlite import ir

from ... import types as T
from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
from ...errors import TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, const, widen
from ...interpreter.rules import CallResult, Constant
from ..numpy.arrayexpr import _materialize
from .numbers import base

_R = T.RecordType


def _field_type(r, name):
    rec = widen(r)
    found = rec.field(name.value)
    if found is None:
        raise TypeInferenceError(f"{rec.qualname} has no field {name.value!r}", (rec,),
                                 hint="fields: " + ", ".join(n for n, _ in rec.fields))
    return found[1]


@base.define(builtins.getattr, _R, Constant, restype=_field_type, pure=False)
def _getattr(cg, args, argtypes, rt):
    return cg.b.extract_value(args[0], widen(argtypes[0]).field(argtypes[1].value)[0])


def _index(r, i):
    rec = widen(r)
    n = len(rec.fields)
    if not rec.indexable or not -n <= i.value < n:
        return None
    return i.value % n


@base.define(operator.getitem, _R, lambda i: isinstance(i, Const) and type(i.value) is int,
             restype=lambda r, i: widen(r).items[_index(r, i)] if _index(r, i) is not None else None)
def _getitem(cg, args, argtypes, rt):
    return cg.b.extract_value(args[0], _index(*argtypes))


@base.define(builtins.len, _R, restype=lambda r: const(len(widen(r).fields)) if widen(r).indexable else None, pure=False)
def _len(cg, args, argtypes, rt):
    return None


@base.define(K.unpack, _R, Constant,
             restype=lambda r, n: r if widen(r).indexable and len(widen(r).fields) == n.value else None)
def _unpack(cg, args, argtypes, rt):
    return args[0]


def record_class_fields(cls) -> tuple[str, ...] | None:
    """The field names of a ``NamedTuple`` or dataclass class, else None."""
    if not isinstance(cls, type):
        return None
    if issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple):
        return cls._fields  # pyright: ignore[reportAttributeAccessIssue]
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls) if f.init)
    return None


def _build(cg, args, argtypes, rt):
    value = ir.Constant(cg.ll(rt), ir.Undefined)
    for k, (v, t) in enumerate(zip(args, argtypes)):
        value = cg.b.insert_value(value, cg.cast(v, widen(t), rt.items[k]), k)
    return value


@base.handler
def _construct(interp, fn, args):
    """``Point(x, y)``: one positional argument per field builds a record."""
    names = record_class_fields(fn)
    if names is None or "<locals>" in fn.__qualname__:
        return None
    if len(args) != len(names):
        raise TypeInferenceError(f"{fn.__qualname__}() in compiled code takes one positional argument per field "
                                 f"({', '.join(names)}), got {len(args)}", hint="pass every field by position")
    # an array expression (Body(x, v * 2.0, m)) becomes a new array, as NumPy evaluates it there
    made = [_materialize(interp, K.materialize, [a]) if isinstance(widen(a), T.ArrayExpr) else None for a in args]
    types = [widen(m.restype if m is not None else a) for m, a in zip(made, args)]
    wrong = next((t for t in types if not isinstance(t, (T.Scalar, T.ArrayType, T.TupleType, _R))), None)
    if wrong is not None:
        raise TypeInferenceError(f"{fn.__qualname__}() in compiled code holds numbers, arrays, tuples and records, "
                                 f"not {wrong!r}", (wrong,), hint="give every field a number, an array, a tuple or "
                                                                  "a record")

    def build(cg, values, argtypes, rt):
        values = [cg.call_result(m, [v], [at], widen(m.restype)) if m is not None else v
                  for m, v, at in zip(made, values, argtypes)]
        return _build(cg, values, types, rt)
    return CallResult(_R(fn.__module__, fn.__qualname__, tuple(zip(names, types)), issubclass(fn, tuple)), build)
