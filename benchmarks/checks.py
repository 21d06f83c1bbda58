"""Cost of CPython's math checks: the same loops under ErrorModel.PYTHON and ErrorModel.NUMPY.

    python benchmarks/checks.py [--json benchmarks/results/checks.json]

Each kernel runs in one process under both error models, alternating, and the
minimum CPU time (``time.process_time``: the machine is shared) of seven
repeats is kept. The checks are cold paths: the hot path tests that a math
result is finite. (Exact int/float comparisons and checked float -> int
conversions do not depend on the error model; their hot path is one
compare-and-branch each.)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import timeit

import numpy as np

from gpucompiler import ErrorModel, jit

HERE = os.path.dirname(os.path.abspath(__file__))


def math_loop(a):
    s = 0.0
    for i in range(a.shape[0]):
        x = a[i]
        s += math.sqrt(x) + math.log(x + 1.0) + math.exp(-x) + x ** 1.5
    return s


def _cpu(fn, *args) -> float:
    once = timeit.timeit(lambda: fn(*args), number=1, timer=time.process_time)
    number = max(1, int(0.1 / max(once, 1e-7)))
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=7, timer=time.process_time)) / number


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(HERE, "results", "checks.json"))
    opts = ap.parse_args()
    a = np.random.default_rng(0).random(100_000) * 10.0
    cases = {"math_loop (4 checked math calls per element)": (math_loop, (a,))}
    rows = {}
    for name, (fn, args) in cases.items():
        checked, ieee = jit(fn), jit(error_model=ErrorModel.NUMPY)(fn)
        assert checked(*args) == ieee(*args)
        t = {"python": [], "numpy": []}
        for _ in range(3):
            t["python"].append(_cpu(checked, *args))
            t["numpy"].append(_cpu(ieee, *args))
        rows[name] = {"python_ms": min(t["python"]) * 1e3, "numpy_ms": min(t["numpy"]) * 1e3}
        rows[name]["ratio"] = rows[name]["python_ms"] / rows[name]["numpy_ms"]
    print(f"{'kernel':55}{'PYTHON ms':>12}{'NUMPY ms':>12}{'ratio':>8}")
    for name, r in rows.items():
        print(f"{name:55}{r['python_ms']:>12.3f}{r['numpy_ms']:>12.3f}{r['ratio']:>8.3f}")
    if opts.json:
        os.makedirs(os.path.dirname(opts.json), exist_ok=True)
        with open(opts.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
