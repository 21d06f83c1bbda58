"""Jobs and helpers shared by the cache and service tests (also run as a subprocess script)."""

from __future__ import annotations

import ctypes
import json
import math
import sys

from gpucompiler.core import CompilerConfig
from gpucompiler.core import CompilerJob, LLVMSource
from gpucompiler.targets import NativeTarget

#: a function with a loop and a libm call (resolved by name in each process)
KERNEL_IR = """
declare double @sin(double)

define double @wsum(double* %xs, i64 %n, double %w) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  %acc = phi double [ 0.0, %entry ], [ %acc1, %body ]
  %done = icmp sge i64 %i, %n
  br i1 %done, label %exit, label %body
body:
  %p = getelementptr double, double* %xs, i64 %i
  %x = load double, double* %p
  %s = call double @sin(double %x)
  %t = fmul double %s, %w
  %acc1 = fadd double %acc, %t
  %i1 = add i64 %i, 1
  br label %loop
exit:
  ret double %acc
}
"""

XS = [0.25 * k - 1.0 for k in range(16)]
W = 1.5


def job(variant: int = 0, opt_level: int = 2) -> CompilerJob:
    """The kernel job; ``variant`` changes a constant so that each variant has its own key."""
    text = KERNEL_IR.replace("0.0, %entry", f"{float(variant)}, %entry")
    return CompilerJob(LLVMSource(text, "wsum"), CompilerConfig(NativeTarget(), opt_level=opt_level))


def expected(variant: int = 0) -> float:
    return float(variant) + sum(math.sin(x) * W for x in XS)


def run(result, variant: int = 0) -> float:
    """Load ``result``'s object code and call it on :data:`XS`."""
    from gpucompiler.runtime import CPULibrary

    lib = CPULibrary.from_result(result)
    fn = lib.function("wsum", ctypes.c_double, ctypes.POINTER(ctypes.c_double), ctypes.c_int64,
                      ctypes.c_double)
    arr = (ctypes.c_double * len(XS))(*XS)
    return fn(arr, len(XS), W)


if __name__ == "__main__":  # python jobs.py VARIANT: compile through the default cache, print JSON
    from gpucompiler.cache.default import compile_cached

    variant = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    res = compile_cached(job(variant), emit=("obj",))
    print(json.dumps({"origin": res.origin, "key": res.key, "value": run(res, variant)}))


def run_in_subprocess(variant: int, env: dict, *, timeout: float = 60.0) -> dict:
    """Run this file in a fresh interpreter with ``env`` added; its JSON answer."""
    import os
    import subprocess
    from pathlib import Path

    environ = {**os.environ, **env}
    proc = subprocess.run([sys.executable, str(Path(__file__)), str(variant)], env=environ,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
