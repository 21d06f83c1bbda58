"""One function builds a cache from the settings, for every user of one: the library's default cache
(:mod:`gpucompiler.cache.default`), ``gpuc cache``, ``gpuc serve`` and its workers.

The tiers and their checks are therefore the same everywhere: the private
directory refused (with a warning) when another user owns it or can write to
it, the shared directory's group modes, Redis with TLS and the fleet's lock
lease, and a shared tier only with the deployment's secret. Before this,
``gpuc cache`` opened the directory without the private-directory check and
Redis without the lease, and ``gpuc serve`` ignored ``GPUC_CACHE_SHARED_DIR``.
"""

from __future__ import annotations

from ..settings import CacheSettings
from .core import Cache, CompileService, Compiler, Later, private_disk, shared_disk
from .tiers import MemoryTier, RedisTier


def build_cache(settings: CacheSettings, *, compiler: Compiler | None = None,
                service: CompileService | None = None, memory: MemoryTier | None = None,
                later: Later | None = None) -> Cache:
    """The cache ``settings`` name: the private disk (``settings.directory``), the shared directory,
    Redis; misses compiled by ``service`` when given, else by ``compiler``; ``later``: what a thread adds to
    a compiled entry after the call (:class:`~gpucompiler.cache.core.Cache`)."""
    disk = private_disk(settings.directory, settings.max_bytes) if settings.directory else None
    shared = shared_disk(settings.shared_dir, settings.max_bytes) if settings.shared_dir else None
    redis = (RedisTier(settings.redis_url, tls=settings.redis_tls, lock_lease=settings.lock_lease)
             if settings.redis_url else None)
    return Cache(disk, redis, memory=memory, service=service, shared=shared, secret=settings.secret,
                 compiler=compiler, service_fallback=settings.service_fallback, later=later)


__all__ = ["build_cache"]
