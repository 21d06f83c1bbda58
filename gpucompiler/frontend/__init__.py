"""Python frontend: AST -> SSA IR with source locations.

The names load their modules on first use (:mod:`gpucompiler.lazy`): the IR classes,
the printer and the intrinsics are imported without the lowering.
"""

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from .ir import Function
    from .lower import function_source, lower_function, with_parameters

_LAZY = {"Function": ".ir", "function_source": ".lower", "lower_function": ".lower", "with_parameters": ".lower"}
__getattr__, __dir__ = attach(__name__, _LAZY, globals())

__all__ = ["Function", "function_source", "lower_function", "with_parameters"]
