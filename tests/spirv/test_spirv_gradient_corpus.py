"""The kernel-gradient corpus (tests/enzyme_plugin/kernel_gradient_corpus.py: loops of every shape,
their tapes growing as they run: ``gpucompiler.targets.spirv.heap``) on Vulkan (lavapipe in CI), in
float32 (lavapipe adds float32 atomically only) against the CPU grid emulation of the same kernels and
central differences of the same Python functions in float64 (CPython); the cases LLVM's SPIR-V back end
cannot structure are typed errors. Then the higher-order and batch kernels of the AMD corpus
(tests/targets/test_amdgpu_gradients.py) against the emulation and exact derivatives. Slow
(tests/conftest.py): most of the time is LLVM's."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from gpucompiler import kernel
from gpucompiler.errors import CompilerCrashError
from gpucompiler.targets.spirv import SPIRVTarget
from gpucompiler.targets.spirv.tools import SpirvValidationError
from tests.enzyme_plugin import ho_funcs as F
from tests.enzyme_plugin.kernel_gradient_corpus import CASES
from tests.enzyme_plugin.test_batch_mode import grad_energy_batch2, grad_newton_batch2, tangents_batch2

P = ("enzyme",)
BY_NAME = {c.name: c for c in CASES}
#: the cases LLVM 22's SPIR-V back end cannot structure (spirv-val refuses the shader, or LLVM stops)
UNSTRUCTURED = ("loop-invariant bound", "while in a counted loop", "break inside a loop",
                "return inside a loop", "continue and if/else in a loop")
RUNS = tuple(c.name for c in CASES if c.name not in UNSTRUCTURED)


def emulated(case, x) -> np.ndarray:
    dx = np.zeros_like(x)
    kernel(case.kernel, plugins=P)[case.launch[0], case.launch[1], "cpu"](x.copy(), dx)
    return dx


@pytest.mark.parametrize("name", RUNS)
def test_corpus_gradient_runs_on_vulkan_in_float32(vulkan_device, name):
    case = BY_NAME[name]
    x = case.x.astype(np.float32)
    dx = np.zeros_like(x)
    kernel(case.kernel, plugins=P)[case.launch[0], case.launch[1], SPIRVTarget()](x.copy(), dx)
    want = emulated(case, x)
    scale = float(np.max(np.abs(want)))
    np.testing.assert_allclose(dx, want, rtol=1e-4, atol=1e-5 * scale)
    reference = attrs.evolve(case, x=x.astype(np.float64)).reference()  # float64, at the float32 inputs
    np.testing.assert_allclose(dx, reference, rtol=2e-3, atol=2e-4 * scale)
    assert np.any(dx != 0)


@pytest.mark.parametrize("name", UNSTRUCTURED)
def test_corpus_gradient_llvm_cannot_structure_is_a_typed_error(vulkan_device, name):
    case = BY_NAME[name]
    dx = np.zeros(len(case.x), np.float32)
    with pytest.raises((SpirvValidationError, CompilerCrashError)):
        kernel(case.kernel, plugins=P)[1, 32, SPIRVTarget()](case.x.astype(np.float32), dx)
    assert not dx.any()


f32 = np.float32
X = np.linspace(-1.0, 1.0, 64).astype(f32)
C = np.linspace(2.0, 5.0, 64).astype(f32)
#: name: (kernel, arguments)
EXTRA = {
    "second derivative (fwd over rev)": (F.second_derivative_kernel, lambda: (X.copy(), np.full(64, 0.5, f32),
                                                                              np.zeros(64, f32), np.zeros(64, f32))),
    "second derivative (rev over rev)": (F.second_derivative_rev_rev_kernel, lambda: (X.copy(), np.zeros(64, f32),
                                                                                      np.zeros(64, f32),
                                                                                      np.full(64, 0.5, f32))),
    "while loop, fwd over rev": (F.until_four_second_derivative_kernel, lambda: (X + 2, np.full(64, 0.5, f32),
                                                                                 np.zeros(64, f32), np.zeros(64, f32))),
    "while loop, rev over rev": (F.until_four_rev_rev_kernel, lambda: (X + 2, np.zeros(64, f32), np.zeros(64, f32),
                                                                       np.full(64, 0.5, f32))),
    "reverse batch of 2": (grad_energy_batch2, lambda: (X.copy(), np.zeros(64, f32), np.full(64, 0.5, f32),
                                                        np.array([2.0], f32), np.zeros(1, f32), np.ones(1, f32))),
    "forward batch of 2": (tangents_batch2, lambda: (X.copy(), np.ones(64, f32), np.full(64, -3.0, f32),
                                                     np.zeros((2, 64), f32))),
    "reverse batch through a while loop": (grad_newton_batch2, lambda: (C.copy(), np.zeros(64, f32), np.ones(64, f32))),
}


@pytest.mark.parametrize("name", tuple(EXTRA))
def test_higher_order_and_batch_gradients_run_on_vulkan(vulkan_device, name):
    fn, make = EXTRA[name]
    got, want = make(), make()
    k = kernel(fn, plugins=P)
    k[2, 32, SPIRVTarget()](*got)
    k[2, 32, "cpu"](*want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(w)) or 1))
    x = X.astype(np.float64)
    if name == "reverse batch of 2":  # d/dx of w sin(x) x, and its sum over x for w
        g = 2.0 * (np.cos(x) * x + np.sin(x))
        np.testing.assert_allclose(got[1], g, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[2], 0.5 + g, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[5], [1.0 + np.sum(np.sin(x) * x)], rtol=1e-5)
    elif name == "forward batch of 2":
        np.testing.assert_allclose(got[3][0], np.cos(x) * x + np.sin(x), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[3][1], -3.0 * (np.cos(x) * x + np.sin(x)), rtol=1e-5, atol=1e-6)
    elif name == "reverse batch through a while loop":
        c = C.astype(np.float64)
        np.testing.assert_allclose(got[1], 0.5 / np.sqrt(c), rtol=1e-5)
        np.testing.assert_allclose(got[2], 1.0 + 0.5 / np.sqrt(c), rtol=1e-5)
