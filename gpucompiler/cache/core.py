"""The cache: look a job up tier by tier, compile it once on a miss, publish everywhere.

:meth:`Cache.compile` has the shape of :func:`gpucompiler.pipeline.compile`, with a
result that has the same ``job``, ``artifacts``, ``module``, ``stage_times``
and ``reports``. The cache is given the compile function (and optionally a
compile service client) by its owner; it imports neither. The process's
default cache, wired to the pipeline, is :mod:`gpucompiler.cache.default`.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import warnings
from collections import Counter
from typing import TYPE_CHECKING, Any, Protocol
from collections.abc import Callable, Sequence

from .. import identity as keys
from ..errors import CacheCorruptionError, CacheError, CacheForgeryError, CacheWarning, ConfigError, ServiceError
from ..settings import private_directory_problem
from .entry import Entry, decode
from . import later as _later
from .files import GROUP
from .report import loaded_reports, recorded_warnings, replay, stored_reports
from .tiers import DiskTier, MemoryTier, RedisTier

if TYPE_CHECKING:
    from .trust import SignedTier, Signer

log = logging.getLogger("gpucompiler.cache")

class CachedResult:
    """What :func:`compile_cached` returns: a ``CompileResult`` look-alike. (A plain class: an attrs class
    costs ~0.2 ms to create, on the path of a fresh process's cache hit.)"""

    __slots__ = ("job", "artifacts", "key", "origin", "meta", "_module", "_reports")

    def __init__(self, job: Any, artifacts: dict[str, str | bytes], key: str, origin: str,
                 meta: dict[str, Any] | None = None, module: Any = None, reports: dict[str, Any] | None = None):
        self.job = job
        self.artifacts = artifacts
        self.key = key
        """The entry's key (SHA-256 of the key document)."""
        self.origin = origin
        """Where the artifacts came from: ``memory``, ``disk``, ``redis``, ``compiled`` or ``service``."""
        self.meta: dict[str, Any] = {} if meta is None else meta
        self._module = module
        self._reports = reports
        """The plugins' report objects of a compile in this process; a hit rebuilds them from ``meta``."""

    def __repr__(self) -> str:
        return f"CachedResult(job={self.job!r}, key={self.key!r}, origin={self.origin!r})"

    @property
    def module(self) -> Any:
        """The final module (parsed from the ``llvm`` artifact on first use after a hit)."""
        if self._module is None:
            from ..module import IRModule  # import time: the IR model's facade, when a hit's module is read

            text = self.artifacts["llvm"]
            assert isinstance(text, str), "LLVM IR is text"
            self._module = IRModule(text)
        return self._module

    @property
    def stage_times(self) -> dict[str, float]:
        return dict(self.meta.get("stage_times", {}))

    @property
    def reports(self) -> dict[str, Any]:
        """The plugins' reports by name: the objects of a compile here; on a hit, each rebuilt from the
        entry's JSON data by its plugin's ``load_report`` (imported now)."""
        if self._reports is None:
            self._reports = loaded_reports(self.meta.get("reports"))
        return dict(self._reports)


def private_disk(directory: str | os.PathLike[str], max_bytes: int = 1 << 30) -> DiskTier | None:
    """The private disk tier in ``directory``, created owner-only (0700); None, with a
    :class:`CacheWarning`, when another user owns it or can write to it."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        return DiskTier(directory, max_bytes)  # unwritable: every write warns and falls back
    problem = private_directory_problem(os.fspath(directory))
    if problem is not None:
        _warn(f"the cache directory {directory} is not used: {problem}. A directory others write "
              "to belongs in GPUC_CACHE_SHARED_DIR, whose entries must be signed", stacklevel=3)
        return None
    return DiskTier(directory, max_bytes)


def shared_disk(directory: str | os.PathLike[str], max_bytes: int = 1 << 30) -> DiskTier:
    """The shared directory tier in ``directory``: what it creates, its group may read and publish
    (directories 2770, files 660; make ``directory`` setgid and owned by that group)."""
    return DiskTier(directory, max_bytes, name="shared", modes=GROUP)


Compiler = Callable[[Any, tuple[str, ...]], Any]
"""``compiler(job, kinds)`` -> a result with ``artifacts``, ``module``, ``stage_times``, ``reports``
(:func:`gpucompiler.pipeline.compile`)."""

Later = Callable[[Any, Entry], "Callable[[], dict[str, bytes]] | None"]
"""``later(job, entry)``, on the compiling thread once ``entry`` is published: None, or the work a thread then
runs (:mod:`.later`) whose artifacts, when it makes any, are added to the entry, published again."""


class CompileService(Protocol):
    """What the cache needs of a compile service client (:class:`gpucompiler.service.client.ServiceClient`)."""

    def compile(self, job: Any, emit: Sequence[str]) -> CachedResult: ...


class Cache:
    """Tiers in lookup order: memory, the private disk, then the shared tiers (a shared directory,
    Redis), read through to disk and memory.

    Entries from shared tiers must carry a MAC under ``secret`` (:mod:`.trust`);
    a shared tier without a secret is a :class:`CacheError`. A miss is compiled
    by ``service`` when given (and its answer authentic), else by ``compiler``;
    with ``service_fallback`` (the default) a service that cannot be reached
    or fails (no answer, 5xx) also leaves the miss to ``compiler`` (a
    :class:`CacheWarning` once), without it that is a :class:`ServiceError`.
    """

    def __init__(self, disk: DiskTier | None = None, redis: RedisTier | None = None,
                 memory: MemoryTier | None = None, service: CompileService | None = None, *,
                 shared: DiskTier | None = None, secret: bytes | None = None,
                 compiler: Compiler | None = None, service_fallback: bool = True, later: Later | None = None):
        self.signer: Signer | None = None
        self.shared: SignedTier | None = None
        self.redis: SignedTier | None = None
        if secret:
            from .trust import SignedTier, Signer  # import time: hmac and the MACs (~0.3 ms), with a secret only

            signer = self.signer = Signer(secret)
            self.shared = SignedTier(shared, signer) if shared is not None else None
            self.redis = SignedTier(redis, signer) if redis is not None else None
        elif redis is not None or shared is not None:
            raise CacheError("a shared cache tier (Redis, a shared directory) needs the deployment's "
                             "secret, to sign and check its entries: set GPUC_CACHE_SECRET_FILE (a file "
                             "only you can read) or GPUC_CACHE_SECRET")
        self.memory = memory if memory is not None else MemoryTier()
        self.disk = disk
        self.tiers = tuple(t for t in (disk, self.shared, self.redis) if t is not None)
        self.service = service
        self.service_fallback = service_fallback
        self._fallback_warned = False
        self.compiler = compiler
        self.later = later
        self.stats: Counter[str] = Counter()
        self._counting = threading.Lock()  # a later publish's thread counts its writes too

    # -- lookup -------------------------------------------------------------
    def lookup(self, key: str, document: dict[str, Any], kinds: Sequence[str], *,
               memory: bool = True, counter: str = "hit",
               refused: set[tuple[str, str]] | None = None) -> tuple[Entry, str] | None:
        """The entry of ``key`` holding every kind in ``kinds``, and its tier; None on a miss.

        A hit counts as ``stats[f"{counter}.{tier}"]``. ``refused`` collects the
        ``(tier, key)`` pairs whose entry failed its checks, and skips those
        already in it: one job fetches and checks a bad entry once.
        """
        if memory:
            entry = self.memory.get(key)
            if entry is not None and _has(entry, kinds) and entry.document == document:
                self.stats[f"{counter}.memory"] += 1
                return entry, "memory"
        for tier in self.tiers:
            if refused is not None and (tier.name, key) in refused:
                continue
            entry = self._read(tier, key, document, refused)
            if entry is None or not _has(entry, kinds):
                continue
            self.stats[f"{counter}.{tier.name}"] += 1
            self.memory.put(entry)
            if tier is not self.disk and self.disk is not None:  # checked: its MAC verified
                self._write(self.disk, entry.key, entry.encode())  # read through to local disk
            return entry, tier.name
        return None

    def _read(self, tier: Any, key: str, document: dict[str, Any],
              refused: set[tuple[str, str]] | None = None) -> Entry | None:
        where = f"{tier.name}:{key}"
        try:
            data = tier.get(key)
            if data is None:
                return None
            entry = decode(data, where, expect_key=key)
            if entry.document != document:
                raise CacheCorruptionError(where, "stored key document differs from the job's")
        except self._errors(tier) as exc:
            _warn(f"cannot read the {tier.name} cache ({exc}); compiling without it")
            return None
        except CacheForgeryError as exc:  # left in place: only a holder of the secret can replace it
            if refused is not None:
                refused.add((tier.name, key))
            self.stats["forged"] += 1
            _warn(f"{exc}; compiling instead")
            return None
        except CacheCorruptionError as exc:
            if refused is not None:
                refused.add((tier.name, key))
            self.stats["corrupt"] += 1
            log.warning("%s; evicting it and recompiling", exc)
            try:
                tier.delete(key)
            except self._errors(tier):
                pass
            return None
        return entry

    # -- publishing ---------------------------------------------------------
    def publish(self, entry: Entry) -> None:
        """Store ``entry`` in every tier; a tier that cannot be written is skipped with a warning."""
        self.memory.put(entry)
        if not self.tiers:  # kept in memory alone (GPUC_CACHE=off, cache=False): no bytes to make
            return
        data = entry.encode()
        for tier in self.tiers:
            self._write(tier, entry.key, data)

    def _write(self, tier: Any, key: str, data: bytes) -> None:
        try:
            tier.put(key, data)
            with self._counting:
                self.stats[f"write.{tier.name}"] += 1
        except self._errors(tier) as exc:
            with self._counting:
                self.stats["write_error"] += 1
            _warn(f"cannot write the {tier.name} cache ({exc}); the compiled code is used "
                  "but not kept")

    @staticmethod
    def _errors(tier: Any) -> tuple[type[BaseException], ...]:
        return getattr(tier, "errors", (OSError,))

    # -- the whole story ------------------------------------------------------
    def compile(self, job: Any, emit: Sequence[str] = ("llvm",),
                compiler: Compiler | None = None,
                check: Callable[[Any], None] | None = None) -> CachedResult:
        """The artifacts of ``job`` for each kind in ``emit``: from a tier, else compiled once.

        Sources with a dependency record (Python functions) go through the
        *index key* first (:meth:`_fast_lookup`): no type inference on a hit.
        ``check(job)`` runs before a compile (never on a hit): rules whose
        outcome the key decides, such as the kernel rules, run once per key.
        """
        emit = (emit,) if isinstance(emit, str) else tuple(emit)
        ctx = keys.context(job)
        refused: set[tuple[str, str]] = set()
        index = self._fast_lookup(job, emit, ctx, refused)
        if isinstance(index, CachedResult):
            return index
        document = keys.key_document(job, ctx=ctx)
        key = keys.digest(document)
        found = self.lookup(key, document, emit, refused=refused)
        if found is None:
            lock = self.disk.lock(key) if self.disk is not None else _no_lock()
            fleet = self.redis.lock(key) if self.redis is not None else _no_lock()  # one compile per fleet
            with lock as locked, fleet as fleet_locked:
                if self.disk is not None and not locked:
                    _warn(f"cannot create a lock in {self.disk.locks}; compiling without one")
                if not fleet_locked:
                    self.stats["fleet_lock_unavailable"] += 1
                found = self.lookup(key, document, emit, memory=False, refused=refused)  # another process won?
                if found is None:
                    if check is not None:
                        check(job)
                    result, work = self._compile_and_publish(job, emit, key, document, compiler)
                    if self.memory.get(key) is not None:  # published (its IR is serialisable)
                        self._publish_index(job, index, key)
                    if work is not None:  # after this thread's writes: it would take the GIL from them
                        _later.start(work, f"gpuc publish {job.name}")
                    return result
        self._publish_index(job, index, key)
        return _result(job, *found)

    # -- the index key (two-level keys for Python sources) -------------------
    def _fast_lookup(self, job: Any, emit: tuple[str, ...], ctx: dict[str, Any],
                     refused: set[tuple[str, str]]) -> Any:
        """A :class:`CachedResult` found through the index key, else what :meth:`_publish_index` needs.

        The index document (:func:`.keys.index_document`) needs no inference;
        its entry holds the source's dependency record. The source re-reads
        every recorded dependency from the live objects (``verify_record``);
        when all are unchanged it rebuilds its full fingerprint from them, and
        the full key document, computed from that, fetches the code, compared
        in full as always. Any change, or no entry, returns to inference.
        """
        try:
            idoc = keys.index_document(job, ctx)
        except Exception as exc:  # an unusual source: the full path decides
            log.debug("no index key for %s: %s", getattr(job, "name", job), exc)
            return None
        if idoc is None:
            return None
        ikey = keys.digest(idoc)
        found = self.lookup(ikey, idoc, (), counter="index.hit", refused=refused)
        if found is None:
            return (ikey, idoc)
        record = found[0].meta.get("record")
        fingerprint = job.source.verify_record(job, record) if isinstance(record, dict) else None
        if fingerprint is None:
            self.stats["index.stale"] += 1
            return (ikey, idoc)
        document = keys.key_document(job, fingerprint, ctx)
        key = keys.digest(document)
        hit = self.lookup(key, document, emit, refused=refused)
        if hit is not None:
            return _result(job, *hit)
        # no code under the rebuilt key: evicted, or a record that does not describe what
        # inference reads. Only inference may name the key under which new code is stored.
        job.source.discard_verified(job)
        self.stats["index.nocode"] += 1
        return (ikey, idoc)

    def _publish_index(self, job: Any, index: Any, key: str) -> None:
        """Store the index entry of ``job``: its dependency record and full key ``key``."""
        if index is None:
            return
        ikey, idoc = index
        try:
            record = job.source.dependency_record(job)
        except Exception as exc:
            log.debug("no dependency record for %s: %s", job.name, exc)
            return
        if record is None:
            self.stats["index.unrecordable"] += 1
            return
        self.stats["index.write"] += 1
        self.publish(Entry(ikey, idoc, {}, {"name": f"index:{job.name}", "index": True, "key": key,
                                            "record": record, "created": time.time()}))

    def _compile_and_publish(self, job: Any, emit: tuple[str, ...], key: str, document: dict[str, Any],
                             compiler: Compiler | None) -> tuple[CachedResult, Callable[[], None] | None]:
        """The compiled result, published, and the work that publishes it again with its later artifacts (to be
        started on a thread: :mod:`.later`), if any."""
        kinds = tuple(sorted(set(emit) | {"llvm"}))
        start = time.perf_counter()
        # kept in the entry, shown again on every hit (a service client runs the first stages here)
        with recorded_warnings() as caught:
            result = self._service_compile(job, kinds) if compiler is None else None
            if result is not None:  # the service's stages warned there: shown (and so recorded) here
                origin = "service"
                replay(result.meta.get("warnings"))
            else:
                compiler = compiler or self.compiler
                if compiler is None:
                    raise ConfigError(f"this cache has no compile function for the miss of {job.name!r}: "
                                      "make it with Cache(..., compiler=gpucompiler.pipeline.compile)")
                result, origin = compiler(job, kinds), "compiled"
        self.stats["compile"] += 1
        reports = dict(result.reports)
        meta: dict[str, Any] = {"name": job.name, "symbols": _symbols(result.module), "stage_times": dict(result.stage_times),
                "reports": stored_reports(reports), "warnings": caught, "created": time.time(),
                "compile_seconds": time.perf_counter() - start}
        llvm_text = result.artifacts.get("llvm")
        from ..llvm.binding import address_bindings  # import time: llvmlite's binding, which a GPU kernel's hit never needs

        addresses = address_bindings(llvm_text) if isinstance(llvm_text, str) else {}
        if addresses:  # names the module binds itself: a loader binds them without parsing the IR
            meta["addresses"] = addresses
        entry = Entry(key, document, dict(result.artifacts), meta)
        facts = getattr(result, "facts", None)  # what validation found (a service's answer has none)
        from .serialisable import serialisation_errors  # import time: the module facts' walk, not a hit's

        problems = serialisation_errors(result.module, facts)
        republish: Callable[[], None] | None = None
        if problems:
            self.stats["uncacheable"] += 1
            _warn(f"job {job.name!r} is not cached: its IR is not serialisable: "
                  + "; ".join(f"[{k}] {m}" for k, m in problems))
        else:
            self.publish(entry)
            work = self.later(job, entry) if self.later is not None and self.tiers and origin == "compiled" else None
            if work is not None:
                republish = functools.partial(self._publish_later, entry, work)
        return CachedResult(job, entry.artifacts, key, origin, meta, result.module, reports), republish

    def _publish_later(self, entry: Entry, work: Callable[[], dict[str, bytes]]) -> None:
        """On a thread: ``entry`` published again to the tiers (the memory tier's code is loaded) with the
        artifacts ``work`` makes; a failure keeps the entry as it is, logged."""
        try:
            extra = work()
            if extra:
                data = entry._replace(artifacts={**entry.artifacts, **extra}).encode()
                for tier in self.tiers:
                    self._write(tier, entry.key, data)
        except Exception as exc:  # the entry stays whole without the artifact
            log.warning("%s: no later artifact (%s: %s)", entry.meta.get("name"), type(exc).__name__, exc)


    def _service_compile(self, job: Any, kinds: tuple[str, ...]) -> Any:
        """The service's answer for ``job``; None (compile here) without a service, when its answer
        is refused as forged, or when the service is down and falling back is on."""
        if self.service is None:
            return None
        try:
            return self.service.compile(job, kinds)
        except CacheForgeryError as exc:
            self.stats["forged"] += 1
            _warn(f"{exc}; compiling here instead", stacklevel=5)
            return None
        except ServiceError as exc:
            if not self.service_fallback or (exc.status is not None and exc.status < 500):
                raise  # the job's own error (422, 409...), or falling back is off
            self.stats["service_fallback"] += 1
            if not self._fallback_warned:
                self._fallback_warned = True
                _warn(f"{exc}; compiling here instead (this warning is given once; set "
                      "GPUC_SERVICE_FALLBACK=off to raise instead)", stacklevel=5)
            return None


def _symbols(module: Any) -> list[list[Any]] | None:
    """``[[name, is_declaration, linkage], ...]`` of the module's functions and global variables.

    Kept in the entry so that loading cached object code needs no parse of its IR.
    """
    try:
        ref = module.ref
        return [[g.name, bool(g.is_declaration), g.linkage.name]
                for g in (*ref.functions, *ref.global_variables)]
    except Exception:  # a result without an LLVM module: loaders parse the IR
        return None


def _has(entry: Entry, kinds: Sequence[str]) -> bool:
    return all(k in entry.artifacts for k in kinds)


def _result(job: Any, entry: Entry, tier: str) -> CachedResult:
    """A hit: the warnings its compile emitted are shown again."""
    replay(entry.meta.get("warnings"))
    return CachedResult(job, entry.artifacts, entry.key, tier, entry.meta)


def _warn(message: str, stacklevel: int = 4) -> None:
    """Log ``message`` and warn with it as a :class:`CacheWarning` (``stacklevel``: the user's frame)."""
    log.warning(message)
    warnings.warn(message, CacheWarning, stacklevel=stacklevel)


class _no_lock:
    def __enter__(self) -> bool:
        return True

    def __exit__(self, *exc: Any) -> None:
        return None
