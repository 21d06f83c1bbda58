"""Reverse-mode AD on the CPU: gradient time / primal time.

    python benchmarks/ad_cpu.py [--quick] [--json benchmarks/results/ad_cpu.json]

Six functions written in C (tests/enzyme/c/bench.c: dot product, polynomial,
logsumexp, a 1-D heat stencil over 20 time steps, a small MLP, an n-body
energy), compiled by clang-19 at -O2 (the committed fixture
tests/enzyme/fixtures/bench.O2.ll), differentiated by
``enzyme_plugin.differentiate`` and run through the JIT. The same functions
are written in JAX and timed as ``jax.jit(f)`` / ``jax.jit(jax.grad(f))`` when
JAX is installed; both gradients are checked against each other.

Two loop-heavy functions go through the Python frontend and ``@jit``
(benchmarks/ad_loops.py): a 13-step iterated map with a branch in each step
and a Newton solve with a data-dependent ``while``, per element of an array,
the gradient calling ``autodiff`` per element. JAX writes the branch with
``where`` and the Newton solve as a fixed number of steps (it cannot
reverse-differentiate a ``while_loop``). ``logsumexp.py`` is bench.c's
log-sum-exp written in Python, differentiated in one ``autodiff`` call: its
loops call ``math.exp``, which the native target maps onto glibc's SIMD
libmvec (clang's fixture calls scalar ``exp``, which may set ``errno``).

JAX uses every core unless the process is pinned: ``taskset -c 0 python
benchmarks/ad_cpu.py`` compares both on one thread (ours is single-threaded).

With ``--both-ways`` the six C functions are also compiled from bench.c by
clang-19 -O2 with its optimiser off and differentiated at Enzyme's place in
the O2 pipeline (``enzyme_plugin.cpipeline``, what ``gpuc cc -O2`` does): the
``pipe`` columns, with the largest relative difference of the two gradients.

Each time is the median over several runs of the mean of many calls.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import re
import statistics
import sys
import time
import timeit

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ad_kernels as K  # noqa: E402  (constants of the loop functions)
FIXTURE = os.path.join(ROOT, "tests", "enzyme", "fixtures", "bench.O2.ll")
C_DIR = os.path.join(ROOT, "tests", "enzyme", "c")
#: the fixture's clang flags (tests/enzyme/regen_fixtures.py), for the pre-optimisation route
CLANG_FLAGS = ["--target=x86_64-pc-linux-gnu", "-fno-ident", "-ffp-contract=on", f"-I{C_DIR}"]
DEFAULT_JSON = os.path.join(ROOT, "benchmarks", "results", "ad_cpu.json")

#: the @jit loop functions: elements, elements with --quick
LOOP_N = (100_000, 10_000)

HEAT_STEPS, MLP_IN, MLP_HID, MLP_BATCH, POLY_DEG = 20, 8, 16, 32, 7

#: benchmark name -> (C entry prefix, n, n with --quick, sampling interval)
FUNCTIONS = {
    "dot": ("bdot", 200_000, 20_000, (-1.0, 1.0)),
    "polynomial": ("bpoly", POLY_DEG + 1 + 50_000, POLY_DEG + 1 + 5_000, (-1.0, 1.0)),
    "logsumexp": ("blse", 50_000, 5_000, (-3.0, 3.0)),
    "heat": ("bheat", 4_000, 400, (-1.0, 1.0)),
    "mlp": ("bmlp", MLP_HID * MLP_IN + 2 * MLP_HID + 1, MLP_HID * MLP_IN + 2 * MLP_HID + 1, (-0.5, 0.5)),
    "nbody": ("bnbody", 3 * 200, 3 * 60, (-2.0, 2.0)),
}


def median_time(fn, min_time: float, repeat: int) -> float:
    """Median over ``repeat`` runs of the mean seconds per call (calls per run
    calibrated so that a run lasts about ``min_time``)."""
    fn()
    once = timeit.timeit(fn, number=1)
    number = max(1, int(min_time / max(once, 1e-8)))
    return statistics.median(t / number for t in timeit.repeat(fn, number=number, repeat=repeat))


# --------------------------------------------------------------------------- ours


def load_ours():
    import enzyme_plugin
    from gpucompiler.runtime import CPULibrary

    with open(FIXTURE) as f:
        text = f.read()
    t0 = time.perf_counter()
    out = enzyme_plugin.differentiate(text)
    t_diff = time.perf_counter() - t0
    return CPULibrary.from_ir(out), t_diff


def load_in_pipeline():
    """bench.c differentiated at Enzyme's place in clang's O2 pipeline (as ``gpuc cc -O2``)."""
    from pathlib import Path

    from enzyme_plugin.cc import clang_ir
    from enzyme_plugin.cpipeline import differentiate_in_pipeline
    from gpucompiler.runtime import CPULibrary

    text = clang_ir(Path(C_DIR) / "bench.c", 2, CLANG_FLAGS)
    t0 = time.perf_counter()
    out = differentiate_in_pipeline(text, 2)
    return CPULibrary.from_ir(out), time.perf_counter() - t0


def time_ours(lib, prefix: str, x: np.ndarray, min_time: float, repeat: int):
    p = ctypes.POINTER(ctypes.c_double)
    primal = lib.function(f"{prefix}_primal", ctypes.c_double, p, ctypes.c_int)
    grad = lib.function(f"{prefix}_grad", None, p, p, ctypes.c_int)
    xs, dx = x.copy(), np.zeros_like(x)
    px, pdx, n = xs.ctypes.data_as(p), dx.ctypes.data_as(p), len(x)
    t_primal = median_time(lambda: primal(px, n), min_time, repeat)
    t_grad = median_time(lambda: grad(px, pdx, n), min_time, repeat)
    g = np.zeros_like(x)
    grad(x.copy().ctypes.data_as(p), g.ctypes.data_as(p), n)
    return t_primal, t_grad, g


def time_loops(name: str, x: np.ndarray, min_time: float, repeat: int):
    """Primal and gradient times of a benchmarks/ad_loops.py function (compiled before timing)."""
    import ad_loops

    primal, grad, _ = {**ad_loops.LOOPS, **ad_loops.ARRAYS}[name]
    out, dx = np.zeros_like(x), np.zeros_like(x)
    primal(x, out)
    grad(x, dx)
    t_primal = median_time(lambda: primal(x, out), min_time, repeat)
    t_grad = median_time(lambda: grad(x, dx), min_time, repeat)
    g = np.zeros_like(x)
    grad(x, g)
    return t_primal, t_grad, g


# --------------------------------------------------------------------------- JAX


def jax_functions():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def dot(x):
        h = x.shape[0] // 2
        return jnp.dot(x[:h], x[h:2 * h])

    def polynomial(x):
        c, t = x[:POLY_DEG + 1], x[POLY_DEG + 1:]
        p = jnp.full_like(t, c[POLY_DEG])
        for i in range(POLY_DEG - 1, -1, -1):
            p = p * t + c[i]
        return jnp.sum(p)

    def logsumexp(x):
        m = jnp.max(x)
        return m + jnp.log(jnp.sum(jnp.exp(x - m)))

    def heat(x):
        def step(_, u):
            return u.at[1:-1].set(u[1:-1] + 0.25 * (u[:-2] - 2.0 * u[1:-1] + u[2:]))

        u = jax.lax.fori_loop(0, HEAT_STEPS, step, x)
        w = 1.0 + 0.01 * jnp.arange(x.shape[0])
        return jnp.sum(w * u * u)

    k, i = np.meshgrid(np.arange(MLP_BATCH), np.arange(MLP_IN), indexing="ij")
    inputs = jnp.asarray(np.sin(0.3 * (k * MLP_IN + i) + 0.1))
    targets = jnp.asarray(0.25 * np.arange(MLP_BATCH) - 0.3)

    def mlp(p):
        w1 = p[:MLP_HID * MLP_IN].reshape(MLP_HID, MLP_IN)
        b1 = p[MLP_HID * MLP_IN:MLP_HID * MLP_IN + MLP_HID]
        w2 = p[MLP_HID * MLP_IN + MLP_HID:MLP_HID * MLP_IN + 2 * MLP_HID]
        b2 = p[-1]
        out = jnp.tanh(inputs @ w1.T + b1) @ w2 + b2
        return jnp.mean((out - targets) ** 2)

    def nbody(x):
        pos = x.reshape(-1, 3)
        nb = pos.shape[0]
        m = 1.0 + 0.1 * (jnp.arange(nb) % 5)
        d = pos[:, None, :] - pos[None, :, :]
        r = jnp.sqrt(jnp.sum(d * d, axis=-1) + 0.01)
        upper = jnp.triu(jnp.ones((nb, nb)), 1)
        return -jnp.sum(upper * m[:, None] * m[None, :] / r)

    def bmap(x):
        s = x
        for k in range(K.MAP_STEPS):
            s = jnp.where(s > 0.2, 0.8 * s - 0.25 * s * s + 0.05 * k, jnp.sin(1.5 * s) + 0.3)
        return jnp.sum(s)

    def newton(x):
        y = x
        for _ in range(K.NEWTON_STEPS):
            y = y - (y * y * y + y - x) / (3.0 * y * y + 1.0)
        return jnp.sum(y * y)

    fns = dict(dot=dot, polynomial=polynomial, logsumexp=logsumexp, heat=heat, mlp=mlp, nbody=nbody,
               **{"bmap13.py": bmap, "newton.py": newton, "logsumexp.py": logsumexp})
    return jax, {name: (jax.jit(f), jax.jit(jax.grad(f))) for name, f in fns.items()}


def time_jax(jax, pair, x: np.ndarray, min_time: float, repeat: int):
    f, g = pair
    xj = jax.device_put(x)
    t_primal = median_time(lambda: f(xj).block_until_ready(), min_time, repeat)
    t_grad = median_time(lambda: g(xj).block_until_ready(), min_time, repeat)
    return t_primal, t_grad, np.asarray(g(xj))


# --------------------------------------------------------------------------- driver


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    ap.add_argument("--json", default=DEFAULT_JSON, help=f"where to write results (default {DEFAULT_JSON})")
    ap.add_argument("--no-jax", action="store_true", help="skip JAX even when installed")
    ap.add_argument("--scalar-math", action="store_true",
                    help="compile as a process without glibc's libmvec does: scalar libm calls (the 'before')")
    ap.add_argument("--both-ways", action="store_true",
                    help="also time the C functions differentiated inside clang's O2 pipeline (needs clang-19)")
    opts = ap.parse_args(argv)
    min_time, repeat = (0.01, 3) if opts.quick else (0.1, 7)
    if opts.scalar_math:
        from gpucompiler.targets import libmvec

        libmvec.loaded = lambda: None  # no vector versions, and a cache key of its own
        libmvec.variants.cache_clear()

    try:
        lib, t_diff = load_ours()
    except Exception as exc:  # the engine's error, reported as the result
        print(f"ad_cpu: differentiating {FIXTURE} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    lib_pipe = t_pipe = None
    if opts.both_ways:
        lib_pipe, t_pipe = load_in_pipeline()
    jax = pairs = None
    if not opts.no_jax:
        try:
            jax, pairs = jax_functions()
        except ImportError:
            pass

    rows = []
    loops = {name: (None, *LOOP_N, (-2.0, 2.0)) for name in ("bmap13.py", "newton.py")}
    loops["logsumexp.py"] = (None, *FUNCTIONS["logsumexp"][1:])
    for name, (prefix, n_full, n_quick, (lo, hi)) in {**FUNCTIONS, **loops}.items():
        n = n_quick if opts.quick else n_full
        x = lo + (hi - lo) * np.random.default_rng(len(name)).random(n)
        if prefix is None:
            tp, tg, g = time_loops(name, x, min_time, repeat)
        else:
            tp, tg, g = time_ours(lib, prefix, x, min_time, repeat)
        row = dict(function=name, n=n, primal_us=tp * 1e6, grad_us=tg * 1e6, ratio=tg / tp)
        if lib_pipe is not None and prefix is not None:
            pp, pg, gp = time_ours(lib_pipe, prefix, x, min_time, repeat)
            row.update(pipe_primal_us=pp * 1e6, pipe_grad_us=pg * 1e6, pipe_ratio=pg / pp,
                       pipe_max_rel_diff=float(np.max(np.abs(gp - g)) / max(1e-300, float(np.max(np.abs(g))))))
        if pairs is not None:
            jp, jg, gj = time_jax(jax, pairs[name], x, min_time, repeat)
            err = float(np.max(np.abs(g - gj)) / max(1e-300, float(np.max(np.abs(gj)))))
            row.update(jax_primal_us=jp * 1e6, jax_grad_us=jg * 1e6, jax_ratio=jg / jp,
                       grad_speedup_vs_jax=jg / tg, max_rel_diff_vs_jax=err)
        rows.append(row)
        print_row(row, header=len(rows) == 1)
        if row.get("max_rel_diff_vs_jax", 0.0) > 1e-8:
            print(f"  warning: {name}: our gradient and JAX's differ by {row['max_rel_diff_vs_jax']:.2e} (relative)")

    summary = dict(median_ratio=statistics.median(r["ratio"] for r in rows))
    if lib_pipe is not None:
        summary["pipe_median_ratio"] = statistics.median(r["pipe_ratio"] for r in rows if "pipe_ratio" in r)
    if pairs is not None:
        summary["jax_median_ratio"] = statistics.median(r["jax_ratio"] for r in rows)
        summary["median_grad_speedup_vs_jax"] = statistics.median(r["grad_speedup_vs_jax"] for r in rows)
    print("\n" + "  ".join(f"{k} = {v:.2f}" for k, v in summary.items())
          + f"  (cores this process may use: {len(os.sched_getaffinity(0))}; differentiate bench.O2.ll: {t_diff * 1e3:.0f} ms"
          + (f"; bench.c in the pipeline: {t_pipe * 1e3:.0f} ms)" if t_pipe is not None else ")"))
    result = dict(benchmark="ad_cpu", quick=opts.quick, scalar_math=opts.scalar_math, machine=machine(),
                  differentiate_s=t_diff,
                  rows=rows, **summary)
    if opts.json:
        os.makedirs(os.path.dirname(os.path.abspath(opts.json)), exist_ok=True)
        with open(opts.json, "w") as fh:
            json.dump(result, fh, indent=2)
            fh.write("\n")
    return 0


def print_row(row: dict, header: bool) -> None:
    cols = [("function", "{:<11}"), ("n", "{:>7}"), ("primal_us", "{:>10.1f}"), ("grad_us", "{:>10.1f}"),
            ("ratio", "{:>6.2f}"), ("pipe_primal_us", "{:>10.1f}"), ("pipe_grad_us", "{:>10.1f}"),
            ("pipe_ratio", "{:>6.2f}"), ("pipe_max_rel_diff", "{:>9.1e}"), ("jax_primal_us", "{:>10.1f}"), ("jax_grad_us", "{:>10.1f}"),
            ("jax_ratio", "{:>6.2f}"), ("grad_speedup_vs_jax", "{:>7.2f}")]
    cols = [(k, f) for k, f in cols if k in row]
    if header:
        names = {"primal_us": "primal µs", "grad_us": "grad µs", "ratio": "g/p", "jax_primal_us": "JAX p µs",
                 "pipe_primal_us": "pipe p µs", "pipe_grad_us": "pipe g µs", "pipe_ratio": "pipe g/p",
                 "pipe_max_rel_diff": "pipe Δg", "jax_grad_us": "JAX g µs", "jax_ratio": "JAX g/p", "grad_speedup_vs_jax": "vs JAX"}
        print("  ".join(re.sub(r"\.\d[efg]", "", f).format(names.get(k, k)) for k, f in cols))
    print("  ".join(f.format(row[k]) for k, f in cols))


def machine() -> dict:
    import llvmlite.binding as llvm

    info = dict(python=platform.python_version(), platform=platform.platform(), cpus=os.cpu_count(),
                threads=len(os.sched_getaffinity(0)), llvm=".".join(map(str, llvm.llvm_version_info)),
                load_average=os.getloadavg()[0])
    try:
        import jax

        info["jax"] = jax.__version__
    except ImportError:
        pass
    return info


if __name__ == "__main__":
    sys.exit(main())
