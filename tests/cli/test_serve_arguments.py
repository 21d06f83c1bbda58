"""``gpuc serve`` refuses bad options with a usage error before it binds anything."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args, words", [
    (["--port", "-1"], "port -1 is not in 0..65535"),  # was an OverflowError traceback from bind()
    (["--port", "70000"], "port 70000 is not in 0..65535"),
    (["--port", "http"], "'http' is not a port number"),
    (["--workers", "0"], "--workers: 0 must be a positive number"),
    (["--timeout", "nan"], "--timeout: nan must be a positive number"),
    (["--max-request-mb", "-3"], "--max-request-mb: -3 must be a positive number"),
    (["--token-file", "/nonexistent/token"], "--token-file /nonexistent/token: No such file or directory"),
])
def test_bad_serve_options_are_usage_errors_without_a_traceback(args, words):
    out = subprocess.run([sys.executable, "-m", "gpucompiler", "serve", *args], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0
    assert words in out.stderr
    assert "Traceback" not in out.stderr


def test_a_busy_port_is_an_error_before_anything_is_printed():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "gpucompiler", "serve", "--port", str(port), "--no-auth"],
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr and "Traceback" not in out.stderr
    assert out.stdout == ""  # no URL, no token file announced for a service that never ran


def test_version_and_a_closed_pipe():
    out = subprocess.run([sys.executable, "-m", "gpucompiler", "--version"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("gpuc 0.") and "llvmlite" in out.stdout
    proc = subprocess.Popen([sys.executable, "-m", "gpucompiler", "plugins"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `gpuc plugins | head -0`: the reader is gone before the first line
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Broken pipe" not in err and "Traceback" not in err and "BrokenPipeError" not in err
