"""Typed SSA IR -> LLVM IR with llvmlite.ir."""

from .deferred import TypedCallee, job_global
from .function import FunctionCodegen
from .lltypes import PTR, ll
from .module import ModuleCodegen, spec_name
from .options import ErrorPolicy

__all__ = ["ErrorPolicy", "FunctionCodegen", "ModuleCodegen", "PTR", "TypedCallee", "job_global", "ll", "spec_name"]
