"""``__enzyme_augmentfwd`` declared to return ``struct {double result; void *tape;}`` (the result first, as
Enzyme's ReverseMode/virtualshadow.cpp declares it): the primal result and the tape come back in that order,
and ``__enzyme_reverse`` continues from the tape (was: ADError "__enzyme_augmentfwd returns { double, ptr }")."""

from __future__ import annotations

import ctypes
import subprocess

import pytest

import enzyme_plugin
from clang_levels import clang, needs_clang
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

SOURCE = """
typedef struct { double result; void *tape; } result_tape;
result_tape __enzyme_augmentfwd(void *, double *, double *);
void __enzyme_reverse(void *, double *, double *, void *);
double cubesum(double *x) { return x[0] * x[0] * x[0] + 2.0 * x[1]; }
double forward_then_back(double *x, double *dx) {
  result_tape rt = __enzyme_augmentfwd((void *)cubesum, x, dx);
  __enzyme_reverse((void *)cubesum, x, dx, rt.tape);
  return rt.result;
}
"""


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_result_then_tape(level, tmp_path):
    cc = clang()
    assert cc is not None
    src = tmp_path / "rt.c"
    src.write_text(SOURCE)
    text = subprocess.run([cc, level, "-S", "-emit-llvm", str(src), "-o", "-"], capture_output=True, text=True,
                          check=True).stdout
    run = CPULibrary.from_ir(enzyme_plugin.differentiate(text)).function(
        "forward_then_back", ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p)
    x, dx = (ctypes.c_double * 2)(1.5, -0.5), (ctypes.c_double * 2)(0.0, 0.0)
    assert run(ctypes.addressof(x), ctypes.addressof(dx)) == 1.5 ** 3 - 1.0
    assert list(dx) == [3 * 1.5 * 1.5, 2.0]
