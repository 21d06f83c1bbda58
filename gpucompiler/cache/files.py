"""The files of a disk tier, reached without ever following a link.

Other users may write a shared cache directory, so any name inside a tier's
tree may be a symbolic link planted to redirect a read, a write or a
deletion (``entries/ab -> ~/.ssh``). Every operation here therefore starts
from a descriptor of the tier's root and opens one component at a time with
``O_NOFOLLOW`` (directories also with ``O_DIRECTORY``): a link is an
``OSError`` (``ELOOP``), never a path into someone else's files. Temporary
files are created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name
in the target directory and renamed into place through the same
descriptor; only regular files found with ``lstat`` semantics are unlinked.
The root itself is opened normally: it is the configured path.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

from ..errors import CacheCorruptionError

_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_DIR_FLAGS = _ROOT_FLAGS | os.O_NOFOLLOW
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class LinkInTree(OSError):
    """A name inside a tier's tree is a link (or not a directory) where a directory belongs."""


class Modes(NamedTuple):
    """Permissions of the directories and files a tier creates (applied with ``fchmod``: no umask).
    (A named tuple: an attrs class costs ~0.2 ms to create, on the path of a fresh process's cache hit.)"""

    directory: int
    file: int


#: the private tier: this user only
PRIVATE = Modes(0o700, 0o600)
#: a shared directory: the group of its (setgid) root may read and publish; others nothing
GROUP = Modes(0o2770, 0o660)


@contextmanager
def directory(root: str | int, parts: Sequence[str], create: Modes | None = None) -> Generator[int, None, None]:
    """A descriptor of ``root/parts[0]/parts[1]/…``, each part opened with ``O_NOFOLLOW``
    (``root``: a path, or a directory descriptor of one).

    With ``create``, missing parts are made with its directory mode.
    ``FileNotFoundError`` when a part is missing; :class:`LinkInTree` when a
    part is a link or not a directory.
    """
    fd = os.dup(root) if isinstance(root, int) else os.open(root, _ROOT_FLAGS)
    try:
        for part in parts:
            made = False
            if create is not None:
                try:
                    os.mkdir(part, create.directory & 0o777, dir_fd=fd)
                    made = True
                except FileExistsError:
                    pass
            try:
                sub = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise LinkInTree(exc.errno, "a link or not a directory: never followed", part) from None
                raise
            os.close(fd)
            fd = sub
            if made and create is not None:
                os.fchmod(fd, create.directory)  # the umask and the setgid bit
        yield fd
    finally:
        os.close(fd)


def read_regular(dir_fd: int, name: str, limit: int, where: str) -> bytes | None:
    """The bytes of the regular file ``name`` in ``dir_fd`` (None when absent); its atime/mtime touched.

    A link, a FIFO, a device or a file over ``limit`` bytes is a
    :class:`CacheCorruptionError`: it neither redirects nor blocks the reader, nor fills its memory.
    """
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CacheCorruptionError(where, "is a symbolic link, not an entry file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CacheCorruptionError(where, "is not a regular file")
        if st.st_size > limit:
            raise CacheCorruptionError(where, f"{st.st_size} bytes, over the entry limit of {limit}")
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, max(st.st_size + 1 - size, 1 << 16))
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise CacheCorruptionError(where, f"grew over the entry limit of {limit} bytes while read")
            chunks.append(chunk)
        try:
            os.utime(fd)  # least recently used order
        except OSError:
            pass  # a read-only cache, or another user's file in a shared one
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_atomic(dir_fd: int, name: str, data: bytes, mode: int) -> None:
    """Publish ``data`` as ``name`` in ``dir_fd``: a new temporary file (``O_EXCL | O_NOFOLLOW``,
    random name), then a rename over ``name`` (a reader sees no file or a whole one)."""
    tmp = f".tmp-{os.urandom(8).hex()}"
    fd = os.open(tmp, _NEW_FLAGS, mode & 0o777, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    finally:
        os.close(fd)


def unlink_regular(dir_fd: int, name: str) -> bool:
    """Remove ``name`` from ``dir_fd`` if it is a regular file (never through a link); whether it was."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    try:
        os.unlink(name, dir_fd=dir_fd)  # swapped for a link meanwhile: the link goes, not its target
    except FileNotFoundError:
        return False
    return True


def listing(dir_fd: int) -> Iterator[os.DirEntry[str]]:
    """The entries of ``dir_fd`` (``os.scandir`` of a descriptor: names only, nothing followed)."""
    with os.scandir(dir_fd) as entries:
        yield from entries
