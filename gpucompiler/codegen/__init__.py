"""Typed SSA IR -> LLVM IR with llvmlite.ir.

The names load their modules on first use (:mod:`gpucompiler.lazy`): the options and the
Python entry's layout are imported without the function code generator.
"""

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from .deferred import TypedCallee, job_global
    from .function import FunctionCodegen
    from .lltypes import PTR, ll
    from .module import ModuleCodegen, spec_name
    from .options import ErrorPolicy
    from .pyentry import emit_pyentry
    from .wrapper import emit_wrapper

_LAZY = {"TypedCallee": ".deferred", "job_global": ".deferred", "FunctionCodegen": ".function", "PTR": ".lltypes",
         "ll": ".lltypes", "ModuleCodegen": ".module", "spec_name": ".module", "ErrorPolicy": ".options",
         "emit_pyentry": ".pyentry", "emit_wrapper": ".wrapper"}
__getattr__, __dir__ = attach(__name__, _LAZY, globals())

__all__ = ["ErrorPolicy", "FunctionCodegen", "ModuleCodegen", "PTR", "TypedCallee", "emit_pyentry", "emit_wrapper",
           "job_global", "ll", "spec_name"]
