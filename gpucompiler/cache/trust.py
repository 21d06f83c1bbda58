"""Authenticity of entries from shared tiers: a keyed MAC (HMAC-SHA256) under the deployment's secret.

The entry format (:mod:`.entry`) carries SHA-256 checksums: they catch a
truncated or bit-flipped entry (integrity) but anyone can recompute them, so
they say nothing about *who* wrote it. Tiers other processes or machines can
write (Redis, a shared directory, the compile service's answers) therefore
store each entry in an envelope::

    b"GPUCMAC1"  HMAC-SHA256(secret, entry bytes)  entry bytes

and a client refuses an entry whose envelope is missing or whose MAC does
not verify under its own secret. Only holders of the secret can make an
entry a client accepts from those tiers. See ``docs/cache.md`` (threat model).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from ..errors import CacheError, CacheForgeryError

MAGIC = b"GPUCMAC1"
_MAC = 32


class Signer:
    """MACs under one secret (at least 16 bytes)."""

    def __init__(self, secret: bytes):
        if len(secret) < 16:
            raise CacheError("the cache secret is too short: give at least 16 bytes (e.g. `openssl rand "
                             "-hex 32 > secret; chmod 600 secret`)")
        self._key = hashlib.sha256(b"gpucompiler cache mac\0" + secret).digest()

    def __repr__(self) -> str:
        return "Signer(<secret>)"

    def mac(self, data: bytes) -> bytes:
        return hmac.new(self._key, data, hashlib.sha256).digest()

    def seal(self, data: bytes) -> bytes:
        """``data`` in its envelope."""
        return MAGIC + self.mac(data) + data

    def open(self, data: bytes, where: str) -> bytes:
        """The entry bytes inside a verified envelope; :class:`CacheForgeryError` otherwise."""
        if not data.startswith(MAGIC):
            raise CacheForgeryError(where, "unsigned (no MAC envelope): refused from a shared tier")
        body = data[len(MAGIC) + _MAC:]
        if not hmac.compare_digest(self.mac(body), data[len(MAGIC):len(MAGIC) + _MAC]):
            raise CacheForgeryError(where, "MAC does not verify under this deployment's secret: refused")
        return body

    def answer_mac(self, request: str, nonce: str, artifacts: dict[str, str | bytes],
                   about: dict[str, Any]) -> str:
        """The MAC of a compile service answer: the request it answers (its digest and the client's
        nonce), the SHA-256 of each artifact and ``about``: the rest of the answer the client keeps (the
        entry's key, its origin, its metadata: names, times, the plugins' reports and warnings), as JSON."""
        digests = {k: hashlib.sha256(v.encode() if isinstance(v, str) else bytes(v)).hexdigest()
                   for k, v in artifacts.items()}
        doc = json.dumps({"request": request, "nonce": nonce, "artifacts": digests, "about": about},
                         sort_keys=True).encode()
        return self.mac(b"answer\0" + doc).hex()

    def check_answer(self, request: str, nonce: str, artifacts: dict[str, str | bytes], about: dict[str, Any],
                     mac: Any, where: str) -> None:
        """Refuse (:class:`CacheForgeryError`) an answer not signed for this request and nonce, or one whose
        artifacts or ``about`` (key, origin, metadata) differ from what was signed."""
        try:
            want = self.answer_mac(request, nonce, artifacts, about)
        except (TypeError, ValueError):  # metadata that is not JSON data: not what a service signs
            want = None
        if want is None or not isinstance(mac, str) or not hmac.compare_digest(want, mac):
            raise CacheForgeryError(where, "answer without a valid MAC for this request under this deployment's "
                                           "secret: refused")


class SignedTier:
    """A shared tier seen through :class:`Signer`: writes sealed entries, reads only verified ones."""

    shared = True

    def __init__(self, tier: Any, signer: Signer):
        self.tier = tier
        self.signer = signer
        self.name = tier.name
        self.errors: tuple[type[BaseException], ...] = getattr(tier, "errors", (OSError,))

    def get(self, key: str) -> bytes | None:
        data = self.tier.get(key)
        return None if data is None else self.signer.open(data, f"{self.name}:{key}")

    def put(self, key: str, data: bytes) -> None:
        self.tier.put(key, self.signer.seal(data))

    def delete(self, key: str) -> bool:
        return self.tier.delete(key)

    def __getattr__(self, name: str) -> Any:  # keys(), clear(), files(), lock()... of the tier
        return getattr(self.tier, name)
