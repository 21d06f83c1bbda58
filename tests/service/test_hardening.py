"""Smaller holes: a rebound Host, a lone surrogate, an oversized or refused Redis value, a service that is down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import httpx
import pytest

from gpucompiler import types
from gpucompiler.cache import Cache, DiskTier, RedisTier
from gpucompiler.core import CompilerConfig, CompilerJob
from gpucompiler.errors import CacheCorruptionError, CacheWarning, ServiceError
from gpucompiler.pipeline import compile as compile_job
from gpucompiler.service import ServiceClient
from gpucompiler.service.protocol import make_request
from gpucompiler.source.spec import FunctionSpec
from gpucompiler.targets import NativeTarget
from tests.cache import jobs
from tests.cache.servers import ROOT, SECRET, free_port, start_service, stop
from tests.cache.test_trust import forge
from tests.service.conftest import TOKEN


def test_a_no_auth_service_answers_only_loopback_host_names(tmp_path):
    url, proc = start_service(tmp_path / "c", "--no-auth")
    port = url.rsplit(":", 1)[1]
    try:
        body = json.dumps(make_request(jobs.job(600), ("obj",))).encode()
        for host in ("attacker.example", f"attacker.example:{port}", f"rebind.127.0.0.1.nip.io:{port}"):
            r = httpx.get(url + "/health", headers={"Host": host})
            assert r.status_code == 400 and r.json()["error"] == "bad_host", host
            r = httpx.post(url + "/compile", content=body, headers={"Host": host})
            assert r.status_code == 400 and r.json()["error"] == "bad_host", host
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
            assert httpx.get(url + "/health", headers={"Host": host}).status_code == 200, host
        r = httpx.post(url + "/compile", content=body, timeout=60)
        assert r.status_code == 200 and r.json()["origin"] == "compiled"
    finally:
        stop(proc)


@pytest.mark.parametrize("where", ["ir", "entry", "config name", "a key"])
def test_a_lone_surrogate_in_a_request_is_a_400(service, where):
    url, _ = service
    request = make_request(jobs.job(601), ("obj",))
    if where == "ir":
        request["ir"] = request["ir"] + "; \ud800"
    elif where == "entry":
        request["entry"] = "wsum\udfff"
    elif where == "config name":
        request["config"]["name"] = "\ud83d"
    else:
        request["\udc80"] = 1
    body = json.dumps(request).encode()  # ensure_ascii: the surrogate travels as a \\uXXXX escape
    r = httpx.post(url + "/compile", content=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    assert "surrogate" in r.json()["message"]
    ok = httpx.post(url + "/compile", content=json.dumps(make_request(jobs.job(601), ("obj",))).encode(),
                    headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert ok.status_code == 200  # and the service stays up


def test_an_oversized_redis_value_is_refused_by_its_length_without_fetching_it(redis_url):
    tier = RedisTier(redis_url, max_entry_bytes=100_000)
    key = "ee" * 32
    tier.client.set(tier.prefix + key, b"x" * 1_000_000)
    before = tier.client.info("stats")["total_net_output_bytes"]
    with pytest.raises(CacheCorruptionError, match="1000000 bytes, over the entry limit of 100000"):
        tier.get(key)
    sent = tier.client.info("stats")["total_net_output_bytes"] - before
    assert sent < 10_000  # the INFO answer and a length, not 100 kB of the value
    tier.client.set(tier.prefix + key, b"y" * 100_000)
    assert tier.get(key) == b"y" * 100_000  # at the bound: fetched whole
    tier.delete(key)
    assert tier.get(key) is None


def test_a_refused_redis_entry_is_fetched_and_checked_once_per_job(redis_url, tmp_path):
    redis = RedisTier(redis_url)
    key, data = forge(602)
    redis.put(key, data)  # unsigned: refused
    fetched: list[str] = []
    real_get = redis.get
    redis.get = lambda k: fetched.append(k) or real_get(k)  # type: ignore[method-assign]
    cache = Cache(DiskTier(tmp_path / "d"), redis, secret=SECRET, compiler=compile_job)
    with pytest.warns(CacheWarning, match="refused"):
        res = cache.compile(jobs.job(602), ("obj",))
    assert res.origin == "compiled" and jobs.run(res, 602) == pytest.approx(jobs.expected(602), rel=1e-12)
    assert fetched.count(key) == 1 and cache.stats["forged"] == 1


def _down() -> ServiceClient:
    return ServiceClient(f"http://127.0.0.1:{free_port()}", token="t", timeout=2)


def test_with_the_service_down_misses_compile_here_with_one_warning(tmp_path):
    cache = Cache(service=_down(), compiler=compile_job)
    with pytest.warns(CacheWarning, match="unreachable.*GPUC_SERVICE_FALLBACK=off"):
        first = cache.compile(jobs.job(603), ("obj",))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # once
        second = cache.compile(jobs.job(604), ("obj",))
    assert (first.origin, second.origin) == ("compiled", "compiled")
    assert jobs.run(second, 604) == pytest.approx(jobs.expected(604), rel=1e-12)
    assert cache.stats["service_fallback"] == 2
    strict = Cache(service=_down(), compiler=compile_job, service_fallback=False)
    with pytest.raises(ServiceError, match="unreachable"):
        strict.compile(jobs.job(605), ("obj",))


_JIT = textwrap.dedent("""
    import json
    from gpucompiler import jit

    @jit
    def f(x):
        return 2.0 * x + 1.0

    print(json.dumps(f(3.5)))
""")


@pytest.mark.parametrize("fallback", ["", "off"])
def test_jit_with_the_service_down_compiles_here_unless_told_not_to(tmp_path, fallback):
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "c"), "GPUC_SERVICE_URL": f"http://127.0.0.1:{free_port()}",
           "GPUC_SERVICE_TOKEN": "t", "GPUC_SERVICE_FALLBACK": fallback, "PYTHONPATH": str(ROOT)}
    script = tmp_path / "uses_jit.py"  # a file: @jit reads the function's source
    script.write_text(_JIT)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    if fallback == "off":
        assert proc.returncode != 0 and "ServiceError" in proc.stderr and "unreachable" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == 8.0
        assert proc.stderr.count("CacheWarning") == 1 and "compiling here instead" in proc.stderr


def _triple(x):
    return 3.0 * x


def test_a_refused_redis_entry_found_through_the_index_key_is_fetched_once(redis_url):
    """A Python function's job looks its code up through the index key first, then twice more on a miss."""
    redis = RedisTier(redis_url)
    redis.clear()
    job = CompilerJob(FunctionSpec(_triple, (types.float64,)), CompilerConfig(NativeTarget()))
    good = Cache(None, redis, secret=SECRET, compiler=compile_job).compile(job, ("obj",))  # index + code, signed
    redis.put(good.key, b"GPUCENT1 and code nobody signed")  # the code entry replaced: refused
    fetched: list[str] = []
    real_get = redis.get
    redis.get = lambda k: fetched.append(k) or real_get(k)  # type: ignore[method-assign]
    fresh = CompilerJob(FunctionSpec(_triple, (types.float64,)), CompilerConfig(NativeTarget()))
    cache = Cache(None, redis, secret=SECRET, compiler=compile_job)
    with pytest.warns(CacheWarning, match="refused"):
        res = cache.compile(fresh, ("obj",))
    assert res.origin == "compiled" and cache.stats["index.hit.redis"] == 1
    assert fetched.count(good.key) == 1 and cache.stats["forged"] == 1
