"""``gpuc cache``: look at and tidy the compile cache.

    gpuc cache stats           entries, bytes, bound, directory (and Redis when configured)
    gpuc cache ls              one line per entry: key, size, age, name, artifact kinds
    gpuc cache verify          check every entry (checksums; MACs in the shared tiers); --evict removes the bad ones
    gpuc cache clear           remove every entry (local disk; --redis the shared tier too)

``--json`` prints JSON instead. ``GPUC_CACHE_DIR`` / ``--dir`` pick the directory.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import attrs

from ..cache.core import Cache
from ..cache.entry import decode
from ..cache.tiers import DiskTier
from ..cache.wiring import build_cache
from ..errors import CacheCorruptionError, CacheWarning, ConfigError
from ..settings import CacheSettings, private_directory_problem


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("cache", help="inspect, verify or clear the compile cache",
                                   description="Inspect, verify or clear the compile cache.")
    parser.add_argument("action", choices=("stats", "ls", "verify", "clear"))
    parser.add_argument("--dir", type=Path, help="cache directory (default: GPUC_CACHE_DIR or the per-user one)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--evict", action="store_true", help="verify: remove entries that fail their checks")
    parser.add_argument("--redis", action="store_true", help="clear: also the Redis tier (GPUC_CACHE_URL)")
    parser.set_defaults(func=run)


def _cache(args: argparse.Namespace) -> tuple[Cache, DiskTier | None]:
    """The cache the library would use (:func:`~gpucompiler.cache.wiring.build_cache`), and the directory
    tier to look at: the cache's own, or one it refused (another user can write it), opened here for
    inspection only so that ``verify`` can say why."""
    settings = CacheSettings.from_env()
    if args.dir:
        settings = attrs.evolve(settings, directory=args.dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)  # a refused directory is reported below, not warned
        cache = build_cache(settings)
    if cache.disk is None and settings.directory is not None:
        return cache, DiskTier(settings.directory, settings.max_bytes)
    return cache, cache.disk


def _verify(tier, keys: list[str], evict: bool) -> list[dict]:
    """The entries of ``tier`` that fail their checks (through the tier: MACs for shared ones)."""
    bad = []
    for key in keys:
        try:
            data = tier.get(key)
            if data is not None:
                decode(data, f"{tier.name}:{key}", expect_key=key)
        except (CacheCorruptionError, *getattr(tier, "errors", (OSError,))) as exc:
            bad.append({"tier": tier.name, "key": key, "reason": str(exc)})
            if evict:
                tier.delete(key)
    return bad


def run(args: argparse.Namespace) -> int:
    cache, disk = _cache(args)
    redis = cache.redis
    if disk is None:
        raise ConfigError("the cache is off (GPUC_CACHE=off): give --dir")
    files = sorted(disk.files(), key=lambda f: -f[2])
    if args.action == "stats":
        out = {"directory": str(disk.root), "entries": len(files), "bytes": sum(f[1] for f in files),
               "max_bytes": disk.max_bytes}
        if redis is not None:
            out["redis"] = {"url": redis.url, "entries": len(redis.keys())}
        _print(args, out, "\n".join(f"{k}: {v}" for k, v in out.items()))
    elif args.action == "ls":
        rows = []
        for key, size, mtime in files:
            try:
                entry = decode(disk.get(key) or b"", key, expect_key=key)
                name, kinds = entry.meta.get("name", "?"), sorted(entry.artifacts)
            except (CacheCorruptionError, OSError):
                name, kinds = "(corrupt)", []
            rows.append({"key": key, "bytes": size, "age_s": round(time.time() - mtime, 1), "name": name,
                         "kinds": kinds})
        _print(args, rows, "\n".join(f"{r['key'][:16]}  {r['bytes']:>9}  {r['age_s']:>9.1f}s  {r['name']}  "
                                     f"{','.join(r['kinds'])}" for r in rows))
    elif args.action == "verify":
        checked = {"disk": [k for k, _, _ in files]}
        if cache.shared is not None:
            checked["shared"] = [k for k, _, _ in cache.shared.files()]
        if redis is not None:
            checked["redis"] = redis.keys()
        tiers = {**{t.name: t for t in cache.tiers}, "disk": disk}  # the disk looked at, refused or not
        bad = [b for name, keys in checked.items() for b in _verify(tiers[name], keys, args.evict)]
        total = sum(map(len, checked.values()))
        # entries of the private tier are trusted for its permissions: say when those do not hold
        problem = private_directory_problem(str(disk.root)) if disk.root.exists() else None
        out = {"checked": total, "tiers": {n: len(k) for n, k in checked.items()}, "bad": bad,
               "evicted": len(bad) if args.evict else 0, "directory_problem": problem}
        _print(args, out, f"checked {total} entries ({', '.join(f'{n}: {len(k)}' for n, k in checked.items())}), "
               f"{len(bad)} bad"
               + "".join(f"\n  {b['tier']}:{b['key'][:16]}: {b['reason']}" for b in bad)
               + (f"\nevicted {len(bad)}" if args.evict and bad else "")
               + (f"\nthe directory {disk.root} is not private: {problem}; its entries are not "
                  "authenticated (use it as GPUC_CACHE_SHARED_DIR with a secret)" if problem else ""))
        return 1 if (bad and not args.evict) or problem else 0
    else:
        removed = {"disk": disk.clear()}
        if args.redis and redis is not None:
            removed["redis"] = redis.clear()
        _print(args, removed, ", ".join(f"removed {n} entries from {t}" for t, n in removed.items()))
    return 0


def _print(args: argparse.Namespace, data, text: str) -> None:
    print(json.dumps(data, indent=2) if args.json else text)
