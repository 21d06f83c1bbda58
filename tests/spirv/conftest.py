"""The SPIR-V tests run on a Vulkan device (Mesa's lavapipe in CI); skipped with the reason without one."""

from __future__ import annotations

import pytest

from gpucompiler.errors import GPUCompilerError


@pytest.fixture(scope="session")
def vulkan_device(spirv_val):
    """The process's Vulkan device; skips when the binding, the loader or a driver is missing (or
    spirv-val, which the runtime runs on every shader before loading it)."""
    from gpucompiler.runtime import vulkan

    try:
        return vulkan.device()
    except GPUCompilerError as exc:
        pytest.skip(f"no Vulkan device: {exc}")


@pytest.fixture(scope="session")
def spirv_val():
    """``spirv-val``'s path; skips when SPIRV-Tools is not installed."""
    from gpucompiler.targets.spirv.tools import find_spirv_val

    path = find_spirv_val()
    if path is None:
        pytest.skip("spirv-val is not installed (apt-get install spirv-tools)")
    return path
