"""The Redis tier (a real redis-server) read through to disk; ``gpuc cache`` subcommands."""

from __future__ import annotations

import json
import logging

import pytest

from gpucompiler.cache import Cache, DiskTier, RedisTier, decode
from gpucompiler.cache.trust import Signer
from gpucompiler.cli import main
from gpucompiler.pipeline import compile as compile_job
from tests.cache import jobs
from tests.cache.servers import SECRET


def test_redis_shares_entries_between_machines_and_reads_through(redis_url, tmp_path):
    env_a = {"GPUC_CACHE_DIR": str(tmp_path / "a"), "GPUC_CACHE_URL": redis_url, "GPUC_CACHE_SECRET": SECRET.decode()}
    env_b = {**env_a, "GPUC_CACHE_DIR": str(tmp_path / "b")}
    RedisTier(redis_url).clear()
    first = jobs.run_in_subprocess(60, env_a)
    second = jobs.run_in_subprocess(60, env_b)   # another "machine": empty disk, same Redis
    third = jobs.run_in_subprocess(60, env_b)
    assert [first["origin"], second["origin"], third["origin"]] == ["compiled", "redis", "disk"]
    assert first["value"] == second["value"] == third["value"] == pytest.approx(jobs.expected(60), rel=1e-12)
    assert [k for k, _, _ in DiskTier(tmp_path / "b").files()] == [first["key"]]


def test_corrupt_redis_entry_is_refused_and_recompiled(redis_url, tmp_path, caplog):
    redis = RedisTier(redis_url)
    redis.clear()
    key = Cache(None, redis, secret=SECRET, compiler=compile_job).compile(jobs.job(61), ("obj",)).key
    data = redis.get(key)
    redis.put(key, data[:-10])
    cache = Cache(DiskTier(tmp_path / "c"), redis, secret=SECRET, compiler=compile_job)
    with caplog.at_level(logging.WARNING, logger="gpucompiler.cache"), pytest.warns(Warning, match="MAC"):
        res = cache.compile(jobs.job(61), ("obj",))
    assert res.origin == "compiled" and cache.stats["forged"] >= 1  # its MAC no longer verifies
    assert any("redis:" + key in r.getMessage() for r in caplog.records)
    entry = decode(Signer(SECRET).open(redis.get(key), "check"), "check", expect_key=key)  # republished
    assert entry.artifacts["obj"] == res.artifacts["obj"]
    assert jobs.run(res, 61) == pytest.approx(jobs.expected(61), rel=1e-12)


def test_unreachable_redis_warns_and_compiles(tmp_path):
    from tests.cache.servers import free_port

    cache = Cache(DiskTier(tmp_path / "d"), RedisTier(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5),
                  secret=SECRET, compiler=compile_job)
    with pytest.warns(Warning, match="redis"):
        res = cache.compile(jobs.job(62), ("obj",))
    assert res.origin == "compiled"


def test_cli_stats_ls_verify_clear(cache_env, capsys):
    cache = Cache(DiskTier(cache_env), compiler=compile_job)
    keys = [cache.compile(jobs.job(70 + v), ("obj",)).key for v in range(2)]
    assert main(["cache", "stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["entries"] == 2 and stats["bytes"] > 0 and stats["directory"] == str(cache_env)
    assert main(["cache", "ls", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r["key"] for r in rows) == sorted(keys) and {r["name"] for r in rows} == {"wsum"}
    assert main(["cache", "verify"]) == 0
    assert "0 bad" in capsys.readouterr().out
    path = DiskTier(cache_env).path(keys[0])
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert main(["cache", "verify", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [b["key"] for b in report["bad"]] == [keys[0]] and "checksum" in report["bad"][0]["reason"]
    assert main(["cache", "verify", "--evict"]) == 0
    capsys.readouterr()
    assert [k for k, _, _ in DiskTier(cache_env).files()] == [keys[1]]
    assert main(["cache", "clear"]) == 0
    assert "removed 1 entries from disk" in capsys.readouterr().out
    assert DiskTier(cache_env).files() == []
