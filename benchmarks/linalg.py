"""Matrix products and ``np.linalg`` in compiled code beside NumPy (and Numba, when installed).

    python benchmarks/linalg.py [--json benchmarks/results/linalg.json] [--rounds 7]

Each row is one small Python function compiled by ``gpucompiler.jit`` and by
``numba.njit`` and called as it is by NumPy, checked against NumPy's result
before it is timed. All three call a BLAS: ours and NumPy's the same OpenBLAS
(NumPy's wheel), Numba's SciPy's. The engines are paired: in each round every
engine runs the case (enough calls for about 50 ms); the table gives each one's
best round in wall time (BLAS runs threads, whose CPU time adds up) and the median
over rounds of ours / NumPy's in the same round. Without Numba its column is empty.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np


def matmul(a, b):
    return a @ b


def dot(a, b):
    return np.dot(a, b)


def solve(a, b):
    return np.linalg.solve(a, b)


def inv(a):
    return np.linalg.inv(a)


def det(a):
    return np.linalg.det(a)


def norm(a):
    return np.linalg.norm(a)


def _cases():
    rng = np.random.default_rng(0)
    m = {n: rng.standard_normal((n, n)) for n in (256, 512, 1024)}
    well = m[512] / 16 + 2 * np.eye(512)  # eigenvalues within 1.5 of 2: a finite determinant
    return [
        ("A @ B 256x256 float64", matmul, (m[256], m[256].copy())),
        ("A @ B 1024x1024 float64", matmul, (m[1024], m[1024].copy())),
        ("A @ B 1024x1024 float32", matmul, (m[1024].astype(np.float32), m[1024].astype(np.float32))),
        ("A @ B.T 1024x1024 float64", matmul, (m[1024], m[1024].T)),
        ("np.dot(A, x) 1024", dot, (m[1024], m[1024][0].copy())),
        ("solve 512, 512x1", solve, (well, m[512][0].copy())),
        ("inv 256", inv, (m[256] / 16 + 2 * np.eye(256),)),
        ("det 512", det, (well,)),
        ("norm 1024x1024", norm, (m[1024],)),
    ]


def _calls(fn, args, number: int) -> float:
    t = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - t) / number


def _engines(fn, with_numba: bool):
    from gpucompiler import jit

    out = {"numpy": fn, "ours": jit(fn)}
    if not with_numba:
        return out
    try:
        import numba
    except ImportError:
        return out
    out["numba"] = numba.njit(fn)
    return out


def run(rounds: int, with_numba: bool = True) -> list[dict]:
    rows = []
    for name, fn, args in _cases():
        engines = _engines(fn, with_numba)
        want = fn(*args)
        for key, f in engines.items():
            got = f(*args)  # compiles
            if not np.allclose(got, want, rtol=1e-4, atol=1e-6 * max(1.0, float(np.abs(want).max()))):
                raise SystemExit(f"{name}: {key} differs from NumPy")
        once = max(_calls(f, args, 1) for f in engines.values())
        number = max(1, int(0.05 / max(once, 1e-7)))
        times: dict = {k: [] for k in engines}
        for _ in range(rounds):
            for k, f in engines.items():
                times[k].append(_calls(f, args, number))
        ratios = sorted(o / n for o, n in zip(times["ours"], times["numpy"]))
        rows.append({"case": name, **{k: min(v) for k, v in times.items()},
                     "ours/numpy": ratios[len(ratios) // 2]})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description="Matrix products and np.linalg in compiled code beside NumPy and Numba")
    p.add_argument("--json", help="write the rows and the machine to this file")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--no-numba", action="store_true",
                   help="leave Numba out (its SciPy's OpenBLAS starts a second pool of BLAS threads)")
    args = p.parse_args()
    rows = run(args.rounds, not args.no_numba)
    machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
               "load": os.getloadavg() if hasattr(os, "getloadavg") else None, "numpy": np.__version__}
    print(f"machine: {machine}")
    print(f"{'case':28s} {'numpy':>10s} {'ours':>10s} {'numba':>10s} {'ours/numpy':>10s}")
    for r in rows:
        numba_t = f"{r['numba'] * 1e3:8.3f}ms" if "numba" in r else " " * 10
        print(f"{r['case']:28s} {r['numpy'] * 1e3:8.3f}ms {r['ours'] * 1e3:8.3f}ms {numba_t} {r['ours/numpy']:10.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
