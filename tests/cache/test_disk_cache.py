"""The local disk tier: another process loads and runs what one compiled; LRU; faults fall back."""

from __future__ import annotations

import errno
import logging

import pytest

from gpucompiler.cache import Cache, DiskTier, decode
from gpucompiler.cache.default import compile_cached
from gpucompiler.errors import CacheWarning
from gpucompiler.pipeline import compile as compile_job
from tests.cache import jobs


def test_one_process_compiles_another_loads_and_runs(cache_env):
    env = {"GPUC_CACHE_DIR": str(cache_env)}
    first = jobs.run_in_subprocess(1, env)
    second = jobs.run_in_subprocess(1, env)
    assert first["origin"] == "compiled" and second["origin"] == "disk"
    assert first["key"] == second["key"]
    assert first["value"] == second["value"] == pytest.approx(jobs.expected(1), rel=1e-12)
    # and this process loads the same entry from disk, code and all
    res = compile_cached(jobs.job(1), emit=("obj",))
    assert res.origin == "disk" and res.key == first["key"]
    assert jobs.run(res, 1) == first["value"]


def test_memory_hit_after_disk_and_stats(cache_env):
    cache = Cache(DiskTier(cache_env), compiler=compile_job)
    a = cache.compile(jobs.job(2), ("obj",))
    b = cache.compile(jobs.job(2), ("obj",))
    assert (a.origin, b.origin) == ("compiled", "memory")
    assert b.artifacts["obj"] == a.artifacts["obj"]
    assert cache.stats["compile"] == 1 and cache.stats["hit.memory"] == 1


def test_missing_kind_recompiles_and_keeps_both(cache_env):
    cache = Cache(DiskTier(cache_env), compiler=compile_job)
    assert cache.compile(jobs.job(3), ("llvm",)).origin == "compiled"
    res = cache.compile(jobs.job(3), ("asm",))
    assert res.origin == "compiled" and "wsum" in res.artifacts["asm"]
    assert Cache(DiskTier(cache_env), compiler=compile_job).compile(jobs.job(3), ("asm",)).origin == "disk"


def test_lru_eviction_keeps_the_bound(cache_env):
    disk = DiskTier(cache_env, max_bytes=10**9)
    cache = Cache(disk, compiler=compile_job)
    for v in range(4):
        cache.compile(jobs.job(10 + v), ("obj",))
    sizes = {k: s for k, s, _ in disk.files()}
    assert len(sizes) == 4
    first_key = cache.compile(jobs.job(10), ("obj",)).key
    cache.memory.clear()
    cache.compile(jobs.job(10), ("obj",))  # a disk hit: touches the oldest entry
    disk.max_bytes = sum(sizes.values()) - 1
    cache.compile(jobs.job(20), ("obj",))  # over the bound: least recently used go
    left = {k for k, _, _ in disk.files()}
    assert sum(s for k, s, _ in disk.files()) <= disk.max_bytes
    assert first_key in left and len(left) < 5


@pytest.mark.parametrize("damage", ["truncate", "flip", "swap"])
def test_corrupt_entry_detected_evicted_recompiled_logged(cache_env, caplog, damage):
    disk = DiskTier(cache_env)
    a = Cache(disk, compiler=compile_job).compile(jobs.job(30), ("obj",))
    b = Cache(disk, compiler=compile_job).compile(jobs.job(31), ("obj",))
    pa, pb = disk.path(a.key), disk.path(b.key)
    data = pa.read_bytes()
    if damage == "truncate":
        pa.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        i = len(data) - 100
        pa.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
    else:
        other = pb.read_bytes()
        pa.write_bytes(other)
        pb.write_bytes(data)
    cache = Cache(disk, compiler=compile_job)
    with caplog.at_level(logging.WARNING, logger="gpucompiler.cache"):
        res = cache.compile(jobs.job(30), ("obj",))
    assert res.origin == "compiled"
    assert cache.stats["corrupt"] == 1
    expected_reason = {"truncate": "checksum", "flip": "checksum", "swap": "swapped"}[damage]
    assert any(expected_reason in r.getMessage() and a.key in r.getMessage() for r in caplog.records)
    assert jobs.run(res, 30) == pytest.approx(jobs.expected(30), rel=1e-12)
    assert decode(pa.read_bytes(), "check", expect_key=a.key).key == a.key  # republished whole


def test_read_only_cache_falls_back_with_a_warning(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")  # a cache path under a file cannot be created (EROFS-like, also for root)
    cache = Cache(DiskTier(blocker / "cache"), compiler=compile_job)
    with pytest.warns(CacheWarning, match="cannot"):
        res = cache.compile(jobs.job(40), ("obj",))
    assert res.origin == "compiled" and cache.stats["write_error"] == 1
    assert jobs.run(res, 40) == pytest.approx(jobs.expected(40), rel=1e-12)


def test_full_cache_falls_back_with_a_warning(cache_env, monkeypatch):
    disk = DiskTier(cache_env)

    def full(key, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(disk, "put", full)
    cache = Cache(disk, compiler=compile_job)
    with pytest.warns(CacheWarning, match="No space left"):
        res = cache.compile(jobs.job(41), ("obj",))
    assert res.origin == "compiled" and disk.files() == []
    assert jobs.run(res, 41) == pytest.approx(jobs.expected(41), rel=1e-12)
