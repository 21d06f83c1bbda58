"""Python frontend: AST -> SSA IR with source locations."""

from .ir import Function
from .lower import lower_function, with_parameters

__all__ = ["Function", "lower_function", "with_parameters"]
