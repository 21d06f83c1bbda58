"""NumPy functions implemented as loops: their calls bound to NumPy's parameters, in every form compiled
code makes them.

A module gives :func:`register` a table from a function's name to its :class:`Signature` and a
*planner*. The call handler made here claims ``np.name(...)``, ``np.name(..., key=v)`` and, for
methods, ``a.name(...)``; binds the arguments to NumPy's parameters (a parameter compiled code does
not take is a ``TypeInferenceError`` at the user's line, unless it is spelled as NumPy's default
``None``/``False``); asks the planner for the loop and its arguments; infers the loop's call on them
and lowers it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, widen
from ...interpreter.rules import CallResult, RuleSet
from .npdtypes import numpy_function
from .reductions import invoke_impl, returned
from .ufuncs import is_arraylike, numpy

#: a bound argument: its index among the call's values (None: a value the planner chose) and its abstract value
Bound = tuple[int | None, Any]
Bindings = dict[str, Bound]
#: the loop to call and its arguments
Plan = tuple[Callable[..., Any], list[Bound]]


class Signature:
    """NumPy's parameters of a function in order, those compiled code takes, and whether arrays have
    it as a method (a plain class: an ``attrs`` class took ~0.3 ms to make at a process's first compile)."""

    __slots__ = ("params", "supported", "method")

    def __init__(self, params: tuple[str, ...], supported: frozenset[str], method: bool = False):
        self.params, self.supported, self.method = params, supported, method


Planner = Callable[[str, Bindings], Plan]


def bind(name: str, sig: Signature, positional: list[Bound], keywords: dict[str, Bound]) -> Bindings:
    """The arguments by NumPy's parameter names."""
    if len(positional) > len(sig.params):
        raise TypeInferenceError(f"np.{name}() takes at most {len(sig.params)} arguments")
    bound = dict(zip(sig.params, positional))
    for key, value in keywords.items():
        if key not in sig.params or key in bound:
            raise TypeInferenceError(f"np.{name}() got an unexpected or repeated keyword argument {key!r}")
        bound[key] = value
    for key, (_, value) in list(bound.items()):
        if key in sig.supported:
            continue
        if isinstance(value, Const) and (value.value is None or value.value is False):  # NumPy's default
            del bound[key]
            continue
        raise TypeInferenceError(f"np.{name}(..., {key}=...) is not supported in compiled code",
                                 hint="the supported arguments are " + ", ".join(
                                     p for p in sig.params if p in sig.supported))
    return bound


def _number(cg, value):
    """A number the planner chose (``ddof=0``: the loop takes it as a number); None for a compile-time value."""
    v = value.value
    return cg.const(widen(value), v) if type(v) in (int, float, bool) else None


def _call(interp, table: dict[str, tuple[Signature, Planner]], name: str, positional: list[Bound],
          keywords: dict[str, Bound]) -> CallResult:
    sig, planner = table[name]
    loop, plan = planner(name, bind(name, sig, positional, keywords))
    res = invoke_impl(interp, f"np.{name}()", loop, [value for _, value in plan])

    def lower(cg, a, at, rt):
        values = [a[i] if i is not None else _number(cg, value) for i, value in plan]
        types = [at[i] if i is not None else value for i, value in plan]
        return returned(cg, cg.call_result(res, values, types, rt), rt)
    return CallResult(res.restype, lower)


def register(rules: RuleSet, module: str, table: dict[str, tuple[Signature, Planner]]) -> None:
    """Add to ``rules`` the call handler of ``table``'s functions, as a rule of ``module`` (its precedence)."""

    def numpy_name(fn) -> str | None:
        name = numpy_function(fn)
        return name if name in table and fn is getattr(numpy(), name, None) else None

    def method(receiver, name) -> bool:
        return is_arraylike(receiver) and isinstance(name, Const) and name.value in table \
            and table[name.value][0].method

    def handler(interp, fn, args):
        if fn is K.call_kw:
            callee, names = args[0], args[1]
            if not (isinstance(callee, Const) and isinstance(names, Const)):
                return None
            values: list[Bound] = [(i, a) for i, a in enumerate(args) if i >= 2]
            npos = len(values) - len(names.value)
            keywords = dict(zip(names.value, values[npos:]))
            if callee.value is K.call_method:
                if not method(values[0][1], values[1][1]):
                    return None
                return _call(interp, table, values[1][1].value, [values[0], *values[2:npos]], keywords)
            name = numpy_name(callee.value)
            return _call(interp, table, name, values[:npos], keywords) if name is not None else None
        if fn is K.call_method:
            if not method(args[0], args[1]):
                return None
            return _call(interp, table, args[1].value, [(0, args[0]), *((i, a) for i, a in enumerate(args) if i >= 2)],
                         {})
        name = numpy_name(fn)
        return _call(interp, table, name, list(enumerate(args)), {}) if name is not None else None

    handler.__module__ = module
    handler.__qualname__ = f"{module}.numpy_functions"
    rules.handler(handler)
