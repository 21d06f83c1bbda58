"""gpucompiler: Python and LLVM IR to the host CPU and NVIDIA PTX through a staged plugin pipeline."""

from .version import __version__ as __version__

from .config import CompilerConfig  # noqa: E402
from .errors import ErrorModel, GPUCompilerError  # noqa: E402
from .job import CompilerJob, LLVMSource  # noqa: E402
from .targets import NativeTarget, PTXTarget, parse_target  # noqa: E402
from . import types  # noqa: E402
from .jit import jit  # noqa: E402
from .kernel import kernel  # noqa: E402

__all__ = [
    "CompilerConfig",
    "CompilerJob",
    "ErrorModel",
    "GPUCompilerError",
    "LLVMSource",
    "NativeTarget",
    "PTXTarget",
    "parse_target",
    "jit",
    "kernel",
    "types",
]
