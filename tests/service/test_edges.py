"""Service edges: JSON errors with a code for hostile bodies, keep-alive across errors, auth on by
default with a generated user-only token, a terse /health, no orphaned workers after SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from gpucompiler.service.protocol import make_request
from tests.cache import jobs
from tests.cache.servers import ROOT, free_port, start_service, stop
from tests.service.conftest import TOKEN

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def hostile_bodies() -> dict[str, bytes]:
    good = make_request(jobs.job(500), ("obj",))
    cpu_list = json.loads(json.dumps(good))
    cpu_list["config"]["target"]["cpu"] = ["znver3", "x"]
    capability = json.loads(json.dumps(good))
    capability["config"]["target"] = {"name": "ptx", "capability": [{"a": 1}, 2]}
    params = json.loads(json.dumps(good))
    params["config"]["params"] = [[["nested"], 1]]
    return {"nested 50,000 deep": b"[" * 50000 + b"]" * 50000,
            "nested 40 deep, valid JSON": json.dumps({"protocol": 1, "x": json.loads("[" * 40 + "]" * 40)}).encode(),
            "config.target.cpu a list": json.dumps(cpu_list).encode(),
            "capability of objects": json.dumps(capability).encode(),
            "param name a list": json.dumps(params).encode(),
            "not JSON": b"\xff\xfe{",
            "a JSON string": b'"hello"',
            "opt_level 99": json.dumps({**good, "config": {**good["config"], "opt_level": 99}}).encode()}


def test_hostile_bodies_get_json_4xx_and_the_connection_is_kept(service):
    url, _ = service
    good = json.dumps(make_request(jobs.job(501), ("obj",))).encode()
    with httpx.Client(base_url=url, headers=AUTH, timeout=60) as http:
        for name, body in hostile_bodies().items():
            r = http.post("/compile", content=body)
            assert 400 <= r.status_code < 500, (name, r.status_code, r.text[:200])
            data = r.json()
            assert set(data) == {"error", "message"} and data["error"], name
            assert r.headers.get("connection", "").lower() != "close", name
        r = http.post("/compile", content=good)
        assert r.status_code == 200 and r.json()["key"]
        pool = http._transport._pool
        assert len(pool.connections) == 1  # every answer went over one kept-alive connection


def test_health_says_only_ok_without_the_token(service):
    url, _ = service
    assert httpx.get(url + "/health").json() == {"status": "ok"}
    assert httpx.get(url + "/health", headers={"Authorization": "Bearer wrong"}).json() == {"status": "ok"}
    full = httpx.get(url + "/health", headers=AUTH).json()
    assert full["status"] == "ok" and "gpucompiler" in full and "plugins" in full


def test_auth_is_on_by_default_with_a_generated_user_only_token(tmp_path):
    url, proc = start_service(tmp_path / "cache", env={"XDG_RUNTIME_DIR": str(tmp_path / "run"),
                                                        "GPUC_SERVICE_TOKEN": ""})
    try:
        path = tmp_path / "run" / "gpucompiler" / f"serve-{url.rsplit(':', 1)[1]}.token"
        token = path.read_text().strip()
        assert len(token) >= 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        body = json.dumps(make_request(jobs.job(502), ("obj",))).encode()
        assert httpx.post(url + "/compile", content=body).status_code == 401
        ok = httpx.post(url + "/compile", content=body, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert ok.status_code == 200
    finally:
        stop(proc)
    assert not path.exists()  # removed at shutdown


@pytest.mark.parametrize("args, message", [
    (("--host", "0.0.0.0", "--allow-remote", "--no-auth"), "--no-auth is for loopback only"),
    (("--host", "0.0.0.0", "--allow-remote"), "--allow-remote needs a token"),
    (("--host", "0.0.0.0"), "pass --allow-remote"),
])
def test_remote_serving_needs_a_token(args, message):
    env = {k: v for k, v in os.environ.items() if k != "GPUC_SERVICE_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "serve", "--port", str(free_port()), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and message in proc.stderr


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.parametrize("in_flight", [False, True])
def test_sigterm_leaves_no_worker_behind(tmp_path, in_flight):
    url, proc = start_service(tmp_path / "cache", "--no-auth", "--workers", "2")
    try:
        deadline = time.monotonic() + 20
        while len(workers := _children(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(workers) >= 2
        if in_flight:
            body = json.dumps(make_request(jobs.job(503), ("obj",))).encode()
            subprocess.Popen([sys.executable, "-c", f"import httpx; httpx.post({url!r} + '/compile', "
                              f"content={body!r}, timeout=30)"], stderr=subprocess.DEVNULL)
            time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            stop(proc)
    deadline = time.monotonic() + 10
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)]
