"""The compile service: a Starlette app served by uvicorn (``gpuc serve``).

``POST /compile`` takes a serialisable job (:mod:`.protocol`), answers from
the cache when it can, else compiles it in a pool of worker processes.
Identical jobs in flight are compiled once (single flight): later requests
wait for the first one's answer. ``GET /health`` says who is serving;
``GET /stats`` counts requests, hits, compiles and dedupes.

Every failure is an HTTP answer with a JSON ``{"error", "message"}``: 400
malformed, 401 missing token, 409 plugin missing or at another version, 413
too large, 422 the compile failed (typed error's message), 504 over time.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import identity as keys, pipeline
from ..cache.entry import Entry, decode
from ..cache.wiring import build_cache
from ..cache.trust import Signer
from ..errors import CacheCorruptionError, CompilerCrashError, GPUCompilerError
from ..llvm.binding import llvm_version
from ..plugin import discovered
from ..settings import CacheSettings, is_loopback
from ..version import __version__
from . import worker
from ..contain import call_in_child
from .protocol import (RequestError, answer_about, answer_signer, binding, encode_artifacts, parse_body,
                       parse_request)

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

log = logging.getLogger("gpucompiler.service")


@attrs.define
class ServiceConfig:
    """How ``gpuc serve`` runs."""

    cache: CacheSettings = attrs.field(factory=lambda: CacheSettings(directory=None))
    """The cache of the server and its workers (:func:`~gpucompiler.cache.wiring.build_cache`): the disk
    tier they share (None: memory only), the shared directory, Redis, the deployment's secret (which also
    signs answers). A service never forwards to another: its ``service_url`` is ignored."""
    workers: int = 2
    token: str | None = attrs.field(default=None, repr=False)
    """Bearer token every request but ``/health`` must carry (None: no auth)."""
    generated_token_file: str | None = None
    """A token file ``gpuc serve`` generated: removed when the service stops."""
    max_request_bytes: int = 16 << 20
    timeout_s: float = 120.0
    """Longest a request waits for its compile."""
    loopback_hosts: bool = False
    """Answer only requests whose ``Host`` names a loopback address (a service bound to loopback: a web
    page that rebinds its own DNS name to 127.0.0.1 reaches the port, but sends its own name)."""


class _Service:
    def __init__(self, config: ServiceConfig):
        self.config = config
        settings = attrs.evolve(config.cache, service_url=None)
        self.cache = build_cache(settings, compiler=pipeline.compile)
        # the workers get the directory only if it was accepted as private: a refused one is not used at all
        disk = self.cache.disk
        self.initargs: worker.InitArgs = (attrs.evolve(settings, directory=None if disk is None else disk.root),)
        self.signer = answer_signer(settings.secret, config.token)
        self.pool: ProcessPoolExecutor | None = None
        self.inflight: dict[tuple[str, tuple[str, ...]], asyncio.Future[Entry]] = {}
        self.counts: Counter[str] = Counter()
        self.crashed: dict[str, str] = {}
        """Keys of jobs that crashed a worker and then a fresh child: their error, answered at once."""

    def start_pool(self) -> None:
        c = self.config
        self.pool = ProcessPoolExecutor(c.workers, initializer=worker.init, initargs=self.initargs)
        for _ in range(c.workers):
            self.pool.submit(worker.ping)  # start the workers (and their imports) now

    def stop_pool(self, grace: float = 5.0) -> None:
        """Stop the workers: cancel queued jobs, end the processes (none outlives the server)."""
        pool, self.pool = self.pool, None
        if pool is None:
            return
        workers: dict[int, BaseProcess] = getattr(pool, "_processes", None) or {}
        processes = list(workers.values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in processes:
            proc.terminate()
        for proc in processes:
            proc.join(grace)
            if proc.is_alive():
                proc.kill()
                proc.join(grace)

    def authorised(self, request: Request) -> bool:
        if not self.config.token:
            return True
        got = request.headers.get("authorization", "")
        return hmac.compare_digest(got.encode(), f"Bearer {self.config.token}".encode())

    async def body(self, request: Request) -> bytes:
        limit = self.config.max_request_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise RequestError(f"request of {declared} bytes exceeds the limit of {limit}", 413, "too_large")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise RequestError(f"request exceeds the limit of {limit} bytes", 413, "too_large")
            chunks.append(chunk)
        return b"".join(chunks)

    async def compile(self, request: Request) -> Response:
        self.counts["requests"] += 1
        if not self.authorised(request):
            return _error(401, "unauthorized", "missing or wrong bearer token (Authorization: Bearer …)")
        try:
            body = await self.body(request)
            data = parse_body(body)
            job, emit = parse_request(data)
            bound = binding(data)
            document = keys.key_document(job)
            key = keys.digest(document)
            found = self.cache.lookup(key, document, emit)
            if found is not None:
                self.counts["hits"] += 1
                return _answer(found[0], found[1], emit, self.signer, bound)
            entry = await self.single_flight(key, document, emit, body)
            return _answer(entry, "compiled", emit, self.signer, bound)
        except GPUCompilerError as exc:
            self.counts["errors"] += 1
            status = getattr(exc, "status", None) or 422
            return _error(status, getattr(exc, "kind", "") or type(exc).__name__, str(exc))
        except asyncio.TimeoutError:
            self.counts["errors"] += 1
            return _error(504, "timeout", f"the compile took longer than {self.config.timeout_s} s")
        except Exception as exc:  # a bug of ours: a JSON answer all the same, the connection kept
            self.counts["errors"] += 1
            log.exception("internal error on /compile")
            return _error(500, "internal", f"{type(exc).__name__}: {exc}")

    async def single_flight(self, key: str, document: dict[str, Any], emit: tuple[str, ...], body: bytes) -> Entry:
        flight = (key, tuple(sorted(emit)))
        future = self.inflight.get(flight)
        if future is None:
            future = asyncio.ensure_future(self._run(key, document, body))
            self.inflight[flight] = future
            future.add_done_callback(lambda _: self.inflight.pop(flight, None))
        else:
            self.counts["deduped"] += 1
        return await asyncio.wait_for(asyncio.shield(future), self.config.timeout_s)

    async def _run(self, key: str, document: dict[str, Any], body: bytes) -> Entry:
        crash = self.crashed.get(key)
        if crash is not None:  # it crashed a worker and a fresh child: not tried a third time
            self.counts["crash_memo"] += 1
            raise RequestError(crash, 422, "compiler_crashed")
        self.counts["compiles"] += 1
        loop = asyncio.get_running_loop()
        pool = self.pool
        try:
            status, payload = await loop.run_in_executor(pool, worker.compile_body, body)
        except BrokenProcessPool:
            # a worker died (LLVM aborted on some job): every job in flight in the pool fails here;
            # each is retried once alone in a fresh child, so only the job that crashes fails
            if self.pool is pool and pool is not None:
                log.error("a compile worker died; restarting the pool and retrying its jobs one by one")
                pool.shutdown(wait=False, cancel_futures=True)
                self.start_pool()
            self.counts["retried"] += 1
            status, payload = await loop.run_in_executor(None, self._isolated, key, body)
        if status != 200:
            err = json.loads(payload)
            raise RequestError(err["message"], status, err["error"])
        try:
            sent = decode(payload, f"worker:{key}")
        except CacheCorruptionError as exc:
            raise RequestError(str(exc), 500, "internal") from None
        self.counts[f"worker.{sent.meta.get('origin', 'compiled')}"] += 1  # worker.compiled: LLVM ran
        entry = Entry(key, document, sent.artifacts, sent.meta)
        self.cache.memory.put(entry)
        return entry

    def _isolated(self, key: str, body: bytes) -> tuple[int, bytes]:
        """Compile one request body in a fresh forked child: an abort fails this job alone."""
        try:
            out = call_in_child(lambda: worker.compile_packed(body, self.initargs), f"job {key[:16]}",
                                timeout=self.config.timeout_s)
        except CompilerCrashError as exc:
            self.counts["crashed"] += 1
            self.crashed[key] = str(exc)
            while len(self.crashed) > 1024:
                self.crashed.pop(next(iter(self.crashed)))
            return 422, json.dumps({"error": "compiler_crashed", "message": str(exc)}).encode()
        return int(out[:3]), out[3:]


def _answer(entry: Entry, origin: str, emit: tuple[str, ...], signer: Signer | None,
            bound: tuple[str, str]) -> Response:
    """The answer to one request: the artifacts and a MAC binding them to that request's digest and nonce."""
    artifacts = {k: entry.artifacts[k] for k in {*emit, "llvm"} if k in entry.artifacts}
    meta = {k: v for k, v in entry.meta.items() if k in ("name", "stage_times", "reports", "warnings", "compile_seconds")}
    request, nonce = bound
    body = {"key": entry.key, "origin": origin, "artifacts": encode_artifacts(artifacts), "meta": meta,
            "request": request, "nonce": nonce}
    if signer is not None:
        body["mac"] = signer.answer_mac(request, nonce, artifacts, answer_about(entry.key, origin, meta))
    return JSONResponse(body)


