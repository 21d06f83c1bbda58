"""Fingerprints of the compiler's own code and of plugins' code, part of every cache key.

A cache filled by one build of the compiler must never serve another build's
output, even when the version number did not change (a development
checkout, an edited plugin). The key therefore holds a SHA-256 over the
source files of ``gpucompiler`` and of each enabled plugin's top-level
package. The same files give the same digest on every machine, so shared
tiers (Redis, the compile service) still match across machines.

Hashing a package's files costs a few milliseconds, which would dominate a
fresh process's first cache hit. The digest is therefore memoised in the
cache directory under a *stamp* of the files (relative paths, sizes and
modification times: one ``stat`` per file); any edit changes the stamp and
the digest is recomputed. Without a writable cache directory it is simply
recomputed once per process.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
from pathlib import Path

_HEX64 = re.compile(r"[0-9a-f]{64}")


def _files(name: str) -> list[tuple[str, os.stat_result, str]] | None:
    """``(relative path, stat, path)`` of top-level module ``name``'s source files, sorted."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if path is None:
        return None
    if getattr(module, "__path__", None) is None:  # a single-file module
        return [(os.path.basename(path), os.stat(path), path)]
    root = os.path.dirname(path)
    skip = len(root) + 1
    found = []
    todo = [root]
    while todo:  # os.scandir: several times faster than Path.rglob on the hit path
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                if entry.is_dir() and entry.name != "__pycache__":
                    todo.append(entry.path)
                elif entry.name.endswith(".py"):
                    found.append((entry.path[skip:], entry.stat(), entry.path))
    return sorted(found)


def _content_digest(files) -> str:
    h = hashlib.sha256()
    for rel, _, path in files:
        h.update(rel.encode() + b"\0")
        with open(path, "rb") as fh:
            h.update(fh.read() + b"\0")
    return h.hexdigest()


def _stamp(files) -> str:
    text = "".join(f"{rel}:{st.st_size}:{st.st_mtime_ns}\n" for rel, st, _ in files)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def code_digest(module_name: str) -> str | None:
    """SHA-256 of the source of top-level module ``module_name``'s files; None if it has none."""
    files = _files(module_name.partition(".")[0])
    if files is None:
        return None
    memo = _memo_path(module_name.partition(".")[0], _stamp(files))
    if memo is not None:
        try:
            text = memo.read_text()
            if _HEX64.fullmatch(text):
                return text
        except OSError:
            pass
    digest = _content_digest(files)
    if memo is not None:
        _publish(memo, digest)
    return digest


def _memo_path(name: str, stamp: str) -> Path | None:
    from .core import CacheSettings

    directory = CacheSettings.from_env().directory
    return None if directory is None else directory / "code" / f"{name}-{stamp[:40]}"


def _publish(path: Path, digest: str) -> None:
    """Write-then-rename, so a reader never sees half a digest; a read-only cache is fine."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(digest)
        os.replace(tmp, path)
    except OSError:
        pass
