"""Matrix products, reductions along an axis and mask selections: compiled code beside Numba and NumPy.

    python benchmarks/numpy_axes.py [--json benchmarks/results/numpy_axes.json]

Our loops run on one thread, so BLAS (which NumPy and Numba call for ``@``)
is held to one thread too (``OPENBLAS_NUM_THREADS=1`` and friends, set here
before NumPy loads unless the environment sets them). Each case is checked
against NumPy before it is timed; the engines are timed in turns (ours,
Numba, NumPy, ours, ...) so that the load of a shared machine falls on all of
them alike, each ratio of the best turns of one run. Times are the CPU time
of the calling thread (``time.thread_time``): the time a loaded machine gives
to other jobs is not counted (what such sharing costs in caches still is).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import timeit

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def matmul(a, b):
    return a @ b


def col_sums(a):
    return np.sum(a, axis=0)


def row_sums(a):
    return np.sum(a, axis=1)


def row_argmax(a):
    return np.argmax(a, axis=1)


def masked_sum(a):
    return np.sum(a[a > 0.5])


def _cases():
    rng = np.random.default_rng(0)
    a, b = rng.random((256, 256)), rng.random((256, 256))
    m, x = rng.random((1000, 1000)), rng.random(1000)
    v = rng.random(1_000_000)
    return [("A @ B, 256x256 float64", matmul, (a, b)),
            ("A @ B, 256x256, B in F order", matmul, (a, np.asfortranarray(b))),
            ("A @ x, 1000x1000 float64", matmul, (m, x)),
            ("np.sum(A, axis=0), 1000x1000", col_sums, (m,)),
            ("np.sum(A, axis=1), 1000x1000", row_sums, (m,)),
            ("np.argmax(A, axis=1), 1000x1000", row_argmax, (m,)),
            ("np.sum(a[a > 0.5]), 1M float64", masked_sum, (v,))]


def _turns(engines: dict, args, turns: int = 25) -> dict:
    """Seconds per call of each engine: the best of ``turns`` batches, the engines taking turns."""
    timers = {name: timeit.Timer(lambda fn=fn: fn(*args), timer=time.thread_time) for name, fn in engines.items()}
    number = {name: max(1, int(0.03 / max(t.timeit(number=1), 1e-6))) for name, t in timers.items()}
    best = dict.fromkeys(engines, float("inf"))
    for _ in range(turns):
        for name, t in timers.items():
            best[name] = min(best[name], t.timeit(number=number[name]) / number[name])
    return best


def main() -> None:
    os.environ.setdefault("GPUC_TIER", "off")  # steady state: the full level, what a tiered function runs after tier-up
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(HERE, "results", "numpy_axes.json"))
    opts = ap.parse_args()
    from gpucompiler import jit
    try:
        from numba import njit
    except ImportError:
        njit = None
    rows = []
    for name, fn, args in _cases():
        want = fn(*args)
        engines = {"gpucompiler": jit(fn)}
        if njit is not None:
            engines["numba"] = njit(fn)
        engines["numpy"] = fn
        for engine, f in engines.items():
            np.testing.assert_allclose(f(*args), want, rtol=1e-10, err_msg=f"{engine}: {name}")
        best = _turns(engines, args)
        row = {"case": name, **{f"{k}_s": v for k, v in best.items()}}
        row.update({f"vs_{k}": best["gpucompiler"] / v for k, v in best.items() if k != "gpucompiler"})
        rows.append(row)
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} on {os.cpu_count()} cores; BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}")
    print(f"{'case':34}{'ours (ms)':>11}{'Numba (ms)':>12}{'NumPy (ms)':>12}{'/Numba':>8}{'/NumPy':>8}")
    for r in rows:
        nb = r.get("numba_s")
        numba_ms = f"{nb * 1e3:.3f}" if nb else "-"
        vs_numba = f"{r['vs_numba']:.2f}x" if nb else "-"
        print(f"{r['case']:34}{r['gpucompiler_s'] * 1e3:>11.3f}{numba_ms:>12}{r['numpy_s'] * 1e3:>12.3f}"
              f"{vs_numba:>8}{r['vs_numpy']:>7.2f}x")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"load_average": load, "cpus": os.cpu_count(),
                       "blas_threads": os.environ["OPENBLAS_NUM_THREADS"], "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
