"""The AD tape's heap on Vulkan (``gpucompiler.targets.spirv.heap``): gradients whose loop tapes grow as
the loops run, on lavapipe, against the CPU grid emulation and central differences (float64, CPython);
float64 where the device adds float64 atomically; a heap too small is a DeviceHeapError that leaves the
arguments as they were. The whole kernel-gradient corpus: test_spirv_gradient_corpus.py (slow).
"""

from __future__ import annotations

import numpy as np
import pytest

import spirv_gradients as G
from gpucompiler import device as gd, kernel, types as T
from gpucompiler.errors import DeviceHeapError
from gpucompiler.runtime import vulkan
from gpucompiler.runtime.vulkan_device import DeviceFeatureError
from gpucompiler.targets.spirv import SPIRVTarget
from gpucompiler.targets.spirv.heap import binding
from gpucompiler.targets.spirv.tools import bindings
from tests.enzyme_plugin.kernel_gradient_corpus import CASES

P = ("enzyme",)
BY_NAME = {c.name: c for c in CASES}


def emulated(case, x) -> np.ndarray:
    dx = np.zeros_like(x)
    kernel(case.kernel, plugins=P)[case.launch[0], case.launch[1], "cpu"](x.copy(), dx)
    return dx


def test_float64_gradient_runs_or_names_the_missing_atomic(vulkan_device):
    case = BY_NAME["data-dependent while (Newton)"]
    dx = np.zeros_like(case.x)
    k = kernel(case.kernel, plugins=P)
    if not vulkan_device.features["shaderBufferFloat64AtomicAdd"]:  # lavapipe
        with pytest.raises(DeviceFeatureError, match="shaderBufferFloat64AtomicAdd"):
            k[case.launch[0], case.launch[1], SPIRVTarget()](case.x.copy(), dx)
        assert not dx.any()
        return
    k[case.launch[0], case.launch[1], SPIRVTarget()](case.x.copy(), dx)
    np.testing.assert_allclose(dx, case.reference(), rtol=1e-10, atol=1e-12)


def test_thread_dependent_trip_counts_in_workgroups_of_several_subgroups(vulkan_device):
    """Each thread's tape has its own length, 32 threads of one workgroup (four 8-lane subgroups on
    lavapipe) share the heap, and their adjoints meet in every element."""
    x = np.random.default_rng(3).uniform(-1, 1, 32).astype(np.float32)
    k = kernel(G.grad_cumulative, plugins=P)
    dx, want = np.zeros_like(x), np.zeros_like(x)
    k[1, 32, SPIRVTarget()](x.copy(), dx)
    k[1, 32, "cpu"](x.copy(), want)
    np.testing.assert_allclose(dx, want, rtol=1e-5, atol=1e-5)
    x64 = x.astype(np.float64)
    fd = np.zeros_like(x64)
    for j in range(len(x)):
        up, dn = x64.copy(), x64.copy()
        up[j] += 1e-6
        dn[j] -= 1e-6
        fd[j] = sum(G.cumulative(up, i) - G.cumulative(dn, i) for i in range(len(x))) / 2e-6
    np.testing.assert_allclose(dx, fd, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("size", ["8K", "48K"])
def test_a_heap_too_small_is_a_device_heap_error_and_nothing_is_copied_back(vulkan_device, monkeypatch, size):
    """8K: the 32 threads' tape arenas (1K each) do not fit; 48K: they do, the tapes' growth does not
    (the launch needs 57K). The threads that run out go on with their tapes discarded, and end."""
    case = BY_NAME["long data-dependent while (heap)"]
    x = case.x.astype(np.float32)
    k = kernel(case.kernel, plugins=P)
    monkeypatch.setenv("GPUC_DEVICE_HEAP", size)
    dx = np.zeros_like(x)
    with pytest.raises(DeviceHeapError, match="GPUC_DEVICE_HEAP"):
        k[case.launch[0], case.launch[1], SPIRVTarget()](x.copy(), dx)
    assert not dx.any()
    counter, capacity = vulkan.tape_heap(vulkan_device).status.view().view(np.uint32)[:2]
    assert counter <= capacity  # failed requests did not stay on the 32-bit counter (it could wrap)
    monkeypatch.delenv("GPUC_DEVICE_HEAP")  # the default heap: the same kernel runs right again
    k[case.launch[0], case.launch[1], SPIRVTarget()](x.copy(), dx)
    np.testing.assert_allclose(dx, emulated(case, x), rtol=1e-4, atol=1e-3)


def test_only_a_shader_whose_tape_needs_it_takes_the_heap_binding(spirv_val):
    A = T.ArrayType(T.float32, 1, "C")
    heap = kernel(BY_NAME["long data-dependent while (heap)"].kernel, plugins=P).compile((A, A), SPIRVTarget())[0]
    plain = kernel(G.grad_neighbours, plugins=P).compile((A, A), SPIRVTarget())[0]
    assert isinstance(heap, bytes) and isinstance(plain, bytes)
    assert bindings(heap) == {0, 1, 2, binding(2)}  # x, dx, the parameter block, the heap
    assert bindings(plain) == {0, 1, 2}


# -- two wrong numbers of the target found on the way (no heap in either) -------------------------
@kernel
def count_down_adds(counts, out, lo, hi):
    """``out[i % 4 + 4 m] += 2**-m`` for m = counts[i] .. 0: atomics in a loop whose trip count differs
    between lanes, at an index built from ``i & 3``."""
    i = gd.grid(1)
    if lo <= i < hi:
        m = counts[i]
        a = np.float32(1)
        while True:
            gd.atomic_add(out, (i % 4) + 4 * m, a)
            a = a * np.float32(0.5)
            if m == 0:
                break
            m -= 1


@pytest.mark.parametrize("lo, hi", [(4, 5), (6, 7), (0, 16), (3, 12)])
@pytest.mark.parametrize("grid, block", [(1, 16), (4, 4)])
def test_atomics_in_loops_of_different_lengths_per_lane(vulkan_device, lo, hi, grid, block):
    """LLVM's SPIR-V code generator above -O0 dropped the ``& 3`` of the index (an element 4 off)."""
    counts = np.array([i % 3 + (i % 4 == 1) for i in range(16)], np.int64)
    out = np.zeros(32, np.float32)
    count_down_adds[grid, block, SPIRVTarget()](counts, out, lo, hi)
    want = np.zeros(32)
    for i in range(lo, hi):
        for m in range(int(counts[i]), -1, -1):
            want[i % 4 + 4 * m] += 0.5 ** (counts[i] - m)
    np.testing.assert_array_equal(out, want)


@kernel
def add_down(x, out, lo, hi):
    """``out[j] += x[j]`` for j = i - 1 .. 0: thread i's loop runs i times (with LLVM's acquire-release
    atomics, lavapipe stopped it after two or three)."""
    i = gd.grid(1)
    if lo <= i < hi:
        j = i
        while j > 0:
            gd.atomic_add(out, j - 1, x[j - 1])
            j -= 1


@pytest.mark.parametrize("lo, hi", [(0, 16), (3, 4), (6, 7), (8, 16), (4, 12)])
def test_integer_atomics_in_a_loop_each_lane_runs_its_own_count(vulkan_device, lo, hi):
    x = np.arange(1, 17, dtype=np.int32)
    out = np.zeros(16, np.int32)
    add_down[1, 16, SPIRVTarget()](x, out, lo, hi)
    want = np.zeros(16, np.int64)
    for i in range(lo, hi):
        want[:i] += x[:i]
    np.testing.assert_array_equal(out, want)
