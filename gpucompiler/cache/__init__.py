"""Content-addressed compile cache: memory, local disk, Redis; serialisable IR; no pickle.

    from gpucompiler.cache import compile_cached
    result = compile_cached(job, emit=("obj",))      # same shape as pipeline.compile
    result.origin                                    # "compiled", "memory", "disk", "redis", "service"

See ``docs/cache.md``.
"""

from .core import Cache, CachedResult, CacheSettings, compile_cached, default_cache, default_cache_dir
from .entry import Entry, decode
from .keys import digest, key_document
from .serialisable import check_serialisable, serialisation_errors
from .tiers import DiskTier, MemoryTier, RedisTier

__all__ = ["Cache", "CachedResult", "CacheSettings", "DiskTier", "Entry", "MemoryTier", "RedisTier",
           "check_serialisable", "compile_cached", "decode", "default_cache", "default_cache_dir",
           "digest", "key_document", "serialisation_errors"]
