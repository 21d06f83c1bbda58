"""Content-addressed compile cache: memory, local disk, Redis; serialisable IR; no pickle.

    from gpucompiler.cache.default import compile_cached  # the default cache, wired to the pipeline
    result = compile_cached(job, emit=("obj",))            # same shape as pipeline.compile
    result.origin                                          # "compiled", "memory", "disk", "redis", "service"

See ``docs/cache.md``. The names load their modules on first use (:mod:`gpucompiler.lazy`): a cache hit
loads neither the serialisability checks nor, without a shared tier, the signing.
"""

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from ..identity import digest, key_document
    from ..settings import CacheSettings, default_cache_dir
    from .core import Cache, CachedResult, CompileService, Compiler
    from .entry import Entry, decode
    from .serialisable import check_serialisable, serialisation_errors
    from .tiers import DiskTier, MemoryTier, RedisTier

_LAZY = {"CacheSettings": "..settings", "default_cache_dir": "..settings", "Cache": ".core",
         "CachedResult": ".core", "CompileService": ".core", "Compiler": ".core", "Entry": ".entry",
         "decode": ".entry", "digest": "..identity", "key_document": "..identity",
         "check_serialisable": ".serialisable", "serialisation_errors": ".serialisable", "DiskTier": ".tiers",
         "MemoryTier": ".tiers", "RedisTier": ".tiers"}
__getattr__, __dir__ = attach(__name__, _LAZY, globals())

__all__ = ["Cache", "CachedResult", "CacheSettings", "CompileService", "Compiler", "DiskTier", "Entry",
           "MemoryTier", "RedisTier", "check_serialisable", "decode", "default_cache_dir",
           "digest", "key_document", "serialisation_errors"]
