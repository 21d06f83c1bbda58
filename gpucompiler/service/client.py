"""The client of ``gpuc serve``: send a job, get a :class:`~gpucompiler.cache.core.CachedResult` back
(``origin`` is where the service found the code: ``compiled``, ``memory``, ``disk`` or ``redis``).

``GPUC_SERVICE_URL=http://127.0.0.1:8765`` makes :func:`gpucompiler.cache.default.compile_cached`
(and through it ``@jit``) compile its cache misses here.
"""

from __future__ import annotations

import json
from typing import Any
from collections.abc import Sequence
from urllib.parse import urlsplit

from ..cache.core import CachedResult
from ..errors import CacheError, CacheForgeryError, PluginMismatchError, ServiceError
from ..settings import is_loopback
from .protocol import answer_about, answer_signer, binding, decode_artifacts, make_request


class ServiceClient:
    """A connection to one compile service (``url``: ``http://host:port`` on loopback, else ``https://``).

    Answers carry a MAC under the deployment's ``secret`` (else one derived from
    the bearer ``token``) over the artifacts, the digest of the request and
    its fresh nonce. An answer without a valid one for *this* request (a
    forgery, an answer made for another job, an old one replayed) raises
    :class:`~gpucompiler.errors.CacheForgeryError` (the cache then compiles
    here). The token is never sent in clear text: plain ``http://`` to
    another host than loopback is a :class:`~gpucompiler.errors.CacheError`.
    """

    def __init__(self, url: str, token: str | None = None, timeout: float = 300.0, *,
                 secret: bytes | None = None):
        try:
            import httpx
        except ImportError:
            raise ServiceError("GPUC_SERVICE_URL needs httpx: pip install 'gpucompiler[service]'") from None
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CacheError(f"GPUC_SERVICE_URL={url!r} is not an http:// or https:// URL of a compile service")
        if token and parts.scheme == "http" and not is_loopback(parts.hostname):
            raise CacheError(f"GPUC_SERVICE_URL={url}: the bearer token would cross the network in clear "
                             f"text to {parts.hostname}: use https:// (TLS) or a loopback address "
                             "(127.0.0.1, ::1, localhost)")
        signer = answer_signer(secret, token)
        if signer is None:
            raise CacheError(f"GPUC_SERVICE_URL={url}: the service's answers are checked with the deployment's "
                             "secret (GPUC_CACHE_SECRET_FILE) or the service token (GPUC_SERVICE_TOKEN): set one")
        self.signer = signer
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._httpx = httpx
        self._client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def compile(self, job: Any, emit: Sequence[str] = ("llvm",)) -> CachedResult:
        """Prepare ``job`` here (IR generation, ``post_irgen``), compile the rest on the service.

        The answer must be signed for this request: its digest (computed here,
        over the IR, entry, emit kinds, config and plugins sent) and its nonce.
        """
        request = make_request(job, tuple(emit))
        digest, nonce = binding(request)
        data = self.post("/compile", json.dumps(request).encode())
        where = f"service:{self.url}"
        try:
            key, artifacts, origin, meta = (data["key"], decode_artifacts(data["artifacts"]), data["origin"],
                                            data["meta"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ServiceError(f"compile service {self.url} sent a malformed answer ({exc!r})") from None
        if (data.get("request"), data.get("nonce")) != (digest, nonce):
            raise CacheForgeryError(where, "the answer is not for this request (made for another job, or an "
                                           "old answer replayed): refused")
        self.signer.check_answer(digest, nonce, artifacts, answer_about(key, origin, meta), data.get("mac"), where)
        missing = sorted(set(emit) - set(artifacts))
        if missing:
            raise ServiceError(f"compile service {self.url} sent no {', '.join(missing)} artifact")
        return CachedResult(job, artifacts, key, origin, meta)

    def post(self, path: str, body: bytes) -> dict[str, Any]:
        try:
            response = self._client.post(path, content=body, headers={"Content-Type": "application/json"})
        except self._httpx.HTTPError as exc:
            raise ServiceError(f"compile service {self.url} unreachable: {exc}") from None
        return self._json(response)

    def get(self, path: str) -> dict[str, Any]:
        try:
            return self._json(self._client.get(path))
        except self._httpx.HTTPError as exc:
            raise ServiceError(f"compile service {self.url} unreachable: {exc}") from None

    def _json(self, response: Any) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = {"error": "bad_answer", "message": response.text[:200]}
        if response.status_code != 200:
            cls = PluginMismatchError if data.get("error") == "plugin_mismatch" else ServiceError
            raise cls(f"compile service {self.url} answered {response.status_code} "
                      f"({data.get('error')}): {data.get('message')}", response.status_code, data.get("error", ""))
        return data

    def close(self) -> None:
        self._client.close()
