"""The client of ``gpuc serve``: send a job, get a :class:`~gpucompiler.cache.core.CachedResult` back
(``origin`` is where the service found the code: ``compiled``, ``memory``, ``disk`` or ``redis``).

``GPUC_SERVICE_URL=http://127.0.0.1:8765`` makes :func:`gpucompiler.cached.compile_cached`
(and through it ``@jit``) compile its cache misses here.
"""

from __future__ import annotations

import json
from typing import Any
from collections.abc import Sequence

from ..cache.core import CachedResult
from ..errors import CacheError, PluginMismatchError, ServiceError
from .protocol import answer_signer, decode_artifacts, make_request


class ServiceClient:
    """A connection to one compile service (``url``: ``http://host:port``).

    Answers carry a MAC under the deployment's ``secret`` (else one derived from
    the bearer ``token``); an answer without a valid one raises
    :class:`~gpucompiler.errors.CacheForgeryError` (the cache then compiles here).
    """

    def __init__(self, url: str, token: str | None = None, timeout: float = 300.0, *,
                 secret: bytes | None = None):
        try:
            import httpx
        except ImportError:
            raise ServiceError("GPUC_SERVICE_URL needs httpx: pip install 'gpucompiler[service]'") from None
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
        """Prepare ``job`` here (IR generation, ``post_irgen``), compile the rest on the service."""
        body = json.dumps(make_request(job, tuple(emit))).encode()
        data = self.post("/compile", body)
        try:
            key, artifacts, origin, meta = (data["key"], decode_artifacts(data["artifacts"]), data["origin"],
                                            data["meta"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ServiceError(f"compile service {self.url} sent a malformed answer ({exc!r})") from None
        self.signer.check_answer(key, artifacts, data.get("mac"), f"service:{self.url}")
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
