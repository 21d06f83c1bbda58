"""Typed SSA IR -> LLVM IR with llvmlite.ir."""

from .function import FunctionCodegen
from .module import ModuleCodegen, spec_name

__all__ = ["FunctionCodegen", "ModuleCodegen", "spec_name"]
