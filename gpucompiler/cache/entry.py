"""The entry format: one self-checking byte string per compiled job, no pickle.

Layout (all tiers store the same bytes)::

    b"GPUCENT1"                      8 bytes, magic and format version
    sha256(body)                     32 bytes
    body = len(header) as 4 bytes big-endian
           header                    JSON: key, key document, artifact table, metadata
           artifact payloads         concatenated in table order

Artifacts are LLVM IR text, bitcode, PTX/assembly text or object code; each
row of the table gives its kind, length, whether it is text (UTF-8) and its
own SHA-256. Decoding checks the magic, the body checksum, the lengths, each
artifact's checksum and the key: a truncated, bit-flipped or swapped entry
raises :class:`~gpucompiler.errors.CacheCorruptionError` naming the reason.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any, NamedTuple

from ..errors import CacheCorruptionError

MAGIC = b"GPUCENT1"
_PREFIX = len(MAGIC) + 32


class Entry(NamedTuple):
    """A compiled job as stored in the cache. (A named tuple: an attrs class costs ~0.2 ms to create, on
    the path of a fresh process's cache hit.)"""

    key: str
    """SHA-256 of the key document: the entry's address."""
    document: dict[str, Any]
    """The key document (:mod:`gpucompiler.identity.documents`), compared in full on every hit."""
    artifacts: dict[str, str | bytes]
    """Emitted code by kind (``llvm``, ``bc``, ``asm``, ``obj``)."""
    meta: dict[str, Any]
    """JSON metadata: entry name, stage times, plugin reports, creation time."""

    def __repr__(self) -> str:
        return f"Entry(key={self.key!r}, meta={self.meta!r})"  # the document and the code are long

    def encode(self) -> bytes:
        """The entry's bytes (see the module docstring)."""
        table: list[dict[str, Any]] = []
        payloads: list[bytes] = []
        for kind in sorted(self.artifacts):
            value = self.artifacts[kind]
            text = isinstance(value, str)
            data = value.encode() if text else bytes(value)
            table.append({"kind": kind, "text": text, "length": len(data),
                          "sha256": hashlib.sha256(data).hexdigest()})
            payloads.append(data)
        header = json.dumps({"key": self.key, "document": self.document, "artifacts": table,
                             "meta": self.meta}, sort_keys=True, separators=(",", ":")).encode()
        body = b"".join([struct.pack(">I", len(header)), header, *payloads])
        return MAGIC + hashlib.sha256(body).digest() + body


def decode(data: bytes, where: str, expect_key: str | None = None) -> Entry:
    """Parse and check an entry; ``expect_key`` is the key it was looked up by."""
    if len(data) < _PREFIX + 4 or not data.startswith(MAGIC):
        raise CacheCorruptionError(where, f"bad magic or too short ({len(data)} bytes)")
    body = memoryview(data)[_PREFIX:]
    if hashlib.sha256(body).digest() != data[len(MAGIC):_PREFIX]:
        raise CacheCorruptionError(where, "checksum mismatch (truncated or modified)")
    (hlen,) = struct.unpack(">I", body[:4])
    try:
        header = json.loads(bytes(body[4:4 + hlen]))
        key, document, table, meta = header["key"], header["document"], header["artifacts"], header["meta"]
    except (ValueError, KeyError, TypeError) as exc:
        raise CacheCorruptionError(where, f"unreadable header: {exc}") from None
    if expect_key is not None and key != expect_key:
        raise CacheCorruptionError(where, f"holds key {key[:16]}…, not {expect_key[:16]}… (swapped entry)")
    artifacts: dict[str, str | bytes] = {}
    offset = 4 + hlen
    for row in table:
        chunk = bytes(body[offset:offset + row["length"]])
        offset += row["length"]
        if len(chunk) != row["length"] or hashlib.sha256(chunk).hexdigest() != row["sha256"]:
            raise CacheCorruptionError(where, f"artifact {row['kind']!r} fails its checksum")
        artifacts[row["kind"]] = chunk.decode() if row["text"] else chunk
    if offset != len(body):
        raise CacheCorruptionError(where, f"{len(body) - offset} trailing bytes")
    return Entry(key, document, artifacts, meta)
