"""GPU benchmarks: bandwidth of an elementwise kernel and a reduction, launch overhead.

Run on a machine with an NVIDIA GPU, CuPy and cuda-bindings (numba-cuda joins
the launch table when installed)::

    PYTHONPATH=.:plugins python benchmarks/gpu.py [--log2n 26] [--json out.json]

Prints one table. Bandwidth is bytes moved / kernel time: CUDA events on the
default stream around ``--inner`` back-to-back calls (so the host's launch
work overlaps the previous kernel and is not counted as kernel time), the
median over ``--reps`` after a warm-up; the elementwise kernel
``out[i] = a * x[i]`` and the copy move the same bytes. Launch overhead is
host wall time per launch of a one-array kernel, many launches in a row (the
best of three loops).
numba-cuda runs in a subprocess (benchmarks/gpu_numba.py) whose PYTHONPATH
starts with ``$GPUC_NUMBA_SITE`` (scripts/gpu_check.sh installs carried
wheels there), so this process keeps its own llvmlite.
Goals: elementwise ≥ 90 % of the copy bandwidth, reduction within 1.2× of
CuPy's time, launch overhead no more than numba-cuda's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import attrs
import numpy as np

from gpucompiler import device as gd
from gpucompiler import kernel

BLOCK = 256


@kernel
def scale(a, x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = a * x[i]


@kernel
def block_sum(x, out):
    buf = gd.shared_array(BLOCK, np.float64)
    t = gd.threadIdx.x
    i = gd.grid(1)
    step = gd.gridsize(1)
    acc = 0.0
    while i < x.shape[0]:
        acc += x[i]
        i += step
    buf[t] = acc
    gd.syncthreads()
    s = BLOCK // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        gd.syncthreads()
        s //= 2
    if t == 0:
        gd.atomic_add(out, 0, buf[0])


WARPS = BLOCK // 32


@kernel
def warp_sum(x, out):
    """Grid-stride sum with four loads in flight, warp shuffles, one atomic per block."""
    n = x.shape[0]
    step = gd.gridsize(1)
    i = gd.grid(1)
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    while i + 3 * step < n:
        a0 += x[i]
        a1 += x[i + step]
        a2 += x[i + 2 * step]
        a3 += x[i + 3 * step]
        i += 4 * step
    while i < n:
        a0 += x[i]
        i += step
    v = (a0 + a1) + (a2 + a3)
    off = 16
    while off > 0:
        v += gd.shfl_down(v, off)
        off //= 2
    buf = gd.shared_array(WARPS, np.float64)
    lane = gd.threadIdx.x % 32
    warp = gd.threadIdx.x // 32
    if lane == 0:
        buf[warp] = v
    gd.syncthreads()
    if warp == 0:
        v = 0.0
        if lane < WARPS:
            v = buf[lane]
        off = WARPS // 2
        while off > 0:
            v += gd.shfl_down(v, off)
            off //= 2
        if lane == 0:
            gd.atomic_add(out, 0, v)


@kernel
def touch(x):
    if gd.grid(1) == 0:
        x[0] = x[0] + 1.0


INNER = 10


def _time(cp, fn, reps, inner=None):
    """Median milliseconds per ``fn()``: CUDA events around ``inner`` calls in a row."""
    inner = inner or INNER
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / inner)
    return float(np.median(times))


def _launch_us(cp, fn, count):
    """Host wall time per launch: the best of three loops of ``count`` launches (the first loop also makes what
    later launches reuse: gpucompiler's native launch entry compiles on a thread while launches go on)."""
    fn()
    best = float("inf")
    for _ in range(3):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(count):
            fn()
        best = min(best, time.perf_counter() - t0)
    cp.cuda.Device().synchronize()
    return best / count * 1e6


def bandwidth(cp, n, reps):
    from gpucompiler.runtime import cuda

    rows = []
    x = cp.random.random(n, dtype=cp.float64)
    out = cp.empty_like(x)
    gbs = lambda nbytes, ms: nbytes / (ms * 1e-3) / 1e9  # noqa: E731
    nbytes = 2 * x.nbytes
    blocks = (n + BLOCK - 1) // BLOCK

    copy_ms = _time(cp, lambda: out.__setitem__(Ellipsis, x), reps)
    rows.append(("device-to-device copy", "float64", n, copy_ms, gbs(nbytes, copy_ms), "reference"))
    ours_ms = _time(cp, lambda: scale[blocks, BLOCK](2.0, x, out), reps)
    ok = bool(cp.allclose(out, 2.0 * x))
    rows.append(("gpucompiler out = a*x", "float64", n, ours_ms, gbs(nbytes, ours_ms),
                 f"{copy_ms / ours_ms:.0%} of copy" + ("" if ok else " WRONG RESULT")))
    cupy_ms = _time(cp, lambda: cp.multiply(x, 2.0, out=out), reps)
    rows.append(("CuPy multiply", "float64", n, cupy_ms, gbs(nbytes, cupy_ms), f"{copy_ms / cupy_ms:.0%} of copy"))

    acc = cp.zeros(1, dtype=cp.float64)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grid = sms * 8
    cupy_sum_ms = _time(cp, lambda: x.sum(), reps)
    for label, k in (("gpucompiler sum (shared+atomic)", block_sum), ("gpucompiler sum (shfl+atomic)", warp_sum)):
        acc.fill(0)
        k[grid, BLOCK](x, acc)
        ok = abs(float(acc[0]) - float(x.sum())) < 1e-9 * n
        ms = _time(cp, lambda k=k: k[grid, BLOCK](x, acc), reps)  # accumulates: timing only
        rows.append((label, "float64", n, ms, gbs(x.nbytes, ms),
                     f"{ms / cupy_sum_ms:.2f}x CuPy time" + ("" if ok else " WRONG RESULT")))
    rows.append(("CuPy sum", "float64", n, cupy_sum_ms, gbs(x.nbytes, cupy_sum_ms), "reference"))
    cuda.synchronize()
    return rows, copy_ms, cupy_sum_ms


def launches(cp, count):
    rows = []
    x = cp.zeros(32, dtype=cp.float64)
    rows.append(("gpucompiler touch[1, 32](x)", _launch_us(cp, lambda: touch[1, 32](x), count)))
    raw = cp.RawKernel(r'''extern "C" __global__ void touch(double* x) {
        if (blockIdx.x * blockDim.x + threadIdx.x == 0) x[0] += 1.0; }''', "touch")
    rows.append(("CuPy RawKernel((1,), (32,), (x,))", _launch_us(cp, lambda: raw((1,), (32,), (x,)), count)))
    return rows


def numba_cuda(n, reps, count, copy_ms):
    """numba-cuda's elementwise kernel and launch overhead, timed in a subprocess (see the docstring)."""
    env = dict(os.environ)
    site = env.get("GPUC_NUMBA_SITE")
    if site:
        env["PYTHONPATH"] = site + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_numba.py")
    cmd = [sys.executable, script, "--n", str(n), "--reps", str(reps), "--inner", str(INNER),
           "--launches", str(count)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        result = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else None
        if result is None or "error" in result:
            why = (result or {}).get("error") or (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(why)
    except Exception as exc:
        msg = f"numba-cuda: not available ({type(exc).__name__}: {str(exc)[:120]})"
        return [(msg, "float64", n, float("nan"), float("nan"), "")], [(msg, float("nan"))], None
    gbs = 2 * 8 * n / (result["scale_ms"] * 1e-3) / 1e9
    bw = [(f"numba-cuda out = a*x ({result['version']})", "float64", n, result["scale_ms"], gbs,
           f"{copy_ms / result['scale_ms']:.0%} of copy")]
    ln = [("numba-cuda ntouch[1, 32](x)", result["launch_us"])]
    return bw, ln, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log2n", type=int, default=26, help="elements = 2**log2n (default 26)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--inner", type=int, default=INNER, help="calls between two CUDA events")
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--json", help="also write the figures to this file")
    opts = parser.parse_args(argv)
    try:
        import cupy as cp
    except ImportError:
        print("benchmarks/gpu.py needs CuPy and a GPU", file=sys.stderr)
        return 2
    from gpucompiler.runtime import cuda

    name = cuda.device_name()
    n = 1 << opts.log2n
    t0 = time.perf_counter()
    scale.compile(scale.argument_types((2.0, cp.zeros(1), cp.zeros(1))),
                  attrs.evolve(scale.target, capability=cuda.capability()))
    compile_s = time.perf_counter() - t0
    globals()["INNER"] = opts.inner
    bw, copy_ms, _cupy_sum_ms = bandwidth(cp, n, opts.reps)
    ln = launches(cp, opts.launches)
    numba_bw, numba_ln, numba_info = numba_cuda(n, opts.reps, opts.launches, copy_ms)
    bw[3:3] = numba_bw
    ln.extend(numba_ln)
    print(f"GPU: {name} (sm_{''.join(map(str, cuda.capability()))}); cold compile of `scale` to PTX: "
          f"{compile_s * 1e3:.0f} ms")
    print()
    print(f"| {'kernel':34} | dtype   | elements | time (ms) |   GB/s | note")
    print(f"|{'-' * 36}|---------|----------|-----------|--------|------")
    for label, dtype, count, ms, rate, note in bw:
        print(f"| {label:34} | {dtype:7} | 2^{int(np.log2(count)):<6} | {ms:9.3f} | {rate:6.0f} | {note}")
    print()
    print(f"| {'launch (one-array kernel)':40} | µs per launch")
    print(f"|{'-' * 42}|--------------")
    for label, us in ln:
        print(f"| {label:40} | {us:.2f}")
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump({"gpu": name, "compile_s": compile_s,
                       "bandwidth": [dict(zip(("kernel", "dtype", "n", "ms", "GBps", "note"), r)) for r in bw],
                       "launch_us": dict(ln), "numba": numba_info}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
