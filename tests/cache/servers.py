"""Fixtures that start real servers on free loopback ports and stop them afterwards."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the deployment secret the tests' shared tiers sign with
SECRET = b"tests-deployment-secret-7f3a9c"
#: the password of the test redis-server (requirepass)
REDIS_PASSWORD = "tests-redis-password"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(check, proc: subprocess.Popen, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise RuntimeError(f"{what} exited with {proc.returncode}: {out}")
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{what} did not come up within {timeout} s")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """``redis://:<password>@127.0.0.1:<port>/0`` of a redis-server (with a password) started for the session."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; CI installs it)")
    redis = pytest.importorskip("redis", reason="the redis client is not installed (pip install redis)")
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
                             "--dir", str(workdir), "--protected-mode", "yes", "--requirepass", REDIS_PASSWORD],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"redis://:{REDIS_PASSWORD}@127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url, socket_timeout=1)
    try:
        _wait(client.ping, proc, "redis-server")
        yield url
    finally:
        client.close()
        _stop(proc)


def start_service(cache_dir: Path, *extra: str, env: dict | None = None):
    """Start ``gpuc serve`` in a subprocess on a free port; returns ``(url, process)``."""
    pytest.importorskip("uvicorn", reason="gpuc serve needs uvicorn (pip install 'gpucompiler[service]')")
    httpx = pytest.importorskip("httpx")
    port = free_port()
    environ = {**os.environ, **(env or {})}
    environ.pop("GPUC_SERVICE_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "gpucompiler", "serve", "--port", str(port),
                             "--cache-dir", str(cache_dir), *extra],
                            cwd=ROOT, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    _wait(lambda: httpx.get(url + "/health", timeout=1).status_code == 200, proc, "gpuc serve")
    return url, proc


stop = _stop
