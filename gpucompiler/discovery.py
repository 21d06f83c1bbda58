"""The installed entry points of one group, read from ``sys.path`` as ``importlib.metadata`` finds them.

``importlib.metadata.entry_points(group=...)`` builds a ``Distribution`` for
every installed distribution and an ``EntryPoint`` for every line of every
``entry_points.txt``; beside ~600 distributions (torch, JAX, CuPy...) that is
~16 ms a call, after ~18 ms of importing it (email, csv, zipfile...). This
module reads the same directories the same way and keeps only one group:

* each directory of ``sys.path`` in order, its ``*.dist-info`` and ``*.egg-info``
  children in the listing's order, a distribution of a name already seen left
  out (the first on ``sys.path`` wins; names normalised as PEP 503 says);
* each one's ``entry_points.txt`` read as bytes and parsed only when the group's
  name is in it; a section's lines as ``importlib.metadata`` reads them
  (stripped, ``#`` comments and blank lines skipped, ``[name]`` starts a section,
  ``name = value`` split at the first ``=``);
* ``name==version`` of a distribution with entry points of the group from the
  head of its ``METADATA`` (else ``PKG-INFO``).

Where that could differ, the read goes through ``importlib.metadata`` itself:
a finder of distributions on ``sys.meta_path`` other than the path finder, an
entry of ``sys.path`` that is not a directory (a zip) or not a string, a
metadata directory whose name does not give the distribution's name
(``Foo.DIST-INFO``, ``-1.0.dist-info``, an ``.egg`` directory's ``EGG-INFO``),
a ``METADATA`` head this reader does not take (folded or non-ASCII lines...).
Where ``importlib.metadata`` raises for every group, a distribution is left out
instead: a line without ``=`` in another group's section (``TypeError``) is
skipped; one in this group's section, a file that is not UTF-8 and names the
group (``UnicodeDecodeError``), a file that cannot be read for another reason
than its absence or its permissions (``OSError``) or a plugin distribution's
unreadable ``METADATA`` leaves that distribution's entry points out, with a
``RuntimeWarning`` naming the file (and line), as a plugin that fails to load is
left out of a listing; such a read is not memoised, so every process warns.

Every file and directory read is stamped (:func:`row`) before it is read (a
metadata directory only where it has no ``entry_points.txt``, whose stamp says
more), so that a memo of the entry points checked against these stamps in
another process never holds what was read before a change
(:mod:`.identity.entrypoints`).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import re
import stat
import sys
import warnings
from typing import Any, NamedTuple

from .errors import ConfigError

#: ``module`` or ``module:attr.attr``, optionally followed by extras in brackets (packaging's entry points)
_REFERENCE = re.compile(r"([\w.]+)\s*(?::\s*([\w.]+)\s*)?(?:\[.*\]\s*)?")
_SUFFIXES = (".dist-info", ".egg-info")
_SEPARATORS = re.compile(r"[-_.]+")
#: what a file's absence looks like when ``importlib.metadata`` reads it (no entry points, no metadata)
_ABSENT = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
#: characters a header's name may have (RFC 5322: printable ASCII but ':')
_FIELD = re.compile(r"[\x21-\x39\x3b-\x7e]+")


class EntryPoint(NamedTuple):
    """One entry point of an installed distribution."""

    name: str
    value: str
    """``module:attr`` as written"""
    group: str
    dist: str | None
    """``name==version`` of its distribution"""

    @property
    def reference(self) -> tuple[str, str | None]:
        """``(module, attr or None)`` of :attr:`value`; a value that names no object raises ConfigError."""
        match = _REFERENCE.fullmatch(self.value)
        if match is None:
            raise ConfigError(f"entry point {self.name!r} of group {self.group!r} (distribution {self.dist}) is "
                              f"{self.value!r}, not 'module' or 'module:attribute'; reinstall the distribution")
        return match[1], match[2]

    def load(self) -> Any:
        """The object the entry point names, its module imported."""
        module, attr = self.reference
        found: Any = importlib.import_module(module)
        for part in filter(None, (attr or "").split(".")):
            found = getattr(found, part)
        return found


class Found(NamedTuple):
    """The entry points of one group on a search path, as one read found them."""

    group: str
    sys_path: tuple[Any, ...]
    """``sys.path`` when it was read, as it was"""
    paths: tuple[str, ...]
    """the directories read (``sys.path``, absolute; empty when read through ``importlib.metadata``
    because of another finder or an entry that is not a string)"""
    entry_points: tuple[EntryPoint, ...]
    """in ``importlib.metadata.entry_points(group=...)``'s order, names repeated as it repeats them"""
    rows: dict[str, list[int] | None] | None
    """:func:`row` of every directory and file read, taken before reading it; None when the read went
    through ``importlib.metadata`` or left a distribution out (not to be memoised)"""

    def first(self) -> dict[str, EntryPoint]:
        """The entry points by name, the first of a name repeated (the one loaded) kept."""
        out: dict[str, EntryPoint] = {}
        for ep in self.entry_points:
            out.setdefault(ep.name, ep)
        return out


