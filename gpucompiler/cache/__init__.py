"""Content-addressed compile cache: memory, local disk, Redis; serialisable IR; no pickle.

    from gpucompiler.cache.default import compile_cached  # the default cache, wired to the pipeline
    result = compile_cached(job, emit=("obj",))            # same shape as pipeline.compile
    result.origin                                          # "compiled", "memory", "disk", "redis", "service"

See ``docs/cache.md``.
"""

from ..settings import CacheSettings, default_cache_dir
from .core import Cache, CachedResult, CompileService, Compiler
from .entry import Entry, decode
from ..identity import digest, key_document
from .serialisable import check_serialisable, serialisation_errors
from .tiers import DiskTier, MemoryTier, RedisTier

__all__ = ["Cache", "CachedResult", "CacheSettings", "CompileService", "Compiler", "DiskTier", "Entry",
           "MemoryTier", "RedisTier", "check_serialisable", "decode", "default_cache_dir",
           "digest", "key_document", "serialisation_errors"]
