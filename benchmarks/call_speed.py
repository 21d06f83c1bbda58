"""Call speed and fresh-process cache hits, side by side with Numba (ratios are ours / Numba's).

    python benchmarks/call_speed.py [--rounds 7] [--json benchmarks/results/call_speed.json]

Warm calls (one process, both engines compiled and warmed, the pairs
alternated in every round; the best round of each): ``add(1, 2)``,
``two_arrays(a, b)`` on two float64 arrays, ``globals8(1.0)`` that reads 8
module globals, ``record_field(a)`` reading a field of a structured array's
first element. Kernels in ``call_kernels.py`` (``record_field`` here).

Fresh processes (the caches filled by a first run; ``GPUC_CACHE_DIR`` and
``NUMBA_CACHE_DIR`` point into one temporary directory; pairs alternated;
medians): the first call of a cached function right after the imports
(``first``, it pays each engine's one-time set-up), then the first call of
``loop20`` from the cache (the *disk hit after set-up*); and the whole
process, ``python -c`` with the import and ``loop20``'s first call from the
cache, timed from outside. Needs Numba (``pip install numba``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import call_kernels as K  # noqa: E402

_DECO = {"gpucompiler": "from gpucompiler import jit",
         "numba": "from numba import njit; jit = njit(cache=True)"}

_FRESH = """
import sys, time, json
t0 = time.perf_counter()
sys.path.insert(0, {here!r})
{deco}
import call_kernels as K, frontend_kernels as F
t1 = time.perf_counter(); jit(K.first)(2, 3)
t2 = time.perf_counter(); jit(F.loop20)(10, 1.5)
t3 = time.perf_counter()
print(json.dumps([(t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3]))
"""

_WHOLE = "import sys; sys.path.insert(0, {here!r}); {deco}; import frontend_kernels as F; jit(F.loop20)(10, 1.5)"


def _env(tmp: str) -> dict[str, str]:
    env = dict(os.environ, GPUC_CACHE_DIR=os.path.join(tmp, "gpuc"), NUMBA_CACHE_DIR=os.path.join(tmp, "numba"))
    for name in ("GPUC_CACHE", "GPUC_SERVICE_URL", "GPUC_CACHE_URL"):
        env.pop(name, None)
    return env


def fresh(engine: str, env: dict[str, str]) -> list[float]:
    """``[import ms, first cached call ms, loop20 disk hit after set-up ms]`` in a fresh process."""
    code = _FRESH.format(here=HERE, deco=_DECO[engine])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def whole(engine: str, env: dict[str, str]) -> float:
    """Milliseconds of ``python -c``: interpreter, imports, ``loop20``'s first call from the cache."""
    code = _WHOLE.format(here=HERE, deco=_DECO[engine])
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return (time.perf_counter() - t) * 1e3


def record_field(a):
    return a[0].m


def warm(fn, args, number: int = 100_000) -> float:
    """Microseconds per call, best of three repeats."""
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=3)) / number * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "call_speed.json"))
    opts = ap.parse_args()
    from numba import njit

    from gpucompiler import jit

    a, b = np.arange(100.0), np.ones(100)
    particles = np.zeros(100, [("x", np.float64), ("v", np.float64), ("m", np.float64), ("id", np.int32)])
    cases = {"add(1, 2)": (K.add, (1, 2)), "two arrays": (K.two_arrays, (a, b)),
             "8 globals": (K.globals8, (1.0,)), "structured array": (record_field, (particles,))}
    engines = {"gpucompiler": jit, "numba": njit}
    compiled = {e: {c: deco(fn) for c, (fn, _) in cases.items()} for e, deco in engines.items()}
    for e in engines:
        for c, (_, args) in cases.items():
            compiled[e][c](*args)
    samples: dict[str, dict[str, list[float]]] = {c: {e: [] for e in engines} for c in cases}
    for _ in range(opts.rounds):
        for c, (_, args) in cases.items():
            for e in engines:
                samples[c][e].append(warm(compiled[e][c], args))
    rows = {}
    for c in cases:
        ours, peer = min(samples[c]["gpucompiler"]), min(samples[c]["numba"])
        rows[f"warm call {c} (µs)"] = (ours, peer)

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        env = _env(tmp)
        for e in engines:  # fill the caches
            fresh(e, env)
        runs: dict[str, list[list[float]]] = {e: [] for e in engines}
        wholes: dict[str, list[float]] = {e: [] for e in engines}
        for _ in range(opts.rounds):
            for e in engines:
                runs[e].append(fresh(e, env))
                wholes[e].append(whole(e, env))
    med = {e: [statistics.median(r[k] for r in runs[e]) for k in range(3)] for e in engines}
    rows["import (ms)"] = (med["gpucompiler"][0], med["numba"][0])
    rows["first cached call, fresh process (ms)"] = (med["gpucompiler"][1], med["numba"][1])
    rows["disk hit after set-up: loop20 (ms)"] = (med["gpucompiler"][2], med["numba"][2])
    rows["whole process: python -c import + loop20 from the cache (ms)"] = (
        statistics.median(wholes["gpucompiler"]), statistics.median(wholes["numba"]))
    load_after = os.getloadavg()

    goals = {"warm call add(1, 2) (µs)": 2.0, "warm call two arrays (µs)": 2.0, "warm call 8 globals (µs)": 2.0,
             "warm call structured array (µs)": 2.0,
             "disk hit after set-up: loop20 (ms)": 0.5,
             "whole process: python -c import + loop20 from the cache (ms)": 0.4}
    print(f"{'case':64}{'gpucompiler':>12}{'numba':>10}{'ratio':>8}  goal")
    out = {"rows": {}, "load_avg_before": load_before, "load_avg_after": load_after,
           "python": sys.version.split()[0], "rounds": opts.rounds}
    for name, (ours, peer) in rows.items():
        goal = goals.get(name)
        verdict = "" if goal is None else f"<= {goal}x: {'met' if ours / peer <= goal else 'NOT met'}"
        print(f"{name:64}{ours:>12.4g}{peer:>10.4g}{ours / peer:>8.2f}  {verdict}")
        out["rows"][name] = {"gpucompiler": ours, "numba": peer, "ratio": ours / peer, "goal_ratio": goal}
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
