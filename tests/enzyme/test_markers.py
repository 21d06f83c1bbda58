"""Marker arguments of Enzyme's C interface: where they may stand, how CUDA
device code reads them, and the ones the engine rejects by name."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import enzyme_plugin
from gpucompiler.runtime import CPULibrary

_SQ = """
define double @sq(ptr %x) {
  %v = load double, ptr %x
  %y = fmul double %v, %v
  ret double %y
}
@enzyme_dup = SPACEglobal i32 0
@enzyme_width = global i32 0
@enzyme_vector = global i32 0
declare void @__enzyme_autodiff(ptr, ...)
define void @g(ptr %x, ptr %dx) {
  %m = load i32, ptr MARKER
  call void (ptr, ...) @__enzyme_autodiff(ptr @sq, i32 %m, ptr %x, ptr %dx)
  ret void
}
"""


def _sq(space: str, marker: str) -> str:
    return _SQ.replace("SPACE", space).replace("MARKER", marker)


def _grad(text: str, x: float) -> float:
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate(text))
    p = ctypes.POINTER(ctypes.c_double)
    g = lib.function("g", None, p, p)
    xs, dx = np.array([x]), np.zeros(1)
    g(xs.ctypes.data_as(p), dx.ctypes.data_as(p))
    return float(dx[0])


def test_marker_in_address_space_1_read_through_addrspacecast():
    """clang --cuda-device-only puts `__device__ int enzyme_dup` in addrspace(1)."""
    text = _sq("addrspace(1) ", "addrspacecast (ptr addrspace(1) @enzyme_dup to ptr)")
    assert _grad(text, 1.5) == pytest.approx(3.0, rel=1e-15)


def test_marker_in_address_space_0():
    assert _grad(_sq("", "@enzyme_dup"), -2.0) == pytest.approx(-4.0, rel=1e-15)


def test_unsupported_marker_is_named():
    with pytest.raises(enzyme_plugin.ADError, match="enzyme_vector marker is not supported"):
        enzyme_plugin.differentiate(_sq("", "@enzyme_vector"))


def test_batch_width_must_be_a_constant():
    """``enzyme_width`` takes the batch width as a constant (here the pointer after it)."""
    with pytest.raises(enzyme_plugin.ADError, match="enzyme_width must be followed by a constant"):
        enzyme_plugin.differentiate(_sq("", "@enzyme_width"))


_SPLIT = """
@enzyme_tape = global i32 0
define double @sq(double %x) {
  %y = fmul double %x, %x
  ret double %y
}
declare ptr @__enzyme_augmentfwd(ptr, ...)
declare double @__enzyme_reverse(ptr, ...)
define double @g(double %x, ptr %mem) {
  %t = load i32, ptr @enzyme_tape
  %a = call ptr (ptr, ...) @__enzyme_augmentfwd(ptr @sq, double %x, i32 %t, ptr %mem)
  %b = call ptr (ptr, ...) @__enzyme_augmentfwd(ptr @sq, double %x)
  %r = call double (ptr, ...) @__enzyme_reverse(ptr @sq, double %x, ptr %b)
  ret double %r
}
"""


def test_split_mode_mixing_tape_conventions_raises():
    with pytest.raises(enzyme_plugin.ADError, match="both in enzyme_tape memory and as their result"):
        enzyme_plugin.differentiate(_SPLIT)
