"""A job that makes LLVM abort fails alone: the pool's other jobs are retried on fresh workers."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from gpucompiler.service.protocol import make_request
from tests.cache import aborting, jobs
from tests.service.conftest import TOKEN
from tests.service.test_service import client, stats


def test_crashing_job_gets_a_json_error_and_unrelated_concurrent_jobs_succeed(service):
    url, _ = service
    bad = json.dumps(make_request(aborting.job(), ("obj",))).encode()
    results, crashes, errors = {}, [], []

    def good(v):
        try:
            results[v] = jobs.run(client(url).compile(jobs.job(v), ("obj",)), v)
        except Exception as exc:  # collected, asserted below
            errors.append(exc)

    def crash():
        r = httpx.post(url + "/compile", content=bad, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
        crashes.append((r.status_code, r.json()))

    threads = [threading.Thread(target=good, args=(300 + v,)) for v in range(12)]
    threads[3:3] = [threading.Thread(target=crash) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert errors == []
    assert results == {v: pytest.approx(jobs.expected(v), rel=1e-12) for v in range(300, 312)}
    assert len(crashes) == 2
    for status, body in crashes:
        assert status == 422 and body["error"] == "compiler_crashed"
        assert "SIGABRT" in body["message"] and "Cannot select" in body["message"]
    after = stats(url)
    assert after["crashed"] >= 1  # the two identical requests share one compile (single flight)
    # the service is whole again: a new job compiles
    assert jobs.run(client(url).compile(jobs.job(399), ("obj",)), 399) == pytest.approx(jobs.expected(399))
