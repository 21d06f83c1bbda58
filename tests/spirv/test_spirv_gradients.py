"""``autodiff`` inside kernels on SPIR-V (lavapipe in CI): float32 gradients against the CPU grid
emulation (the same compiler, another device), exact derivatives and central differences of the same
Python functions evaluated in float64 by CPython; what a Vulkan device cannot run is a typed error."""

from __future__ import annotations

import math

import numpy as np
import pytest

import spirv_gradients as G
from gpucompiler import device as gd, kernel
from gpucompiler import types as T
from gpucompiler.errors import InvalidIRError
from gpucompiler.runtime import vulkan
from gpucompiler.runtime.vulkan_device import DeviceFeatureError
from gpucompiler.targets.spirv import SPIRVTarget
from gpucompiler.targets.spirv.tools import validate_binary

P = ("enzyme",)
rng = np.random.default_rng(5)


def on_both(fn, grid, block, args):
    """``fn``'s gradient kernel run on Vulkan and in the emulation: the two argument tuples after."""
    k = kernel(fn, plugins=P)
    vk = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    cpu = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    k[grid, block, SPIRVTarget()](*vk)
    k[grid, block, "cpu"](*cpu)
    return vk, cpu


def branchy_derivative(v: float) -> float:
    """d branchy_map / d x[i] at x[i] = v by the chain rule, in float64 (its constants as float32 holds them)."""
    high, a, b, c, d, e = (float(np.float32(k)) for k in (0.2, 0.8, 0.25, 0.05, 1.5, 0.3))
    s, ds = v, 1.0
    for k in range(G.STEPS):
        if s > high:
            s, ds = a * s - b * s * s + c * k, (a - 2 * b * s) * ds
        else:
            s, ds = math.sin(d * s) + e, d * math.cos(d * s) * ds
    return ds


def central(total, x, h=1e-6):
    """The gradient of ``total(x)`` (float64) by central differences."""
    g = np.zeros_like(x)
    for k in range(len(x)):
        up, dn = x.copy(), x.copy()
        up[k] += h
        dn[k] -= h
        g[k] = (total(up) - total(dn)) / (2 * h)
    return g


def test_shared_parameter_gradient_accumulates_atomically(vulkan_device):
    x = rng.uniform(-2, 2, 256).astype(np.float32)
    w = np.array([1.5, -0.25], np.float32)
    (_, dx, _, dw), (_, edx, _, edw) = on_both(G.grad_energy, 4, 64, (x, np.zeros_like(x), w, np.zeros_like(w)))
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    exact_dx = w64[0] * (np.cos(x64) * x64 + np.sin(x64)) + 2 * w64[1] * x64
    exact_dw = np.array([np.sum(np.sin(x64) * x64), np.sum(x64 * x64)])
    np.testing.assert_allclose(dx, exact_dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw, exact_dw, rtol=1e-5)
    np.testing.assert_allclose(dx, edx, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dw, edw, rtol=1e-5)


def test_constant_trip_loop_with_branches(vulkan_device):
    x = rng.uniform(-1, 1.5, 96).astype(np.float32)
    (_, dx), (_, edx) = on_both(G.grad_branchy_map, 2, 64, (x, np.zeros_like(x)))
    np.testing.assert_allclose(dx, [branchy_derivative(float(v)) for v in x], rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(dx, edx, rtol=1e-5, atol=1e-6)
    assert np.any(dx != 0)


@pytest.mark.parametrize("fn", [G.reverse_scalar, G.forward_scalar], ids=["reverse", "forward"])
def test_per_thread_scalar_derivative(vulkan_device, fn):
    x = rng.uniform(-1, 1.5, 128).astype(np.float32)
    (_, out, _), (_, eout, _) = on_both(fn, 2, 64, (x, np.zeros_like(x), np.float32(0.3)))
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out, 0.3 * np.exp(0.3 * x64) + 2 * x64 / (1 + x64 * x64), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, eout, rtol=1e-6, atol=1e-6)


def test_barrier_inside_the_differentiated_function(vulkan_device):
    x = rng.uniform(-1, 1, 64).astype(np.float32)
    dout = rng.uniform(0.5, 1.5, 64).astype(np.float32)
    (_, dx, out, _), (_, edx, _, _) = on_both(G.grad_square_sync, 1, 64, (x, np.zeros_like(x), np.zeros_like(x), dout))
    np.testing.assert_allclose(out, 2 * x * x, rtol=1e-6)
    np.testing.assert_allclose(dx, 4 * x * dout, rtol=1e-6)
    np.testing.assert_allclose(dx, edx, rtol=1e-6)


def neighbours64(x, i):
    """:func:`spirv_gradients.neighbours` in float64."""
    left = x[i - 1] if i > 0 else 0.0
    right = x[i + 1] if i + 1 < len(x) else 0.0
    return x[i] * (left + right) + math.cos(x[i])


def test_neighbouring_reads_add_their_adjoints(vulkan_device):
    x = rng.uniform(-1, 1, 200).astype(np.float32)
    (_, dx), (_, edx) = on_both(G.grad_neighbours, 4, 64, (x, np.zeros_like(x)))
    fd = central(lambda v: sum(neighbours64(v, i) for i in range(len(v))), x.astype(np.float64))
    np.testing.assert_allclose(dx, fd, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(dx, edx, rtol=1e-6, atol=1e-6)


def test_float64_gradient_runs_or_names_the_missing_atomic(vulkan_device):
    x = rng.uniform(-2, 2, 128)
    w = np.array([1.5, -0.25])
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    k = kernel(G.grad_energy, plugins=P)
    if not vulkan_device.features["shaderBufferFloat64AtomicAdd"]:  # lavapipe
        with pytest.raises((DeviceFeatureError, InvalidIRError)):
            k[2, 64, SPIRVTarget()](x, dx, w, dw)
        assert not dx.any() and not dw.any()
        return
    k[2, 64, SPIRVTarget()](x, dx, w, dw)  # float64 sin and cos: targets/spirv/libm64.py
    np.testing.assert_allclose(dx, w[0] * (np.cos(x) * x + np.sin(x)) + 2 * w[1] * x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(dw, [np.sum(np.sin(x) * x), np.sum(x * x)], rtol=1e-12)


def _sin_times(x, y):  # a launch tape's kernel: its gradient kernel keeps the bounds test's flag on the tape
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = math.sin(x[i]) * x[i]


@pytest.mark.parametrize("noneed", [(), (1,)], ids=["every-write", "noneed"])
def test_a_float64_gradient_whose_tape_holds_flags_passes_spirv_val(spirv_val, noneed):
    """The float64 ``sin`` (libm64) leaves ``i1`` values on the gradient's tape; the logical-pointer rewrite
    stores them as bytes (``zext``/``trunc``, not a bitcast LLVM refuses)."""
    from enzyme_plugin.launches.gradients import gradient_kernel

    a = T.ArrayType(T.float64, 1, "C")
    g = gradient_kernel(kernel(_sin_times), (True, True), noneed)
    binary = vulkan.compile_spirv(g, (a, a, a, a), (64, 1, 1))
    assert validate_binary(binary, required=True)
