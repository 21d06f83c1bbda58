"""The former path of :mod:`gpucompiler.cache.default` (the default cache, wired), which the code written
against it keeps importing."""

from .cache.default import cache_from_settings, compile_cached, default_cache, memory_cache

__all__ = ["cache_from_settings", "compile_cached", "default_cache", "memory_cache"]
