"""Views in kernels: the CPU grid emulation against NumPy, the PTX accepted by ptxas (and run on a
GPU when one is visible); allocating in a GPU kernel is a typed error at the line."""

import inspect

import numpy as np
import pytest

from gpucompiler import device as gd, kernel
from gpucompiler.errors import TypeInferenceError


@kernel
def row_sums(a, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        row = a[i]
        inner = row[1:-1]
        s = 0.0
        for j in range(inner.shape[0]):
            s += inner[j]
        col = a.T[0]
        out[i] = s + col[i] + a[::-1, ::2][i, 0]


def _want(a):
    return a[:, 1:-1].sum(axis=1) + a[:, 0] + a[::-1, ::2][:, 0]


@pytest.mark.parametrize("layout", ["C", "F", "negative"])
def test_views_in_a_kernel_on_the_cpu_grid_emulation(layout):
    base = np.arange(40.0).reshape(8, 5) ** 1.5
    a = {"C": base, "F": np.asfortranarray(base), "negative": base[::-1, ::-1]}[layout]
    out = np.zeros(8)
    row_sums[1, 32, "cpu"](a, out)
    np.testing.assert_allclose(out, _want(a), rtol=1e-14)


def test_views_in_a_kernel_compile_to_ptx_that_ptxas_accepts(check_ptx):
    ptx = row_sums.inspect_asm(np.zeros((8, 5)), np.zeros(8))
    assert "malloc" not in ptx
    check_ptx(ptx)


@pytest.mark.gpu
def test_views_in_a_kernel_on_the_gpu():
    a = np.arange(40.0).reshape(8, 5) ** 1.5
    out = np.zeros(8)
    row_sums[1, 32](a, out)  # NumPy arrays are staged to the device and back
    np.testing.assert_allclose(out, _want(a), rtol=1e-14)


@kernel
def allocates(out):
    i = gd.grid(1)
    tmp = np.zeros(3)
    out[i] = tmp[0]


def test_allocating_in_a_gpu_kernel_is_a_typed_error_at_the_line():
    with pytest.raises(TypeInferenceError, match=r"np\.zeros allocates an array, which kernels on the GPU") as info:
        allocates.inspect_asm(np.zeros(4))
    lines, first = inspect.getsourcelines(allocates.py_func if hasattr(allocates, "py_func") else allocates)
    assert info.value.line == first + next(k for k, line in enumerate(lines) if "np.zeros(3)" in line)
