"""The process's default cache, wired: the pipeline compiles its misses, or the compile service does.

This module sits above the rest of ``cache/`` (tests/test_layers.py: the room
``cache.default``, beside the service): it reaches the pipeline and the
service client, which the tiers below know nothing of.

:func:`compile_cached` is the integration point for ``@jit``, kernels and the
command line: the same call as :func:`gpucompiler.pipeline.compile`, with a
result that has the same ``job``, ``artifacts``, ``module``, ``stage_times``
and ``reports``. Settings come from the environment
(:class:`gpucompiler.settings.CacheSettings`).
"""

from __future__ import annotations

import functools
from typing import Any
from collections.abc import Callable, Sequence

from ..settings import CacheSettings
from .core import Cache, CachedResult
from .entry import Entry
from .wiring import build_cache


def cache_from_settings(settings: CacheSettings) -> Cache:
    """A cache with the tiers ``settings`` name (:func:`~gpucompiler.cache.wiring.build_cache`), compiling
    misses on the service when one is set."""
    service = None
    if settings.service_url:
        from ..service.client import ServiceClient  # optional dependency (httpx)

        service = ServiceClient(settings.service_url, token=settings.service_token, secret=settings.secret)
    kept = settings.directory or settings.shared_dir or settings.redis_url  # entries another process reads
    return build_cache(settings, compiler=_compile, service=service, later=link_later if kept else None)


def _compile(job: Any, kinds: Sequence[str]) -> Any:
    """:func:`gpucompiler.pipeline.compile`: the pipeline (frontend, interpreter, code generation) loads at
    the first compile, and a process whose calls all hit the cache never loads it."""
    from .. import pipeline  # import time: the pipeline's modules, not needed by a cache hit

    return pipeline.compile(job, kinds)


def link_later(job: Any, entry: Entry) -> Callable[[], dict[str, bytes]] | None:
    """For a cache whose entries outlive the process: a native entry's object code linked, after the call
    returns, into the shared object that another process's hit loads without LLVM (``so``,
    :mod:`..targets.sharedlink`, published again by :mod:`.later`; a linker run of ~3-20 ms, off the first
    call's path: this process loads the object code it compiled through the LLJIT)."""
    obj, symbols = entry.artifacts.get("obj"), entry.meta.get("symbols")
    if job.target.name != "native" or not isinstance(obj, bytes) or not symbols:
        return None
    # import time: the linker's subprocess and files, for a compile, not a cache hit
    from ..targets import sharedlink

    return sharedlink.later(obj, symbols, entry.meta.get("addresses"))


@functools.lru_cache(maxsize=1)
def _cache_for(settings: CacheSettings) -> Cache:
    return cache_from_settings(settings)


def default_cache(settings: CacheSettings | None = None) -> Cache:
    """The process's cache for ``settings`` (default: the environment's; rebuilt when they change)."""
    return _cache_for(settings or CacheSettings.from_env())


@functools.lru_cache(maxsize=1)
def memory_cache() -> Cache:
    """A cache with the memory tier only (``@jit(cache=False)``: nothing written to disk or shared)."""
    return Cache(compiler=_compile)


def compile_cached(job: Any, emit: Sequence[str] = ("llvm",), *, cache: Cache | None = None,
                   check: Callable[[Any], None] | None = None) -> CachedResult:
    """:func:`gpucompiler.pipeline.compile` through the cache (and the service, when configured).

    ``GPUC_CACHE_DIR``, ``GPUC_CACHE_SIZE``, ``GPUC_CACHE_URL``, ``GPUC_CACHE=off``,
    ``GPUC_SERVICE_URL`` and ``GPUC_SERVICE_TOKEN`` configure the default cache.
    ``check(job)`` runs before a compile, not on a hit (see :meth:`Cache.compile`).
    """
    return (cache or default_cache()).compile(job, emit, check=check)


__all__ = ["cache_from_settings", "compile_cached", "default_cache", "memory_cache"]
