"""The cache tiers: in-process memory, local disk, Redis.

Every tier maps a key (hex SHA-256) to the bytes of an entry
(:mod:`.entry`); the memory tier keeps decoded entries. Tiers do no policy:
checking entries, falling back and logging are :class:`~.core.Cache`'s job.
"""
# redis-py's Redis.from_url takes untyped keyword arguments
# pyright: reportUnknownMemberType=false

from __future__ import annotations

import errno
import functools
import logging
import os
import re
import stat
import time
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from collections.abc import Generator

from ..errors import CacheCorruptionError, CacheError, CacheWarning
from . import later
from .entry import Entry
from .files import PRIVATE, LinkInTree, Modes, directory, listing, read_regular, unlink_regular, write_atomic

log = logging.getLogger("gpucompiler.cache")

#: the largest entry a tier hands out (an entry of a big kernel is a few MiB)
MAX_ENTRY_BYTES = 256 << 20
_KEY = re.compile(r"[0-9a-f]{64}")


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

    ``root/entries/ab/abcdef…`` holds an entry; it is written to a new
    temporary file in the same directory and renamed over the final name, so
    a reader sees either no file or a whole one. A hit touches the file's
    mtime; when the total size passes ``max_bytes`` the oldest files go until
    the total is at most 90 % of it. ``root/locks/<key>.lock`` serialise the
    compiles of one key across processes (``flock``). Nothing inside ``root``
    is reached through a link (:mod:`.files`); links found there are skipped
    with a warning. ``modes``: :data:`~.files.PRIVATE` (0700/0600) or
    :data:`~.files.GROUP` (0o2770/0660, a shared directory).
    """

    name = "disk"
    shared = False

    def __init__(self, root: str | os.PathLike[str], max_bytes: int = 1 << 30, *, name: str = "disk",
                 modes: Modes = PRIVATE):
        self.name = name
        self.root = Path(root)
        self._root = os.fspath(root)
        self.entries = self.root / "entries"
        self.locks = self.root / "locks"
        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_bytes, MAX_ENTRY_BYTES)
        self.modes = modes

    def path(self, key: str) -> Path:
        return self.entries / key[:2] / key

    @staticmethod
    def _check(key: str) -> str:
        if not _KEY.fullmatch(key):
            raise CacheError(f"{key!r} is not a cache key (64 hex digits)")
        return key

    def get(self, key: str) -> bytes | None:
        where = f"{self.name}:{key}"
        try:
            with directory(self._root, ("entries", self._check(key)[:2])) as fd:
                return read_regular(fd, key, self.max_entry_bytes, where)
        except FileNotFoundError:
            return None
        except LinkInTree:
            raise CacheCorruptionError(where, "its directory is a link or not a directory (never followed)") from None

    def put(self, key: str, data: bytes) -> None:
        """Publish ``data`` atomically (a new temporary file, renamed); OSError when not writable. The eviction
        pass that follows runs when a compiling ``@jit`` call has returned (:mod:`.later`), else now."""
        os.makedirs(self.root, mode=self.modes.directory & 0o777, exist_ok=True)
        with directory(self._root, ("entries", self._check(key)[:2]), self.modes) as fd:
            write_atomic(fd, key, data, self.modes.file)
        # the pass lists the whole directory: inside a compiling call, after it (:func:`.later.after`)
        later.after(functools.partial(self.evict, keep=key), f"evict {self.name}")

    def delete(self, key: str) -> bool:
        """Remove the entry file of ``key`` (a regular file only, reached through no link)."""
        try:
            with directory(self._root, ("entries", self._check(key)[:2])) as fd:
                return unlink_regular(fd, key)
        except FileNotFoundError:
            return False
        except LinkInTree:
            self._skip(self.entries / key[:2])
            return False

    def files(self) -> list[tuple[str, int, float]]:
        """``(key, size, mtime)`` of every entry file (links and stray names skipped, never followed)."""
        out: list[tuple[str, int, float]] = []
        try:
            with directory(self._root, ("entries",)) as top:
                for sub in listing(top):
                    if sub.is_symlink():
                        self._skip(self.entries / sub.name)
                    elif sub.is_dir(follow_symlinks=False) and len(sub.name) == 2:
                        self._scan(top, sub.name, out)
        except (FileNotFoundError, NotADirectoryError):
            pass  # no cache yet, or an unusable root: nothing to list
        except LinkInTree:
            self._skip(self.entries)
        return out

    def _scan(self, top: int, sub: str, out: list[tuple[str, int, float]]) -> None:
        try:
            with directory(top, (sub,)) as fd:
                for f in listing(fd):
                    if f.is_symlink():
                        self._skip(self.entries / sub / f.name)
                        continue
                    if not (_KEY.fullmatch(f.name) and f.name.startswith(sub)):
                        continue  # temporary files, strays
                    try:
                        st = f.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if stat.S_ISREG(st.st_mode):
                        out.append((f.name, st.st_size, st.st_mtime))
        except FileNotFoundError:
            pass
        except LinkInTree:
            self._skip(self.entries / sub)

    def _skip(self, path: Path) -> None:
        message = (f"{path} in the {self.name} cache is a symbolic link or not what the cache made: "
                   "skipped (links inside a cache directory are never followed)")
        log.warning(message)
        warnings.warn(message, CacheWarning, stacklevel=4)

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
        import fcntl  # import time: ~0.25 ms, for a miss's lock, not a hit

        try:
            os.makedirs(self.root, mode=self.modes.directory & 0o777, exist_ok=True)
            with directory(self._root, ("locks",), self.modes) as dfd:
                fd = os.open(f"{self._check(key)}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             self.modes.file & 0o777, dir_fd=dfd)
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


#: the value of KEYS[1] if it holds at most ARGV[1] bytes, else its length (one round trip, nothing big sent)
_GET_BOUNDED = """
local n = redis.call('STRLEN', KEYS[1])
if n > tonumber(ARGV[1]) then return n end
return redis.call('GET', KEYS[1])
"""


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
        from .fleet import CircuitBreaker, TierUnavailable  # import time: the fleet's machinery, with Redis only

        self.url = url
        self.prefix = prefix
        self.max_entry_bytes = max_entry_bytes
        self.lock_lease = lock_lease
        self._failures: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self.errors: tuple[type[BaseException], ...] = (*self._failures, TierUnavailable)
        self.breaker = CircuitBreaker(cooldown)
        self.client: Any = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                                **(tls or {}))
        self._get_bounded: Any = self.client.register_script(_GET_BOUNDED)

    def _call(self, what: str, op: Any, *args: Any, **kwargs: Any) -> Any:
        return self.breaker.call(f"redis {what}", op, *args, errors=self._failures, **kwargs)

    def get(self, key: str) -> bytes | None:
        """The entry's bytes; a value over ``max_entry_bytes`` is refused by its length (``STRLEN``, in
        the same server-side script as the ``GET``), never fetched."""
        data = self._call("get", self._get_bounded, keys=[self.prefix + key], args=[self.max_entry_bytes])
        if isinstance(data, int):
            raise CacheCorruptionError(f"redis:{key}", f"{data} bytes, over the entry limit of "
                                                       f"{self.max_entry_bytes}: not fetched")
        return data or None

    def put(self, key: str, data: bytes) -> None:
        self._call("set", self.client.set, self.prefix + key, data)

    def delete(self, key: str) -> bool:
        return bool(self._call("delete", self.client.delete, self.prefix + key))

    @contextmanager
    def lock(self, key: str, wait: float = 600.0) -> Generator[bool, None, None]:
        """Hold the fleet's compile lock of ``key``; yields False when Redis cannot be used."""
        from .fleet import LeaseLock  # loaded by __init__

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
