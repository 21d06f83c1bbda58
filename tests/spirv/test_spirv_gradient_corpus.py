"""The kernel-gradient corpus (tests/enzyme_plugin/kernel_gradient_corpus.py: loops of every shape,
their tapes growing as they run: ``gpucompiler.targets.spirv.heap``) on Vulkan (lavapipe in CI), in
float32 (lavapipe adds float32 atomically only) against the CPU grid emulation of the same kernels and
central differences of the same Python functions in float64 (CPython); the cases LLVM's SPIR-V back end
cannot structure are typed errors. Slow (tests/conftest.py): most of the time is LLVM's."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from gpucompiler import kernel
from gpucompiler.errors import CompilerCrashError
from gpucompiler.targets.spirv import SPIRVTarget
from gpucompiler.targets.spirv.tools import SpirvValidationError
from tests.enzyme_plugin.kernel_gradient_corpus import CASES

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
