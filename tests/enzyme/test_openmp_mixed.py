"""OpenMP critical sections that add a value of one floating type into a shared value of another
(``float res; double part; critical res += part`` and the reverse, Enzyme's ``omp_crit.c`` shape):
gradients and tangents through both routes at 1, 2 and 4 threads against the exact derivative."""

from __future__ import annotations

import ctypes
import functools
import os
import subprocess

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import C_DIR, clang, compile_c, needs_clang
from enzyme_plugin.cc import clang_ir
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.runtime import CPULibrary


def _libomp() -> str | None:
    cc = clang()
    if cc is None:
        return None
    path = subprocess.run([cc, "-print-file-name=libomp.so"], capture_output=True, text=True,
                          check=False).stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


LIBOMP = _libomp()
pytestmark = [needs_clang, pytest.mark.skipif(LIBOMP is None, reason="libomp (libomp-19-dev) is not installed")]
_F = ctypes.POINTER(ctypes.c_float)
N = 29


@functools.cache
def _omp() -> ctypes.CDLL:
    import llvmlite.binding as llvm

    assert LIBOMP is not None
    llvm.load_library_permanently(LIBOMP)
    return ctypes.CDLL(LIBOMP)


@functools.cache
def _lib(route: str):
    _omp()
    if route == "optimised":
        text = enzyme_plugin.differentiate(compile_c("openmp_mixed.c", "O2", False, ("-fopenmp",)))
    else:
        text = differentiate_in_pipeline(clang_ir(C_DIR / "openmp_mixed.c", 2, [
            f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", "-ffp-contract=off", "-fopenmp"]), 2)
    return CPULibrary.from_ir(text)


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(_F)


def _point() -> tuple[np.ndarray, np.ndarray]:
    a = np.array([0.4 + 0.07 * i - 0.002 * i * i for i in range(N)], dtype=np.float32)
    weights = np.array([i % 3 + 1 for i in range(N)], dtype=np.float64)
    return a, weights


@pytest.mark.parametrize("route", ["optimised", "pipeline"])
@pytest.mark.parametrize("name,result", [("narrowed", ctypes.c_float), ("widened", ctypes.c_double)])
def test_mixed_precision_critical_sum_has_the_exact_derivative(route, name, result):
    lib = _lib(route)
    a, w = _point()
    exact = 2.0 * a.astype(np.float64) * w
    v = np.cos(np.arange(N) * 1.3).astype(np.float32)
    primal = lib.function(f"{name}_primal", result, _F, ctypes.c_int)
    grad = lib.function(f"{name}_grad", None, _F, _F, ctypes.c_int)
    fwd = lib.function(f"{name}_fwd", result, _F, _F, ctypes.c_int)
    for threads in (1, 2, 4):
        _omp().omp_set_num_threads(threads)
        assert primal(_ptr(a), N) == pytest.approx(float(np.sum(a.astype(np.float64) ** 2 * w)), rel=1e-5)
        da = np.zeros(N, dtype=np.float32)
        grad(_ptr(a), _ptr(da), N)
        np.testing.assert_allclose(da, exact, rtol=1e-5, err_msg=f"{name}, {route}, {threads} threads")
        assert fwd(_ptr(a), _ptr(v.copy()), N) == pytest.approx(float(exact @ v), rel=1e-5), (name, route, threads)
