"""Methods as values and Python's constants: ``G.sum()`` of a global array, ``len`` of a string.

A global array's method is looked up as an attribute (``getattr(G, "sum")``)
before it is called: its value is a :class:`~gpucompiler.types.BoundMethod`
(the array at run time), which a call turns into ``call_method`` as for a
local array's, keyword arguments included. ``len`` of a constant ``str`` is the
constant CPython computes.
"""

from __future__ import annotations

from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)

from ... import types as T
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, const, widen
from ...interpreter.rules import CallResult, Constant
from ..python.numbers import base
from .ufuncs import numpy


def _method_type(a, name):
    """``a.name`` of an ndarray method (not an attribute such as ``shape``): the bound method."""
    if not (isinstance(name.value, str) and callable(getattr(numpy().ndarray, name.value, None))):
        return None
    return T.BoundMethod(widen(a), name.value)


@base.define(builtins.getattr, T.ArrayType, Constant, restype=_method_type, pure=False)
def _array_method(cg, args, argtypes, rt):
    return args[0]


def _text(v) -> bool:
    return isinstance(v, Const) and isinstance(v.value, str)


@base.define(builtins.len, _text, restype=lambda s: const(len(s.value)), pure=False)
def _len_text(cg, args, argtypes, rt):
    return None


@base.handler
def _bound_keyword_call(interp, fn, args):
    """``G.sum(axis=0)``: ``call_kw`` of a method value, as ``call_kw(call_method, names, G, "sum", ...)``."""
    if fn is not K.call_kw or not isinstance(widen(args[0]), T.BoundMethod):
        return None
    method = widen(args[0])
    routed = [const(K.call_method), args[1], method.receiver, const(method.name), *args[2:]]
    res = interp.abstract_call(K.call_kw, routed)
    if res is None:
        return None
    types = [routed[0], routed[1], method.receiver, routed[3]]

    def lower(cg, a, at, rt):
        return cg.call_result(res, [None, None, a[0], None, *a[2:]], [*types, *at[2:]], rt)
    return CallResult(res.restype, lower)
