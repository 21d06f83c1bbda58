"""Loading and calling compiled code: the CPU JIT (:mod:`.cpu`).

The names load their modules on first use (:mod:`gpucompiler.lazy`): argument typing
and returned arrays are imported without LLVM.
"""

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from .cpu import CPULibrary, LinkError

_LAZY = {"CPULibrary": ".cpu", "LinkError": ".cpu"}
__getattr__, __dir__ = attach(__name__, _LAZY, globals())

__all__ = ["CPULibrary", "LinkError"]
