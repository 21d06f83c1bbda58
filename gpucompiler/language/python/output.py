"""``print``, and the checks of ``assert`` statements (``raise`` always raises: see the interpreter)."""

from __future__ import annotations

from ... import types as T
from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, widen
from ...interpreter.rules import Any_, Bool, Constant
from .numbers import base


def _printable(t) -> bool:
    return isinstance(widen(t), T.Scalar) or (isinstance(t, Const) and isinstance(t.value, (str, type(None))))


def _print_type(*ts):
    """None (no implementation) unless every argument is a number or a constant string."""
    return T.none if all(_printable(t) for t in ts) else None


@base.define(builtins.print, Any_, varargs=True, restype=_print_type, pure=False)
@base.define(builtins.print, restype=T.none, pure=False)
def _print(cg, args, argtypes, rt):
    items = [(str(t.value), None) if isinstance(t, Const) and isinstance(t.value, (str, type(None)))
             else (v, widen(t)) for v, t in zip(args, argtypes)]
    cg.print_values(items)


@base.define(K.assert_, Bool, Constant, restype=T.none, pure=False)
def _assert(cg, args, argtypes, rt):
    cg.check_statement(args[0], "AssertionError", argtypes[1].value)
