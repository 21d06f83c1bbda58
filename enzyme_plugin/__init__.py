"""Enzyme-style automatic differentiation on LLVM IR, as a gpucompiler plugin.

``differentiate(ir_text)`` replaces every ``__enzyme_autodiff`` /
``__enzyme_fwddiff`` call of a module by a call to the generated derivative.
"""

from .ad import ADError, differentiate

__version__ = "0.1.0"
__all__ = ["ADError", "differentiate"]
