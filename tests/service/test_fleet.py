"""A fleet on one Redis: 3 `gpuc serve` instances compile a job once; a dead lock holder does not
block the others; a stopped (SIGSTOP) Redis trips the circuit breaker instead of a timeout per operation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import httpx
import pytest

from gpucompiler.cache import Cache, DiskTier, RedisTier
from gpucompiler.cache.fleet import CircuitBreaker
from gpucompiler.pipeline import compile as compile_job
from tests.cache import jobs
from tests.cache.servers import ROOT, SECRET, free_port, start_service, stop
from tests.service.conftest import TOKEN
from gpucompiler.service import ServiceClient


@pytest.fixture
def fleet(redis_url, tmp_path):
    """Three services on loopback ports sharing ``redis_url`` (each with its own disk tier)."""
    token = tmp_path / "token"
    token.write_text(TOKEN)
    env = {"GPUC_CACHE_URL": redis_url, "GPUC_CACHE_SECRET": SECRET.decode(), "GPUC_CACHE_LOCK_LEASE": "2"}
    RedisTier(redis_url).clear()
    started = []
    try:
        for k in range(3):
            started.append(start_service(tmp_path / f"cache{k}", "--workers", "2", "--token-file", str(token),
                                         env=env))
        yield [url for url, _ in started]
    finally:
        for _, proc in started:
            stop(proc)


def stats(url):
    return httpx.get(url + "/stats", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).json()


def test_three_services_on_one_redis_compile_a_job_once(fleet):
    answers, errors = [], []

    def one(url):
        try:
            answers.append(ServiceClient(url, token=TOKEN, secret=SECRET, timeout=120).compile(jobs.job(900), ("obj",)))
        except Exception as exc:  # collected, asserted below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(url,)) for url in fleet for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == [] and len(answers) == 12
    assert len({a.artifacts["obj"] for a in answers}) == 1
    assert jobs.run(answers[0], 900) == pytest.approx(jobs.expected(900), rel=1e-12)
    compiled = [stats(url).get("worker.compiled", 0) for url in fleet]
    assert sum(compiled) == 1, compiled  # LLVM ran once in the fleet; the others got it from Redis


HOLDER = """
import sys, time
from gpucompiler.cache import RedisTier
tier = RedisTier(sys.argv[1], lock_lease=1.0)
with tier.lock(sys.argv[2]) as held:
    print("held" if held else "no", flush=True)
    time.sleep(600)
"""


def test_a_killed_lock_holder_does_not_block_the_others(redis_url, tmp_path):
    from gpucompiler import identity as keys

    key = keys.digest(keys.key_document(jobs.job(901)))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, redis_url, key], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        tier = RedisTier(redis_url, lock_lease=1.0)
        assert tier.client.exists(f"{tier.prefix}lock:{key}")  # still held by the dead process's lease
        res = Cache(DiskTier(tmp_path / "c"), tier, secret=SECRET, compiler=compile_job).compile(jobs.job(901), ("obj",))
    finally:
        if holder.poll() is None:
            holder.kill()
    assert res.origin == "compiled"
    assert jobs.run(res, 901) == pytest.approx(jobs.expected(901), rel=1e-12)
    assert not tier.client.exists(f"{tier.prefix}lock:{key}")  # released after the compile


@pytest.fixture
def stoppable_redis(tmp_path):
    import shutil

    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    probe = redis.Redis.from_url(url, socket_timeout=1)
    for _ in range(200):
        try:
            probe.ping()
            break
        except redis.RedisError:
            import time

            time.sleep(0.05)
    yield url, proc
    proc.send_signal(signal.SIGCONT)
    stop(proc)


def test_a_stopped_redis_trips_the_breaker_instead_of_a_timeout_per_operation(stoppable_redis, tmp_path):
    url, proc = stoppable_redis
    now = [0.0]
    tier = RedisTier(url, timeout=0.5)
    tier.breaker = CircuitBreaker(cooldown=600, clock=lambda: now[0])
    cache = Cache(DiskTier(tmp_path / "c"), tier, secret=SECRET, compiler=compile_job)
    tier.client.ping()  # connected before the server stops answering
    proc.send_signal(signal.SIGSTOP)
    with pytest.warns(Warning, match="redis"):
        results = [cache.compile(jobs.job(910 + v), ("obj",)) for v in range(5)]
    assert [jobs.run(r, 910 + v) for v, r in enumerate(results)] == \
        [pytest.approx(jobs.expected(910 + v), rel=1e-12) for v in range(5)]
    assert tier.breaker.trips == 1  # one socket timeout ...
    assert tier.breaker.skipped >= 5 * 3  # ... and every later get, lock and set skipped at once
    proc.send_signal(signal.SIGCONT)
    now[0] += 601  # the cooldown is over: the next call tries the server again
    res = Cache(DiskTier(tmp_path / "d"), tier, secret=SECRET, compiler=compile_job).compile(jobs.job(915), ("obj",))
    assert res.origin == "compiled" and tier.breaker.trips == 1 and tier.keys()  # used again
