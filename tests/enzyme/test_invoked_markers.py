"""A marker called where C++ may unwind (an object with a destructor alive, exceptions on): clang emits
``invoke``; the marker is differentiated as a call (was: left in the module, an ADError naming it)."""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import shutil
import subprocess

import llvmlite.binding as llvm
import pytest

import enzyme_plugin
from clang_levels import clang, needs_clang
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

SOURCE = """
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
struct Guard {
  volatile int *count;
  ~Guard();
};
__attribute__((noinline)) Guard::~Guard() { *count += 1; }
static double cube(double x) { return x * x * x; }
extern "C" double grad(double x, volatile int *count) {
  Guard g{count};
  return __enzyme_autodiff((void *)cube, x);
}
extern "C" double tangent(double x, volatile int *count) {
  Guard g{count};
  return __enzyme_fwddiff((void *)cube, x, 2.0);
}
"""


@pytest.mark.parametrize("level", ["-O0", "-O1", "-O2"])
def test_an_invoked_marker_is_differentiated(level, tmp_path):
    cc = clang()
    assert cc is not None
    cxx = shutil.which(cc.replace("clang", "clang++")) or cc
    src = tmp_path / "invoke.cpp"
    src.write_text(SOURCE)
    flags = [level, "-Xclang", "-disable-O0-optnone"] if level == "-O0" else [level]
    text = subprocess.run([cxx, *flags, "-fexceptions", "-S", "-emit-llvm", str(src), "-o", "-"],
                          capture_output=True, text=True, check=True).stdout
    assert re.search(r"invoke noundef double \(ptr, \.\.\.\) @\S*__enzyme_autodiff", text)  # what the test is about
    llvm.load_library_permanently(ctypes.util.find_library("stdc++"))  # the personality routine
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(text))
    count = ctypes.c_int(0)
    grad = lib.function("grad", ctypes.c_double, ctypes.c_double, ctypes.c_void_p)
    tangent = lib.function("tangent", ctypes.c_double, ctypes.c_double, ctypes.c_void_p)
    assert grad(1.5, ctypes.addressof(count)) == 3 * 1.5 * 1.5
    assert tangent(1.5, ctypes.addressof(count)) == 3 * 1.5 * 1.5 * 2.0
    assert count.value == 2  # the destructors ran
