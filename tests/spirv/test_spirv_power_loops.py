"""Loops of powers in Vulkan kernels: they compile, pass spirv-val and run on lavapipe as NumPy computes.

On the CPU such a loop is versioned (frontend/powerloops.py): an unchecked copy, a test that the stored
array and the read ones are disjoint, blocks whose stores are held back. A shader has no addresses to
compare (the test made pointers integers: ``LOGICAL_POINTER``) and LLVM 22's SPIR-V back end left the
blocks unstructured (spirv-val refused ``a[j] = a[j] ** 2``): the SPIR-V target's rules run every power
checked (targets/spirv/rules.py). PTX and AMD kernels keep the versioned loop; the CPU grid emulation
computes the same numbers.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd, kernel
from gpucompiler.core import CompilerConfig, CompilerJob
from gpucompiler.errors import ToolNotFoundError
from gpucompiler.pipeline import compile as compile_job
from gpucompiler.runtime import hip, vulkan
from gpucompiler.targets.amdgpu import AMDGPUTarget
from gpucompiler.targets.amdgpu import devicelibs as amdgpu_math, tools as amdgpu_tools
from gpucompiler.targets.ptx import PTXTarget
from gpucompiler.targets.spirv.tools import validate_binary

N = 37
#: multiples of 0.25 in [-4, 4], no zero: their squares, cubes and fourth powers are exact doubles
BASES = np.array([(k % 33 - 16) * 0.25 or 0.5 for k in range(5, 5 + N)])


@kernel
def squares(out, a, n):
    if gd.grid(1) == 0:
        for j in range(n):
            out[j] = a[j] ** 2.0


@kernel
def cubes(out, a, n):
    if gd.grid(1) == 0:
        for j in range(n):
            out[j] = a[j] ** 3


@kernel
def squares_in_place(a, n):
    if gd.grid(1) == 0:
        for j in range(n):
            a[j] = a[j] ** 2


@kernel
def add_squares(out, a, n):
    if gd.grid(1) == 0:
        for j in range(n):
            out[j] += 0.5 * a[j] ** 2 - a[j] ** 3


@kernel
def every_other(out, a, n):
    if gd.grid(1) == 0:
        for j in range(0, n, 2):
            out[j] = a[j] ** 4


def fourth_powers(out, a, n):
    for j in range(n):
        out[j] = a[j] ** 4


@kernel
def through_a_call(out, a, n):
    if gd.grid(1) == 0:
        fourth_powers(out, a, n)


@kernel
def after_previous(out, a, n):
    if gd.grid(1) == 0:
        for j in range(1, n):
            out[j] = 0.5 * a[j - 1] ** 2 + a[j]


@kernel
def negative(out, a, n):
    if gd.grid(1) == 0:
        for j in range(n):
            out[j] = a[j] ** -2 + a[j] ** -3.0


@kernel
def sum_of_powers(out, a, n):
    if gd.grid(1) == 0:
        s = 0.0
        for j in range(n):
            s += a[j] ** 2 - a[j] ** 3
        out[0] = s


@kernel
def rows(out, a):
    if gd.grid(1) == 0:
        for r in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[r, j] = a[r, j] ** 2 - a[r, j] ** 3


def _run(k, args: tuple) -> tuple[tuple, tuple]:
    """``k``'s results on lavapipe and on the CPU grid emulation (copies of ``args`` each)."""
    on_vulkan = tuple(v.copy() if isinstance(v, np.ndarray) else v for v in args)
    emulated = tuple(v.copy() if isinstance(v, np.ndarray) else v for v in args)
    vulkan.launch(k, 1, 64, on_vulkan)
    k[1, 64, "cpu"](*emulated)
    return on_vulkan, emulated


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k, reference", [
    (squares, lambda o, a: a ** 2.0),
    (cubes, lambda o, a: a ** 3),
    (add_squares, lambda o, a: o + (0.5 * a ** 2 - a ** 3)),
    (every_other, lambda o, a: np.where(np.arange(len(a)) % 2 == 0, a ** 4, o)),
    (through_a_call, lambda o, a: a ** 4),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_loop_storing_powers_runs_exactly_as_numpy(vulkan_device, spirv_val, k, reference, dtype):
    a = BASES.astype(dtype)
    out = np.linspace(-1, 1, N).astype(dtype)
    binary = vulkan.compile_spirv(k, k.argument_types((out, a, N)), (64, 1, 1))
    assert validate_binary(binary, required=True)
    (got, _, _), (emulated, _, _) = _run(k, (out, a, N))
    want = reference(out, a).astype(dtype)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(emulated, want)


@pytest.mark.parametrize("opt_level", [0, 1])
def test_unoptimised_kernels_too(vulkan_device, opt_level):
    """The versioned copies are gone before LLVM optimises: nothing of them reaches the shader at -O0."""
    k = kernel(squares.py_func, opt_level=opt_level)
    got = np.zeros(N)
    vulkan.launch(k, 1, 64, (got, BASES, N))
    np.testing.assert_array_equal(got, BASES ** 2)


