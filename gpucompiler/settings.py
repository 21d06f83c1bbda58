"""Every environment switch of the package, read in this one module into typed objects.

No other module reads ``os.environ``: the cache, the stages, the toolchain
finder and the CUDA runtime receive these objects (or call the readers
below, which take the environment as an argument for tests).

* :class:`CacheSettings`: ``GPUC_CACHE`` (``off`` turns the disk and shared tiers off),
  ``GPUC_CACHE_DIR``, ``GPUC_CACHE_SIZE``, ``GPUC_CACHE_URL`` (Redis),
  ``GPUC_CACHE_SHARED_DIR``, ``GPUC_CACHE_SECRET`` / ``GPUC_CACHE_SECRET_FILE``,
  ``GPUC_CACHE_REDIS_CA`` / ``_CERT`` / ``_KEY``, ``GPUC_SERVICE_URL``,
  ``GPUC_SERVICE_TOKEN`` / ``GPUC_SERVICE_TOKEN_FILE`` (both ends of the service),
  ``GPUC_SERVICE_FALLBACK``, ``XDG_CACHE_HOME``;
  :func:`runtime_dir`: ``XDG_RUNTIME_DIR`` (where ``gpuc serve`` writes a generated token);
* :class:`CompileSettings`: ``GPUC_DUMP_DIR`` (dump every stage's IR);
* :class:`LogSettings`: ``GPUC_LOG`` (``info`` or ``debug``: the compile's log records on stderr);
* :class:`TierSettings`: ``GPUC_TIER`` (``off``: ``@jit`` functions compile at their full level at once);
* :class:`ToolchainSettings`: ``GPUC_PTXAS``, ``GPUC_LIBDEVICE``, ``CUDA_HOME``,
  ``CUDA_PATH``, ``CUDA_ROOT``;
* :class:`ROCmSettings`: ``GPUC_ROCM_DEVICE_LIBS``, ``ROCM_PATH``, ``HIP_PATH`` (the AMD device libraries);
* :class:`RuntimeSettings`: ``GPUC_DEVICE_HEAP`` (device heap for kernels that call malloc);
* :class:`ParallelSettings`: ``GPUC_NUM_THREADS`` (threads of parallel loops; default: the usable CPUs);
* :func:`debug_tracebacks`: ``GPUC_DEBUG_TRACEBACKS`` (errors at the API keep the compiler's frames).
"""

from __future__ import annotations

import functools
import os
import re
import stat
import warnings
from pathlib import Path
from collections.abc import Mapping
from urllib.parse import urlsplit

import attrs

from .errors import CacheError, CacheWarning, ConfigError, LaunchError

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``"512M"`` -> bytes; plain digits are bytes."""
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    unit = t[-1] if t and t[-1] in _UNITS else ""
    try:
        return int(float(t[:len(t) - len(unit)]) * _UNITS[unit])
    except ValueError:
        raise CacheError(f"GPUC_CACHE_SIZE={text!r} is not a size; write e.g. 512M or 2G") from None


def default_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``GPUC_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpucompiler``, else ``~/.cache/gpucompiler``: platformdirs'
    ``user_cache_dir`` on Linux (a relative ``XDG_CACHE_HOME`` is ignored, as the XDG spec says), read from
    ``environ`` (docs/architecture.md, "Libraries, and what stays hand-written")."""
    if environ.get("GPUC_CACHE_DIR"):
        return Path(environ["GPUC_CACHE_DIR"])
    base = environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpucompiler"


#: every variable the cache settings are read from (``HOME`` through ``~``)
_CACHE_VARS = ("GPUC_CACHE", "GPUC_CACHE_DIR", "GPUC_CACHE_SIZE", "GPUC_CACHE_URL", "GPUC_SERVICE_URL",
               "GPUC_SERVICE_TOKEN", "GPUC_CACHE_SECRET", "GPUC_CACHE_SECRET_FILE", "GPUC_CACHE_SHARED_DIR",
               "GPUC_CACHE_REDIS_CA", "GPUC_CACHE_REDIS_CERT", "GPUC_CACHE_REDIS_KEY", "XDG_CACHE_HOME", "HOME",
               "GPUC_SERVICE_TOKEN_FILE", "GPUC_CACHE_LOCK_LEASE", "GPUC_SERVICE_FALLBACK")


