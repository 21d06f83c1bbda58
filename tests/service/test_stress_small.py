"""A small run of benchmarks/service_stress.py: valid, hostile and aborting requests mixed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cache.servers import ROOT


def test_hostile_mix_every_valid_job_right_every_other_a_json_4xx(tmp_path):
    pytest.importorskip("uvicorn")
    out = tmp_path / "stress.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "service_stress.py"), "--requests", "300",
                           "--concurrency", "8", "--seed", "1", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    result = json.loads(out.read_text())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["failures"] == [] and result["alive_after"]
    assert set(result["sent"]) == {"valid", "hostile", "aborting"}
    assert not [s for s in result["statuses"] if s.startswith("5")]
    assert result["server"]["crashed"] >= 1
