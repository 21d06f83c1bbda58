"""Python frontend: AST -> SSA IR with source locations."""

from .ir import Function
from .lower import lower_function

__all__ = ["Function", "lower_function"]
