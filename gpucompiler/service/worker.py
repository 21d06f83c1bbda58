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
from ..cache.core import Cache, private_disk
from ..cache.entry import Entry
from ..cache.serialisable import serialisation_errors
from ..cache.tiers import MemoryTier, RedisTier
from ..errors import GPUCompilerError, UnserialisableIRError
from .protocol import parse_request

_cache: Cache | None = None

InitArgs = tuple[str | None, int, str | None, bytes | None, dict[str, str] | None, float]
"""The arguments of :func:`init`, as a pool or a forked child passes them."""


def init(cache_dir: str | None, max_bytes: int, redis_url: str | None, secret: bytes | None = None,
         redis_tls: dict[str, str] | None = None, lock_lease: float = 10.0) -> None:
    """Pool initializer: this worker's cache (disk and Redis; no service, no memory to speak of)."""
    global _cache
    die_with_parent()
    os.environ.pop("GPUC_SERVICE_URL", None)  # a worker never forwards to a service
    disk = private_disk(cache_dir, max_bytes) if cache_dir else None  # accepted by the server; checked again
    redis = RedisTier(redis_url, tls=redis_tls, lock_lease=lock_lease) if redis_url else None
    _cache = Cache(disk, redis, memory=MemoryTier(max_entries=16), secret=secret, compiler=pipeline.compile)


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
        init(None, 0, None)
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
