"""The compile service in a real subprocess: results, single flight, auth, limits, typed errors."""

from __future__ import annotations

import json
import threading

import attrs
import httpx
import pytest

import gpucompiler.plugin as gp
from gpucompiler.errors import PluginMismatchError, ServiceError, UnserialisableIRError
from gpucompiler.core import CompilerJob, LLVMSource
from gpucompiler.service import ServiceClient
from gpucompiler.service.protocol import make_request
from tests.cache import jobs
from tests.service.conftest import TOKEN


def client(url, token=TOKEN):
    return ServiceClient(url, token=token, timeout=60)


def stats(url):
    return httpx.get(url + "/stats", headers={"Authorization": f"Bearer {TOKEN}"}).json()


def test_compiles_and_the_code_runs_here(service):
    url, cache_dir = service
    c = client(url)
    res = c.compile(jobs.job(80), ("obj",))
    assert res.origin == "compiled" and set(res.artifacts) >= {"obj", "llvm"}
    assert jobs.run(res, 80) == pytest.approx(jobs.expected(80), rel=1e-12)
    again = c.compile(jobs.job(80), ("obj",))
    assert again.origin == "memory" and again.artifacts["obj"] == res.artifacts["obj"]
    assert any(cache_dir.rglob(res.key))  # the worker published it to the service's disk tier


def test_identical_jobs_in_flight_compile_once(service):
    url, _ = service
    before = stats(url)
    answers, errors = [], []

    def one():
        try:
            answers.append(client(url).compile(jobs.job(81), ("obj",)))
        except Exception as exc:  # collected, asserted below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    after = stats(url)
    assert errors == [] and len(answers) == 8
    assert after["compiles"] - before.get("compiles", 0) == 1
    assert (after.get("deduped", 0) - before.get("deduped", 0)) + (after.get("hits", 0) - before.get("hits", 0)) == 7
    assert len({a.artifacts["obj"] for a in answers}) == 1
    assert jobs.run(answers[0], 81) == pytest.approx(jobs.expected(81), rel=1e-12)


def test_compile_cached_uses_the_service_from_the_environment(service, tmp_path):
    url, _ = service
    env = {"GPUC_SERVICE_URL": url, "GPUC_SERVICE_TOKEN": TOKEN, "GPUC_CACHE_DIR": str(tmp_path / "local")}
    first = jobs.run_in_subprocess(82, env)
    second = jobs.run_in_subprocess(82, env)
    assert (first["origin"], second["origin"]) == ("service", "disk")
    assert first["value"] == second["value"] == pytest.approx(jobs.expected(82), rel=1e-12)


