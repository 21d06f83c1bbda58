"""AMD GPUs (GCN/CDNA/RDNA): the ``amdgpu`` target, its kernel language, device libraries and tools.

:mod:`.target` is the target (registered as ``amdgpu``, spelt ``amdgpu:gfx90a``...),
:mod:`.lowering` the kernel language's overlay, :mod:`.devicelibs` math through
ocml, :mod:`.tools` the linker and the checks of the code object.
"""

from __future__ import annotations

from .target import ARCHITECTURES, AMDGPUTarget

__all__ = ["ARCHITECTURES", "AMDGPUTarget"]
