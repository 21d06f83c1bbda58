"""Job sources made from Python: a function with argument types, and the nested jobs of deferred calls.

This room sits above the frontend, the interpreter and the code generator
and drives them: :class:`FunctionSpec` infers and generates a function's
module; :class:`DeferredSpec` does the same for a deferred call's function
under the nested rules. The names load their modules on first use
(:mod:`gpucompiler.lazy`).
"""

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from .deferred import DeferredSpec, nested_checks
    from .spec import FunctionSpec, deps_valid

_LAZY = {"DeferredSpec": ".deferred", "nested_checks": ".deferred", "FunctionSpec": ".spec", "deps_valid": ".spec"}
__getattr__, __dir__ = attach(__name__, _LAZY, globals())

__all__ = ["DeferredSpec", "FunctionSpec", "deps_valid", "nested_checks"]
