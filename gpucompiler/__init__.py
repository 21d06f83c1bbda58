"""gpucompiler: Python and LLVM IR to the host CPU and NVIDIA PTX through a staged plugin pipeline."""

from .version import __version__ as __version__

from .config import CompilerConfig, FrontendOptions
from .errors import ErrorModel, GPUCompilerError
from .job import CompilerJob, LLVMSource
from .targets import NativeTarget, PTXTarget, parse_target
from . import types
from .jit import jit
from .frontend.intrinsics import prange
from .parallel import Reducer, Space, parallel_for, parallel_reduce
from .kernel import kernel

__all__ = [
    "CompilerConfig",
    "FrontendOptions",
    "CompilerJob",
    "ErrorModel",
    "GPUCompilerError",
    "LLVMSource",
    "NativeTarget",
    "PTXTarget",
    "parse_target",
    "jit",
    "prange",
    "parallel_for",
    "parallel_reduce",
    "Reducer",
    "Space",
    "kernel",
    "types",
]
