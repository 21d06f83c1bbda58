"""The cache tiers: in-process memory, local disk, Redis.

Every tier maps a key (hex SHA-256) to the bytes of an entry
(:mod:`.entry`); the memory tier keeps decoded entries. Tiers do no policy:
checking entries, falling back and logging are :class:`~.core.Cache`'s job.
"""
# redis-py's Redis.from_url takes untyped keyword arguments
# pyright: reportUnknownMemberType=false

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from collections.abc import Generator

from ..errors import CacheCorruptionError, CacheError
from .entry import Entry
from .fleet import CircuitBreaker, LeaseLock, TierUnavailable

#: the largest entry a tier hands out (an entry of a big kernel is a few MiB)
MAX_ENTRY_BYTES = 256 << 20
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def read_entry_file(path: str, limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` (None when absent).

    A symbolic link, a FIFO, a device or a file over ``limit`` bytes is a
    :class:`CacheCorruptionError`: it neither blocks the reader nor fills its memory.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CacheCorruptionError(path, "is a symbolic link, not an entry file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CacheCorruptionError(path, "is not a regular file")
        if st.st_size > limit:
            raise CacheCorruptionError(path, f"{st.st_size} bytes, over the entry limit of {limit}")
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, max(st.st_size + 1 - size, 1 << 16))
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise CacheCorruptionError(path, f"grew over the entry limit of {limit} bytes while read")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class MemoryTier:
    """Decoded entries of this process, least recently used evicted past ``max_entries``."""

    name = "memory"

    def __init__(self, max_entries: int = 512):
        self.max_entries = max_entries
        self._entries: OrderedDict[str, Entry] = OrderedDict()

    def get(self, key: str) -> Entry | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, entry: Entry) -> None:
        self._entries[entry.key] = entry
        self._entries.move_to_end(entry.key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def delete(self, key: str) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class DiskTier:
    """One file per entry under ``root``; atomic publish, LRU by modification time.

    ``root/entries/ab/abcdef…`` holds an entry; it is written to a temporary
    file in the same directory and renamed over the final name, so a reader
    sees either no file or a whole one. A hit touches the file's mtime; when
    the total size passes ``max_bytes`` the oldest files go until the total
    is at most 90 % of it. ``root/locks/<key>.lock`` serialise the compiles
    of one key across processes (``flock``).
    """

    name = "disk"
    shared = False

    def __init__(self, root: str | os.PathLike[str], max_bytes: int = 1 << 30, *, name: str = "disk"):
        self.name = name
        self.root = Path(root)
        self.entries = self.root / "entries"
        self._entries = os.fspath(self.entries)
        self.locks = self.root / "locks"
        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_bytes, MAX_ENTRY_BYTES)

    def path(self, key: str) -> Path:
        return self.entries / key[:2] / key

    def get(self, key: str) -> bytes | None:
        path = f"{self._entries}/{key[:2]}/{key}"  # strings: a fresh process's hit reads two entries
        data = read_entry_file(path, self.max_entry_bytes)
        if data is None:
            return None
        try:
            os.utime(path)
        except OSError:
            pass  # read-only cache: LRU order is not updated
        return data

    def put(self, key: str, data: bytes) -> None:
        """Publish ``data`` atomically (write a temporary file, rename); OSError when not writable."""
        final = self.path(key)
        os.makedirs(final.parent, mode=0o700, exist_ok=True)
        tmp = final.parent / f".tmp-{os.getpid()}-{time.monotonic_ns()}"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, final)
        except BaseException:
            try:
                tmp.unlink()
            except OSError:
                pass
            raise
        self.evict(keep=key)

    def delete(self, key: str) -> bool:
        try:
            self.path(key).unlink()
            return True
        except FileNotFoundError:
            return False

    def files(self) -> list[tuple[str, int, float]]:
        """``(key, size, mtime)`` of every entry file."""
        out: list[tuple[str, int, float]] = []
        if not self.entries.is_dir():
            return out
        for sub in os.scandir(self.entries):
            if not sub.is_dir():
                continue
            for f in os.scandir(sub.path):
                if f.name.startswith("."):
                    continue
                try:
                    st = f.stat()
                except FileNotFoundError:
                    continue
                out.append((f.name, st.st_size, st.st_mtime))
        return out

    def evict(self, keep: str | None = None) -> list[str]:
        """Remove least recently used entries while the total exceeds ``max_bytes``; returns their keys."""
        files = self.files()
        total = sum(size for _, size, _ in files)
        removed: list[str] = []
        if total <= self.max_bytes:
            return removed
        for key, size, _ in sorted(files, key=lambda f: f[2]):
            if total <= self.max_bytes * 0.9:
                break
            if key != keep and self.delete(key):
                total -= size
                removed.append(key)
        return removed

    def clear(self) -> int:
        keys = [k for k, _, _ in self.files()]
        return sum(self.delete(k) for k in keys)

    @contextmanager
    def lock(self, key: str, timeout: float = 120.0) -> Generator[bool, None, None]:
        """Hold the cross-process lock of ``key``; yields False when the lock file cannot be made."""
        try:
            os.makedirs(self.locks, mode=0o700, exist_ok=True)
            fd = os.open(self.locks / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            yield False
            return
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                        raise CacheError(f"timed out after {timeout:.0f} s waiting for the compile "
                                         f"lock {self.locks / key}.lock") from None
                    time.sleep(0.005)
            yield True
        finally:
            os.close(fd)  # closing releases the flock


class RedisTier:
    """A shared tier in Redis: ``<prefix><key>`` holds the entry's bytes.

    Every operation goes through a :class:`~.fleet.CircuitBreaker` (a failing
    server is skipped for ``cooldown`` seconds); :meth:`lock` is the fleet's
    compile lock (:class:`~.fleet.LeaseLock`).
    """

    name = "redis"

    def __init__(self, url: str, prefix: str = "gpuc:v1:", timeout: float = 2.0, *,
                 tls: dict[str, str] | None = None, max_entry_bytes: int = MAX_ENTRY_BYTES,
                 cooldown: float = 30.0, lock_lease: float = 10.0):
        try:
            import redis
        except ImportError:
            raise CacheError(f"GPUC_CACHE_URL={url} needs the redis client: pip install "
                             "'gpucompiler[redis]'") from None
        self.url = url
        self.prefix = prefix
        self.max_entry_bytes = max_entry_bytes
        self.lock_lease = lock_lease
        self._failures: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self.errors: tuple[type[BaseException], ...] = (*self._failures, TierUnavailable)
        self.breaker = CircuitBreaker(cooldown)
        self.client: Any = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                                **(tls or {}))

    def _call(self, what: str, op: Any, *args: Any, **kwargs: Any) -> Any:
        return self.breaker.call(f"redis {what}", op, *args, errors=self._failures, **kwargs)

    def get(self, key: str) -> bytes | None:
        """The entry's bytes, at most ``max_entry_bytes`` of them (GETRANGE: a huge value is not fetched)."""
        data = self._call("get", self.client.getrange, self.prefix + key, 0, self.max_entry_bytes)
        if not data:
            return None
        if len(data) > self.max_entry_bytes:
            raise CacheCorruptionError(f"redis:{key}", f"over the entry limit of {self.max_entry_bytes} bytes")
        return data

    def put(self, key: str, data: bytes) -> None:
        self._call("set", self.client.set, self.prefix + key, data)

    def delete(self, key: str) -> bool:
        return bool(self._call("delete", self.client.delete, self.prefix + key))

    @contextmanager
    def lock(self, key: str, wait: float = 600.0) -> Generator[bool, None, None]:
        """Hold the fleet's compile lock of ``key``; yields False when Redis cannot be used."""
        lease = LeaseLock(self._call, self.client, f"{self.prefix}lock:{key}", self.lock_lease, wait)
        try:
            lease.acquire()
        except self.errors:
            yield False
            return
        try:
            yield True
        finally:
            lease.release()

    def keys(self) -> list[str]:
        n = len(self.prefix)
        return sorted(k.decode()[n:] for k in self.client.scan_iter(match=self.prefix + "*", count=1000)
                      if not k.decode()[n:].startswith("lock:"))

    def clear(self) -> int:
        keys = self.keys()
        if keys:
            self.client.delete(*[self.prefix + k for k in keys])
        return len(keys)
