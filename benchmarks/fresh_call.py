"""The first ``@jit`` call of a fresh process served from the disk cache, as a user meets it.

    python benchmarks/fresh_call.py [--json benchmarks/results/fresh_call.json] [-n 7]

One process compiles ``frontend_kernels.loop20`` into an empty cache; then
``n`` fresh processes each time (perf_counter): ``import gpucompiler`` (and
the kernel's module), the first call (a disk hit: the compiler's cache and
runtime modules imported on first use, the host machine asked of LLVM, the
LLJIT made, the key checked, the object linked) and the second call. The
``preimported`` rows import ``gpucompiler.cache.default`` before the timed call, as
benchmarks/cache.py does: that call is the hit alone, without the imports.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
USER = """
import sys, time, json
t0 = time.perf_counter()
import gpucompiler
sys.path.insert(0, {bench!r})
import frontend_kernels as K
t1 = time.perf_counter()
f = gpucompiler.jit(K.loop20)
t = time.perf_counter(); f(10, 1.5); dt = time.perf_counter() - t
t2 = time.perf_counter(); f(10, 1.5); dt2 = time.perf_counter() - t2
from gpucompiler.cache.default import default_cache
print(json.dumps([t1 - t0, dt, dt2, dict(default_cache().stats)]))
"""
PRE = """
import sys, time, json
sys.path.insert(0, {bench!r})
import gpucompiler, frontend_kernels as K
from gpucompiler.cache.default import default_cache
f = gpucompiler.jit(K.loop20)
t = time.perf_counter(); f(10, 1.5); dt = time.perf_counter() - t
print(json.dumps([0.0, dt, 0.0, dict(default_cache().stats)]))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(HERE, "results", "fresh_call.json"))
    ap.add_argument("-n", type=int, default=7)
    opts = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="gpuc-fresh-")
    env = {k: v for k, v in os.environ.items() if k not in ("GPUC_SERVICE_URL", "GPUC_CACHE_URL")}
    env["GPUC_CACHE_DIR"] = cache
    load = os.getloadavg()
    out: dict = {}
    try:
        for name, code in (("user", USER), ("preimported", PRE)):
            rows = []
            for k in range(opts.n + (name == "user")):
                r = json.loads(subprocess.run([sys.executable, "-c", code.format(bench=HERE)], env=env,
                                              capture_output=True, text=True, check=True).stdout)
                if name == "user" and k == 0:
                    continue  # the cold compile that fills the cache
                assert "hit.disk" in r[3], r[3]
                rows.append(r[:3])
            out[name] = {"import_ms": statistics.median(r[0] for r in rows) * 1e3,
                         "first_call_ms": statistics.median(r[1] for r in rows) * 1e3,
                         "first_call_range_ms": [min(r[1] for r in rows) * 1e3, max(r[1] for r in rows) * 1e3],
                         "second_call_us": statistics.median(r[2] for r in rows) * 1e6}
            print(name, json.dumps(out[name]))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    out.update(loadavg_before=load, loadavg_after=os.getloadavg(), cpus=os.cpu_count(), n=opts.n)
    print(f"load average {load[0]:.1f} before, {out['loadavg_after'][0]:.1f} after; {os.cpu_count()} CPUs")
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
