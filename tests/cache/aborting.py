"""LLVM IR that makes LLVM abort the process (not a reported error), for the containment tests."""

from gpucompiler.core import CompilerConfig
from gpucompiler.core import CompilerJob, LLVMSource
from gpucompiler.targets import NativeTarget

#: an NVPTX intrinsic compiled for the host: x86 instruction selection aborts ("Cannot select")
FOREIGN_INTRINSIC = """declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
define i32 @f() {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  ret i32 %t
}
"""

#: scalable vectors: refused by the irgen stage before LLVM sees them (LLVM would abort)
SCALABLE = """define <vscale x 4 x i32> @f(<vscale x 4 x i32> %a, <vscale x 4 x i32> %b) {
  %c = add <vscale x 4 x i32> %a, %b
  ret <vscale x 4 x i32> %c
}
"""


def job() -> CompilerJob:
    return CompilerJob(LLVMSource(FOREIGN_INTRINSIC, "f"), CompilerConfig(NativeTarget()))