def runtime_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``$XDG_RUNTIME_DIR/gpucompiler``, else ``~/.local/share/gpucompiler/runtime`` (as Jupyter's)."""
    base = environ.get("XDG_RUNTIME_DIR")
    if base:
        return Path(base) / "gpucompiler"
    return Path(os.path.expanduser("~")) / ".local" / "share" / "gpucompiler" / "runtime"


def _service_token(environ: Mapping[str, str]) -> str | None:
    """``GPUC_SERVICE_TOKEN``, else the contents of ``GPUC_SERVICE_TOKEN_FILE``."""
    if environ.get("GPUC_SERVICE_TOKEN"):
        return environ["GPUC_SERVICE_TOKEN"]
    path = environ.get("GPUC_SERVICE_TOKEN_FILE")
    if not path:
        return None
    try:
        return Path(path).read_text().strip() or None
    except OSError as exc:
        raise CacheError(f"GPUC_SERVICE_TOKEN_FILE={path}: {exc.strerror}") from None


def _seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    text = environ.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise CacheError(f"{name}={text!r} is not a positive number of seconds")
    return value


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (a URL's host name, brackets removed) names this machine's loopback interface."""
    if host is None:
        return False
    host = host.lower().rstrip(".")
    if host in ("localhost", "::1", "0:0:0:0:0:0:0:1"):
        return True
    parts = host.split(".")
    return len(parts) == 4 and parts[0] == "127" and all(p.isdigit() and int(p) < 256 for p in parts)


def _switch(environ: Mapping[str, str], name: str, default: bool) -> bool:
    text = environ.get(name, "").strip().lower()
    if not text:
        return default
    if text in ("1", "on", "yes", "true"):
        return True
    if text in ("0", "off", "no", "false"):
        return False
    raise CacheError(f"{name}={environ[name]!r}: write on or off")


def _check_redis_url(url: str) -> None:
    """Warn about a Redis off this machine reached without a password or without TLS: its entries are
    still authenticated (MAC), but anyone who reaches it can fill or empty the tier, or read the code."""
    parts = urlsplit(url)
    if parts.scheme == "unix" or is_loopback(parts.hostname):
        return
    problems = [p for p, bad in (("no password", not parts.password),
                                 ("no TLS (rediss://)", parts.scheme != "rediss")) if bad]
    if problems:
        warnings.warn(f"GPUC_CACHE_URL reaches {parts.hostname} with {' and '.join(problems)}: anyone on the "
                      "way can read, fill or empty the shared tier (entries stay authenticated by their MAC)",
                      CacheWarning, stacklevel=4)


def read_secret_file(path: str) -> bytes:
    """The secret in ``path``: a regular file of this user that nobody else can read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise CacheError(f"GPUC_CACHE_SECRET_FILE={path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
            raise CacheError(f"GPUC_CACHE_SECRET_FILE={path} is not a regular file of at most 4 KiB")
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise CacheError(f"GPUC_CACHE_SECRET_FILE={path} must belong to this user and be readable by "
                             f"no one else (mode {stat.S_IMODE(st.st_mode):o}; chmod 600 {path})")
        return os.read(fd, 4097).strip()
    finally:
        os.close(fd)


def private_directory_problem(path: str) -> str | None:
    """Why ``path`` (a directory) cannot be a private cache tier, or None when it can.

    Another user who can write to it, or its owner when that is not this
    user, could plant object code this process would run.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot stat it ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != os.getuid():
        return f"it belongs to uid {st.st_uid}, not to this user ({os.getuid()})"
    if st.st_mode & 0o022:
        return f"others can write to it (mode {stat.S_IMODE(st.st_mode):o}; chmod 700 it)"
    return None


@attrs.frozen
class CacheSettings:
    """Environment switches of the cache and the compile service."""

    directory: Path | None
    """``GPUC_CACHE_DIR`` (or the per-user default); None when ``GPUC_CACHE=off``."""
    max_bytes: int = 1 << 30
    """``GPUC_CACHE_SIZE``: bound of the disk tier (LRU eviction past it)."""
    redis_url: str | None = None
    """``GPUC_CACHE_URL=redis://…``: the shared tier."""
    service_url: str | None = None
    """``GPUC_SERVICE_URL``: compile misses on this service."""
    service_token: str | None = attrs.field(default=None, repr=False)
    """``GPUC_SERVICE_TOKEN``: bearer token sent to the service (and required by ``gpuc serve``)."""
    secret: bytes | None = attrs.field(default=None, repr=False)
    """``GPUC_CACHE_SECRET_FILE`` (a file only this user can read) or ``GPUC_CACHE_SECRET``: the key
    of the MACs that entries from shared tiers must carry."""
    shared_dir: Path | None = None
    """``GPUC_CACHE_SHARED_DIR``: a directory other users may write too (entries signed)."""
    redis_tls: dict[str, str] = attrs.field(factory=dict, hash=False)
    """``GPUC_CACHE_REDIS_CA`` / ``_CERT`` / ``_KEY``: TLS files for a ``rediss://`` URL."""
    lock_lease: float = 10.0
    """``GPUC_CACHE_LOCK_LEASE``: seconds a dead holder of the fleet's compile lock keeps it."""
    service_fallback: bool = True
    """``GPUC_SERVICE_FALLBACK``: compile here when the service cannot be reached or fails (``off``: raise)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> CacheSettings:
        """The settings for ``environ``; parsed once per set of values (a fresh process's hit path)."""
        return _cache_settings(tuple(map(environ.get, _CACHE_VARS)))

    @classmethod
    def parse(cls, environ: Mapping[str, str]) -> CacheSettings:
        off = environ.get("GPUC_CACHE", "").lower() in ("0", "off", "no", "false")
        url = environ.get("GPUC_CACHE_URL") or None
        if url and not url.startswith(("redis://", "rediss://", "unix://")):
            raise CacheError(f"GPUC_CACHE_URL={url!r}: only redis://, rediss:// and unix:// URLs are supported")
        if url and not off:
            _check_redis_url(url)
        secret_file = environ.get("GPUC_CACHE_SECRET_FILE")
        secret = (read_secret_file(secret_file) if secret_file
                  else (environ.get("GPUC_CACHE_SECRET") or "").encode() or None)
        tls = {arg: environ[var] for var, arg in (("GPUC_CACHE_REDIS_CA", "ssl_ca_certs"),
                                                  ("GPUC_CACHE_REDIS_CERT", "ssl_certfile"),
                                                  ("GPUC_CACHE_REDIS_KEY", "ssl_keyfile")) if environ.get(var)}
        if tls and not (url or "").startswith("rediss://"):
            raise CacheError("GPUC_CACHE_REDIS_CA/_CERT/_KEY need a TLS URL: GPUC_CACHE_URL=rediss://…")
        shared = environ.get("GPUC_CACHE_SHARED_DIR")
        return cls(directory=None if off else default_cache_dir(environ),
                   max_bytes=parse_size(environ.get("GPUC_CACHE_SIZE", "1G")),
                   redis_url=None if off else url,
                   service_url=environ.get("GPUC_SERVICE_URL") or None,
                   service_token=_service_token(environ),
                   secret=secret, shared_dir=Path(shared) if shared and not off else None, redis_tls=tls,
                   lock_lease=_seconds(environ, "GPUC_CACHE_LOCK_LEASE", 10.0),
                   service_fallback=_switch(environ, "GPUC_SERVICE_FALLBACK", True))


@functools.lru_cache(maxsize=4)
def _cache_settings(values: tuple[str | None, ...]) -> CacheSettings:
    return CacheSettings.parse({k: v for k, v in zip(_CACHE_VARS, values) if v is not None})


@attrs.frozen
class CompileSettings:
    """Switches that change how the stages of one compile run (read once per compile)."""

    dump_dir: Path | None = None
    """``GPUC_DUMP_DIR``: write ``<job>.<nn>.<stage>.{before,after}.ll`` for every stage."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> CompileSettings:
        dump = environ.get("GPUC_DUMP_DIR")
        return cls(dump_dir=Path(dump) if dump else None)


_LOG_LEVELS = {"": None, "off": None, "0": None, "warning": "WARNING", "info": "INFO", "debug": "DEBUG"}


@attrs.frozen
class LogSettings:
    """``GPUC_LOG``: the level of the ``gpucompiler.*`` loggers, with a handler writing to stderr."""

    level: str | None = None
    """``"INFO"`` (stage times, cache hits and misses with the tier, plugin callbacks), ``"DEBUG"``
    (also each stage's IR size), ``"WARNING"``; None (unset, ``off``): logging as the program set it."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> LogSettings:
        text = environ.get("GPUC_LOG", "")
        if text.strip().lower() not in _LOG_LEVELS:
            raise ConfigError(f"GPUC_LOG={text!r}: write info, debug, warning or off")
        return cls(_LOG_LEVELS[text.strip().lower()])


@attrs.frozen
class TierSettings:
    """``GPUC_TIER``: whether ``@jit`` functions may run quick code first (docs/user_guide.md, "Tiered
    first compiles"); read at each first compile."""

    enabled: bool = True
    """``on`` (the default) or ``off``: every first call waits for the full optimisation level."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> TierSettings:
        text = environ.get("GPUC_TIER", "").strip().lower()
        if text not in ("", "1", "on", "yes", "true", "0", "off", "no", "false"):
            raise ConfigError(f"GPUC_TIER={environ['GPUC_TIER']!r}: write on or off")
        return cls(text not in ("0", "off", "no", "false"))


def debug_tracebacks(environ: Mapping[str, str] = os.environ) -> bool:
    """``GPUC_DEBUG_TRACEBACKS=1``: an error raised at the API (a ``@jit`` call, a kernel launch,
    ``autodiff``) keeps the compiler's frames and its chain of causes; by default the user's frame
    is on top (read on the error path only)."""
    return environ.get("GPUC_DEBUG_TRACEBACKS", "").strip().lower() not in ("", "0", "false", "no", "off")


@attrs.frozen
class ToolchainSettings:
    """Where the CUDA tools are, as far as the environment says."""

    ptxas: str | None = None
    """``GPUC_PTXAS``: an explicit ``ptxas``."""
    libdevice: str | None = None
    """``GPUC_LIBDEVICE``: an explicit ``libdevice.10.bc``."""
    cuda_roots: tuple[Path, ...] = ()
    """``CUDA_HOME``, ``CUDA_PATH``, ``CUDA_ROOT`` (those set, in this order)."""
    linker: str | None = None
    """``GPUC_LINKER``: the linker that makes a native function's shared object (``ld.lld``, ``ld``, ``cc``)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ToolchainSettings:
        roots = tuple(Path(environ[v]) for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT") if environ.get(v))
        return cls(environ.get("GPUC_PTXAS") or None, environ.get("GPUC_LIBDEVICE") or None, roots,
                   environ.get("GPUC_LINKER") or None)


@attrs.frozen
class ROCmSettings:
    """Where the AMD tools are, as far as the environment says."""

    device_libs: Path | None = None
    """``GPUC_ROCM_DEVICE_LIBS``: the folder of ``ocml.bc``."""
    roots: tuple[Path, ...] = ()
    """``ROCM_PATH``, ``HIP_PATH`` (those set, in this order)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ROCmSettings:
        explicit = environ.get("GPUC_ROCM_DEVICE_LIBS")
        roots = tuple(Path(environ[v]) for v in ("ROCM_PATH", "HIP_PATH") if environ.get(v))
        return cls(Path(explicit) if explicit else None, roots)

    def device_lib_folders(self) -> list[Path]:
        """Where ``ocml.bc`` is looked for, first hit wins: the explicit folder (alone, when set), each
        root's ``amdgcn/bitcode``, ``/opt/rocm``'s, then Debian's (``/usr/lib/<multiarch>/amdgcn/bitcode``)."""
        if self.device_libs is not None:
            return [self.device_libs]
        folders = [root / "amdgcn" / "bitcode" for root in (*self.roots, Path("/opt/rocm"))]
        return folders + sorted(Path("/usr/lib").glob("*/amdgcn/bitcode"))


#: device heap (bytes) made available to kernels that call malloc (CUDA's default is 8 MiB)
DEFAULT_DEVICE_HEAP = 256 << 20
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)i?B?\s*$", re.I)


@attrs.frozen
class RuntimeSettings:
    """Switches of the CUDA runtime."""

    device_heap: int = DEFAULT_DEVICE_HEAP
    """``GPUC_DEVICE_HEAP``: the device heap limit (bytes) for kernels that call malloc."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> RuntimeSettings:
        raw = environ.get("GPUC_DEVICE_HEAP")
        if not raw:
            return cls()
        m = _SIZE.match(raw)
        if m is None:
            raise LaunchError(f"GPUC_DEVICE_HEAP={raw!r} is not a size: write bytes, or a number with "
                              "K, M or G (e.g. 512M)")
        return cls(int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()])


@attrs.frozen
class ParallelSettings:
    """Threads of ``@jit(parallel=True)`` loops and of ``parallel_for`` / ``parallel_reduce`` on the host."""

    threads: int
    """``GPUC_NUM_THREADS``, else the CPUs this process may run on (``os.sched_getaffinity``)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ParallelSettings:
        raw = environ.get("GPUC_NUM_THREADS")
        if not raw:
            cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
            return cls(max(1, len(cpus)))
        try:
            threads = int(raw)
        except ValueError:
            threads = 0
        if not 1 <= threads <= 4096:
            raise ConfigError(f"GPUC_NUM_THREADS={raw!r} is not a thread count: write a number from 1 to 4096")
        return cls(threads)
