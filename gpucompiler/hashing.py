"""Content hashes that are the same in every process.

Cache keys and deferred-job ids are SHA-256 digests of a canonical JSON
encoding. Python's ``hash()`` is never used: it is salted per process.
"""

from __future__ import annotations

import enum
import hashlib
import json
from typing import Any

import attrs


def canonical(obj: Any) -> Any:
    """Turn ``obj`` into plain JSON data with a deterministic layout.

    attrs instances become ``{"__class__": qualified name, fields...}``; tuples
    and lists become lists; mappings are sorted by key; bytes are hex. Objects
    may define ``__canonical__()`` to choose their own encoding.
    """
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return {"__float__": obj.hex()}
    if isinstance(obj, enum.Enum):
        return {"__enum__": f"{type(obj).__qualname__}.{obj.name}"}
    hook = getattr(obj, "__canonical__", None)
    if hook is not None:
        return canonical(hook())
    if attrs.has(type(obj)):
        out = {"__class__": f"{type(obj).__module__}.{type(obj).__qualname__}"}
        for field in attrs.fields(type(obj)):
            if field.metadata.get("hash", True):
                out[field.name] = canonical(getattr(obj, field.name))
        return out
    if isinstance(obj, (tuple, list)):
        return [canonical(x) for x in obj]
    if isinstance(obj, (frozenset, set)):
        return sorted((canonical(x) for x in obj), key=_sort_key)
    if isinstance(obj, dict):
        return {str(k): canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, bytes):
        return {"__bytes__": obj.hex()}
    raise TypeError(f"cannot build a stable hash of {type(obj).__qualname__!r} object {obj!r}")


def _sort_key(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


def stable_hash(obj: Any) -> str:
    """SHA-256 hex digest of the canonical encoding of ``obj``."""
    data = json.dumps(canonical(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()
