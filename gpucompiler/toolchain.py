"""Finding the external CUDA tools the PTX target can use: ``ptxas`` and libdevice.

Search order, first hit wins:

1. ``GPUC_PTXAS`` / ``GPUC_LIBDEVICE`` (an explicit path);
2. ``CUDA_HOME``, ``CUDA_PATH``, ``CUDA_ROOT``;
3. ``PATH`` (``ptxas`` only; libdevice is looked for beside it);
4. NVIDIA's pip packages (``nvidia-cuda-nvcc``, ``nvidia-cuda-nvcc-cu12``...);
5. ``/usr/local/cuda`` and ``/usr/local/cuda-*`` (newest first), ``/opt/cuda``.

A miss raises :class:`ToolNotFoundError` listing every place looked at.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import sys
from pathlib import Path

from .errors import ToolNotFoundError
from .settings import ToolchainSettings


def _cuda_roots(settings: ToolchainSettings) -> list[Path]:
    roots: list[Path] = list(settings.cuda_roots)
    ptxas = shutil.which("ptxas")
    if ptxas:
        roots.append(Path(ptxas).resolve().parent.parent)
    for site in sys.path:
        for sub in ("nvidia/cuda_nvcc", "nvidia/cu13", "nvidia/cu12"):
            candidate = Path(site) / sub
            if candidate.is_dir():
                roots.append(candidate)
    roots.append(Path("/usr/local/cuda"))
    roots.extend(Path(p) for p in sorted(glob.glob("/usr/local/cuda-*"), reverse=True))
    roots.append(Path("/opt/cuda"))
    seen: list[Path] = []
    for root in roots:
        if root not in seen:
            seen.append(root)
    return seen


@functools.cache
def find_ptxas() -> str:
    """Path of the ``ptxas`` executable."""
    settings = ToolchainSettings.from_env()
    explicit = settings.ptxas
    if explicit:
        if os.access(explicit, os.X_OK):
            return explicit
        raise ToolNotFoundError(f"GPUC_PTXAS={explicit!r} is not an executable file")
    looked = []
    for root in _cuda_roots(settings):
        candidate = root / "bin" / "ptxas"
        looked.append(str(candidate))
        if os.access(candidate, os.X_OK):
            return str(candidate)
    raise ToolNotFoundError(
        "ptxas not found; set CUDA_HOME or GPUC_PTXAS, or install the CUDA toolkit "
        "(or `pip install nvidia-cuda-nvcc`). Looked in: " + ", ".join(looked)
    )


@functools.cache
def find_libdevice() -> str:
    """Path of ``libdevice.10.bc``."""
    settings = ToolchainSettings.from_env()
    explicit = settings.libdevice
    if explicit:
        if os.path.isfile(explicit):
            return explicit
        raise ToolNotFoundError(f"GPUC_LIBDEVICE={explicit!r} is not a file")
    looked = []
    for root in _cuda_roots(settings):
        directory = root / "nvvm" / "libdevice"
        looked.append(str(directory))
        hits = sorted(directory.glob("libdevice*.bc"))
        if hits:
            return str(hits[-1])
    raise ToolNotFoundError(
        "libdevice not found; set CUDA_HOME or GPUC_LIBDEVICE, or install the CUDA toolkit "
        "(or `pip install nvidia-cuda-nvcc`). Looked in: " + ", ".join(looked)
    )
