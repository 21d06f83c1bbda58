"""Fingerprints of the compiler's own code and of plugins' code, part of every cache key.

A cache filled by one build of the compiler must never serve another build's
output, even when the version number did not change (a development
checkout, an edited plugin). The key therefore holds a SHA-256 over the
source files of ``gpucompiler`` and of each enabled plugin's top-level
package. The same files give the same digest on every machine, so shared
tiers (Redis, the compile service) still match across machines.

Hashing a package's files costs a few milliseconds, which would dominate a
fresh process's first cache hit. The digest is therefore memoised in the
cache directory under a *stamp* of the files (relative paths, sizes,
modification and change times and inodes: one ``stat`` per file, ≈ 0.4 ms
for gpucompiler's ~90 files); any edit changes the stamp and the digest is
recomputed (and memoised only if the stamp did not change while the files
were read). Without a writable cache directory it is simply
recomputed once per process.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys

from ..settings import CacheSettings

_HEX64 = re.compile(r"[0-9a-f]{64}")


def _root(name: str) -> tuple[str, bool] | None:
    """``(path, is_package)`` of top-level module ``name``'s source; None if it has none."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if path is None:
        return None
    if getattr(module, "__path__", None) is None:  # a single-file module
        return path, False
    return os.path.dirname(path), True


def _sources(root: str, package: bool):
    """``(relative path, os.DirEntry or path)`` of every ``.py`` file of the module at ``root``.

    One ``os.scandir`` per directory (several times faster than ``Path.rglob``);
    a single-file module yields its path.
    """
    if not package:
        yield os.path.basename(root), root
        return
    skip = len(root) + 1
    todo = [root]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                if entry.is_dir():
                    if entry.name != "__pycache__":
                        todo.append(entry.path)
                elif entry.name.endswith(".py"):
                    yield entry.path[skip:], entry


def _scan(root: str, package: bool) -> list[tuple[str, str]]:
    """``(relative path, path)`` of every source file, sorted."""
    return sorted((rel, f.path if isinstance(f, os.DirEntry) else f) for rel, f in _sources(root, package))


def _stamp(root: str, package: bool) -> str:
    """Digest of every source file's relative path, size, modification and change times and inode.

    One ``stat`` per file: the floor for noticing an edit. Any edit changes the
    modification and change times (a tool that restores an old mtime still
    changes the ctime; a file replaced by a rename has a new inode), so an
    edited tree never matches the memo of another.
    """
    rows = []
    for rel, f in _sources(root, package):
        st = f.stat() if isinstance(f, os.DirEntry) else os.stat(f)
        rows.append(f"{rel}\0{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}")
    rows.sort()
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def _content_digest(files) -> str:
    h = hashlib.sha256()
    for rel, path in files:
        h.update(rel.encode() + b"\0")
        with open(path, "rb") as fh:
            h.update(fh.read() + b"\0")
    return h.hexdigest()


@functools.cache
def code_digest(module_name: str) -> str | None:
    """SHA-256 of the source of top-level module ``module_name``'s files; None if it has none."""
    name = module_name.partition(".")[0]
    where = _root(name)
    if where is None:
        return None
    stamp = _stamp(*where)
    memo = _memo_path(name, stamp)
    if memo is not None:
        try:
            with open(memo, "rb") as fh:
                text = fh.read(65).decode("ascii")
            if _HEX64.fullmatch(text):
                return text
        except (OSError, UnicodeDecodeError):
            pass
    digest = _content_digest(_scan(*where))
    if memo is not None and _stamp(*where) == stamp:  # no file changed while it was read
        _publish(memo, digest)
    return digest


def _memo_path(name: str, stamp: str) -> str | None:
    directory = CacheSettings.from_env().directory
    return None if directory is None else os.path.join(directory, "code", f"{name}-{stamp[:40]}")


def _publish(path: str, digest: str) -> None:
    """Write-then-rename, so a reader never sees half a digest; a read-only cache is fine."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(digest)
        os.replace(tmp, path)
    except OSError:
        pass
