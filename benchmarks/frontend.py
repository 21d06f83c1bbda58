"""Frontend benchmarks: cold compile (fresh process), dispatch overhead, run time.

    python benchmarks/frontend.py [--json out.json]

Side by side with CPython, and with Numba when it is installed. The kernels
are in ``frontend_kernels.py``; ``loop20`` is the 20-line loop function.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import sys
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import frontend_kernels as K  # noqa: E402

_DECO = {"gpucompiler": "from gpucompiler import jit", "numba": "from numba import njit as jit"}


def cold_compile(engine: str, cache_dir: str | None = None) -> float | None:
    """Seconds to compile and run ``loop20`` once, in a fresh process (imports excluded).

    Without ``cache_dir`` the compile cache is off (a true cold compile); with
    it, the second run in the same directory measures a disk-cache hit.
    """
    code = (f"import sys, time; sys.path.insert(0, {HERE!r}); {_DECO[engine]}; import frontend_kernels as K\n"
            "t0 = time.perf_counter(); jit(K.loop20)(10, 1.5); print(time.perf_counter() - t0)")
    env = dict(os.environ, GPUC_CACHE="off") if cache_dir is None else dict(os.environ, GPUC_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return float(out.stdout) if out.returncode == 0 else None


def cache_hit() -> float | None:
    """Seconds for ``loop20``'s first call in a fresh process when the disk cache holds it."""
    with tempfile.TemporaryDirectory() as tmp:
        cold_compile("gpucompiler", tmp)
        return cold_compile("gpucompiler", tmp)


def _time(fn, *args, number=None):
    if number is None:
        once = timeit.timeit(lambda: fn(*args), number=1)
        number = max(1, int(0.2 / max(once, 1e-7)))
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=3)) / number


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(HERE, "results", "frontend.json"))
    opts = ap.parse_args()
    from gpucompiler import jit

    engines = {"cpython": lambda f: f, "gpucompiler": jit,
               "gpuc-nobc": lambda f: jit(f, boundscheck=False)}  # bounds checks off, as in Numba
    try:
        from numba import njit

        engines["numba"] = njit
    except ImportError:
        pass
    a = np.random.default_rng(0).random((300, 300))
    out = np.zeros_like(a)
    rng = np.random.default_rng(1)
    v = [rng.random(1_000_000) for _ in range(4)]
    cases = [(K.add, (1, 2)), (K.loop20, (100000, 1.5)), (K.stencil, (a, out)), (K.primes, (20000,)),
             (K.fused, (v[3], v[0], v[1], v[2])), (K.fused_arith, (v[3], v[0], v[1], v[2])),
             (K.reduce_expr, (v[0], v[1]))]
    rows = {}
    for name, deco in engines.items():
        fs = [deco(f) for f, _ in cases]
        for f, (_, args) in zip(fs, cases):
            f(*args)  # compile and warm
        rows[name] = {
            "cold_compile_s": cold_compile(name) if name in _DECO else None,
            "cache_hit_s": cache_hit() if name == "gpucompiler" else None,
            "dispatch_us": _time(fs[0], 1, 2, number=200000) * 1e6,
            "loop20_ms": _time(fs[1], *cases[1][1]) * 1e3,
            "stencil_ms": _time(fs[2], *cases[2][1]) * 1e3,
            "primes_ms": _time(fs[3], *cases[3][1]) * 1e3,
            # array expressions on 1e6 float64s; the cpython row is NumPy running them as written
            "fused_sin_ms": _time(fs[4], *cases[4][1]) * 1e3,
            "fused_arith_ms": _time(fs[5], *cases[5][1]) * 1e3,
            "reduce_expr_ms": _time(fs[6], *cases[6][1]) * 1e3,
        }
    cols = list(next(iter(rows.values())))
    print(f"{'engine':12}" + "".join(f"{c:>16}" for c in cols))
    for name, row in rows.items():
        print(f"{name:12}" + "".join(f"{row[c]:>16.4g}" if row[c] is not None else f"{'-':>16}"
                                     for c in cols))
    for col in ("fused_sin_ms", "fused_arith_ms", "reduce_expr_ms"):
        mine = rows["gpuc-nobc"][col]
        ratios = {other: mine / rows[other][col] for other in ("numba", "cpython") if other in rows}
        print(f"{col}: gpuc-nobc / " + ", ".join(f"{k if k != 'cpython' else 'numpy'} = {r:.2f}x"
                                                 for k, r in ratios.items()))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
