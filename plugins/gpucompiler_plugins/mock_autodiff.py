"""The interpreter half of the mock Enzyme plugin: ``mock_autodiff(f, *args)`` as a deferred call.

Inside compiled code (in a job that enables ``mock_enzyme``),
``mock_autodiff(f, x, ...)`` is not inlined or called: it becomes a nested
compile job of ``f`` (:func:`gpucompiler.interpreter.deferred.deferred_call`)
and the IR::

    %deferred = call ptr @gpuc.lookup(ptr @"gpuc.job.<id>")
    %r = call double (ptr, ...) @__autodiff(ptr %deferred, double %x)

``link_deferred`` links ``f``'s job in and puts its function where the
lookup was; the pipeline half (:mod:`gpucompiler_plugins.mock_enzyme`) then
turns the marker call into ``call @f(x)``. In CPython ``mock_autodiff(f,
*args)`` is ``f(*args)``, so compiled results can be checked against it.

The nested job keeps the parent's rules (the PTX overlay in a kernel) and
adds :data:`nested_rules`, which apply inside differentiated code only: there
:func:`in_autodiff` is ``True``; everywhere else (CPython, the parent) it is
``False``.
"""

from __future__ import annotations

import attrs

from gpucompiler import types as T
from gpucompiler.errors import TypeInferenceError
from gpucompiler.interpreter import Const, RuleSet
from gpucompiler.interpreter.deferred import DeferredMeta, deferred_call, is_function

MARKER = "__autodiff"

rules = RuleSet("mock_enzyme")
"""Rules of every job that enables ``mock_enzyme``."""
nested_rules = RuleSet("mock_enzyme.nested")
"""Rules of the nested jobs of :class:`AutodiffMeta` only."""


def mock_autodiff(f, *args):
    """``f(*args)``; in compiled code a deferred job of ``f`` behind the ``__autodiff`` marker."""
    return f(*args)


def in_autodiff():
    """Whether the caller runs as a function given to ``mock_autodiff`` (compiled code only)."""
    return False


@attrs.frozen
class AutodiffMeta(DeferredMeta):
    """What a nested job of ``mock_autodiff`` is for (part of its job id)."""

    mode: str = "forward"
    rules = (nested_rules,)
    error_slot = True  # a failed check in f stops f and its caller (the slot is the marker call's first argument)


@rules.handler
def _autodiff(interp, fn, args):
    if fn is not mock_autodiff:
        return None
    if not args or not is_function(args[0]):
        got = repr(args[0]) if args else "nothing"
        raise TypeInferenceError(f"mock_autodiff needs a Python function as first argument, got {got}",
                                 hint="pass a module-level function: mock_autodiff(f, x)")
    return deferred_call(interp, AutodiffMeta(), args[0].value, args[1:], marker=MARKER)


@nested_rules.define(in_autodiff, restype=Const(True, T.boolean), pure=False)
def _in_autodiff(cg, args, argtypes, restype):
    return None  # a constant: codegen materialises it where it is used
