"""The libdevice file in use: its bytes and their digest, read without LLVM.

A PTX job's key holds the digest (:meth:`.ptx.PTXTarget.machine`); a GPU kernel's cache hit computes it
without loading llvmlite's binding or the linking machinery of :mod:`.libdevice`.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from ..errors import ToolNotFoundError
from ..toolchain import find_libdevice


@functools.cache
def bitcode() -> bytes:
    """The bytes of the libdevice bitcode :func:`~gpucompiler.toolchain.find_libdevice` finds (once per process)."""
    return Path(find_libdevice()).read_bytes()


@functools.cache
def libdevice_digest() -> str | None:
    """SHA-256 of the libdevice in use (None when none is found): part of PTX cache keys."""
    try:
        return hashlib.sha256(bitcode()).hexdigest()
    except ToolNotFoundError:
        return None
