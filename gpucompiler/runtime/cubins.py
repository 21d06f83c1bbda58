"""A kernel's PTX loaded as the device's own code (a cubin), kept in the cache tiers beside the PTX.

Loading PTX (``cuModuleLoadData``) makes the driver compile it to the device's
machine code (SASS) at every first launch in a process: tens of milliseconds
for a kernel with ``autodiff`` inside. Instead, the PTX is compiled through
the driver's linker (``cuLinkCreate``, ``cuLinkAddData`` with
``CU_JIT_INPUT_PTX``, ``cuLinkComplete``), the cubin it returns is loaded
(``cuModuleLoadData``) and stored as a cache entry of its own, which a later
process loads directly.

* The entry's key document (:func:`cubin_document`) holds the SHA-256 of the
  PTX, the device's compute capability, the driver's version
  (``cuDriverGetVersion``) and the JIT options passed (none): another device
  or driver never finds a cubin made for another one.
* The entry goes through the cache (:class:`~gpucompiler.cache.core.Cache`):
  the same tiers, checksums, MACs of shared tiers and refusal of links in
  a cache tree as compiled code. A corrupt, truncated or forged entry is
  refused there and the PTX is compiled again; a cubin the driver refuses
  to load is dropped from every tier and the PTX is loaded as it is.
* With no cache tier this process can read (``GPUC_CACHE=off``), without the
  linker in the driver's binding, or when linking fails, the PTX is loaded as
  it is (a failing load raises the driver's error, as it always did). A cache
  this process cannot write serves the cubins it holds and loads the PTX of
  the others; failing to store a cubin is only logged.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from ..cache.core import Cache
from ..cache.default import default_cache
from ..cache.entry import Entry
from ..errors import CudaError, DeviceHeapError
from ..identity import digest

log = logging.getLogger("gpucompiler.cache")

FORMAT = 1
"""the cubin entry's key format (a change of what the key holds is a new format)"""

KIND = "cubin"
"""the artifact kind of a cubin entry"""

#: the JIT options passed to ``cuLinkCreate``: none, so the driver's defaults (optimisation level 4,
#: the context's device); they change the code, so the key holds them
JIT_OPTIONS: tuple[()] = ()

#: what the driver's binding needs for the cubin path
_LINKER = ("cuLinkCreate", "cuLinkAddData", "cuLinkComplete", "cuLinkDestroy", "cuDriverGetVersion",
           "CUjitInputType")

Check = Callable[..., Any]
"""``check(result, call)``: a driver call's values, or a :class:`CudaError` (:func:`gpucompiler.runtime.cuda.check`)."""


def cubin_document(ptx: bytes, capability: tuple[int, int], driver_version: int) -> dict[str, Any]:
    """The key document of the cubin the driver makes of ``ptx`` for a device of ``capability``."""
    return {"artifact": KIND, "format": FORMAT, "ptx": hashlib.sha256(ptx).hexdigest(),
            "capability": [int(capability[0]), int(capability[1])], "driver": int(driver_version),
            "jit_options": list(JIT_OPTIONS)}


def load_module(d, ptx: str, capability: tuple[int, int], name: str, check: Check) -> Any:
    """The ``CUmodule`` of ``ptx`` (kernel ``name``) in the current context, from its cached cubin when
    there is one, else linked to a cubin and kept; the PTX loaded as it is where no cubin can be used."""
    image = ptx.encode() + b"\0"
    cache = default_cache()
    usable = any(_can(tier, os.R_OK) for tier in cache.tiers) and all(hasattr(d, attr) for attr in _LINKER)
    module = _cubin_module(d, image, capability, name, check, cache) if usable else None
    return module if module is not None else check(d.cuModuleLoadData(image), "cuModuleLoadData")


