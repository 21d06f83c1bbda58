"""What runs in the service's worker processes: one request body in, entry bytes out.

Only bytes and integers cross the process boundary (the request body as
received, the entry in the cache format or a JSON error), so nothing the
pool transports is a Python object graph.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal

from .. import pipeline
from ..cache.core import Cache
from ..cache.entry import Entry
from ..cache.serialisable import serialisation_errors
from ..cache.tiers import MemoryTier
from ..cache.wiring import build_cache
from ..settings import CacheSettings
from ..errors import GPUCompilerError, UnserialisableIRError
from .protocol import parse_request

_cache: Cache | None = None

InitArgs = tuple[CacheSettings]
"""The arguments of :func:`init`, as a pool or a forked child passes them."""


def init(settings: CacheSettings) -> None:
    """Pool initializer: this worker's cache (:func:`~gpucompiler.cache.wiring.build_cache`: disk and
    Redis as the server has them; no service, no memory to speak of)."""
    global _cache
    die_with_parent()
    os.environ.pop("GPUC_SERVICE_URL", None)  # a worker never forwards to a service
    _cache = build_cache(settings, compiler=pipeline.compile, memory=MemoryTier(max_entries=16))


def die_with_parent() -> None:
    """Linux: this process gets SIGTERM when the server dies, however it dies (no orphans)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the server died before the call
        os._exit(1)


def ping() -> int:
    return os.getpid()


def compile_body(body: bytes) -> tuple[int, bytes]:
    """``(200, entry bytes)`` or ``(status, JSON error)`` for one request body."""
    if _cache is None:
        init(CacheSettings(directory=None))  # called without the pool (tests): memory only
    cache = _cache
    assert cache is not None
    try:
        data = json.loads(body)
        job, emit = parse_request(data)
        problems = serialisation_errors(data["ir"])
        if problems:
            raise UnserialisableIRError(problems, job.name)
        result = cache.compile(job, emit)
        return 200, Entry(result.key, {}, result.artifacts, {**result.meta, "origin": result.origin}).encode()
    except GPUCompilerError as exc:
        status = getattr(exc, "status", None) or 422
        kind = getattr(exc, "kind", "") or type(exc).__name__
        return status, json.dumps({"error": kind, "message": str(exc)}).encode()
    except Exception as exc:  # a compiler bug: report it, keep the worker
        return 500, json.dumps({"error": "internal", "message": f"{type(exc).__name__}: {exc}"}).encode()


def compile_packed(body: bytes, initargs: InitArgs) -> bytes:
    """:func:`compile_body` in a fresh child (:mod:`.contain`): the status as three digits, then the payload."""
    init(*initargs)
    status, payload = compile_body(body)
    return b"%03d" % status + payload
