"""Job keys: a canonical *key document* per job and its SHA-256.

The document holds everything that decides the compiled output: the
source's fingerprint (for Python functions: the code of the function and
of everything it calls, captured globals, argument types, return type; see
:func:`index_document` for the cheap first-level key), the config
(target included), the machine code is generated for, the names, versions
settings and code digests of the enabled plugins (:mod:`.keys`), the gpucompiler
version and the digest of its source (so a changed compiler never reuses entries
of another build), and the LLVM version. The emit kinds are not part of it: one
entry holds several kinds. The document itself is stored in every entry and compared
field by field on each hit, so a hash collision or a swapped file can never
serve the wrong code. Python's ``hash()`` is never used.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any
from collections.abc import Sequence

from ..core import RecordedSource
from ..hashing import canonical
from ..version import __version__
from .codeprint import code_digest
from .hostmachine import host_machine
from .llvmversion import llvm_version

#: bumped when the entry layout or the key document changes
FORMAT_VERSION = 6


def _plugins(names: Sequence[str]) -> list[list[Any]]:
    """:func:`.keys.plugin_identity` of the plugins ``names``; none named (a ``@jit`` function's usual job):
    ``[]`` without loading the plugin registry and the plugins' identity (~1.5 ms of a fresh process's hit)."""
    if not names:
        return []
    from .keys import plugin_identity  # import time: the registry, entry points, import closures

    return plugin_identity(names)


_MACHINES: dict[Any, dict[str, Any]] = {}
_NATIVE = "gpucompiler.targets.native"
"""The native target's module, looked up in ``sys.modules``, not imported (it loads llvmlite's library, which a
GPU kernel's key does not need): a native target exists only once its module is loaded."""


def machine(target: Any) -> dict[str, Any]:
    """``target.machine()``: what code generation depends on beyond the target's fields.

    For the native target (host triple, CPU and features) it is kept once per
    process and target value, the host does not change while the process runs,
    and read from its memo without LLVM (:mod:`.hostmachine`). Other targets are
    asked every time (the libdevice in use may be switched by the environment).
    """
    native = sys.modules.get(_NATIVE)
    if native is None or type(target) is not native.NativeTarget:
        return canonical(target.machine())
    value = _MACHINES.get(target)
    if value is None:
        value = _MACHINES[target] = canonical(host_machine(target))
    return value


def context(job: Any) -> dict[str, Any]:
    """Everything in a key document but the source (canonical JSON data)."""
    return canonical({
        "format": FORMAT_VERSION,
        "config": job.config,
        "machine": machine(job.config.target),  # host CPU, libdevice...
        "plugins": _plugins(job.config.plugins),
        "gpucompiler": [__version__, code_digest("gpucompiler")],
        "llvm": llvm_version(),
    })


def key_document(job: Any, source: Any = None, ctx: dict[str, Any] | None = None) -> dict[str, Any]:
    """The canonical JSON data that identifies ``job``'s output in every process.

    ``source`` is the source's fingerprint when the caller already has it
    (rebuilt from a verified dependency record); by default it is computed.
    ``ctx`` is :func:`context` when the caller already has it.
    """
    ctx = context(job) if ctx is None else ctx
    return {**ctx, "source": canonical(job.source_fingerprint() if source is None else source)}


def index_document(job: Any, ctx: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The *index key* document of ``job``: :func:`key_document` with the source's cheap
    ``index_fingerprint()`` (no type inference) in place of its fingerprint; None
    for sources without one.

    Its entry holds no code, only the source's dependency record and the full
    key it led to: see :meth:`gpucompiler.cache.core.Cache.compile`.
    """
    if not isinstance(job.source, RecordedSource):
        return None
    ctx = context(job) if ctx is None else ctx
    return {**ctx, "index": canonical(job.source.index_fingerprint())}


def encode_document(doc: dict[str, Any]) -> bytes:
    """The one byte encoding of a key document (sorted keys, no spaces)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def digest(doc: dict[str, Any]) -> str:
    """SHA-256 hex digest of the encoded key document: the entry's address."""
    return hashlib.sha256(encode_document(doc)).hexdigest()


def job_key(job: Any) -> str:
    """Content hash of everything that decides ``job``'s output, equal in every process.

    The digest of :func:`key_document`: source fingerprint, config, machine,
    plugins (names, versions, settings, code), the gpucompiler version and
    code digest, the LLVM version.
    """
    return digest(key_document(job))