def post(url, body, token=TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(url + "/compile", content=body, headers=headers, timeout=30)


def test_bad_requests_get_4xx_and_the_service_stays_up(service):
    url, _ = service
    good = make_request(jobs.job(83), ("obj",))
    cases = [
        (post(url, json.dumps(good), token=None), 401, "unauthorized"),
        (post(url, json.dumps(good), token="wrong"), 401, "unauthorized"),
        (post(url, b"{not json"), 400, "bad_request"),
        (post(url, b"[1, 2]"), 400, "bad_request"),
        (post(url, json.dumps({**good, "emit": ["exe"]})), 400, "bad_request"),
        (post(url, json.dumps({**good, "config": {"target": {"name": "tpu"}}})), 400, "bad_request"),
        (post(url, json.dumps({**good, "ir": "x" * 300_000})), 413, "too_large"),
        (post(url, json.dumps({**good, "ir": "define i32 @wsum( {"})), 422, "IRParseError"),
        (httpx.get(url + "/compile"), 405, "not_found"),
    ]
    for response, status, kind in cases:
        assert response.status_code == status, response.text
        assert response.json()["error"] == kind and response.json()["message"]
    assert httpx.get(url + "/health").json()["status"] == "ok"
    assert post(url, json.dumps(good)).status_code == 200


def test_unserialisable_ir_is_refused_by_client_and_service(service):
    url, _ = service
    from tests.cache.test_serialisable import SYMBOL

    job = CompilerJob(LLVMSource(SYMBOL, "h"), jobs.job(0).config)
    with pytest.raises(UnserialisableIRError):
        client(url).compile(job, ("obj",))
    body = make_request(jobs.job(84), ("obj",))
    body["ir"] = SYMBOL
    body["entry"] = "h"
    response = post(url, json.dumps(body))
    assert response.status_code == 422 and "PROCESS_SYMBOL" in response.json()["message"]


class _LocalOnly(gp.Plugin):
    name = "local_only_plugin"
    version = "3.1"


def test_missing_or_other_version_plugin_is_a_clear_error(service):
    url, _ = service
    gp.register(_LocalOnly, replace=True)
    try:
        job = jobs.job(85)
        job = attrs.evolve(job, config=attrs.evolve(job.config, plugins=("local_only_plugin",)))
        with pytest.raises(PluginMismatchError, match=r"local_only_plugin.*not installed") as info:
            client(url).compile(job, ("obj",))
        assert info.value.status == 409
    finally:
        gp.unregister("local_only_plugin")
    body = make_request(jobs.job(85), ("obj",))
    body["config"]["plugins"] = ["mock_enzyme"]
    body["plugins"] = [["mock_enzyme", "0.0.1", None]]
    response = post(url, json.dumps(body))
    assert response.status_code == 409
    assert "client has version 0.0.1" in response.json()["message"]


def test_unreachable_service_is_a_service_error():
    from tests.cache.servers import free_port

    with pytest.raises(ServiceError, match="unreachable"):
        ServiceClient(f"http://127.0.0.1:{free_port()}", token="t", timeout=2).compile(jobs.job(86), ("obj",))


DEFERRED_CLIENT = """
import json, sys
sys.path[:0] = [{tests!r}]
from gpucompiler import jit, types
from gpucompiler.cache.default import compile_cached
from deferred.deferred_funcs import uses_square_twice

f = jit(plugins=("mock_enzyme",))(uses_square_twice)
origin = compile_cached(f._job((types.float64, types.float64)), ("obj",)).origin
print(json.dumps({{"value": f(1.5, 2.0), "origin": origin}}))
"""


def test_jobs_with_deferred_calls_compile_on_the_service(service, tmp_path):
    """Nested jobs are linked on the client, so the service gets IR that stands alone."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    url, _ = service
    tests = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "GPUC_SERVICE_URL": url, "GPUC_SERVICE_TOKEN": TOKEN,
           "GPUC_CACHE_DIR": str(tmp_path / "local")}
    proc = subprocess.run([sys.executable, "-c", DEFERRED_CLIENT.format(tests=tests)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answer["value"] == 1.5 * 1.5 + 2.0 * 2.0 + 1.5 * 1.5
    assert answer["origin"] == "service"


KERNEL_CLIENT = """
import json, sys
sys.path[:0] = [{ez!r}]
import numpy as np, ez_funcs as F
from gpucompiler import kernel, parse_target, types as T
from gpucompiler.cache.default import default_cache
k = kernel(F.grad_energy_kernel, plugins=("enzyme",))
A = T.ArrayType(T.float64, 1, "C")
ptx, job = k.compile((A, A, A, A), parse_target("ptx:sm_80"))
x, w = np.linspace(-2.0, 2.0, 64), np.array([1.5, -0.25])
dx, dw = np.zeros(64), np.zeros(2)
k[1, 64, "cpu"](x, dx, w, dw)
print(json.dumps({{"stats": dict(default_cache().stats), "ptx": ".entry grad_energy_kernel" in ptx,
                  "dw": dw.tolist(), "emulation": k.emulated((A, A, A, A)).origin}}))
"""


def test_kernels_with_autodiff_compile_on_the_service(service, tmp_path):
    """The PTX of a kernel and its CPU-grid emulation are compiled by the service (the client ran the
    front half); the emulated gradient is right."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import numpy as np

    url, _ = service
    tests = Path(__file__).resolve().parents[1]
    env = {**os.environ, "GPUC_SERVICE_URL": url, "GPUC_SERVICE_TOKEN": TOKEN,
           "GPUC_CACHE_DIR": str(tmp_path / "local")}
    proc = subprocess.run([sys.executable, "-c", KERNEL_CLIENT.format(ez=str(tests / "enzyme_plugin"))],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ptx"] and out["emulation"] == "service" and out["stats"]["compile"] == 2  # both on the service
    x = np.linspace(-2.0, 2.0, 64)
    np.testing.assert_allclose(out["dw"], [np.sum(np.sin(x) * x), np.sum(x * x)], rtol=1e-12)
