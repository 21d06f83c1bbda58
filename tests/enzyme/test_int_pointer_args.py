"""Unmarked pointers to integer memory in marker calls (c/int_pointers.c): when reading every unmarked pointer
as ``enzyme_dup`` leaves the call short of arguments, a pointer the function only reads and writes as
integers (``int *n``; ``long **meta`` through a callee) is constant, as Enzyme's C interface takes it. Calls
that give the shadow keep it; a pointer to doubles without its shadow stays an ADError. Exact gradients at
clang's -O0 (optnone too: arguments kept in stack slots), -O1 and -O2 and through the pipeline."""

from __future__ import annotations

import ctypes
import functools
import subprocess

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import C_DIR, clang, compile_c, needs_clang
from enzyme_plugin.cc import clang_ir
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

ROUTES = ("O0", "O0-optnone", "O1", "O2", "pipeline")
_P = ctypes.POINTER(ctypes.c_double)


def _ir(route: str) -> str:
    if route == "O0-optnone":  # what Enzyme's RUN lines give: the arguments kept in stack slots
        cc = clang()
        assert cc is not None
        return subprocess.run([cc, "-O0", f"-I{C_DIR}", "-S", "-emit-llvm", str(C_DIR / "int_pointers.c"), "-o", "-"],
                              capture_output=True, text=True, check=True).stdout
    if route == "pipeline":
        return clang_ir(C_DIR / "int_pointers.c", 2, [f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu"])
    return compile_c("int_pointers.c", route)


@functools.cache
def _lib(route: str):
    text = _ir(route)
    return CPULibrary.from_ir(enzyme_plugin.differentiate(text) if route != "pipeline"
                              else differentiate_in_pipeline(text, 2))


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(_P)


@pytest.mark.parametrize("name", ["sumsq_grad", "sumsq_grad_dup"])
@pytest.mark.parametrize("route", ROUTES)
def test_a_length_behind_an_int_pointer(route, name):
    grad = _lib(route).function(name, None, _P, _P, ctypes.c_int)
    x = np.linspace(-1.5, 2.0, 7)
    dx = np.zeros(7)
    grad(_ptr(x), _ptr(dx), 5)
    np.testing.assert_array_equal(dx, np.r_[2 * x[:5], 0.0, 0.0])


@pytest.mark.parametrize("route", ROUTES)
def test_a_segment_behind_a_pointer_to_a_pointer_in_a_callee(route):
    grad = _lib(route).function("meta_grad", None, _P, _P, ctypes.c_long, ctypes.c_long)
    x = np.arange(1.0, 9.0)
    dx = np.ones(8)
    grad(_ptr(x), _ptr(dx), 2, 6)
    np.testing.assert_array_equal(dx, [1, 1, 3, 3, 3, 3, 1, 1])


@pytest.mark.parametrize("route", ("O1", "O2"))
def test_a_pointer_to_doubles_without_its_shadow_stays_an_error(route):
    with pytest.raises(enzyme_plugin.ADError, match="too few arguments for @dot"):
        enzyme_plugin.differentiate(compile_c("int_pointers.c", route, False, ("-DWITH_DOT",)))


@pytest.mark.parametrize("route", ROUTES)
def test_an_unread_pointer_to_an_int_array(route):
    grad = _lib(route).function("twice_grad", None, _P, _P, ctypes.c_int)
    x, dx = np.array([1.5, 2.5]), np.zeros(2)
    grad(_ptr(x), _ptr(dx), 3)
    np.testing.assert_array_equal(dx, [2.0, 0.0])
