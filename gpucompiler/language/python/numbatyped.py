"""Numba's spellings of typed containers in compiled code: ``typed.List.empty_list(item_type)`` and
``typed.Dict.empty(key_type, value_type)`` (keywords too), where the user's code imports them from
Numba. They make the compiled lists and dicts of lists.py and dicts.py; the types are Numba's type
objects (``numba.float64``, ``types.int64``) or NumPy's (``np.float64``), read by name. Numba is
never imported here: its objects are recognised by their module. ``typed.List()`` without a type is
refused with the spelling that works (``[]`` takes its type from its first append).
"""

from __future__ import annotations

from ... import types as T
from ...errors import TypeInferenceError
from ...interpreter.lattice import Const, pyobj
from ...interpreter.rules import CallResult
from . import dictmem as D, listmem as L
from .numbers import base

_NAMES = {"bool": T.boolean, "boolean": T.boolean, "bool_": T.boolean}


def numba_typed(value) -> str | None:
    """``"List"``, ``"List.empty_list"``, ``"Dict"`` or ``"Dict.empty"`` for Numba's typed containers'
    classes and constructors, else None."""
    owner = value if isinstance(value, type) else getattr(value, "__self__", None)
    if not isinstance(owner, type) or not (owner.__module__ or "").startswith("numba.typed"):
        return None
    if owner.__name__ not in ("List", "Dict"):
        return None
    return owner.__name__ if owner is value else f"{owner.__name__}.{getattr(value, '__name__', '')}"


def _scalar(v, what: str) -> T.Scalar:
    value = v.value if isinstance(v, Const) and v.type == pyobj else None
    name = getattr(value, "__name__", None) or str(value)
    t = _NAMES.get(name) or T.SCALARS.get(name)
    if t is None:
        raise TypeInferenceError(f"{what} must be a number type (numba.float64, np.int64...), got {value!r}",
                                 hint="compiled typed containers hold numbers")
    return t


def typed_call(kind: str, args: list) -> CallResult:
    """The call of Numba's ``kind`` with the abstract values ``args`` (positional, in order)."""
    if kind == "List.empty_list" and len(args) in (1, 2):
        item = _scalar(args[0], "List.empty_list's item type")
        return CallResult(T.ListType(item), lambda cg, a, at, rt: L.new_list(cg, None, 0))
    if kind == "Dict.empty" and len(args) in (2, 3):
        kt, vt = _scalar(args[0], "Dict.empty's key type"), _scalar(args[1], "Dict.empty's value type")
        if kt.kind == "c":
            raise TypeInferenceError("a compiled dict's keys are bools, integers or floats", (kt,))
        return CallResult(T.DictType(kt, vt), lambda cg, a, at, rt: D.new_dict(cg))
    raise TypeInferenceError(f"numba.typed.{kind}(...) with these arguments is not supported in compiled code",
                             hint="write [] or {} (typed by the first append or item), "
                             "typed.List.empty_list(item_type) or typed.Dict.empty(key_type, value_type)")


#: the parameter names of the constructors, for keyword calls
PARAMETERS = {"List.empty_list": ("item_type", "allocated"), "Dict.empty": ("key_type", "value_type", "n_keys")}


@base.handler
def _numba_typed(interp, fn, args):
    kind = numba_typed(fn)
    return typed_call(kind, list(args)) if kind is not None else None
