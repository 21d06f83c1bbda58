"""NVIDIA PTX target: sm_XX triple and data layout, libdevice, kernel annotations."""

from __future__ import annotations

import attrs

from .base import Target


@attrs.frozen
class PTXTarget(Target):
    """PTX for compute capability ``capability`` (default sm_90, the H100).

    ``ptx_version`` of ``None`` picks the lowest ISA version that supports the
    capability; ``maxregs`` limits registers per thread in kernels.
    """

    name = "ptx"

    capability: tuple[int, int] = attrs.field(default=(9, 0), converter=tuple)
    ptx_version: int | None = None
    fastmath: bool = False
    maxregs: int | None = None
