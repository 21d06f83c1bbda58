"""Floats moved as integers (c/bytes.c, one case per module): doubles kept as their bits in integer
buffers, unions copied through their integer member, structs of doubles copied whole, records mixing
doubles and integers copied by one memcpy of unknown length, a double's bits passed through an integer
parameter and returned through an integer result. The type analysis follows the bytes
(enzyme_plugin/ad/typeinfo.py, floatbits.py); gradients match central differences through both routes
(clang's optimised IR, and AD inside the pipeline). Bits changed by integer arithmetic stay an ADError
naming the C line."""

from __future__ import annotations

import ctypes
import functools

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import C_DIR, compile_c, needs_clang
from enzyme_plugin.cc import clang_ir
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

#: case name -> CASE of c/bytes.c
CASES = {"bits": 1, "union": 2, "struct": 3, "mixed": 4, "param": 5, "result": 6, "stored": 9}
ROUTES = ("optimised", "pipeline")
_P = ctypes.POINTER(ctypes.c_double)


def _ir(route: str, case: int) -> str:
    if route == "optimised":
        return compile_c("bytes.c", "O2", True, (f"-DCASE={case}",))
    return clang_ir(C_DIR / "bytes.c", 2, [f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", "-ffp-contract=off",
                                           f"-DCASE={case}"], debug=True)


def _differentiate(route: str, case: int) -> str:
    text = _ir(route, case)
    return enzyme_plugin.differentiate(text) if route == "optimised" else differentiate_in_pipeline(text, 2)


@functools.cache
def _lib(route: str, case: int):
    return CPULibrary.from_ir(_differentiate(route, case))


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(_P)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_through_integer_bytes_matches_finite_differences(route, name):
    lib = _lib(route, CASES[name])
    primal = lib.function(f"{name}_primal", ctypes.c_double, _P, ctypes.c_int)
    grad = lib.function(f"{name}_grad", None, _P, _P, ctypes.c_int)
    n, h = 20, 1e-6
    x = np.array([0.3 + 0.05 * i - 0.001 * i * i for i in range(n)])
    dx = np.zeros(n)
    grad(_ptr(x), _ptr(dx), n)
    fd = np.zeros(n)
    for i in range(n):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        fd[i] = (primal(_ptr(up), n) - primal(_ptr(down), n)) / (2 * h)
    assert np.abs(fd).max() > 0.5  # the case has a gradient to get wrong
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-7, err_msg=f"{name}, {route}")


@pytest.mark.parametrize("route", ROUTES)
def test_a_copy_of_packed_records_is_an_error_not_split_adjoints(route):
    """A double 4 bytes into each 12-byte record: a memcpy's adjoint moved 8 bytes at a time from the copy's
    start would add halves of adjoints as doubles (a wrong gradient once the bytes were followed exactly)."""
    with pytest.raises(enzyme_plugin.ADError, match=r"bytes\.c:16\d: memcpy over floats that do not start at "
                                                    r"multiples of their size .*packed record"):
        _differentiate(route, 8)


@pytest.mark.parametrize("route", ROUTES)
def test_bits_changed_as_an_integer_stay_an_error_naming_the_line(route):
    with pytest.raises(enzyme_plugin.ADError, match=r"bytes\.c:14\d: bit pattern of an active float used as an integer"):
        _differentiate(route, 7)
