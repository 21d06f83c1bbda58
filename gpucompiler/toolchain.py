"""Finding the external CUDA tools the PTX target can use: ``ptxas`` and libdevice.

Search order, first hit wins:

1. ``GPUC_PTXAS`` / ``GPUC_LIBDEVICE`` (an explicit path);
2. ``CUDA_HOME``, ``CUDA_PATH``, ``CUDA_ROOT``;
3. NVIDIA's ``cuda-pathfinder`` when installed (it comes with ``cuda-bindings``): NVIDIA's wheels, Conda,
   the toolkit its own rules find (``find_nvidia_binary_utility("ptxas")``, ``find_bitcode_lib("device")``;
   a version that knows neither is skipped);
4. ``PATH`` (``ptxas`` only; libdevice is looked for beside it);
5. NVIDIA's pip packages (``nvidia-cuda-nvcc``, ``nvidia-cuda-nvcc-cu12``...);
6. ``/usr/local/cuda`` and ``/usr/local/cuda-*`` (newest first), ``/opt/cuda``.

A miss raises :class:`ToolNotFoundError` listing every place looked at.
"""

from __future__ import annotations

import functools
import glob
import importlib
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from .errors import ToolNotFoundError
from .settings import ToolchainSettings


def _pathfinder(function: str, catalogue: str, name: str) -> str | None:
    """``cuda.pathfinder.<function>(name)``: the path it finds; None without the package, for a version whose
    ``<catalogue>`` (its list of supported names) lacks ``name``, or on a miss."""
    try:
        pathfinder = importlib.import_module("cuda.pathfinder")
    except ImportError:
        return None
    if name not in getattr(pathfinder, catalogue, ()) or not hasattr(pathfinder, function):
        return None
    try:
        found = getattr(pathfinder, function)(name)
    except RuntimeError:  # BitcodeLibNotFoundError; a toolkit it cannot read
        return None
    return str(found) if found else None


def _cuda_roots(settings: ToolchainSettings) -> list[Path]:
    """Toolkit roots, the environment's first: then ``PATH``'s ``ptxas``, NVIDIA's pip packages, the usual places."""
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
    return list(dict.fromkeys(roots))


def _places(settings: ToolchainSettings, under: Callable[[Path], Path], pathfinder_hit: str | None) -> list[Path]:
    """Where to look, in order: ``under(root)`` of the environment's roots, what ``cuda.pathfinder`` found,
    then ``under(root)`` of the other roots."""
    roots = _cuda_roots(settings)
    own = len(dict.fromkeys(settings.cuda_roots))
    hit = [Path(pathfinder_hit)] if pathfinder_hit else []
    return [under(r) for r in roots[:own]] + hit + [under(r) for r in roots[own:]]


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
    found = _pathfinder("find_nvidia_binary_utility", "SUPPORTED_BINARY_UTILITIES", "ptxas")
    for candidate in _places(settings, lambda root: root / "bin" / "ptxas", found):
        looked.append(str(candidate))
        if candidate.is_file() and os.access(candidate, os.X_OK):
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
    found = _pathfinder("find_bitcode_lib", "SUPPORTED_BITCODE_LIBS", "device")
    for place in _places(settings, lambda root: root / "nvvm" / "libdevice", found):
        looked.append(str(place))
        hits = [place] if place.is_file() else sorted(place.glob("libdevice*.bc"))
        if hits:
            return str(hits[-1])
    raise ToolNotFoundError(
        "libdevice not found; set CUDA_HOME or GPUC_LIBDEVICE, or install the CUDA toolkit "
        "(or `pip install nvidia-cuda-nvcc`). Looked in: " + ", ".join(looked)
    )
