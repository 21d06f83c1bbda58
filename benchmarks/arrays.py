"""Arrays made, viewed and returned by compiled code, beside Numba (when installed) and NumPy.

    python benchmarks/arrays.py [--json benchmarks/results/arrays.json]

Rows: a small array made and returned (the call, the allocation and the
NumPy array handed back), 1M rows of a new array read in a loop (views that
borrow: no count updates), a 2-D Jacobi stencil written with slices (views of
arguments and of new arrays, 3 steps on 512x512), and a reversed copy of 1M
elements. Each is checked against the NumPy result before it is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import arrays_kernels as K  # noqa: E402


def _time(fn, *args) -> float:
    once = timeit.timeit(lambda: fn(*args), number=1)
    number = max(1, int(0.2 / max(once, 1e-7)))
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=5)) / number


def _cases():
    rng = np.random.default_rng(0)
    u = rng.standard_normal((512, 512))
    a = rng.standard_normal(1_000_000)
    return [("return np.zeros(10)", K.small_new, (10,), lambda: np.zeros(10)),
            ("rows of a new (1M, 2) array", K.rows_of_new, (1_000_000,), None),
            ("stencil with slices 512x512, 3 steps", K.stencil, (u, 3), lambda: K.stencil_numpy(u, 3)),
            ("a[::-1].copy(), 1M float64", K.reversed_copy, (a,), lambda: a[::-1].copy())]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(HERE, "results", "arrays.json"))
    opts = ap.parse_args()
    from gpucompiler import jit
    try:
        from numba import njit
    except ImportError:
        njit = None
    rows = []
    for name, fn, args, numpy_fn in _cases():
        ours = jit(fn)
        want = fn(*args)
        np.testing.assert_allclose(ours(*args), want, rtol=1e-12)
        row = {"case": name, "gpucompiler_s": _time(ours, *args)}
        if njit is not None:
            theirs = njit(fn)
            np.testing.assert_allclose(theirs(*args), want, rtol=1e-12)
            row["numba_s"] = _time(theirs, *args)
        if numpy_fn is not None:
            row["numpy_s"] = _time(numpy_fn)
        rows.append(row)
    print(f"{'case':40s} {'gpucompiler':>12s} {'numba':>12s} {'numpy':>12s}")
    for r in rows:
        cells = [r.get(k) for k in ("gpucompiler_s", "numba_s", "numpy_s")]
        print(f"{r['case']:40s} " + " ".join(f"{c * 1e6:10.1f}us" if c is not None else f"{'-':>12s}" for c in cells))
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump({"rows": rows, "numpy": np.__version__, "load": os.getloadavg()}, f, indent=1)


if __name__ == "__main__":
    main()
