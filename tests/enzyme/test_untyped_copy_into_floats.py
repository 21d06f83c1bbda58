"""An 8-byte copy whose source bytes the function never types (the source is read only in a callee) into
memory the function reads as a double (the shape of Enzyme's ForwardMode/fwdandrev.cpp at -O0: a struct of
one double copied, read through a member function): the copy moves the double
and its derivative (was: ADError "integer store into memory holding double")."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

import enzyme_plugin
from clang_levels import clang, needs_clang
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

SOURCE = """
extern int enzyme_dup;
int enzyme_dup;
extern "C" double __enzyme_autodiff(void *, ...);
extern "C" double __enzyme_fwddiff(void *, ...);
struct box {
  double v[1];
  double &at(int i) { return v[i]; }
};
extern "C" __attribute__((noinline)) double first(double *p) { return p[0]; }
__attribute__((noinline)) box shifted_box(const box &a) {
  box c = a;
  double t = first((double *)&a);
  c.at(0) -= 3.0 * t;
  return c;
}
extern "C" double shifted(const box &a) {
  box c = shifted_box(a);
  return c.at(0) * c.at(0);
}
extern "C" void grad(double x, double *dx) {
  box a = {{x}}, da = {{0.0}};
  __enzyme_autodiff((void *)shifted, &enzyme_dup, &a, &da);
  *dx = da.v[0];
}
extern "C" double tangent(double x) {
  box a = {{x}}, da = {{1.0}};
  return __enzyme_fwddiff((void *)shifted, &enzyme_dup, &a, &da);
}
"""


@pytest.mark.parametrize("flags", [("-O0", "-Xclang", "-disable-O0-optnone"), ("-O0",), ("-O1",), ("-O2",)])
def test_the_copy_moves_the_derivative(flags, tmp_path):
    cc = clang()
    assert cc is not None
    src = tmp_path / "copy.cpp"
    src.write_text(SOURCE)
    cxx = shutil.which(cc.replace("clang", "clang++")) or cc
    text = subprocess.run([cxx, *flags, "-S", "-emit-llvm", str(src), "-o", "-"], capture_output=True, text=True,
                          check=True).stdout
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(text))
    grad = lib.function("grad", None, ctypes.c_double, ctypes.c_void_p)
    tangent = lib.function("tangent", ctypes.c_double, ctypes.c_double)
    dx = ctypes.c_double(0.0)
    grad(1.25, ctypes.addressof(dx))
    assert dx.value == 8 * 1.25  # f(x) = (x - 3x)^2 = 4x^2
    assert tangent(1.25) == 8 * 1.25
