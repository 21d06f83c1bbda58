"""Parallel loops: a ``prange`` reduction serial and on threads, beside Numba's ``parallel=True``.

    python benchmarks/parallel.py [--n 20000000] [--json out.json]

Two reductions over ``n`` float64 values: ``sum_sqrt_sin`` (compute-bound:
``sqrt(x) * sin(x)`` per element) and ``sum`` (memory-bound). Each runs as a
serial ``range`` loop (``@jit``), as a ``prange`` loop under
``@jit(parallel=True)`` with 1 thread and with every usable CPU, and the same
with Numba (``njit`` / ``njit(parallel=True)``) when it is installed. The
table shows the best of several runs, the speedup over the serial loop, and
the CPU time the process used per second of wall time during the threaded
run (2.0 means both cores were busy: the machine's load shows there).

A last line gives the cost of one parallel region: the wall time per call of
the ``sum`` prange loop over ``--small`` (1000) elements on every usable CPU,
ours and Numba's, paired (each round times both; best round, and the median
of ours / Numba's over the rounds).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def sum_sqrt_sin_serial(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += math.sqrt(a[i]) * math.sin(a[i])
    return s


def sum_serial(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


def _prange_kernels(prange):
    def sum_sqrt_sin(a):
        s = 0.0
        for i in prange(a.shape[0]):
            s += math.sqrt(a[i]) * math.sin(a[i])
        return s

    def sum_(a):
        s = 0.0
        for i in prange(a.shape[0]):
            s += a[i]
        return s

    return {"sum_sqrt_sin": sum_sqrt_sin, "sum": sum_}


SERIAL = {"sum_sqrt_sin": sum_sqrt_sin_serial, "sum": sum_serial}


def _best(fn, a, repeat: int = 5) -> tuple[float, float]:
    """(best wall seconds, process CPU seconds per wall second of that run)."""
    fn(a)
    best, ratio = math.inf, 0.0
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn(a)
        wall, cpu = time.perf_counter() - w, time.process_time() - c
        if wall < best:
            best, ratio = wall, cpu / wall
    return best, ratio


def _per_call(engines: dict, a, rounds: int = 7, number: int = 2000) -> tuple[dict[str, float], float | None]:
    """Best wall seconds per call of each engine over paired rounds, and the median of the first's over
    the second's (None with one engine)."""
    times: dict[str, list[float]] = {k: [] for k in engines}
    for fn in engines.values():
        fn(a)
    for _ in range(rounds):
        for k, fn in engines.items():
            t = time.perf_counter()
            for _ in range(number):
                fn(a)
            times[k].append((time.perf_counter() - t) / number)
    names = list(times)
    ratio = None
    if len(names) > 1:
        ratios = sorted(x / y for x, y in zip(times[names[0]], times[names[1]]))
        ratio = ratios[len(ratios) // 2]
    return {k: min(v) for k, v in times.items()}, ratio


def _gpucompiler(threads: int):
    os.environ["GPUC_NUM_THREADS"] = str(threads)
    from gpucompiler import jit, prange

    jitted = {name: jit(parallel=True)(fn) for name, fn in _prange_kernels(prange).items()}
    for fn in jitted.values():  # compile now: the thread count is read when a function compiles
        fn(np.ones(4))
    return jitted


def main() -> None:
    os.environ.setdefault("GPUC_TIER", "off")  # steady state: the full level, what a tiered function runs after tier-up
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20_000_000)
    ap.add_argument("--small", type=int, default=1000, help="elements of the per-call (region start) row")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "parallel.json"))
    opts = ap.parse_args()
    from gpucompiler import jit
    from gpucompiler.settings import ParallelSettings

    cpus = ParallelSettings.from_env().threads
    a = np.random.default_rng(0).random(opts.n)
    variants = {"gpucompiler serial": {k: jit(f) for k, f in SERIAL.items()},
                "gpucompiler prange, 1 thread": _gpucompiler(1),
                f"gpucompiler prange, {cpus} threads": _gpucompiler(cpus)}
    try:
        import numba

        numba.set_num_threads(cpus)
        variants["numba serial"] = {k: numba.njit(f) for k, f in SERIAL.items()}
        variants[f"numba parallel=True, {cpus} threads"] = {
            k: numba.njit(parallel=True)(f) for k, f in _prange_kernels(numba.prange).items()}
    except ImportError:
        print("numba not installed: its rows are left out", file=sys.stderr)
    rows = []
    load = os.getloadavg()
    for kernel in SERIAL:
        want = SERIAL[kernel](a[:1000])
        base = None
        for name, fns in variants.items():
            got = fns[kernel](a[:1000])
            assert abs(got - want) <= 1e-9 * abs(want), (name, kernel, got, want)
            seconds, busy = _best(fns[kernel], a)
            if name.endswith("serial"):
                base = seconds
            rows.append({"kernel": kernel, "variant": name, "seconds": seconds, "cpu_per_wall": busy,
                         "speedup_vs_serial": (base / seconds) if base else None})
    print(f"n = {opts.n}, {cpus} usable CPUs, load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'kernel':14s} {'variant':32s} {'ms':>9s} {'speedup':>8s} {'cpu/wall':>8s}")
    for r in rows:
        sp = f"{r['speedup_vs_serial']:.2f}x" if r["speedup_vs_serial"] else ""
        print(f"{r['kernel']:14s} {r['variant']:32s} {r['seconds'] * 1e3:9.2f} {sp:>8s} {r['cpu_per_wall']:8.2f}")
    threaded = [name for name in variants if name.endswith(f"{cpus} threads")]
    per_call, ratio = _per_call({name: variants[name]["sum"] for name in threaded}, a[:opts.small])
    print(f"per call, sum of {opts.small} elements on {cpus} threads: "
          + ", ".join(f"{name.split()[0]} {s * 1e6:.2f} us" for name, s in per_call.items())
          + (f"; ours / numba (median of paired rounds) {ratio:.2f}x" if ratio is not None else "")
          + f"; load average after: {os.getloadavg()[0]:.2f}")
    if opts.json:
        os.makedirs(os.path.dirname(opts.json), exist_ok=True)
        with open(opts.json, "w") as f:
            json.dump({"n": opts.n, "cpus": cpus, "loadavg": load, "rows": rows,
                       "per_call": {"n": opts.small, "seconds": per_call, "over_numba": ratio}}, f, indent=2)


if __name__ == "__main__":
    main()
