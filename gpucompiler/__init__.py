"""gpucompiler: Python and LLVM IR to the host CPU and NVIDIA PTX through a staged plugin pipeline.

``import gpucompiler`` loads what decorating with ``@jit`` and ``@kernel`` needs;
the other public names load their modules on first use (PEP 562), and the
compiler (frontend, interpreter, code generation, LLVM) loads at the first
compile. Submodules are attributes as they would be after importing them.
"""

from typing import TYPE_CHECKING

from . import pristine as _pristine  # noqa: F401  (the builtins the compiler's rules key on, as imported)
from .lazy import attach
from .version import __version__ as __version__

from .jit import jit, njit
from .kernel import kernel
from .runtime.devices import Device, current_device, select_device

if TYPE_CHECKING:
    from . import types
    from .core import CompilerConfig, CompilerJob, FrontendOptions, LLVMSource
    from .errors import ErrorModel, GPUCompilerError
    from .frontend.intrinsics import prange
    from .parallel import Reducer, Space, parallel_for, parallel_reduce
    from .targets import NativeTarget, parse_target
    from .ufunc import guvectorize, vectorize

#: public name -> the module that defines it, loaded on first use (a measured import-time saving:
#: the compiler's modules and llvmlite cost ~150 ms, docs/benchmarks.md "Imports")
_LAZY = {"CompilerConfig": ".core", "FrontendOptions": ".core", "ErrorModel": ".errors",
         "GPUCompilerError": ".errors", "CompilerJob": ".core", "LLVMSource": ".core", "NativeTarget": ".targets",
         "parse_target": ".targets", "prange": ".frontend.intrinsics",
         "Reducer": ".parallel", "Space": ".parallel", "parallel_for": ".parallel", "parallel_reduce": ".parallel",
         "vectorize": ".ufunc", "guvectorize": ".ufunc"}


__getattr__, __dir__ = attach(__name__, _LAZY, globals(), submodules=True)

__all__ = [
    "Device",
    "current_device",
    "select_device",
    "CompilerConfig",
    "FrontendOptions",
    "CompilerJob",
    "ErrorModel",
    "GPUCompilerError",
    "LLVMSource",
    "NativeTarget",
    "parse_target",
    "jit",
    "njit",
    "prange",
    "parallel_for",
    "parallel_reduce",
    "Reducer",
    "Space",
    "kernel",
    "types",
    "vectorize",
    "guvectorize",
]
