"""Batch (vector) mode of width 8 against 8 separate derivative sweeps, on the CPU.

    python benchmarks/ad_batch.py [--quick] [--json benchmarks/results/ad_batch.json]

Two ``@jit`` functions per case, each one compiled call: the batch calls
``autodiff`` once with ``BatchDuplicated(x, (dx1, ..., dx8))`` (one sweep, the
primal computed once for the 8 lanes), the other calls ``autodiff`` eight
times with ``Duplicated(x, dxk)``. Both results are checked against each other.

* ``jvp``: forward mode, 8 Jacobian-vector products of an elementwise map with
  transcendental functions (``sin``, ``exp``, a division) over ``n`` elements;
* ``vjp``: reverse mode, 8 vector-Jacobian products of the same map;
* ``vjp-loop``: reverse mode of a recurrence ``s = s * c + sin(a[i])`` whose
  reverse needs its per-iteration values from the tape: one tape for the 8
  lanes against 8 tapes.

Each time is the median over several runs of the mean of many calls.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import timeit

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from enzyme_plugin import (BatchDuplicated, BatchDuplicatedNoNeed, Const, Duplicated,  # noqa: E402
                           DuplicatedNoNeed, Forward, Reverse, autodiff)
from gpucompiler import jit  # noqa: E402

DEFAULT_JSON = os.path.join(ROOT, "benchmarks", "results", "ad_batch.json")
WIDTH = 8


def emap(a, out):
    for i in range(a.shape[0]):
        x = a[i]
        out[i] = math.sin(x) * math.exp(0.5 * x) + x / (1.0 + x * x)


def recurrence(a, c):
    s = 0.0
    for i in range(a.shape[0]):
        s = s * c + math.sin(a[i]) * a[i]
    return s


def jvp_batch(a, out, v0, v1, v2, v3, v4, v5, v6, v7, t0, t1, t2, t3, t4, t5, t6, t7):
    autodiff(Forward, emap, BatchDuplicated(a, (v0, v1, v2, v3, v4, v5, v6, v7)),
             BatchDuplicatedNoNeed(out, (t0, t1, t2, t3, t4, t5, t6, t7)))


def jvp_separate(a, out, v0, v1, v2, v3, v4, v5, v6, v7, t0, t1, t2, t3, t4, t5, t6, t7):
    autodiff(Forward, emap, Duplicated(a, v0), DuplicatedNoNeed(out, t0))
    autodiff(Forward, emap, Duplicated(a, v1), DuplicatedNoNeed(out, t1))
    autodiff(Forward, emap, Duplicated(a, v2), DuplicatedNoNeed(out, t2))
    autodiff(Forward, emap, Duplicated(a, v3), DuplicatedNoNeed(out, t3))
    autodiff(Forward, emap, Duplicated(a, v4), DuplicatedNoNeed(out, t4))
    autodiff(Forward, emap, Duplicated(a, v5), DuplicatedNoNeed(out, t5))
    autodiff(Forward, emap, Duplicated(a, v6), DuplicatedNoNeed(out, t6))
    autodiff(Forward, emap, Duplicated(a, v7), DuplicatedNoNeed(out, t7))


def vjp_batch(a, out, v0, v1, v2, v3, v4, v5, v6, v7, t0, t1, t2, t3, t4, t5, t6, t7):
    autodiff(Reverse, emap, BatchDuplicated(a, (v0, v1, v2, v3, v4, v5, v6, v7)),
             BatchDuplicatedNoNeed(out, (t0, t1, t2, t3, t4, t5, t6, t7)))


def vjp_separate(a, out, v0, v1, v2, v3, v4, v5, v6, v7, t0, t1, t2, t3, t4, t5, t6, t7):
    autodiff(Reverse, emap, Duplicated(a, v0), DuplicatedNoNeed(out, t0))
    autodiff(Reverse, emap, Duplicated(a, v1), DuplicatedNoNeed(out, t1))
    autodiff(Reverse, emap, Duplicated(a, v2), DuplicatedNoNeed(out, t2))
    autodiff(Reverse, emap, Duplicated(a, v3), DuplicatedNoNeed(out, t3))
    autodiff(Reverse, emap, Duplicated(a, v4), DuplicatedNoNeed(out, t4))
    autodiff(Reverse, emap, Duplicated(a, v5), DuplicatedNoNeed(out, t5))
    autodiff(Reverse, emap, Duplicated(a, v6), DuplicatedNoNeed(out, t6))
    autodiff(Reverse, emap, Duplicated(a, v7), DuplicatedNoNeed(out, t7))


def loop_batch(a, c, v0, v1, v2, v3, v4, v5, v6, v7):
    autodiff(Reverse, recurrence, BatchDuplicated(a, (v0, v1, v2, v3, v4, v5, v6, v7)), Const(c))


def loop_separate(a, c, v0, v1, v2, v3, v4, v5, v6, v7):
    autodiff(Reverse, recurrence, Duplicated(a, v0), Const(c))
    autodiff(Reverse, recurrence, Duplicated(a, v1), Const(c))
    autodiff(Reverse, recurrence, Duplicated(a, v2), Const(c))
    autodiff(Reverse, recurrence, Duplicated(a, v3), Const(c))
    autodiff(Reverse, recurrence, Duplicated(a, v4), Const(c))
    autodiff(Reverse, recurrence, Duplicated(a, v5), Const(c))
    autodiff(Reverse, recurrence, Duplicated(a, v6), Const(c))
    autodiff(Reverse, recurrence, Duplicated(a, v7), Const(c))


def median_time(fn, min_time: float, repeat: int) -> float:
    """Median over ``repeat`` runs of the mean seconds per call."""
    fn()
    once = timeit.timeit(fn, number=1)
    number = max(1, int(min_time / max(once, 1e-8)))
    return statistics.median(t / number for t in timeit.repeat(fn, number=number, repeat=repeat))


def case(name, batch, separate, make, check, min_time, repeat):
    """Times ``batch`` and ``separate`` on fresh arguments from ``make()``; ``check(args)`` -> the lanes'
    results, compared between the two before timing."""
    fb, fs = jit(batch, plugins=("enzyme",)), jit(separate, plugins=("enzyme",))
    ab, as_ = make(), make()
    fb(*ab)
    fs(*as_)
    rb, rs = check(ab), check(as_)
    assert np.allclose(rb, rs, rtol=1e-12, atol=1e-12), f"{name}: batch and separate sweeps disagree"
    tb = median_time(lambda: fb(*ab), min_time, repeat)
    ts = median_time(lambda: fs(*as_), min_time, repeat)
    return {"case": name, "width": WIDTH, "batch_ms": tb * 1e3, "separate_ms": ts * 1e3, "speedup": ts / tb}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, short runs")
    ap.add_argument("--json", default=DEFAULT_JSON)
    args = ap.parse_args()
    n = 20_000 if args.quick else 200_000
    min_time, repeat = (0.05, 3) if args.quick else (0.3, 7)
    rng = np.random.default_rng(0)
    a = rng.uniform(-2.0, 2.0, n)

    vs = [rng.standard_normal(n) for _ in range(2 * WIDTH)]

    def make_map():
        return [a.copy(), np.zeros(n), *(v.copy() for v in vs)]

    def map_lanes(x):
        return np.array(x[2 + WIDTH:])  # forward: the tangents; reverse: the seeds are consumed (zero)

    def map_grads(x):
        return np.array(x[2:2 + WIDTH])

    def make_loop():
        return [a.copy(), 0.999, *(np.zeros(n) for _ in range(WIDTH))]

    def loop_grads(x):
        return np.array(x[2:])

    rows = [
        case("jvp (forward)", jvp_batch, jvp_separate, make_map, map_lanes, min_time, repeat),
        case("vjp (reverse)", vjp_batch, vjp_separate, make_map, map_grads, min_time, repeat),
        case("vjp-loop (reverse, tape)", loop_batch, loop_separate, make_loop, loop_grads, min_time, repeat),
    ]
    print(f"n = {n}, width {WIDTH}; times per call (all 8 derivatives)")
    print(f"{'case':<28}{'batch (ms)':>12}{'8 sweeps (ms)':>15}{'speedup':>9}")
    for r in rows:
        print(f"{r['case']:<28}{r['batch_ms']:>12.3f}{r['separate_ms']:>15.3f}{r['speedup']:>8.2f}x")
    doc = {"n": n, "width": WIDTH, "quick": args.quick, "machine": platform.processor() or platform.machine(),
           "cpus": os.cpu_count(), "load_average": os.getloadavg(), "rows": rows}
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
