"""The main job: compile LLVM IR that asks for a derivative, through the plugin pipeline.

The IR below computes ``g(x) = d/dx f(x) + 1`` the way an AD frontend writes
it: a marker call ``@__autodiff(ptr @df, x)``. The reference ``mock_enzyme``
plugin (marker-gated on ``__autodiff``) lowers the marker at the ``ad``
stage; here it stands in for Enzyme, with ``@df`` the hand-written
derivative of ``f(x) = x**3``. The example

1. compiles the job for the host CPU, loads the object code and checks the
   derivative against a central finite difference of ``f`` run natively;
2. compiles the same module for PTX (sm_90) with a kernel that evaluates it,
   and runs ptxas on the result when ptxas is installed.

Run: ``python examples/main.py``
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import tempfile

from gpucompiler import CompilerConfig, CompilerJob, LLVMSource, NativeTarget, PTXTarget
from gpucompiler.errors import ToolNotFoundError
from gpucompiler.pipeline import compile
from gpucompiler.runtime import CPULibrary
from gpucompiler.toolchain import find_ptxas

IR = """\
declare double @__autodiff(ptr, ...)

define double @f(double %x) {
  %x2 = fmul double %x, %x
  %x3 = fmul double %x2, %x
  ret double %x3
}

define double @df(double %x) {
  %x2 = fmul double %x, %x
  %d = fmul double %x2, 3.0
  ret double %d
}

define double @g(double %x) {
  %d = call double (ptr, ...) @__autodiff(ptr @df, double %x)
  %r = fadd double %d, 1.0
  ret double %r
}

define void @gkernel(ptr addrspace(1) %out, double %x) {
  %r = call double @g(double %x)
  store double %r, ptr addrspace(1) %out
  ret void
}
"""


def run_on_cpu(x: float) -> None:
    job = CompilerJob(LLVMSource(IR, "g"), CompilerConfig(target=NativeTarget(), plugins=("mock_enzyme",)))
    result = compile(job, emit=("llvm", "obj"))
    lib = CPULibrary.from_result(result)
    g = lib.function("g", ctypes.c_double, ctypes.c_double)
    f = lib.function("f", ctypes.c_double, ctypes.c_double)
    h = 1e-5
    fd = (f(x + h) - f(x - h)) / (2 * h)
    got = g(x) - 1.0
    ok = abs(got - fd) <= 1e-6 * max(1.0, abs(fd))
    print(f"cpu: d/dx x^3 at x={x}: {got:.10f}  finite difference {fd:.10f}  {'OK' if ok else 'MISMATCH'}")
    if not ok:
        sys.exit(1)


def compile_for_ptx() -> None:
    job = CompilerJob(LLVMSource(IR, "gkernel"),
                      CompilerConfig(target=PTXTarget(), kernel=True, plugins=("mock_enzyme",)))
    ptx = compile(job, emit=("asm",)).artifacts["asm"]
    try:
        ptxas = find_ptxas()
    except ToolNotFoundError as exc:
        print(f"ptx: {len(ptx.splitlines())} lines of PTX; ptxas check skipped ({exc})")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/g.ptx"
        with open(path, "w") as fh:
            fh.write(ptx)
        proc = subprocess.run([ptxas, "-arch=sm_90", path, "-o", f"{tmp}/g.cubin"], capture_output=True, text=True)
    if proc.returncode:
        print(f"ptx: ptxas rejected the PTX:\n{proc.stderr}")
        sys.exit(1)
    print(f"ptx: {len(ptx.splitlines())} lines of PTX for sm_90, accepted by ptxas")


if __name__ == "__main__":
    run_on_cpu(1.7)
    compile_for_ptx()
