"""Loading a cache entry's shared object (:mod:`gpucompiler.targets.sharedlink`) with the dynamic loader.

A fresh process's cache hit needs neither LLVM nor llvmlite's binding (~22 ms of its import): the
entry's bytes, checked by the cache (checksums, a shared tier's signature), are written to an
anonymous file (``memfd_create``) and ``dlopen``\\ ed through ``/proc/self/fd/N``; no path in the
cache's directory is ever opened by the loader, so nothing can be swapped in between the check and
the load, and no link is followed. The descriptor stays open while the process runs: the loader
knows a library by its path, and a reused descriptor number would name a library already loaded.

The loader resolves the code's imports in the process's global scope (CPython's C API, libc, libm),
where the JIT resolves them too; libmvec, which the JIT's process opens with global scope, is opened so
first when the code calls it. Any failure (no ``memfd_create``, the loader's refusal, a missing
symbol) answers None, logged at debug: the caller loads the object code through the LLJIT instead.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..codegen.entrywords import PYEXC
from ..errors import ConfigError
from ..targets.libmvec import PREFIX as VECTOR_PREFIX
from ..targets.libmvec import SONAME as VECTOR_SONAME
from ..targets.native import SHARED_OBJECT_KIND as KIND  # noqa: F401 (the kind its callers look up)
from ..targets.native import process_symbol

log = logging.getLogger("gpucompiler.runtime.shared_object")


_paths: set[str] = set()
"""The ``/proc/self/fd/N`` paths loaded so far (a second library under one would be the first one)."""
_vector_math: list[Any] = []


class SharedLibrary:
    """Code loaded from a shared object; what :class:`gpucompiler.runtime.cpu.CPULibrary` offers a call:
    :attr:`names` and :meth:`address`."""

    def __init__(self, handle: ctypes.CDLL, addresses: dict[str, int], fd: int):
        self._handle, self._addresses, self._fd = handle, addresses, fd
        self.names = tuple(sorted(addresses))

    def address(self, name: str) -> int:
        """The address of the exported symbol ``name``."""
        try:
            return self._addresses[name]
        except KeyError:
            raise ConfigError(f"no symbol {name!r} in this library; it exports: {', '.join(self.names)}") from None


def _open_vector_math() -> bool:
    if not _vector_math:
        try:
            _vector_math.append(ctypes.CDLL(VECTOR_SONAME, mode=os.RTLD_NOW | os.RTLD_GLOBAL))
        except OSError as exc:
            log.debug("libmvec cannot be opened: %s", exc)
            return False
    return True


def _binds_elsewhere(imports: Sequence[str]) -> str | None:
    """An import llvmlite's registry (already loaded in this process) binds where the loader would not."""
    if "llvmlite.binding" not in sys.modules:  # nothing registered: no name can be
        return None
    this = ctypes.CDLL(None)
    for name in imports:
        if name.startswith(PYEXC):  # CPython's variables, which llvmlite's registry does not hold
            continue
        try:
            loader = ctypes.cast(this[name], ctypes.c_void_p).value
        except AttributeError:
            return name
        if loader != process_symbol(name):
            return name
    return None


def load(data: bytes, symbols: Sequence[Sequence[Any]], name: str = "gpuc") -> SharedLibrary | None:
    """The shared object ``data`` loaded, its exports (from the entry's ``symbols`` rows: ``[name,
    is_declaration, linkage]``) looked up; None when it cannot be (the caller loads the object code)."""
    exports = [row[0] for row in symbols if not row[1] and row[2] not in ("internal", "private")]
    imports = [row[0] for row in symbols if row[1] and not str(row[0]).startswith("llvm.")]
    if any(str(n).startswith(VECTOR_PREFIX) for n in imports) and not _open_vector_math():
        return None
    elsewhere = _binds_elsewhere(imports)
    if elsewhere is not None:
        log.debug("%s: %s is registered with llvmlite; loading through the LLJIT", name, elsewhere)
        return None
    try:
        fd = os.memfd_create(f"gpuc-{name}"[:200], os.MFD_CLOEXEC)
    except (AttributeError, OSError) as exc:
        log.debug("%s: no anonymous file (%s); loading through the LLJIT", name, exc)
        return None
    path = f"/proc/self/fd/{fd}"
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if path in _paths:
            raise OSError(f"{path} was loaded before")
        handle = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        _paths.add(path)
        addresses = {e: ctypes.cast(handle[e], ctypes.c_void_p).value or 0 for e in exports}
    except (OSError, AttributeError) as exc:
        os.close(fd)
        log.debug("%s: the shared object did not load (%s); loading through the LLJIT", name, exc)
        return None
    return SharedLibrary(handle, addresses, fd)
