"""Figures for docs/scaling.md: pickling by reference, and a spawned worker's first call with a cold cache
(it compiles), a warm private disk, and only Redis warm (an empty private disk: the fleet's case).

    python tests/scaling/bench_workers.py [redis://localhost:6399/0]
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import sys
import tempfile
import time

import numpy as np

import scaling_shipped as shipped
from gpucompiler.cache.default import default_cache


def first_call(_: str) -> dict:
    """In a worker: the times of the first calls of ``poly`` (paying the imports) then ``total``, and the
    cache's counters."""
    times = {}
    for name, arg in (("poly", 2.0), ("total", np.arange(100.0))):
        start = time.perf_counter()
        getattr(shipped, name)(arg)
        times[f"{name} ms"] = round((time.perf_counter() - start) * 1e3, 2)
    return {**times, **default_cache().stats}


def in_worker(name: str, env: dict) -> dict:
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            return pool.apply(first_call, (name,))
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def entry_bytes(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(directory) for f in fs
               if not f.endswith(".lock"))


def main() -> None:
    out: dict = {}
    closure = shipped.scaler(2.5)
    for label, obj in (("module-level @jit", shipped.poly), ("closure @jit", closure), ("kernel", shipped.scale)):
        data = pickle.dumps(obj)
        n = 2000
        start = time.perf_counter()
        for _ in range(n):
            pickle.loads(pickle.dumps(obj))
        out[f"pickle round trip, {label}"] = {"bytes": len(data),
                                              "us": round((time.perf_counter() - start) / n * 1e6, 1)}
    redis = sys.argv[1] if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory() as warm, tempfile.TemporaryDirectory() as empty:
        env = {"GPUC_CACHE_DIR": warm}
        if redis:
            env["GPUC_CACHE_URL"] = redis
        out["cold worker (compiles)"] = in_worker("", env)
        out["worker, private disk warm"] = in_worker("", env)
        out["entry bytes on disk (2 functions, index and code)"] = entry_bytes(warm)
        if redis:
            out["worker, Redis warm, own disk empty"] = in_worker("", {**env, "GPUC_CACHE_DIR": empty})
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
