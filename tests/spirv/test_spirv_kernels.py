"""Kernels compiled for SPIR-V run on Vulkan and agree with NumPy and with the CPU grid emulation.

Every shader a test builds is checked by ``spirv-val --target-env vulkan1.3`` (the target's emit
runs it; :func:`test_every_shader_passes_spirv_val` runs it explicitly). What Vulkan or LLVM's
SPIR-V back end cannot do is a typed error naming the feature.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from gpucompiler.errors import ArgumentTypeError, InvalidIRError, LaunchError
from gpucompiler.runtime import vulkan
from gpucompiler.runtime.vulkan_device import DeviceFeatureError
from gpucompiler.targets.spirv.tools import (BARRIER_SEMANTICS, DENORM_PRESERVE, SIGNED_ZERO_INF_NAN_PRESERVE,
                                             float_controls, validate_binary)

import spirv_kernels as K

rng = np.random.default_rng(26)


def test_saxpy_float32_matches_numpy(vulkan_device):
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    ref = np.float32(2.5) * x + y
    vulkan.launch(K.saxpy, 16, 64, (np.float32(2.5), x, y))
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)


def test_two_dimensional_grid_float64_and_int_scalars(vulkan_device):
    x = rng.standard_normal((37, 45))
    out = np.zeros_like(x)
    vulkan.launch(K.affine2d, (3, 6), (16, 8), (out, x, 1.5, -2))
    i, j = np.indices(x.shape)
    # rounding only: NVIDIA's driver contracts a * b + c into an fma (as CUDA does by default)
    np.testing.assert_allclose(out, x * 1.5 - 2 + i - 2 * j, rtol=1e-14, atol=1e-13)


def test_loop_sqrt_floor_float64(vulkan_device):
    x = rng.uniform(-3, 3, 300)
    out = np.zeros_like(x)
    vulkan.launch(K.polynomial, 5, 64, (out, x, 7))
    acc = np.zeros_like(x)
    for k in range(7):
        acc = acc * x + (k + 1)
    np.testing.assert_allclose(out, np.sqrt(np.abs(acc)) + np.floor(x), rtol=1e-13)


def test_float_to_int_saturates_as_on_the_cpu(vulkan_device):
    # math.floor gives an int: LLVM's saturating conversion, rebuilt from compares (no Vulkan opcode)
    x = np.array([-1e300, -2.5, -0.0, 0.5, 7.9, 1e300, np.nan, np.inf, -np.inf])
    out = np.zeros_like(x)
    emulated = np.zeros_like(x)
    vulkan.launch(K.polynomial, 1, 64, (out, x, 0))
    K.polynomial[1, 64, "cpu"](emulated, x, 0)
    np.testing.assert_array_equal(out, emulated)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_and_inf_tests_hold_on_every_driver(vulkan_device, dtype):
    # fcmp uno is rebuilt from the bits: a Vulkan driver may fold float self-compares (NVIDIA's does)
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -1.5, 3e38, 1e-40], dtype)
    out = np.full(x.shape, 7, np.int64)
    vulkan.launch(K.nan_flags, 1, 64, (out, x))
    np.testing.assert_array_equal(out, np.where(np.isnan(x), 1, np.where(np.isinf(x), 2, 0)))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16])
def test_signed_division_and_remainder_of_every_sign(vulkan_device, dtype):
    # signed division is lowered to unsigned division of magnitudes (NVIDIA's driver computed OpSRem on
    # LLVM's unsigned-declared types as an unsigned remainder): Python's // and % for every sign pair
    info = np.iinfo(dtype)
    big = min(20011, info.max)
    a = np.array([7, -7, 7, -7, 0, 1, -1, info.max, info.min + 1, info.min, big - 1, -55, 6, -6], dtype)
    b = np.array([2, 2, -2, -2, 5, -3, 3, 7, -7, 3, big, big, -4, 4], dtype)
    q, r, t = np.zeros(len(a), dtype), np.zeros(len(a), dtype), np.zeros(len(a), np.int64)
    vulkan.launch(K.divisions, 1, 64, (q, r, t, a, b))
    eq, er, et = np.zeros_like(q), np.zeros_like(r), np.zeros_like(t)
    K.divisions[1, 64, "cpu"](eq, er, et, a, b)
    np.testing.assert_array_equal(q, eq)
    np.testing.assert_array_equal(r, er)
    np.testing.assert_array_equal(t, et)
    np.testing.assert_array_equal(q, np.floor_divide(a, b))
    np.testing.assert_array_equal(r, np.mod(a, b))
    binary = vulkan.compile_spirv(K.divisions, K.divisions.argument_types((q, r, t, a, b)), (64, 1, 1))
    words, at, opcodes = struct.unpack(f"<{len(binary) // 4}I", binary), 5, set()
    while at < len(words):
        opcodes.add(words[at] & 0xFFFF)
        at += words[at] >> 16
    assert not opcodes & {135, 138, 139}  # OpSDiv, OpSRem, OpSMod


def test_integer_atomics_histogram(vulkan_device):
    values = rng.integers(0, 1000, 5000).astype(np.int32)
    counts = np.zeros(10, np.int32)
    vulkan.launch(K.histogram, 79, 64, (counts, values))
    np.testing.assert_array_equal(counts, np.bincount(values % 10, minlength=10))


def test_float32_atomic_add_min_max(vulkan_device):
    x = rng.integers(-50, 50, 3000).astype(np.float32)
    total = np.zeros(1, np.float32)
    vulkan.launch(K.atomic_sum, 47, 64, (total, x))
    assert total[0] == x.sum()  # small integers: every order of additions is exact
    extremes = np.array([-np.inf, np.inf], np.float32)
    if not vulkan_device.features["shaderBufferFloat32AtomicMinMax"]:  # NVIDIA's driver (580)
        with pytest.raises(DeviceFeatureError, match="shaderBufferFloat32AtomicMinMax"):
            vulkan.launch(K.atomic_extremes, 47, 64, (extremes, x))
        return
    vulkan.launch(K.atomic_extremes, 47, 64, (extremes, x))
    assert (extremes[0], extremes[1]) == (x.max(), x.min())


def test_float64_atomic_add_runs_or_names_the_missing_feature(vulkan_device):
    x = rng.standard_normal(3000)
    total = np.zeros(1)
    if not vulkan_device.features["shaderBufferFloat64AtomicAdd"]:  # lavapipe
        with pytest.raises(DeviceFeatureError, match="shaderBufferFloat64AtomicAdd"):
            vulkan.launch(K.atomic_sum, 47, 64, (total, x))
        assert total[0] == 0.0
        return
    vulkan.launch(K.atomic_sum, 47, 64, (total, x))
    assert abs(total[0] - x.sum()) < 1e-10


@pytest.mark.parametrize("kernel, args, what", [
    (K.atomic_extremes, (np.zeros(2, np.int64), np.zeros(4, np.int64)), "64-bit integer atomic"),
    (K.first_claim, (np.zeros(4, np.int32), np.zeros(4, np.int32)), "compare-and-swap"),
])
def test_atomics_llvm_cannot_lower_for_vulkan_are_typed_errors(vulkan_device, kernel, args, what):
    with pytest.raises(InvalidIRError, match=what) as info:
        vulkan.launch(kernel, 1, 64, args)
    assert kernel.__name__ in str(info.value)


def test_an_array_chosen_at_run_time_is_a_typed_error(vulkan_device):
    # Vulkan cannot address "one of two buffers"; LLVM's back end aborted on the load (contained, but a
    # crash): the lowering refuses the module first
    x, y, out = np.ones(8), np.zeros(8), np.full(8, 7.0)
    with pytest.raises(InvalidIRError, match="LOGICAL_POINTER"):
        vulkan.launch(K.pick_array, 1, 64, (out, x, y, np.ones(8, bool)))
    assert (out == 7.0).all()


def test_the_runtime_loads_no_shader_spirv_val_has_not_checked(vulkan_device, monkeypatch):
    # LLVM 22 sometimes structures control flow wrongly; unchecked, NVIDIA's driver ran such a shader and
    # computed wrong numbers: without spirv-val a launch is a ToolNotFoundError, not a guess
    from gpucompiler.errors import ToolNotFoundError
    from gpucompiler.targets.spirv import tools

    monkeypatch.setattr(tools, "find_spirv_val", lambda: None)
    out = np.zeros(4)
    with pytest.raises(ToolNotFoundError, match="spirv-val"):
        vulkan.launch(K.nan_flags, 1, 32, (out, np.ones(4)))


def test_a_complex_scalar_argument_is_a_typed_error(vulkan_device):
    out = np.zeros(4)
    with pytest.raises(ArgumentTypeError, match="'a'"):  # was a TypeError from packing the parameter block
        vulkan.launch(K.saxpy, 1, 64, (1 + 2j, np.ones(4), out))
    assert (out == 0).all()


def test_shared_memory_and_barriers(vulkan_device):
    x = rng.standard_normal(64 * 5)
    out = np.zeros_like(x)
    vulkan.launch(K.block_reverse, 5, 64, (out, x))
    np.testing.assert_array_equal(out, x.reshape(5, 64)[:, ::-1].ravel())
    y = rng.standard_normal(64 * 7 - 5).astype(np.float32)
    sums = np.zeros(7, np.float32)
    vulkan.launch(K.block_sum, 7, 64, (sums, y))
    np.testing.assert_allclose(sums, np.pad(y, (0, 5)).reshape(7, 64).sum(1), rtol=1e-5, atol=1e-5)


def test_barriers_order_shared_and_buffer_memory(vulkan_device):
    binary = vulkan.compile_spirv(K.block_reverse, K.block_reverse.argument_types((np.zeros(1), np.zeros(1))),
                                  (64, 1, 1))
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    constants, semantics, at = {}, [], 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if opcode == 43 and count == 4:
            constants[words[at + 2]] = words[at + 3]
        elif opcode == 224:  # OpControlBarrier
            semantics.append(words[at + 3])
        at += count
    assert semantics and all(constants[s] == BARRIER_SEMANTICS for s in semantics)


def test_grid_and_block_registers(vulkan_device):
    out = np.zeros(100, np.int64)
    vulkan.launch(K.grid_shape, 4, 32, (out,))
    np.testing.assert_array_equal(out, 4000 + 320 + 128 % 7)


def test_bool_arrays_and_branches(vulkan_device):
    x = rng.standard_normal(200)
    flags = rng.integers(0, 2, 200).astype(bool)
    out = np.zeros(200)
    vulkan.launch(K.masked, 4, 64, (out, x, flags, 0.5))
    np.testing.assert_array_equal(out, np.where(flags & (x < 0.5), x, -1))


def test_float32_sin_within_the_drivers_precision(vulkan_device):
    # GLSL.std.450's sin: Vulkan asks 2**-11 absolute in [-pi, pi]; measured 6e-8 (lavapipe) and 1.1e-6
    # (NVIDIA 580) on [-10, 10]
    x = rng.uniform(-10, 10, 500).astype(np.float32)
    out = np.zeros_like(x)
    vulkan.launch(K.sines, 8, 64, (out, x))
    assert np.abs(out - np.sin(x.astype(np.float64))).max() < 4e-6


def test_float64_math_without_an_implementation_is_a_typed_error_naming_it(vulkan_device):
    out = np.zeros(4)
    with pytest.raises(InvalidIRError, match="no 64-bit erf"):
        vulkan.launch(K.error_functions, 1, 64, (out, np.ones(4)))
    assert (out == 0).all()
    x32 = np.array([-3.0, -0.5, 0.25, 10.0], np.float32)
    out32 = np.zeros(4, np.float32)
    vulkan.launch(K.arctangents, 1, 64, (out32, x32))  # float32: GLSL.std.450's Atan (atanf renamed)
    np.testing.assert_allclose(out32, np.arctan(x32.astype(np.float64)), rtol=1e-5)


def test_shuffles_need_32_lane_subgroups(vulkan_device):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros_like(x)
    low, high = vulkan_device.subgroup_sizes
    if not low <= 32 <= high:  # lavapipe: 8 lanes
        with pytest.raises(DeviceFeatureError, match="32-lane subgroups"):
            vulkan.launch(K.shuffle_sum, 2, 32, (out, x))
        return
    vulkan.launch(K.shuffle_sum, 2, 32, (out, x))
    lanes = x.reshape(2, 32)
    np.testing.assert_allclose(out.reshape(2, 32), lanes + np.concatenate([lanes[:, 1:], lanes[:, -1:]], 1))


def test_views_same_array_twice_and_overlaps(vulkan_device):
    x = rng.standard_normal(400)
    before = x.copy()
    strided = x[::2]  # not contiguous: staged as a copy, written back into the view
    vulkan.launch(K.saxpy, 4, 64, (3.0, strided.copy(), strided))
    np.testing.assert_allclose(x[::2], 4.0 * before[::2])
    np.testing.assert_array_equal(x[1::2], before[1::2])
    y = rng.standard_normal(100)
    ref = 3.0 * y
    vulkan.launch(K.saxpy, 2, 64, (2.0, y, y))  # the same array twice is one buffer
    np.testing.assert_allclose(y, ref)
    z = np.arange(10.0)
    with pytest.raises(LaunchError, match="overlaps"):
        vulkan.launch(K.saxpy, 1, 64, (1.0, z[1:], z[:-1]))
    np.testing.assert_array_equal(z, np.arange(10.0))


def test_device_arrays_stay_on_the_device(vulkan_device):
    x = rng.standard_normal(300).astype(np.float32)
    y = rng.standard_normal(300).astype(np.float32)
    xd, yd = vulkan.to_device(x), vulkan.to_device(y)
    for _ in range(3):
        vulkan.launch(K.saxpy, 5, 64, (np.float32(0.5), xd, yd))
    ref = y.copy()
    for _ in range(3):
        ref = np.float32(0.5) * x + ref
    np.testing.assert_allclose(yd.copy_to_host(), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, args", [
    ("saxpy", (np.float32(1), np.ones(3, np.float32), np.ones(3, np.float32))),
    ("affine2d", (np.ones((2, 2)), np.ones((2, 2)), 1.0, 1)),
    ("histogram", (np.ones(3, np.int32), np.ones(3, np.int32))),
    ("block_sum", (np.ones(3, np.float32), np.ones(3, np.float32))),
    ("block_reverse", (np.ones(3), np.ones(3))),
    ("masked", (np.ones(3), np.ones(3), np.ones(3, bool), 1.0)),
    ("shuffle_sum", (np.ones(3), np.ones(3))),
])
def test_every_shader_passes_spirv_val(spirv_val, name, args):
    kernel = getattr(K, name)
    binary = vulkan.compile_spirv(kernel, kernel.argument_types(args), (64, 1, 1))
    assert validate_binary(binary, required=True)


@pytest.mark.parametrize("name, make", [
    ("saxpy", lambda: (np.float32(1.5), rng.standard_normal(150).astype(np.float32),
                       rng.standard_normal(150).astype(np.float32))),
    ("polynomial", lambda: (np.zeros(150), rng.uniform(-2, 2, 150), 5)),
    ("block_sum", lambda: (np.zeros(3, np.float32), rng.standard_normal(150).astype(np.float32))),
    ("masked", lambda: (np.zeros(150), rng.standard_normal(150), rng.integers(0, 2, 150).astype(bool), 0.0)),
])
def test_agrees_with_the_cpu_grid_emulation(vulkan_device, name, make):
    kernel = getattr(K, name)
    args = make()
    copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    vulkan.launch(kernel, 3, 64, args)
    kernel[3, 64, "cpu"](*copies)
    for a, c in zip(args, copies):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-6)


def test_float_semantics_are_pinned_and_the_module_stays_valid(spirv_val):
    """Every float operation is NoContraction; the float controls a runtime adds keep a valid module."""
    binary = vulkan.compile_spirv(K.float64_math, K.float64_math.argument_types((np.zeros((7, 2)), np.zeros(2))),
                                  (64, 1, 1))
    words = struct.unpack(f"<{len(binary) // 4}I", binary)
    float_ops, no_contraction, at = set(), set(), 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if opcode in (129, 131, 133, 136):
            float_ops.add(words[at + 2])
        elif opcode == 71 and words[at + 2] == 42:
            no_contraction.add(words[at + 1])
        at += count
    assert float_ops and float_ops <= no_contraction
    modes = [(mode, width) for mode in (DENORM_PRESERVE, SIGNED_ZERO_INF_NAN_PRESERVE) for width in (32, 64)]
    assert validate_binary(float_controls(binary, modes), required=True)
