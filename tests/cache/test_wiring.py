"""One cache builder for the library, `gpuc cache`, `gpuc serve` and its workers: the same tiers, the
same lock lease, the same refusal of a directory another user can write."""

from __future__ import annotations

import argparse
import os
import warnings

import pytest

from gpucompiler.cache.default import cache_from_settings
from gpucompiler.cli import cache_cmd
from gpucompiler.errors import CacheWarning
from gpucompiler.settings import CacheSettings

pytest.importorskip("starlette", reason="the service's tests need starlette (the test extra)")
pytest.importorskip("redis", reason="the Redis tier needs the redis client (the test extra)")

from gpucompiler.service import worker
from gpucompiler.service.app import ServiceConfig, _Service


def _settings(tmp_path, private: bool = True) -> CacheSettings:
    directory, shared = tmp_path / "private", tmp_path / "shared"
    directory.mkdir(mode=0o700)
    shared.mkdir()
    if not private:
        os.chmod(directory, 0o777)  # another local user could plant entries: refused everywhere
    return CacheSettings(directory=directory, shared_dir=shared, redis_url="redis://127.0.0.1:1/0",
                         secret=b"s" * 32, lock_lease=3.5)


def _the_four(settings: CacheSettings, monkeypatch):
    """The caches the library, the CLI, the service and one of its workers build from ``settings``."""
    library = cache_from_settings(settings)
    monkeypatch.setattr(cache_cmd.CacheSettings, "from_env", classmethod(lambda cls, environ=None: settings))
    cli, _ = cache_cmd._cache(argparse.Namespace(dir=None))
    service = _Service(ServiceConfig(cache=settings))
    worker.init(*service.initargs)
    assert worker._cache is not None
    return {"library": library, "cli": cli, "service": service.cache, "worker": worker._cache}


def _shape(cache) -> tuple:
    redis = cache.redis.tier if hasattr(cache.redis, "tier") else cache.redis
    return (tuple(t.name for t in cache.tiers), None if cache.disk is None else str(cache.disk.root),
            None if redis is None else redis.lock_lease)


def test_every_user_builds_the_same_tiers(tmp_path, monkeypatch):
    settings = _settings(tmp_path)
    shapes = {who: _shape(cache) for who, cache in _the_four(settings, monkeypatch).items()}
    want = (("disk", "shared", "redis"), str(settings.directory), 3.5)
    assert shapes == dict.fromkeys(shapes, want)  # the service used to drop the shared directory, the CLI the lease


def test_a_directory_others_can_write_is_refused_by_every_user(tmp_path, monkeypatch):
    settings = _settings(tmp_path, private=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)
        caches = _the_four(settings, monkeypatch)
    for who in ("library", "service", "worker"):
        assert caches[who].disk is None, who
    assert caches["cli"].disk is None  # gpuc cache looks at it only to report why (verify's directory_problem)
