"""The installed plugins' entry points as a key names them, memoised in the cache directory.

Finding an entry point reads every distribution's metadata directory on
``sys.path`` (:mod:`..discovery`: ~5 ms beside 600 distributions, once per
process, shared with the plugin registry). What a key needs of them (each
one's module, class and ``distribution==version``) is therefore kept in
``<cache dir>/code/entry-points-<digest of sys.path>.json`` with the stamps the
read took (:func:`..discovery.row`: size, modification and change times,
inode), which a process checks instead, one ``stat`` call per installed
distribution:

* ``sys.path`` itself (absolute: ``''`` is the working directory), and each of
  its directories: a distribution installed or removed adds or removes its
  ``*.dist-info`` or ``*.egg-info``;
* each ``entry_points.txt`` there, every such metadata directory without one
  (one added to it), and the ``METADATA`` (``PKG-INFO``) of a distribution with
  plugins: an entry point or a version edited in place.

Each stamp is taken before its file is read, so a memo never holds what was
read before a change its stamps miss. Nothing is memoised when the read went
through ``importlib.metadata`` (:mod:`..discovery`: a zip on ``sys.path``,
another finder of distributions on ``sys.meta_path``...). The memo is read and
written like the code digests' (a private cache directory only:
:func:`.codeprint.memo_path`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, NamedTuple

from .. import discovery
from .. import plugin as gp
from ..errors import ConfigError, PluginError
from .codeprint import memo_path, publish, read_memo

_VERSION = 2


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
    the memo gets the registry's read if this call made it, else what the distributions say now
    (a registry read before a distribution changed must not reach other processes)."""
    paths = discovery.search_path()
    memo_file = None if paths is None else memo_path("entry-points", "/" + _digest(paths))
    memo = None if memo_file is None else read_memo(memo_file)
    if memo is not None and paths is not None and _holds(memo, paths):
        row = memo["entry_points"].get(name)
        if row is None:
            return None
        if _well_formed(row):
            return _described(name, *row)
    earlier = gp.read_entry_points()
    ep = gp.entry_point(name)
    found = _described(name, ep.value, ep.dist) if ep is not None else None
    registry = gp.read_entry_points()
    if memo_file is not None and registry is not None and registry.rows is not None:  # a read it can stamp
        current = registry if earlier is None else discovery.scan(gp.ENTRY_POINT_GROUP)
        if current.rows is not None and list(current.paths) == paths:
            publish(memo_file, json.dumps({"version": _VERSION, "path": paths, "rows": current.rows, "entry_points": {
                n: [e.value, e.dist] for n, e in current.first().items()}}))
    return found


def _described(name: str, value: str, dist: str | None) -> Installed:
    try:
        module, attr = discovery.EntryPoint(name, value, gp.ENTRY_POINT_GROUP, dist).reference
    except ConfigError as exc:
        raise PluginError(name, "discovery", value, exc)
    return Installed(name, module, attr, dist)


def _well_formed(row: Any) -> bool:
    return isinstance(row, list) and len(row) == 2 and isinstance(row[0], str) and (row[1] is None or isinstance(row[1], str))


def _digest(paths: list[str]) -> str:
    return hashlib.sha256(json.dumps(paths).encode()).hexdigest()[:16]


def _holds(memo: dict[str, Any], paths: list[str]) -> bool:
    """Whether ``memo``'s stamps still describe the distributions on ``paths``."""
    rows, points = memo.get("rows"), memo.get("entry_points")
    if memo.get("version") != _VERSION or memo.get("path") != paths or not isinstance(points, dict):
        return False
    if not isinstance(rows, dict) or not set(paths) <= set(rows):
        return False
    return all(discovery.row(p) == r for p, r in rows.items())