def row(path: str) -> list[int] | None:
    """``[size, mtime_ns, ctime_ns, inode]`` of ``path`` (symbolic links followed); None if it is not there."""
    try:
        return _row(os.stat(path))
    except OSError:
        return None


def _row(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def search_path() -> list[str] | None:
    """``sys.path``, absolute, when the path finder is the only finder of distributions and every entry is a
    string; else None (``importlib.metadata`` must be asked)."""
    for finder in sys.meta_path:
        if hasattr(finder, "find_distributions") and finder is not importlib.machinery.PathFinder:
            return None
    if not all(isinstance(p, str) for p in sys.path):
        return None
    return [os.path.abspath(p or os.curdir) for p in sys.path]


class _Different(Exception):
    """The read must go through importlib.metadata (see the module's docstring)."""


def scan(group: str) -> Found:
    """The entry points of ``group`` on ``sys.path`` now."""
    snapshot, paths = tuple(sys.path), search_path()
    if paths is not None:
        try:
            return _scan(group, snapshot, paths)
        except _Different:
            pass
    return _through_importlib(group, snapshot, tuple(paths or ()))


def _scan(group: str, snapshot: tuple[Any, ...], paths: list[str]) -> Found:
    rows: dict[str, list[int] | None] = {}
    found: list[EntryPoint] = []
    problems: list[ConfigError] = []
    seen: set[str] = set()
    needle = group.encode()
    for where in dict.fromkeys(paths):
        try:
            st = os.stat(where)
        except OSError:
            rows[where] = None
            continue
        rows[where] = _row(st)
        if not stat.S_ISDIR(st.st_mode):
            raise _Different(where)  # a zip: its distributions listed by importlib.metadata
        for child, name in _metadata_children(where):
            if name in seen:
                continue  # a distribution of this name earlier on sys.path wins
            seen.add(name)
            meta = os.path.join(where, child)
            rows[meta] = row(meta)  # an entry_points.txt added to it changes its stamp
            try:
                text = _read(meta + os.sep + "entry_points.txt", rows, needle)
                if rows.get(meta + os.sep + "entry_points.txt") is not None:
                    del rows[meta]  # the file's own stamp says more (and a METADATA read is stamped too)
                points = [] if text is None else _section(text, group, meta + os.sep + "entry_points.txt")
                if points:
                    dist = _dist(meta, rows)
                    found.extend(EntryPoint(n, v, group, dist) for n, v in points)
            except ConfigError as exc:
                problems.append(exc)
    _warn(problems)
    return Found(group, snapshot, tuple(paths), tuple(found), None if problems else rows)


def _warn(problems: list[ConfigError]) -> None:
    for problem in problems:
        warnings.warn(f"{problem}; its entry points are left out", RuntimeWarning, stacklevel=4)


def _metadata_children(where: str) -> list[tuple[str, str]]:
    """The metadata directories in ``where`` and their distributions' normalised names, in the listing's order.

    importlib.metadata groups them by their lowercase name first, then tells them apart by the name before
    the suffix: where the suffix is spelled as is the two are one name, so that the first of each name and
    the order of the names are the listing's (else it reads the name from METADATA: not read here).
    """
    try:
        children = os.listdir(where)
    except OSError:
        return []
    egg = os.path.basename(where).lower().endswith(".egg")
    out: list[tuple[str, str]] = []
    for child in children:
        low = child.lower()
        if low.endswith(_SUFFIXES):
            stem, suffix = os.path.splitext(child)
            name = _normalize(stem.partition("-")[0]) if suffix in _SUFFIXES else ""
            if not name:
                raise _Different(child)
            out.append((child, name))
        elif egg and low == "egg-info":
            raise _Different(where)  # an egg's name is in its metadata
    return out


def _normalize(name: str) -> str:
    """PEP 503's normalised name, dashes as underscores (as importlib.metadata compares them)."""
    if "-" in name or "." in name or "__" in name:
        return _SEPARATORS.sub("_", name).lower()
    return name.lower()


def _read(path: str, rows: dict[str, list[int] | None], needle: bytes | None = None) -> str | None:
    """The text of ``path`` (UTF-8), stamped in ``rows`` (unless it does not exist); None when
    importlib.metadata finds it absent (a directory, no permission...) or when it does not hold ``needle``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None  # created later, it changes its directory's stamp
    except _ABSENT:
        rows[path] = row(path)
        return None
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read ({exc}); repair or reinstall its distribution")
    try:
        st = os.fstat(fd)
        rows[path] = _row(st)
        if stat.S_ISDIR(st.st_mode):
            return None
        chunks: list[bytes] = []
        while chunk := os.read(fd, max(st.st_size, 4095) + 1):
            chunks.append(chunk)
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read ({exc}); repair or reinstall its distribution")
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if needle is not None and needle not in data:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 ({exc}); repair or reinstall its distribution")


def _section(text: str, group: str, path: str) -> list[tuple[str, str]]:
    """The ``(name, value)`` lines of section ``[group]`` of an ``entry_points.txt``."""
    out: list[tuple[str, str]] = []
    section = None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section == group:
            name, equals, value = line.partition("=")
            if not equals:
                raise ConfigError(f"{path}:{number}: {line!r} in section [{group}] is not 'name = value'; "
                                  "repair or reinstall its distribution")
            out.append((name.strip(), value.strip()))
    return out


def _dist(meta: str, rows: dict[str, list[int] | None]) -> str:
    """``name==version`` of the distribution whose metadata directory is ``meta``: from its ``METADATA``, or
    its ``PKG-INFO`` when that is absent or empty (both stamped: created later, one changes the version)."""
    for name in ("METADATA", "PKG-INFO"):
        path = os.path.join(meta, name)
        rows[path] = None
        text = _read(path, rows)
        if text:
            head = _head(text)
            return f"{head[0]}=={head[1]}" if head is not None else _dist_through_importlib(meta)
    return _dist_through_importlib(meta)


def _head(text: str) -> tuple[str, str] | None:
    """``(Name, Version)`` from the head of a ``METADATA`` as the email parser reads them (the first of each
    field, the value after ``:`` and leading blanks); None where the lines up to them hold anything else
    than one-line printable ASCII fields (a fold, an encoding, a line ending in CR...)."""
    fields: dict[str, str] = {}
    last = ""
    for line in text.split("\n"):
        folded = line[:1] in (" ", "\t")
        if "name" in fields and "version" in fields and not folded:
            return fields["name"], fields["version"]
        if not (line.isascii() and line.isprintable()):
            return None
        if folded:
            if last in ("", "name", "version"):
                return None  # a folded Name or Version, or a head that begins folded
            continue
        field, colon, value = line.partition(":")
        if not (colon and _FIELD.fullmatch(field)):
            return None  # the end of the head (a blank line) before both, or a line the parser takes otherwise
        last = field.lower()
        fields.setdefault(last, value.lstrip(" \t"))
    return (fields["name"], fields["version"]) if "name" in fields and "version" in fields else None


def _dist_through_importlib(meta: str) -> str:
    import importlib.metadata  # import time: ~18 ms, for a METADATA this module does not read

    try:
        dist = importlib.metadata.Distribution.at(meta)
        return f"{dist.name}=={dist.version}"
    except Exception as exc:
        raise ConfigError(f"the metadata of the distribution at {meta} cannot be read ({type(exc).__name__}: "
                          f"{exc}); reinstall it")


def _through_importlib(group: str, snapshot: tuple[Any, ...], paths: tuple[str, ...]) -> Found:
    import importlib.metadata  # import time: ~18 ms, for distributions this module does not list

    try:
        listed = importlib.metadata.entry_points(group=group)
    except Exception as exc:  # a malformed entry_points.txt anywhere: importlib.metadata lists nothing
        raise ConfigError(f"importlib.metadata cannot list the installed entry points ({type(exc).__name__}: {exc}); "
                          "repair or reinstall the distribution it names")
    found: list[EntryPoint] = []
    problems: list[ConfigError] = []
    for ep in listed:
        dist = getattr(ep, "dist", None)
        try:
            named = None if dist is None else f"{dist.name}=={dist.version}"
        except Exception as exc:
            problems.append(ConfigError(f"the metadata of the distribution of entry point {ep.name!r} ({ep.value}) "
                                        f"cannot be read ({type(exc).__name__}: {exc}); reinstall it"))
            continue
        found.append(EntryPoint(ep.name, ep.value, ep.group, named))
    _warn(problems)
    return Found(group, snapshot, paths, tuple(found), None)
