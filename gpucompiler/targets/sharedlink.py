"""A native function's object code linked into a shared object, kept beside it in its cache entry.

A cache hit then loads its code with the dynamic loader (:mod:`gpucompiler.runtime.shared_object`),
without LLVM: importing llvmlite's binding is most of a fresh process's cached first call. The object
is position independent with the JIT's code model, so a linker takes it as it is (one subprocess,
no shell): ``ld``, ``ld.lld`` (any version) or ``cc``, or ``GPUC_LINKER``; without one there is
no shared object and the hit loads through the LLJIT, as before.

The shared object is made only for a 64-bit little-endian ELF object (the loader's ``memfd_create`` and
``/proc/self/fd`` are Linux's) and only when the dynamic loader resolves each name the code imports to
the address the in-process loader binds it to (:func:`gpucompiler.targets.native.process_symbol`),
checked in the compiling process: a name registered with ``llvmlite.binding.add_symbol`` (LLVM's
answer differs from the process's), bound by the module's own address record, or not in the process's
global scope keeps the entry without one, as do NumPy's BLAS names (the JIT's lookup opens OpenBLAS
with global scope; a fresh process has not). The exception classes' names (``gpuc.pyexc.IndexError``)
become CPython's variables (``PyExc_IndexError``) by renaming the undefined symbol in the object's
string table: an ELF symbol cannot alias an undefined one (``--defsym`` refuses it). ``-Bsymbolic``
binds the code's own names to its own definitions, as the JIT's dylib does.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import logging
import os
import shutil
import struct
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..codegen.entrywords import PYEXC
from ..settings import ToolchainSettings
from . import hostblas
from .native import SHARED_OBJECT_KIND as KIND, process_symbol

log = logging.getLogger("gpucompiler.targets.sharedlink")


_CPYTHON_PREFIX = "PyExc_"
_ELF64_LE = b"\x7fELF\x02\x01"


@functools.cache
def find_linker() -> str | None:
    """The linker's path: ``GPUC_LINKER`` (None when it names no executable), else ``ld``, ``ld.lld``, the
    newest ``ld.lld-<N>``, ``cc`` on ``PATH``; None when there is none. (GNU ``ld`` first: it starts in
    ~2.5 ms, ``ld.lld`` in ~20, loading LLVM's libraries.)"""
    explicit = ToolchainSettings.from_env().linker
    if explicit:
        found = shutil.which(explicit)
        if found is None:
            log.debug("GPUC_LINKER=%r is not an executable: no shared objects", explicit)
        return found
    for name in ("ld", "ld.lld"):
        found = shutil.which(name)
        if found is not None:
            return found
    # only now the listing of every PATH directory (~2 ms)
    versioned = sorted({os.path.basename(p) for d in os.environ.get("PATH", "").split(os.pathsep) if d
                        for p in glob.glob(os.path.join(glob.escape(d), "ld.lld-*"))},
                       key=lambda n: [int(x) if x.isdigit() else -1 for x in n[len("ld.lld-"):].split(".")],
                       reverse=True)
    for name in (*versioned, "cc"):
        found = shutil.which(name)
        if found is not None:
            return found
    return None


def _command(linker: str, obj: str, out: str) -> list[str]:
    """The link's command line: a linker's (``ld``, ``ld.lld-19``, ``x86_64-linux-gnu-ld.bfd``) or, for a
    compiler driver (``cc``, ``gcc-12``, ``clang``), the same options passed through to its linker."""
    name = os.path.basename(linker)
    if name.startswith(("ld", "lld")) or "-ld" in name:
        return [linker, "-shared", "-Bsymbolic", "-z", "noexecstack", "-o", out, obj]
    return [linker, "-shared", "-nostdlib", "-Wl,-Bsymbolic", "-Wl,-z,noexecstack", "-o", out, obj]


def _dlsym(name: str) -> int | None:
    """The address the dynamic loader gives ``name`` in this process's global scope, or None."""
    try:
        return ctypes.cast(ctypes.CDLL(None)[name], ctypes.c_void_p).value
    except AttributeError:
        return None


def _loader_name(name: str) -> str | None:
    """The name the dynamic loader looks ``name`` up by, when it resolves it where the JIT does; else None."""
    if hostblas.provides(name):  # NumPy's OpenBLAS: opened with global scope by the JIT's lookup alone
        return None
    loader_name = _CPYTHON_PREFIX + name[len(PYEXC):] if name.startswith(PYEXC) else name
    address = process_symbol(name)  # first: it opens the libraries the JIT resolves in (libmvec)
    return loader_name if address is not None and address == _dlsym(loader_name) else None


def rename_undefined(obj: bytes, names: dict[str, str]) -> bytes | None:
    """``obj`` (a 64-bit little-endian ELF relocatable) with each undefined symbol of ``names`` renamed to its
    value, written over the old name in the string table (the new names are not longer); None when the
    object is not such a file, a name is missing or is defined, or another name shares its bytes."""
    if not names:
        return obj
    if not obj.startswith(_ELF64_LE):
        return None
    try:
        data, found = _renamed(obj, names)
    except (struct.error, ValueError, IndexError):  # not a well-formed object
        return None
    return bytes(data) if found == names.keys() else None


def _renamed(obj: bytes, names: dict[str, str]) -> tuple[bytearray, set[str]]:
    """:func:`rename_undefined`'s edit and the names it renamed; ValueError for a name it must not rename."""
    data = bytearray(obj)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    found: set[str] = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2 or entsize != 24:  # SHT_SYMTAB
            continue
        strtab = sections[link][4]
        users = [struct.unpack_from("<I", data, offset + k * 24)[0] for k in range(size // 24)]
        if shstrndx == link:
            users += [s[0] for s in sections]
        for k in range(size // 24):
            st_name, _, _, shndx = struct.unpack_from("<IBBH", data, offset + k * 24)
            end = data.index(0, strtab + st_name)
            name = bytes(data[strtab + st_name:end])
            new = names.get(name.decode(errors="replace"))
            if new is None:
                continue
            if shndx != 0 or len(new.encode()) > len(name) or any(st_name < u < st_name + len(name) for u in users):
                raise ValueError(name)  # defined, longer, or sharing its bytes: not renamed
            data[strtab + st_name:end] = new.encode().ljust(len(name), b"\0")
            found.add(name.decode())
    return data, found


def link(obj: bytes, symbols: Sequence[Sequence[Any]], addresses: dict[str, int] | None = None) -> bytes | None:
    """``obj`` linked into a shared object, when the dynamic loader resolves its imports (``symbols``: the
    cache entry's ``[name, is_declaration, linkage]`` rows) as the JIT does; None otherwise (no linker,
    a name it would bind elsewhere, the linker failed)."""
    run = linking(obj, symbols, addresses)
    return run() if run is not None else None


def linking(obj: bytes, symbols: Sequence[Sequence[Any]],
            addresses: dict[str, int] | None = None) -> Callable[[], bytes | None] | None:
    """:func:`link` in two parts: the checks of this process's names now (None when the dynamic loader would
    bind one elsewhere), and the link itself (finding the linker, renaming, the linker's run: no LLVM, no
    import), returned to be run later, on any thread."""
    if addresses or not obj.startswith(_ELF64_LE):
        return None
    renamed: dict[str, str] = {}
    for name, is_declaration, _ in symbols:
        if not is_declaration or name.startswith("llvm."):
            continue
        loader_name = _loader_name(name)
        if loader_name is None:
            log.debug("no shared object: the dynamic loader would not bind %s as the JIT does", name)
            return None
        if loader_name != name:
            renamed[name] = loader_name
    return functools.partial(_linked, obj, renamed)


def _linked(obj: bytes, renamed: dict[str, str]) -> bytes | None:
    # import time: subprocess and selectors (~3 ms, not loaded by a compile), on the link's thread
    import subprocess

    linker = find_linker()
    if linker is None:
        return None
    edited = rename_undefined(obj, renamed)
    if edited is None:
        log.debug("no shared object: the exception names of the object could not be renamed")
        return None
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpuc-link-") as tmp:
        source, out = os.path.join(tmp, "code.o"), os.path.join(tmp, "code.so")
        with open(source, "wb") as fh:
            fh.write(edited)
        try:
            done = subprocess.run(_command(linker, source, out), capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            log.debug("no shared object: %s failed: %s", linker, exc)
            return None
        if done.returncode != 0:
            log.debug("no shared object: %s failed: %s", linker, done.stderr.decode(errors="replace")[:2000])
            return None
        with open(out, "rb") as fh:
            shared = fh.read()
    log.debug("linked a shared object with %s in %.1f ms", linker, (time.perf_counter() - start) * 1e3)
    return shared


def later(obj: bytes, symbols: Sequence[Sequence[Any]],
          addresses: dict[str, int] | None = None) -> Callable[[], dict[str, bytes]] | None:
    """The cache entry's later artifacts (:mod:`gpucompiler.cache.later`): :func:`linking`'s run, giving
    ``{KIND: shared object}``, or nothing when no shared object is made; None when none can be."""
    run = linking(obj, symbols, addresses)
    if run is None:
        return None

    def artifacts() -> dict[str, bytes]:
        shared = run()
        return {KIND: shared} if shared is not None else {}

    return artifacts
