"""A marker declared with a `double` result on a function returning `float` (Enzyme's ForwardMode/omp_crit.c
declares `double __enzyme_fwddiff(void *, ...)` for every function): the float tangent comes back widened,
and a `float` marker on a `double` function narrowed (was: ADError "marker call returns double but the
derivative gives float")."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import clang, needs_clang
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

SOURCE = """
double __enzyme_fwddiff(void *, ...);
float __enzyme_fwddiff_f(void *, ...);
float cube(float *x) { return x[0] * x[0] * x[0]; }
double wide(double *x) { return x[0] * x[0]; }
double cube_tangent(float *x, float *dx) { return __enzyme_fwddiff((void *)cube, x, dx); }
float wide_tangent(double *x, double *dx) { return __enzyme_fwddiff_f((void *)wide, x, dx); }
"""


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_the_tangent_is_converted_to_the_markers_float_type(level, tmp_path):
    src = tmp_path / "cast.c"
    src.write_text(SOURCE)
    cc = clang()
    assert cc is not None
    flags = [level, "-Xclang", "-disable-O0-optnone"] if level == "-O0" else [level]
    text = subprocess.run([cc, *flags, "-S", "-emit-llvm", str(src), "-o", "-"], capture_output=True, text=True,
                          check=True).stdout
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(text))
    cube = lib.function("cube_tangent", ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p)
    x, dx = np.array([1.5], np.float32), np.array([2.0], np.float32)
    assert cube(x.ctypes.data, dx.ctypes.data) == 3 * 1.5 * 1.5 * 2.0
    wide = lib.function("wide_tangent", ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p)
    y, dy = np.array([1.25]), np.array([4.0])
    assert wide(y.ctypes.data, dy.ctypes.data) == np.float32(2 * 1.25 * 4.0)
