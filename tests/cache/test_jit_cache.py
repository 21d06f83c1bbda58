"""``@jit`` compiles through the cache: a fresh process runs the code another process compiled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.cache.servers import ROOT

MODULE = textwrap.dedent("""
    import gpucompiler

    SCALE = 3

    def helper(x):
        return x * SCALE + 1

    @gpucompiler.jit
    def total(n):
        s = 0
        for i in range(n):
            s += helper(i)
        return s
""")

SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import jitmod
    from gpucompiler.cache.default import default_cache
    value = jitmod.total(100)
    print(json.dumps({"value": value, "stats": dict(default_cache().stats)}))
""")


def run(tmp_path, cache_dir):
    env = {**os.environ, "GPUC_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    env.pop("GPUC_SERVICE_URL", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_jit_reuses_code_compiled_by_another_process(tmp_path):
    (tmp_path / "jitmod.py").write_text(MODULE)
    cache_dir = tmp_path / "cache"
    first, second = run(tmp_path, cache_dir), run(tmp_path, cache_dir)
    expected = sum(i * 3 + 1 for i in range(100))
    assert first["value"] == second["value"] == expected
    assert first["stats"].get("compile") == 1 and "hit.disk" not in first["stats"]
    assert second["stats"].get("hit.disk") == 1 and "compile" not in second["stats"]
    # a callee's source changes: the key changes, the new code is compiled and right
    (tmp_path / "jitmod.py").write_text(MODULE.replace("x * SCALE + 1", "x * SCALE + 2"))
    third = run(tmp_path, cache_dir)
    assert third["value"] == sum(i * 3 + 2 for i in range(100)) and third["stats"].get("compile") == 1
