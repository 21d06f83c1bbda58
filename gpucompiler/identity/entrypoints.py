"""The installed plugins' entry points as a key names them, memoised in the cache directory.

Finding an entry point imports :mod:`importlib.metadata` (email, zipfile...:
~12 ms) and reads every distribution's metadata on ``sys.path`` (~8 ms):
half of a fresh process's cache hit with an installed plugin. What a key
needs of one (its module, class and ``distribution==version``) is therefore
kept in ``<cache dir>/code/entry-points-<digest of sys.path>.json`` with a
stamp that a process checks instead, about three ``stat`` calls per
installed distribution:

* ``sys.path`` itself (absolute: ``''`` is the working directory), and the
  modification time and inode of each of its directories: a distribution
  installed or removed adds or removes its ``*.dist-info`` or ``*.egg-info``;
* every such metadata directory found there, its ``entry_points.txt`` and its
  ``METADATA`` (``PKG-INFO``): size, modification and change times, inode
  (an entry point or a version edited in place).

Nothing is memoised when ``importlib.metadata`` could find distributions the
stamp does not see: an entry of ``sys.path`` that is a file (a zip), or a
finder on ``sys.meta_path`` other than the path finder that finds
distributions. The memo is read and written like the code digests' (a
private cache directory only: :func:`.codeprint.memo_path`).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import sys
from typing import Any, NamedTuple

from .. import plugin as gp
from .codeprint import memo_path, publish, read_memo

_VERSION = 1
_METADATA = (".dist-info", ".egg-info")


class Installed(NamedTuple):
    """What a key names of an installed entry point."""

    name: str
    module: str
    attr: str | None
    dist: str | None
    """``distribution==version``; None when the entry point has no distribution"""


def installed(name: str) -> Installed | None:
    """The entry point of group ``gpucompiler.plugins`` named ``name``; None if none is installed.

    On a memo's miss the registry's entry point is the answer (the one this process loads), and
    the memo gets what the distributions say now, read between two equal stamps (a registry read
    before a distribution changed must not reach other processes)."""
    paths = _search_path()
    memo_file = None if paths is None else memo_path("entry-points", "/" + _digest(paths))
    memo = None if memo_file is None else read_memo(memo_file)
    holds = memo is not None and paths is not None and _holds(memo, paths)
    if memo is not None and holds:
        known = memo["names"].get(name, False)
        if known is None:
            return None
        if _well_formed(known):
            return Installed(name, *known)
    found = _described(name, gp.entry_point(name))
    if memo_file is not None and paths is not None:
        _remember(memo_file, memo["names"] if memo is not None and holds else {}, paths, name)
    return found


def _described(name: str, ep: Any) -> Installed | None:
    if ep is None:
        return None
    return Installed(name, ep.module, ep.attr or None, None if ep.dist is None else f"{ep.dist.name}=={ep.dist.version}")


def _remember(memo_file: str, names: dict[str, Any], paths: list[str], name: str) -> None:
    import importlib.metadata  # import time: ~12 ms, on a memo's miss only (imported by the registry's lookup)

    stamp = _stamp(paths)
    if stamp is None:
        return
    current = {ep.name: ep for ep in importlib.metadata.entry_points(group=gp.ENTRY_POINT_GROUP)}.get(name)
    found = _described(name, current)
    if _stamp(paths) == stamp:  # nothing installed or edited while it was read
        publish(memo_file, json.dumps({**stamp, "names": {**names, name: None if found is None else list(found[1:])}}))


def _well_formed(row: Any) -> bool:
    return (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str)
            and all(v is None or isinstance(v, str) for v in row[1:]))


def _search_path() -> list[str] | None:
    """``sys.path``, absolute, when every place ``importlib.metadata`` looks is in it; else None."""
    for finder in sys.meta_path:
        if hasattr(finder, "find_distributions") and finder is not importlib.machinery.PathFinder:
            return None
    if not all(isinstance(p, str) for p in sys.path):
        return None
    return [os.path.abspath(p or os.curdir) for p in sys.path]


def _digest(paths: list[str]) -> str:
    return hashlib.sha256(json.dumps(paths).encode()).hexdigest()[:16]


def _row(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _stamp(paths: list[str]) -> dict[str, Any] | None:
    """The stamp of the distributions on ``paths``; None if one of them is a file (a zip)."""
    dirs, files = {}, {}
    for where in dict.fromkeys(paths):
        dirs[where] = _row(where)
        if dirs[where] is None:
            continue
        if not os.path.isdir(where):
            return None
        try:
            names = sorted(os.listdir(where))
        except OSError:
            continue
        egg = where.lower().endswith(".egg")
        for entry in names:
            low = entry.lower()
            if low.endswith(_METADATA) or (egg and low == "egg-info"):  # importlib.metadata's own test
                meta = os.path.join(where, entry)
                files[meta] = _row(meta)
                for fname in ("entry_points.txt", "METADATA", "PKG-INFO"):
                    files[os.path.join(meta, fname)] = _row(os.path.join(meta, fname))
    return {"version": _VERSION, "path": paths, "dirs": dirs, "files": files}


def _holds(memo: dict[str, Any], paths: list[str]) -> bool:
    """Whether ``memo``'s stamp still describes the distributions on ``paths``."""
    if memo.get("version") != _VERSION or memo.get("path") != paths or not isinstance(memo.get("names"), dict):
        return False
    dirs, files = memo.get("dirs"), memo.get("files")
    if not isinstance(dirs, dict) or not isinstance(files, dict) or set(dirs) != set(paths):
        return False
    return all(_row(p) == row for p, row in dirs.items()) and all(_row(p) == row for p, row in files.items())
