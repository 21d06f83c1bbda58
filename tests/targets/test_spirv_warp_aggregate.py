"""Warp-aggregated adjoints on Vulkan (``gpucompiler.targets.spirv.warp``): the adjoints of a value every
thread reads are summed over the subgroup (``OpGroupNonUniformFAdd``) before one atomic add per element.

On lavapipe (8-lane subgroups) against the CPU grid emulation, exact derivatives and central differences
(float64, CPython); with every thread, a partial last workgroup, a data-dependent branch around the
``autodiff`` (a non-uniform active set) and lanes that add to different elements (the per-lane path).
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd, kernel
from gpucompiler.kernel import Kernel
from gpucompiler.core import WarpIntrinsics
from gpucompiler.errors import ConfigError
from gpucompiler.runtime import vulkan
from gpucompiler.targets.spirv import SPIRVTarget

P = ("enzyme",)
rng = np.random.default_rng(11)




def energy(x, w, i):
    return math.sin(x[i]) * w[0] * x[i] + w[1] * x[i] * x[i]


def grad_energy(x, dx, w, dw):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, energy, Duplicated(x, dx), Duplicated(w, dw), Const(i))


def grad_energy_where_positive(x, dx, w, dw):
    """Only the threads whose x is positive differentiate: the active lanes are scattered."""
    i = gd.grid(1)
    if i < x.shape[0] and x[i] > 0.0:
        autodiff(Reverse, energy, Duplicated(x, dx), Duplicated(w, dw), Const(i))


def scattered(x, w, i):
    return w[i % 3] * x[i] * x[i]


def grad_scattered(x, dx, w, dw):
    """Neighbouring lanes add to different elements of w: the per-lane atomics."""
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, scattered, Duplicated(x, dx), Duplicated(w, dw), Const(i))


def energy_total(x, w) -> float:
    return float(np.sum(np.sin(x) * w[0] * x + w[1] * x * x))


def central(total, w, h=1e-6) -> np.ndarray:
    g = np.zeros_like(w)
    for k in range(len(w)):
        up, dn = w.copy(), w.copy()
        up[k] += h
        dn[k] -= h
        g[k] = (total(up) - total(dn)) / (2 * h)
    return g


def both(fn, grid, block, args):
    k = Kernel(fn, plugins=P)
    vk = tuple(a.copy() for a in args)
    cpu = tuple(a.copy() for a in args)
    k[grid, block, SPIRVTarget()](*vk)
    k[grid, block, "cpu"](*cpu)
    return vk, cpu


# -- the code --------------------------------------------------------------------------------------------
def _opcodes(binary: bytes) -> set[int]:
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    ops, at = set(), 5
    while at < len(words):
        ops.add(words[at] & 0xFFFF)
        at += max(words[at] >> 16, 1)
    return ops


OP_GROUP_FADD, OP_ELECT, OP_ALL, OP_UMIN = 350, 333, 334, 354


def test_a_shared_parameter_is_summed_over_the_subgroup_in_the_shader():
    k = kernel(grad_energy, plugins=P)
    x = np.zeros(64, np.float32)
    text = k.inspect_llvm(x, x, x, x, target=SPIRVTarget())
    assert text.count("@llvm.spv.wave.reduce.sum.f32(float") >= 4  # dw[0], dw[1], dx[i]: three sums
    assert "@llvm.spv.wave.is.first.lane()" in text
    types = k.argument_types((x, x, x, x))
    binary = k.compile(types, SPIRVTarget())[0]
    assert isinstance(binary, bytes)
    assert {OP_GROUP_FADD, OP_ELECT, OP_ALL, OP_UMIN} <= _opcodes(binary)  # (and spirv-val passed it)


def test_without_subgroups_each_lane_adds_its_own():
    k = kernel(grad_energy, plugins=P)
    x = np.zeros(64, np.float32)
    text = k.inspect_llvm(x, x, x, x, target=SPIRVTarget(subgroups=False))
    assert "llvm.spv.wave" not in text
    assert text.count("atomicrmw fadd") == 3


# -- the numbers on lavapipe -----------------------------------------------------------------------------
@pytest.mark.parametrize("n", [256, 200, 37])
def test_shared_parameters_match_emulation_exact_and_differences(vulkan_device, n):
    x = rng.uniform(-2, 2, n).astype(np.float32)
    w = np.array([1.5, -0.25], np.float32)
    (_, dx, _, dw), (_, edx, _, edw) = both(grad_energy, (n + 63) // 64, 64,
                                            (x, np.zeros_like(x), w, np.zeros_like(w)))
    x64 = x.astype(np.float64)
    exact = np.array([np.sum(np.sin(x64) * x64), np.sum(x64 * x64)])
    np.testing.assert_allclose(dw, exact, rtol=2e-5)
    np.testing.assert_allclose(dw, edw, rtol=2e-5)
    np.testing.assert_allclose(dw, central(lambda v: energy_total(x64, v), w.astype(np.float64)), rtol=1e-4)
    np.testing.assert_allclose(dx, w[0] * (np.cos(x64) * x64 + np.sin(x64)) + 2 * w[1] * x64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, edx, rtol=1e-6, atol=1e-6)


def test_scattered_active_lanes(vulkan_device):
    x = rng.uniform(-2, 2, 300).astype(np.float32)
    w = np.array([0.75, 2.0], np.float32)
    (_, dx, _, dw), (_, edx, _, edw) = both(grad_energy_where_positive, 5, 64,
                                            (x, np.zeros_like(x), w, np.zeros_like(w)))
    x64 = x.astype(np.float64)
    pos = x64 > 0
    np.testing.assert_allclose(dw, [np.sum((np.sin(x64) * x64)[pos]), np.sum((x64 * x64)[pos])], rtol=2e-5)
    np.testing.assert_allclose(dw, edw, rtol=2e-5)
    np.testing.assert_allclose(dx, edx, rtol=1e-6, atol=1e-6)
    assert np.all(dx[~pos] == 0)


def test_lanes_adding_to_different_elements(vulkan_device):
    x = rng.uniform(-2, 2, 192).astype(np.float32)
    w = np.array([0.5, -1.0, 3.0], np.float32)
    (_, dx, _, dw), (_, _, _, edw) = both(grad_scattered, 3, 64, (x, np.zeros_like(x), w, np.zeros_like(w)))
    x64 = x.astype(np.float64)
    exact = [np.sum((x64 * x64)[np.arange(192) % 3 == r]) for r in range(3)]
    np.testing.assert_allclose(dw, exact, rtol=2e-5)
    np.testing.assert_allclose(dw, edw, rtol=2e-5)
    np.testing.assert_allclose(dx, 2 * w[np.arange(192) % 3] * x64, rtol=1e-6)



def test_a_warp_record_names_every_collective():
    assert SPIRVTarget().warp_intrinsics() is None  # (its own subgroup operations instead)
    with pytest.raises(ConfigError, match="all five"):
        WarpIntrinsics(active_mask="a", vote_all="b")
    with pytest.raises(ConfigError, match="power of two"):
        WarpIntrinsics("a", "b", "c", "d", "e", width=48)


def test_float64_adjoints_are_summed_in_float64():
    """(lavapipe has no float64 atomic add: the shader is compiled and validated, run on NVIDIA's driver.)"""
    k = kernel(grad_energy, plugins=P)
    x = np.zeros(64)
    text = k.inspect_llvm(x, x, x, x, target=SPIRVTarget())
    assert text.count("@llvm.spv.wave.reduce.sum.f64(double") >= 3 and "reduce.sum.f32" not in text
    binary = k.compile(k.argument_types((x, x, x, x)), SPIRVTarget())[0]
    assert isinstance(binary, bytes) and OP_GROUP_FADD in _opcodes(binary)


# -- a device without subgroup sums ---------------------------------------------------------------------
def test_a_device_without_subgroup_sums_runs_one_atomic_per_lane(vulkan_device, monkeypatch):
    """The runtime compiles for what the device reports: without the vote and arithmetic operations the
    shader has no subgroup instruction (and a binary that has them is a typed error, not a failed launch)."""
    import attrs

    from gpucompiler.runtime.vulkan_device import DeviceFeatureError

    n = 200
    x = rng.uniform(-2, 2, n).astype(np.float32)
    w = np.array([1.5, -0.25], np.float32)
    with_sums = vulkan.compile_spirv(Kernel(grad_energy, plugins=P), Kernel(grad_energy, plugins=P).argument_types(
        (x, x, w, w)), (64, 1, 1))
    assert OP_GROUP_FADD in _opcodes(with_sums)
    weak = attrs.evolve(vulkan_device, subgroup_sums=False)
    with pytest.raises(DeviceFeatureError, match="VOTE and ARITHMETIC"):
        weak.require(with_sums)
    monkeypatch.setattr(vulkan, "device", lambda: weak)
    k = Kernel(grad_energy, plugins=P)
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    k[(n + 63) // 64, 64, SPIRVTarget()](x, dx, w, dw)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(dw, [np.sum(np.sin(x64) * x64), np.sum(x64 * x64)], rtol=2e-5)
    assert OP_GROUP_FADD not in _opcodes(vulkan.compile_spirv(k, k.argument_types((x, dx, w, dw)), (64, 1, 1),
                                                            subgroups=False))
