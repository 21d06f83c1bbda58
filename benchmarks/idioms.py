"""Idioms Numba users write (powers, sums of squares, slices, masks, prange reductions), beside Numba.

    python benchmarks/idioms.py [--json benchmarks/results/idioms.json] [--rounds 7] [--only TEXT]

Each row is the same Python function (benchmarks/idioms_kernels.py) compiled
by ``gpucompiler.jit`` and ``numba.njit`` with the same options (the row
names them), checked against the function run by CPython/NumPy before it is
timed. The engines are paired: in each round every engine runs the case
once (enough calls for about 50 ms); the table gives each engine's best
round (CPU seconds of the process: ``time.process_time``, as on a loaded
machine wall time is what other jobs leave; the ``prange`` rows use wall
time, since their threads' CPU time adds up, and each of their rounds starts
after half a second of sleep, so that the other engine's idle threads, which
may spin a while, have stopped) and the median over rounds of
ours / Numba's in the same round. Without Numba the Numba column is empty.
The sort rows also time the function run by CPython (NumPy's own sort) and
give ours / NumPy's; Numba refuses ``np.sort``'s ``kind=`` (its column
empty there).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import idioms_kernels as K  # noqa: E402


def _calls(fn, args, number: int, clock) -> float:
    t = clock()
    for _ in range(number):
        fn(*args)
    return (clock() - t) / number


def _paired(engines: dict, args, rounds: int, clock, settle: float = 0.0) -> dict:
    """Rounds of each engine in turn; ``settle`` seconds of sleep before each engine's round (threaded rows: an
    engine's idle workers still spinning, OpenMP's for instance, would take the cores from the next one)."""
    once = max(_calls(f, args, 1, time.perf_counter) for f in engines.values())
    number = max(1, int(0.05 / max(once, 1e-7)))
    times: dict = {k: [] for k in engines}
    for _ in range(rounds):
        for k, f in engines.items():
            time.sleep(settle)
            times[k].append(_calls(f, args, number, clock))
    return times


def _cases():
    rng = np.random.default_rng(0)
    a = rng.random(1_000_000)
    m = rng.random((1000, 1000))
    u = rng.random((512, 512))
    out = np.empty_like(a)
    rows = np.empty(1000)
    return [
        ("s += a[i] ** 2 (1M)", K.sum_sq_pow, (a,), {}),
        ("s += a[i] ** 2, error_model=numpy", K.sum_sq_pow, (a,), {"error_model": "numpy"}),
        ("s += a[i] ** 2, fastmath", K.sum_sq_pow, (a,), {"fastmath": True}),
        ("s += x * x (1M)", K.sum_sq_mul, (a,), {}),
        ("s += a[i] ** 3 (1M)", K.sum_cubes, (a,), {}),
        ("s += a[i] ** 3, error_model=numpy", K.sum_cubes, (a,), {"error_model": "numpy"}),
        ("s += a[i] ** 3, fastmath", K.sum_cubes, (a,), {"fastmath": True}),
        ("s += a[i] ** -1 (1M)", K.sum_reciprocal, (a,), {}),
        ("s += i ** 2, ints (1M)", K.int_squares, (1_000_000,), {}),
        ("out[i] = a[i] ** 2.0 (1M)", K.map_square, (a, out), {}),
        ("(a ** 2).sum() (1M)", K.array_sum_sq, (a,), {}),
        ("row norms m[i, j] ** 2 (1000x1000)", K.norm_rows, (m, rows), {}),
        ("(a[1:] - a[:-1]).sum() (1M)", K.diff_slices, (a,), {}),
        ("stencil with slices (512x512)", K.stencil, (u,), {}),
        ("a[a > 0.5].sum() (1M)", K.masked_sum, (a,), {}),
        ("np.where(a > 0.5, a, 0).sum() (1M)", K.where_sum, (a,), {}),
        ("prange s += a[i] ** 2, parallel (1M)", K.prange_sum_sq, (a,), {"parallel": True}),
        ("prange s += a[i], parallel (1M)", K.prange_sum, (a,), {"parallel": True}),
        ("vectorize rel_diff(a, b) (1M)", K.rel_diff, (a, a[::-1].copy()), {"vectorize": True}),
        ("vectorize rel_diff(m, row) (1000x1000)", K.rel_diff, (m, a[:1000].copy()), {"vectorize": True}),
        ("np.sort(a) (1M)", K.sort, (a,), {"numpy": True}),
        ("np.argsort(a) (1M)", K.argsort, (a,), {"numpy": True}),
        ("np.sort(a, kind='stable') (1M)", K.sort_stable, (a,), {"numpy": True}),
        ("np.argsort(a, kind='mergesort') (1M)", K.argsort_stable, (a,), {"numpy": True}),
    ]


def main() -> None:
    os.environ.setdefault("GPUC_TIER", "off")  # steady state: the full level, what a tiered function runs after tier-up
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(HERE, "results", "idioms.json"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="", help="run the rows whose name contains this text")
    opts = ap.parse_args()
    from gpucompiler import jit, vectorize
    try:
        import numba
        from numba import njit
    except ImportError:
        numba = njit = None
    load = os.getloadavg()
    rows = []
    for name, fn, args, options in _cases():
        if opts.only not in name:
            continue
        if options.get("vectorize"):  # a ufunc of the scalar function, one signature
            sig = ["float64(float64, float64)"]
            engines = {"gpucompiler": vectorize(sig)(fn)}
            if numba is not None:
                engines["numba"] = numba.vectorize(sig)(fn)
        else:
            jit_options = {k: v for k, v in options.items() if k != "numpy"}
            engines = {"gpucompiler": jit(fn, **jit_options)}
            if numba is not None and njit is not None:  # the same code, with Numba's prange in its globals
                engines["numba"] = njit(types.FunctionType(fn.__code__, {**fn.__globals__, "prange": numba.prange},
                                                           fn.__name__), **jit_options)
            if options.get("numpy"):  # the function run by CPython: NumPy's own time
                engines["numpy"] = fn
        want = fn(*args)
        for k, f in list(engines.items()):
            try:
                got = f(*args)
            except Exception as exc:  # Numba refuses some spellings (np.sort's kind=)
                if k != "numba":
                    raise
                print(f"{name}: numba refuses it ({type(exc).__name__})", flush=True)
                del engines[k]
                continue
            if want is not None:
                np.testing.assert_allclose(got, want, rtol=1e-9, err_msg=f"{k}: {name}")
        clock = time.perf_counter if options.get("parallel") else time.process_time
        times = _paired(engines, args, opts.rounds, clock, 0.5 if options.get("parallel") else 0.0)
        row = {"case": name, "options": options, **{f"{k}_s": min(t) for k, t in times.items()}}
        for other in ("numba", "numpy"):
            if other in times:
                ratios = sorted(a / b for a, b in zip(times["gpucompiler"], times[other]))
                row[f"gpucompiler_over_{other}"] = ratios[len(ratios) // 2]
        rows.append(row)
        print(f"{name:42s} " + " ".join(f"{k} {min(t) * 1e6:9.1f}us" for k, t in times.items())
              + "".join(f"  {row[r]:5.2f}x {r.rsplit('_', 1)[1]}" for r in ("gpucompiler_over_numba",
                                                                          "gpucompiler_over_numpy") if r in row),
              flush=True)
    after = os.getloadavg()
    print(f"rounds {opts.rounds}; load average {load[0]:.1f} before, {after[0]:.1f} after; "
          f"{os.cpu_count()} CPUs")
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump({"rows": rows, "numpy": np.__version__, "numba": getattr(numba, "__version__", None),
                   "rounds": opts.rounds, "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(),
                   "loadavg_before": load, "loadavg_after": after}, f, indent=1)


if __name__ == "__main__":
    main()
