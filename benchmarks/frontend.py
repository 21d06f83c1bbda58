"""Frontend benchmarks: cold compile (fresh process), dispatch overhead, run time.

    python benchmarks/frontend.py [--json out.json]
    python benchmarks/frontend.py --arrays [--rounds 9] [--json out.json]

Side by side with CPython, and with Numba when it is installed. The kernels
are in ``frontend_kernels.py``; ``loop20`` is the 20-line loop function.

``--arrays`` times the array-expression kernels (a fused ``a*b + np.sin(c)``
and an arithmetic one, reductions of expressions, a 2-D stencil written with
slices, a ``prange`` reduction) beside Numba (``parallel=True`` for the
``prange`` loop) and NumPy running the same source, in alternated pairs: in
every round each engine runs each kernel once (several calls), and a ratio
is the median over rounds of ours / theirs in the same round. Serial kernels
are timed in CPU seconds of the process (``time.process_time``: a shared,
loaded machine steals wall time from whoever runs); the ``prange`` loop in
wall seconds, on every usable CPU and on one thread, also alternated.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import sys
import time
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


def _calls(fn, args, clock, number: int) -> float:
    t = clock()
    for _ in range(number):
        fn(*args)
    return (clock() - t) / number


def _paired(engines: dict, args, rounds: int, clock) -> dict:
    """Per engine: the times of its kernel (seconds per call) in each of ``rounds`` alternated rounds."""
    once = max(_calls(f, args, time.perf_counter, 1) for f in engines.values())
    number = max(1, int(0.05 / max(once, 1e-7)))
    times: dict = {name: [] for name in engines}
    for _ in range(rounds):
        for name, f in engines.items():
            times[name].append(_calls(f, args, clock, number))
    return times


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1] + xs[len(xs) // 2])


def array_kernels(rounds: int, json_path: str | None) -> None:
    """The array-expression kernels beside Numba and NumPy, paired (see the module docstring)."""
    from numba import njit, prange as numba_prange, set_num_threads

    from gpucompiler import jit, prange
    from gpucompiler.settings import ParallelSettings

    cpus = ParallelSettings.from_env().threads
    set_num_threads(cpus)
    rng = np.random.default_rng(1)
    v = [rng.random(1_000_000) for _ in range(4)]
    u, out = rng.random((512, 512)), np.zeros((512, 512))
    big = rng.random(4_000_000)
    # (name, kernel, arguments, index of the argument it writes or None: it returns its result)
    serial = [("fused_sin", K.fused, (v[3], v[0], v[1], v[2]), 0),
              ("fused_arith", K.fused_arith, (v[3], v[0], v[1], v[2]), 0),
              ("reduce_expr", K.reduce_expr, (v[0], v[1]), None),
              ("stencil_slices", K.stencil_slices, (u, out), 1)]
    load = os.getloadavg()
    rows = []
    for name, fn, args, written in serial:
        engines = {"gpucompiler": jit(fn, boundscheck=False), "gpucompiler_checked": jit(fn),
                   "numba": njit(fn), "numpy": fn}
        results = {}
        for k, f in engines.items():
            if written is not None:
                args[written][...] = -1.0
            r = f(*args)
            results[k] = args[written].copy() if written is not None else r
        for k, r in results.items():
            np.testing.assert_allclose(r, results["numpy"], rtol=1e-12, err_msg=k)
        times = _paired(engines, args, rounds, time.process_time)
        rows.append({"kernel": name, "clock": "cpu", **{f"{k}_s": min(t) for k, t in times.items()},
                     **{f"gpucompiler_over_{k}": _median([a / b for a, b in zip(times["gpucompiler"], t)])
                        for k, t in times.items() if k != "gpucompiler"}})
    threaded = {"gpucompiler parallel": jit(parallel=True)(K.prange_kernels(prange)),
                "gpucompiler serial": jit(K.prange_kernels(range)),
                "numba parallel": njit(parallel=True)(K.prange_kernels(numba_prange)),
                "numba serial": njit(K.prange_kernels(range)),
                "numpy": K.sum_sqrt_sin_numpy}
    want = K.sum_sqrt_sin_numpy(big)
    for k, f in threaded.items():
        assert abs(f(big) - want) <= 1e-9 * abs(want), k
    times = _paired(threaded, (big,), rounds, time.perf_counter)
    pr = {"kernel": "prange_sum_sqrt_sin", "clock": "wall", "threads": cpus,
          **{f"{k.replace(' ', '_')}_s": min(t) for k, t in times.items()}}
    for engine in ("gpucompiler", "numba"):
        pr[f"{engine}_speedup"] = _median([s / p for s, p in zip(times[f"{engine} serial"], times[f"{engine} parallel"])])
    pr["gpucompiler_over_numba"] = _median([a / b for a, b in zip(times["gpucompiler parallel"], times["numba parallel"])])
    pr["gpucompiler_over_numpy"] = _median([a / b for a, b in zip(times["gpucompiler parallel"], times["numpy"])])
    rows.append(pr)
    after = os.getloadavg()
    print(f"rounds {rounds}, {cpus} usable CPUs, load average {load[0]:.1f} before, {after[0]:.1f} after")
    print(f"{'kernel':22s} {'ours ms':>9s} {'checked':>9s} {'numba ms':>9s} {'numpy ms':>9s} "
          f"{'/numba':>7s} {'/numpy':>7s}")
    for r in rows[:-1]:
        print(f"{r['kernel']:22s} {r['gpucompiler_s'] * 1e3:9.3f} {r['gpucompiler_checked_s'] * 1e3:9.3f} "
              f"{r['numba_s'] * 1e3:9.3f} {r['numpy_s'] * 1e3:9.3f} {r['gpucompiler_over_numba']:7.2f} "
              f"{r['gpucompiler_over_numpy']:7.2f}")
    print(f"{pr['kernel']} (wall, {cpus} threads): ours {pr['gpucompiler_parallel_s'] * 1e3:.2f} ms "
          f"(serial {pr['gpucompiler_serial_s'] * 1e3:.2f}, speedup {pr['gpucompiler_speedup']:.2f}x), "
          f"numba {pr['numba_parallel_s'] * 1e3:.2f} ms (serial {pr['numba_serial_s'] * 1e3:.2f}, speedup "
          f"{pr['numba_speedup']:.2f}x), numpy {pr['numpy_s'] * 1e3:.2f} ms; ours / numba "
          f"{pr['gpucompiler_over_numba']:.2f}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"rounds": rounds, "cpus": cpus, "loadavg_before": load, "loadavg_after": after,
                       "rows": rows}, f, indent=2)


def main() -> None:
    os.environ.setdefault("GPUC_TIER", "off")  # steady state: the full level, what a tiered function runs after tier-up
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None, help="default: results/frontend.json (frontend_arrays.json with --arrays)")
    ap.add_argument("--arrays", action="store_true", help="the array-expression kernels, paired")
    ap.add_argument("--rounds", type=int, default=9)
    opts = ap.parse_args()
    if opts.arrays:
        array_kernels(opts.rounds, opts.json or os.path.join(HERE, "results", "frontend_arrays.json"))
        return
    opts.json = opts.json or os.path.join(HERE, "results", "frontend.json")
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
    cases = [(K.add, (1, 2)), (K.loop20, (100000, 1.5)), (K.stencil, (a, out)), (K.primes, (20000,))]
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
        }
    cols = list(next(iter(rows.values())))
    print(f"{'engine':12}" + "".join(f"{c:>16}" for c in cols))
    for name, row in rows.items():
        print(f"{name:12}" + "".join(f"{row[c]:>16.4g}" if row[c] is not None else f"{'-':>16}"
                                     for c in cols))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