def _cubin_module(d, image: bytes, capability: tuple[int, int], name: str, check: Check, cache: Cache) -> Any:
    """The module of the PTX ``image`` loaded from a cached cubin, or from one linked now and published;
    None where the PTX is to be loaded as it is."""
    try:
        version = check(d.cuDriverGetVersion(), "cuDriverGetVersion")
    except CudaError as exc:
        log.debug("no driver version for %s's cubin: %s", name, exc)
        return None
    document = cubin_document(image, capability, version)
    key = digest(document)
    found = cache.lookup(key, document, (KIND,), counter="cubin.hit", refused=set())
    if found is not None:
        cubin = found[0].artifacts[KIND]
        try:
            if not isinstance(cubin, bytes):
                raise CudaError("not a binary image", "a text artifact", "cuModuleLoadData")
            return check(d.cuModuleLoadData(cubin), "cuModuleLoadData")
        except DeviceHeapError:
            raise  # the context is lost (a trap of an earlier launch), not the image
        except CudaError as exc:
            _drop(cache, key, f"the driver refused the cached cubin of {name} ({exc}): dropped, loading its PTX")
            return None
    if not any(_can(tier, os.W_OK) for tier in cache.tiers):
        return None
    cubin = link(d, image, name, check)
    if cubin is None:
        cache.stats["cubin.link_failed"] += 1
        return None
    try:
        module = check(d.cuModuleLoadData(cubin), "cuModuleLoadData")
    except CudaError as exc:
        log.warning("the driver refused the cubin its linker made of %s (%s): loading its PTX", name, exc)
        cache.stats["cubin.refused"] += 1
        return None
    cache.stats["cubin.linked"] += 1
    cache.publish(Entry(key, document, {KIND: cubin}, {"name": f"cubin:{name}", "created": time.time()}),
                  quiet=True)
    return module


def link(d, image: bytes, name: str, check: Check) -> bytes | None:
    """The cubin the driver's linker makes of the PTX ``image`` (NUL-terminated) for the current context's
    device; None when the driver refuses (its error is the PTX load's to report)."""
    try:
        state = check(d.cuLinkCreate(len(JIT_OPTIONS), [], []), "cuLinkCreate")
    except Exception as exc:  # a driver or binding without a working linker: the PTX load as before
        _link_failed(name, exc)
        return None
    try:
        check(d.cuLinkAddData(state, d.CUjitInputType.CU_JIT_INPUT_PTX, image, len(image),
                              f"{name}.ptx".encode(), 0, [], []), "cuLinkAddData")
        address, size = check(d.cuLinkComplete(state), "cuLinkComplete")
        # the linker owns the cubin's memory: copied out before cuLinkDestroy frees it
        return ctypes.string_at(int(address), int(size))
    except Exception as exc:
        _link_failed(name, exc)
        return None
    finally:
        d.cuLinkDestroy(state)


def _link_failed(name: str, exc: Exception) -> None:
    """Log why linking ``name`` failed: a driver error at debug level (loading the PTX reports it, when
    it is the PTX's), anything else as a warning (a binding that does not take the documented call)."""
    if isinstance(exc, CudaError):
        log.debug("linking %s failed: %s; loading its PTX", name, exc)
    else:
        log.warning("linking %s failed (%s: %s); loading its PTX", name, type(exc).__name__, exc)


def _can(tier: Any, mode: int) -> bool:
    """Whether this process may read (``os.R_OK``) or write (``os.W_OK``) ``tier``: a directory tier whose
    root allows it, or another tier (Redis: its failures are the call's)."""
    root = getattr(tier, "root", None)
    return root is None or os.access(root, mode | os.X_OK)


def _drop(cache: Cache, key: str, why: str) -> None:
    """Remove the entry ``key`` from every tier (one the driver refused), logging ``why``."""
    log.warning(why)
    cache.stats["cubin.refused"] += 1
    cache.memory.delete(key)
    for tier in cache.tiers:
        try:
            tier.delete(key)
        except getattr(tier, "errors", (OSError,)) as exc:
            log.info("cannot drop %s from the %s cache: %s", key, tier.name, exc)


__all__ = ["FORMAT", "JIT_OPTIONS", "KIND", "cubin_document", "link", "load_module"]
