"""Fingerprints of the compiler's own code and of plugins' code, part of every cache key.

A cache filled by one build of the compiler must never serve another build's
output, even when the version number did not change (a development
checkout, an edited plugin). The key therefore holds a SHA-256 over the
source files of ``gpucompiler`` and of each enabled plugin's top-level
package. The same files give the same digest on every machine, so shared
tiers (Redis, the compile service) still match across machines.

Hashing a package's files costs milliseconds, and even one ``stat`` per
file (~90 for gpucompiler) is most of a fresh process's first cache hit.
The digest is therefore computed once per installation and kept in the
cache directory (``code/<name>-<path digest>.json``) with a *stamp*; a
process checks the stamp, not the files:

* every directory of the package and its ``__pycache__``: modification
  time and inode (a file added, removed or replaced by a rename, as pip,
  git and most editors do, changes its directory);
* modules already imported: nothing more. The import system compared each
  one's source with its ``.pyc`` and, when the source had changed, wrote a
  new one into ``__pycache__`` (a rename, so that directory changed);
* every other source file (not imported yet, or in a directory without a
  writable ``__pycache__``, or every file when bytecode is not written,
  ``PYTHONDONTWRITEBYTECODE``): its size, modification and change times
  and inode;
* a package installed in a site-packages directory (not a source
  checkout): its directories alone. pip writes new files and removes old
  ones; an installed file edited in place is not noticed.

So a process computes the digest anew exactly when the code it runs, or
would import, differs from the recorded one; the check costs a stat per
directory (~30) and one per module not imported (~15) instead of one per
file. Without a writable cache directory the digest is recomputed once per
process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import site
import sys

from ..settings import CacheSettings, private_directory_problem

_STAMP_VERSION = 1


def stat_row(path: str) -> list[int] | None:
    """A file's stamp: size, modification and change times, inode (None when it cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _dir_row(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_ino]


def _is_imported(name: str, root: str, path: str) -> bool:
    """Whether source file ``path`` of top-level module ``name`` (at ``root``) is the file of a module in
    ``sys.modules`` (its ``.pyc`` was checked on import): one lookup of the name the path gives, not a walk
    over every loaded module (thousands in a process that imported CuPy or PyTorch)."""
    if path == root:
        module = name
    elif path.startswith(root + os.sep) and path.endswith(".py"):
        parts = path[len(root) + 1:-3].split(os.sep)
        if parts[-1] == "__init__":
            parts.pop()
        module = ".".join((name, *parts))
    else:
        return False
    return getattr(sys.modules.get(module), "__file__", None) == path


def _stamp(root: str, files: list[tuple[str, str]]) -> dict:
    """The stamp of the module at ``root`` with source ``files`` (see the module docstring)."""
    dirs = sorted({os.path.dirname(p) for _, p in files})
    trusted = {d for d in dirs if os.access(os.path.join(d, "__pycache__"), os.W_OK)}
    return {"version": _STAMP_VERSION, "root": root, "installed": _installed(root),
            "dirs": {d: [_dir_row(d), _dir_row(os.path.join(d, "__pycache__")), d in trusted] for d in dirs},
            "files": {p: stat_row(p) for _, p in files}}


def _installed(root: str) -> bool:
    """Whether ``root`` lies in a site-packages directory: installed, not a source checkout."""
    where = os.path.dirname(os.path.abspath(root))
    return any(where == os.path.abspath(d) for d in (*site.getsitepackages(), site.getusersitepackages()))


def _holds(memo: dict, root: str, name: str) -> bool:
    """Whether ``memo``'s stamp still describes the code of ``name`` at ``root`` in this process."""
    if memo.get("version") != _STAMP_VERSION or memo.get("root") != root:
        return False
    trusted = set()
    writes_bytecode = not sys.dont_write_bytecode and sys.pycache_prefix is None
    for d, (row, cache_row, writable) in memo["dirs"].items():
        if _dir_row(d) != row or _dir_row(os.path.join(d, "__pycache__")) != cache_row:
            return False
        if writable and writes_bytecode:
            trusted.add(d)
    if memo.get("installed") and _installed(root):
        return True  # pip replaces files (their directories change); nobody edits them in place
    for path, row in memo["files"].items():
        if os.path.dirname(path) in trusted and _is_imported(name, root, path):
            continue
        if stat_row(path) != row:
            return False
    return True


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
    return tree_digest(name, *where)


def source_files(module_name: str) -> list[tuple[str, str]] | None:
    """``(relative path, path)`` of the source files :func:`code_digest` covers, sorted; None if none."""
    where = _root(module_name.partition(".")[0])
    return None if where is None else _scan(*where)


def files_under(directory: str) -> list[tuple[str, str]]:
    """``(relative path, path)`` of every ``.py`` file under ``directory`` (a package), sorted."""
    return _scan(directory, True)


def tree_digest(name: str, root: str, package: bool) -> str:
    """SHA-256 of the ``.py`` files under directory ``root`` (``package``) or of the file ``root``,
    memoised in the cache directory as :func:`code_digest` is (not in the process); ``name`` is the dotted module name of ``root``, imported or
    not (its imported modules' ``.pyc`` checks stand in for stats)."""
    return memoised_digest(name, root, root, lambda: _scan(root, package))


def memoised_digest(name: str, root: str, label: str, scan) -> str:
    """The digest of the files ``scan()`` lists, memoised under ``label`` with their stamp (``name``:
    the dotted name of the top-level module at ``root``, for :func:`_holds`)."""
    memo_file = memo_path(name, label)
    if memo_file is not None:
        memo = read_memo(memo_file)
        if memo is not None and _holds(memo, root, name) and _HEX64.fullmatch(str(memo.get("digest"))):
            return memo["digest"]
    files = scan()
    stamp = _stamp(root, files)
    digest = _content_digest(files)
    if memo_file is not None and _stamp(root, files) == stamp:  # no file changed while it was read
        publish(memo_file, json.dumps({**stamp, "digest": digest}))
    return digest


def memo_path(name: str, root: str) -> str | None:
    """Where the memo of ``name`` lives: ``<cache dir>/code/``; None when the cache is off or its
    directory is refused as a private tier (another user could plant or redirect a memo there)."""
    directory = CacheSettings.from_env().directory
    if directory is None:
        return None
    problem = private_directory_problem(os.fspath(directory))
    if problem is not None and not os.path.lexists(directory):  # no cache yet: made owner-only
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError:
            return None
        problem = private_directory_problem(os.fspath(directory))
    if problem is not None:
        return None
    where = hashlib.sha256(os.path.abspath(root).encode()).hexdigest()[:16]
    return os.path.join(directory, "code", f"{name}-{where}.json")


def read_memo(path: str) -> dict | None:
    try:
        with open(path, "rb") as fh:
            memo = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    return memo if isinstance(memo, dict) else None


def publish(path: str, text: str) -> None:
    """A new temporary file (``O_CREAT | O_EXCL | O_NOFOLLOW``, a random name, through a descriptor of
    the memo's directory) renamed over the memo: a reader never sees half a memo, and no planted link
    is written through. A read-only cache is fine."""
    directory, name = os.path.split(path)
    tmp = f".memo-{os.urandom(8).hex()}"
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
    finally:
        os.close(dfd)