def test_a_loop_squaring_its_array_in_place(vulkan_device):
    (got, _), (emulated, _) = _run(squares_in_place, (BASES, N))
    np.testing.assert_array_equal(got, BASES ** 2)
    np.testing.assert_array_equal(emulated, BASES ** 2)


def _in_order(x, n):
    """``after_previous(x, x, n)`` by CPython: each element reads the one the last iteration wrote."""
    x = [float(v) for v in x]
    for j in range(1, n):
        x[j] = 0.5 * x[j - 1] ** 2 + x[j]
    return np.array(x)


def test_one_array_stored_and_read_runs_the_iterations_in_order(vulkan_device):
    """The same array as ``out`` and ``a`` is one buffer bound twice: no copy of the loop may hold a store
    back past a later iteration's read of it."""
    x = np.array([(k % 5 - 2) * 0.25 for k in range(N)])
    want = _in_order(x, N)
    y = x.copy()
    vulkan.launch(after_previous, 1, 64, (x, x, N))
    after_previous[1, 64, "cpu"](y, y, N)  # the emulation's versioned loop finds the overlap at run time
    np.testing.assert_array_equal(x, want)
    np.testing.assert_array_equal(y, want)
    a = np.array([(k % 5 - 2) * 0.25 for k in range(N)])
    (got, _, _), _ = _run(after_previous, (np.zeros(N), a, N))
    np.testing.assert_array_equal(got[1:], 0.5 * a[:-1] ** 2 + a[1:])


def test_negative_powers_in_a_loop_within_rounding(vulkan_device):
    """``x ** -2`` and ``x ** -3`` are compensated on the CPU (correctly rounded there); lavapipe's float64
    ``Fma`` is not fused (Vulkan does not ask it to be), so they are a few ulp off on it."""
    (got, _, _), (emulated, _, _) = _run(negative, (np.zeros(N), BASES, N))
    exact = np.array([float(1 / F(x) ** 2) + float(1 / F(x) ** 3) for x in BASES])  # each power rounded once
    np.testing.assert_array_equal(emulated, exact)
    np.testing.assert_allclose(got, exact, rtol=8 * np.finfo(np.float64).eps, atol=0)


def test_a_sum_of_powers_into_a_scalar(vulkan_device):
    (got, _, _), (emulated, _, _) = _run(sum_of_powers, (np.zeros(1), BASES, N))
    want = 0.0
    for x in BASES:
        want += float(x) ** 2 - float(x) ** 3
    assert got[0] == emulated[0] == want


def test_rows_of_a_two_dimensional_array(vulkan_device):
    a = BASES[:36].reshape(6, 6)
    (got, _), (emulated, _) = _run(rows, (np.zeros_like(a), a))
    np.testing.assert_array_equal(got, a ** 2 - a ** 3)
    np.testing.assert_array_equal(emulated, a ** 2 - a ** 3)


def cube_sum(out, x, n):
    for j in range(n):
        out[j] = x[j] ** 3
    s = np.float32(0)
    for j in range(n):
        s += out[j]
    return s


@kernel
def grad_cube_sum(out, dout, x, dx, n):
    if gd.grid(1) == 0:
        autodiff(Reverse, cube_sum, Duplicated(out, dout), Duplicated(x, dx), Const(n))


def test_the_gradient_of_a_loop_storing_powers(vulkan_device):
    x = BASES.astype(np.float32)
    zeros = np.zeros(N, np.float32)
    (out, _, _, dx, _), (_, _, _, emulated, _) = _run(grad_cube_sum, (zeros, zeros, x, zeros, N))
    np.testing.assert_array_equal(out, x ** 3)
    np.testing.assert_array_equal(dx, 3 * x ** 2)
    np.testing.assert_array_equal(emulated, 3 * x ** 2)


# -- the same loops on the other GPU targets: versioned (the overlap test compares addresses) ----------
def _artifacts(k, args, target) -> dict:
    types = tuple(k.argument_types(args))
    job = CompilerJob(k.specialization(types), CompilerConfig(target, kernel=True, name=k.symbol))
    return compile_job(job, ("llvm", "asm")).artifacts


def _amd_code_objects() -> bool:
    """Whether AMD code objects of these loops can be made here: pow needs ocml, linking ld.lld."""
    try:
        amdgpu_tools.find_tool("ld.lld")
    except ToolNotFoundError:
        return False
    return amdgpu_math.find_device_libs_or_none() is not None


@pytest.mark.parametrize("k", [squares, cubes])
def test_ptx_and_amdgpu_keep_the_versioned_loop(check_ptx, k):
    args = (np.zeros(N), BASES, N)
    ptx = _artifacts(k, args, PTXTarget())
    assert "ptrtoint" in ptx["llvm"]  # the overlap test of the versioned copies
    check_ptx(ptx["asm"])
    if _amd_code_objects():
        code = hip.code_object(k, k.argument_types(args), AMDGPUTarget("gfx90a"))
        assert code.image[:4] == b"\x7fELF" and code.metadata()[".name"] == k.symbol
    out = np.zeros(N)
    k[1, 64, "cpu"](out, BASES, N)
    np.testing.assert_array_equal(out, BASES ** (2 if k is squares else 3))
