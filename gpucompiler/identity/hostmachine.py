"""The native target's machine (host triple, CPU name and features, libmvec) for job keys, without LLVM.

Asking LLVM needs llvmlite's library (~20 ms of a fresh process, :mod:`.llvmversion`), which a ``@jit``
function's cache hit needs for nothing else: it loads its code with the dynamic loader. The answer is
therefore kept in the cache directory beside the other memos (``code/host-machine-<cpu>-<path
digest>.json``), keyed by everything that decides it:

* the stat of llvmlite's library file (a reinstalled LLVM may name CPUs and features otherwise);
* the host CPU's identity: a digest of every processor's vendor, family, model, stepping, model name
  and flags in ``/proc/cpuinfo``, with the kernel's release (it decides which features the kernel lets
  code use); the digest also names the file, so hosts sharing a cache directory (an NFS home) each
  keep their own;
* the C library's version (libmvec comes with it) and the target's own ``cpu``/``features`` fields.

A memo that does not match all of them, a host whose ``/proc/cpuinfo`` lacks those fields (another
OS or architecture), or a cache directory refused as private (another user could write a memo
there, :func:`.codeprint.memo_path`) asks LLVM, as before. A wrong memo would load code with
instructions the CPU lacks, so nothing less than every field above is trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from .codeprint import memo_path, publish, read_memo, stat_row
from .llvmversion import library_file

CPUINFO = "/proc/cpuinfo"
_FIELDS = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags")
_REQUIRED = ("vendor_id", "cpu family", "model", "flags")


def cpu_identity(path: str = CPUINFO) -> str | None:
    """The SHA-256 of every processor's identifying fields in ``path`` and the kernel's release; None
    where the file cannot be read or a processor lacks one of the required fields."""
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode(errors="replace")
    except OSError:
        return None
    processors = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() in _FIELDS:
                fields[key.strip()] = value.strip()
        if fields:
            if any(k not in fields for k in _REQUIRED):
                return None
            processors.append([fields.get(k, "") for k in _FIELDS])
    if not processors:
        return None
    uname = os.uname()
    return hashlib.sha256(json.dumps([uname.sysname, uname.release, uname.machine, processors]).encode()).hexdigest()


def _libc() -> str | None:
    confstr = getattr(os, "confstr", None)
    try:
        return confstr("CS_GNU_LIBC_VERSION") if confstr is not None else None
    except (OSError, ValueError):
        return None


def host_machine(target: Any, cpuinfo: str = CPUINFO) -> dict[str, Any]:
    """``target.machine()`` for a native target: the memo's when it describes this host (see the module's
    docstring), else asked of LLVM and memoised."""
    library = library_file()
    cpu = cpu_identity(cpuinfo)
    stat = stat_row(library) if library is not None else None
    memo_file = (memo_path(f"host-machine-{cpu[:16]}", library)
                 if library is not None and stat is not None and cpu is not None else None)
    stamp = {"library": library, "stat": stat, "cpu": cpu, "libc": _libc(), "target": [target.cpu, target.features]}
    if memo_file is not None:
        memo = read_memo(memo_file)
        machine = memo.get("machine") if memo is not None else None
        if memo is not None and isinstance(machine, dict) and {k: memo.get(k) for k in stamp} == stamp:
            return machine
    machine = target.machine()
    if memo_file is not None and library is not None and stat_row(library) == stat:  # not replaced meanwhile
        publish(memo_file, json.dumps({**stamp, "machine": machine}))
    return machine
