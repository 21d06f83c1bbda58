"""The API's callables as compiled code recognises them.

A call of ``autodiff`` or ``autodiff_thunk`` inside a ``@jit`` function or a kernel is typed by the
language's rules (:mod:`enzyme_plugin.language`), which sit below the modules defining those functions:
each such function carries its :class:`Call` in :data:`CALL_ATTRIBUTE` (as every API object carries
``gpucompiler.errors.PLUGIN_ATTRIBUTE``), and the rules read it with :func:`call_of`.
"""

from __future__ import annotations

import enum
import types

CALL_ATTRIBUTE = "__enzyme_call__"


class Call(enum.Enum):
    """What a call of a marked function means in compiled code."""

    AUTODIFF = "autodiff"
    """``autodiff(mode, f, activities...)``: a nested job of ``f``, differentiated by the AD stage."""
    AUTODIFF_THUNK = "autodiff_thunk"
    """``autodiff_thunk(ReverseSplit, f, ...)``: made in Python only (a typed error in compiled code)."""


def marked(call: Call):
    """Decorator: mark a function as ``call`` for compiled code."""
    def mark(fn):
        setattr(fn, CALL_ATTRIBUTE, call)
        return fn
    return mark


def call_of(fn) -> Call | None:
    """The :class:`Call` a callee stands for in compiled code, None for any other callee (only a function's
    own attributes are read: no object's ``__getattr__`` runs)."""
    call = fn.__dict__.get(CALL_ATTRIBUTE) if isinstance(fn, types.FunctionType) else None
    return call if isinstance(call, Call) else None


__all__ = ["CALL_ATTRIBUTE", "Call", "call_of", "marked"]
