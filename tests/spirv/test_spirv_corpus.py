"""The kernel corpus (tests/kernels/kernel_corpus.py, checked against NumPy) on the SPIR-V target: every
case is right or a typed error naming what Vulkan, the device or LLVM's back end lacks; the cases that need
nothing optional run on every Vulkan 1.3 device."""

from __future__ import annotations

import pytest

from gpucompiler.errors import GPUCompilerError
from gpucompiler.targets.spirv import SPIRVTarget
from tests.kernels import kernel_corpus as C

EVERYWHERE = ("saxpy_f32", "saxpy_f64", "grid_stride", "stencil2d", "histogram_i32", "transpose_tile", "index3d")


@pytest.mark.parametrize("name", sorted(C.CASES))
def test_corpus_case_is_right_or_a_typed_error(vulkan_device, name):
    try:
        C.run_case(name, SPIRVTarget())
    except GPUCompilerError as exc:
        assert name not in EVERYWHERE, f"{name} should run on any Vulkan 1.3 device: {exc}"