def _error(status: int, kind: str, message: str) -> Response:
    return JSONResponse({"error": kind, "message": message}, status_code=status)


class _LoopbackHosts:
    """ASGI middleware: a request whose ``Host`` header is not a loopback name or address is a 400."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not is_loopback(urlsplit(f"//{host}").hostname if host else None):
                response = _error(400, "bad_host", f"Host {host!r} is not a loopback name: this service answers "
                                                   "requests for 127.0.0.1, ::1 or localhost only")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(config: ServiceConfig | None = None) -> Starlette:
    """The ASGI app; the worker pool starts with the app's lifespan."""
    service = _Service(config or ServiceConfig())

    @asynccontextmanager
    async def lifespan(app: Starlette):
        service.start_pool()
        try:
            yield
        finally:
            service.stop_pool()
            if service.config.generated_token_file:
                Path(service.config.generated_token_file).unlink(missing_ok=True)

    async def health(request: Request) -> Response:
        if not (service.config.token and service.authorised(request)):
            return JSONResponse({"status": "ok"})  # versions and plugins only to token holders
        return JSONResponse({"status": "ok", "gpucompiler": __version__, "llvm": llvm_version(),
                             "workers": service.config.workers, "auth": bool(service.config.token),
                             "plugins": [[n, p.version] for n, p in discovered().items()]})

    async def stats(request: Request) -> Response:
        if not service.authorised(request):
            return _error(401, "unauthorized", "missing or wrong bearer token")
        return JSONResponse({**service.counts, "inflight": len(service.inflight),
                             "cache": dict(service.cache.stats)})

    async def not_found(request: Request, exc: Any) -> Response:
        return _error(getattr(exc, "status_code", 404), "not_found",
                      f"{request.method} {request.url.path}: use POST /compile, GET /health or GET /stats")

    app = Starlette(routes=[Route("/compile", service.compile, methods=["POST"]),
                            Route("/health", health, methods=["GET"]),
                            Route("/stats", stats, methods=["GET"])],
                    lifespan=lifespan, exception_handlers={404: not_found, 405: not_found},
                    middleware=[Middleware(_LoopbackHosts)] if service.config.loopback_hosts else [])
    app.state.service = service
    return app
