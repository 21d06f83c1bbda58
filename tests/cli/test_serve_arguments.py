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
