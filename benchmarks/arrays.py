"""Arrays made, viewed and returned by compiled code, beside Numba (when installed) and NumPy.

    python benchmarks/arrays.py [--json benchmarks/results/arrays.json]

Rows: a small array made and returned (the call, the allocation and the
NumPy array handed back), a tuple of two new arrays and an int, 1M rows of a
new array read in a loop (views that borrow: no count updates), a 2-D Jacobi
stencil written with slices (views of arguments and of new arrays, 3 steps
on 512x512), and a reversed copy of 1M elements. Each is checked against the
NumPy result before it is timed.

The engines are paired: in each of ``--rounds`` rounds every engine runs
the case once (enough calls for about 50 ms), in CPU seconds of the process
(``time.process_time``: on a shared, loaded machine wall time is what other
jobs leave); the table gives each engine's best round and the median over
rounds of ours / Numba's in the same round.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import arrays_kernels as K  # noqa: E402


def _calls(fn, args, number: int, clock=time.process_time) -> float:
    t = clock()
    for _ in range(number):
        fn(*args)
    return (clock() - t) / number


def _paired(engines: dict, args, rounds: int) -> dict:
    """Per engine, its seconds per call in each round; the engines alternate within every round."""
    once = max(_calls(f, args, 1, time.perf_counter) for f in engines.values())
    number = max(1, int(0.05 / max(once, 1e-7)))
    times: dict = {k: [] for k in engines}
    for _ in range(rounds):
        for k, f in engines.items():
            times[k].append(_calls(f, args, number))
    return times


def _cases():
    rng = np.random.default_rng(0)
    u = rng.standard_normal((512, 512))
    a = rng.standard_normal(1_000_000)
    return [("return np.zeros(10)", K.small_new, (10,), lambda n: np.zeros(n)),
            ("return (zeros(10), ones((10, 2)), 10)", K.small_tuple, (10,), None),
            ("rows of a new (1M, 2) array", K.rows_of_new, (1_000_000,), None),
            ("stencil with slices 512x512, 3 steps", K.stencil, (u, 3), K.stencil_numpy),
            ("a[::-1].copy(), 1M float64", K.reversed_copy, (a,), None)]


def main() -> None:
    os.environ.setdefault("GPUC_TIER", "off")  # steady state: the full level, what a tiered function runs after tier-up
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(HERE, "results", "arrays.json"))
    ap.add_argument("--rounds", type=int, default=9)
    opts = ap.parse_args()
    from gpucompiler import jit
    try:
        from numba import njit
    except ImportError:
        njit = None
    load = os.getloadavg()
    rows = []
    for name, fn, args, numpy_fn in _cases():
        engines = {"gpucompiler": jit(fn)}
        if njit is not None:
            engines["numba"] = njit(fn)
        if numpy_fn is not None:
            engines["numpy"] = numpy_fn
        want = fn(*args)
        for k, f in engines.items():
            got = f(*args)
            for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
                np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=k)
        times = _paired(engines, args, opts.rounds)
        row = {"case": name, **{f"{k}_s": min(t) for k, t in times.items()}}
        if "numba" in times:
            ratios = sorted(a / b for a, b in zip(times["gpucompiler"], times["numba"]))
            row["gpucompiler_over_numba"] = ratios[len(ratios) // 2]
        rows.append(row)
    after = os.getloadavg()
    print(f"rounds {opts.rounds}, CPU time; load average {load[0]:.1f} before, {after[0]:.1f} after")
    print(f"{'case':40s} {'gpucompiler':>12s} {'numba':>12s} {'numpy':>12s} {'ours/numba':>11s}")
    for r in rows:
        cells = [r.get(k) for k in ("gpucompiler_s", "numba_s", "numpy_s")]
        ratio = r.get("gpucompiler_over_numba")
        print(f"{r['case']:40s} " + " ".join(f"{c * 1e6:10.2f}us" if c is not None else f"{'-':>12s}" for c in cells)
              + (f" {ratio:10.2f}x" if ratio is not None else ""))
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump({"rows": rows, "numpy": np.__version__, "rounds": opts.rounds, "clock": "process_time",
                   "loadavg_before": load, "loadavg_after": after}, f, indent=1)

if __name__ == "__main__":
    main()
