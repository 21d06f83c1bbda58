"""What other plugins may ask of the Enzyme plugin in a module they rewrite: a public contract.

* :func:`mark_inactive` ``(model, fn)``: calls of ``fn`` carry no derivative (Enzyme's inactive
  functions: a logger, a random draw, a value the user declares constant). ``fn`` keeps its body,
  stays out of line until AD has seen its calls, and gets its name back after AD.

Call it from a callback that runs before the ``ad`` stage, best at ``pre_ad`` (before the optimiser
could inline ``fn``, and before Enzyme keeps the module for its fallback); the names it uses are the
plugin's business, not the caller's.
"""

from __future__ import annotations

from gpucompiler.llvm import Function

from .ad.gpu import INACTIVE_PREFIX
from .passes.noinline import RECORD


def mark_inactive(model, fn: Function) -> Function:
    """Calls of ``fn`` are inactive for AD in ``model`` (a ``gpucompiler.llvm`` module); returns ``fn``."""
    if fn.name.startswith(INACTIVE_PREFIX):
        return fn
    if not fn.is_declaration and not fn.has_attribute("noinline"):
        fn.remove_attribute("alwaysinline")
        fn.add_attribute("noinline")
        fn.add_attribute(f'"{RECORD}"')  # removed again after AD, with the name
    return model.rename_function(fn, INACTIVE_PREFIX + fn.name)


__all__ = ["mark_inactive"]
