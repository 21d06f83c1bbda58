"""The AD engine: Enzyme-style forward and reverse mode on LLVM IR.

Pipeline: preprocessing (LLVM cleanup passes), analyses (CFG, activity,
memory types), the forward sweep (:mod:`.sweep`), reverse mode
(:mod:`.reverse`) with a tape of per-loop cache arrays and a stack
(:mod:`.loops`, :mod:`.tape`), rules by family (:mod:`.rules`,
:mod:`.memory`, :mod:`.calls`), the C interface (:mod:`.c_interface`).
"""

import gpucompiler  # noqa: F401  (first: it loads the plugins, which import this package's modules)

from typing import TYPE_CHECKING, Any

from .errors import ADError, set_error_handler

if TYPE_CHECKING:
    from .c_interface import differentiate


def __getattr__(name: str) -> Any:
    """``differentiate`` loads the engine on first use (``import enzyme_plugin`` does not need it)."""
    if name != "differentiate":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .c_interface import differentiate

    return differentiate

__all__ = ["ADError", "differentiate", "set_error_handler"]
