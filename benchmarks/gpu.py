"""GPU benchmarks: bandwidth of an elementwise kernel and a reduction, launch overhead.

Run on a machine with an NVIDIA GPU, CuPy and cuda-bindings (numba-cuda joins
the launch table when installed)::

    PYTHONPATH=.:plugins python benchmarks/gpu.py [--log2n 26] [--json out.json]

Prints one table. Bandwidth is bytes moved / kernel time (CUDA events on the
default stream, median of the repetitions after a warm-up); the elementwise
kernel ``out[i] = a * x[i]`` and the copy move the same bytes. Launch overhead
is host wall time per launch of a one-array kernel, many launches in a row.
Goals: elementwise ≥ 90 % of the copy bandwidth, reduction within 1.2× of
CuPy's time, launch overhead no more than numba-cuda's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

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


@kernel
def touch(x):
    if gd.grid(1) == 0:
        x[0] = x[0] + 1.0


def _time(cp, fn, reps):
    """Median milliseconds of ``fn()`` measured with CUDA events."""
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return float(np.median(times))


def _launch_us(cp, fn, count):
    fn()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(count):
        fn()
    elapsed = time.perf_counter() - t0
    cp.cuda.Device().synchronize()
    return elapsed / count * 1e6


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
    assert bool(cp.allclose(out, 2.0 * x))
    rows.append(("gpucompiler out = a*x", "float64", n, ours_ms, gbs(nbytes, ours_ms),
                 f"{copy_ms / ours_ms:.0%} of copy"))
    cupy_ms = _time(cp, lambda: cp.multiply(x, 2.0, out=out), reps)
    rows.append(("CuPy multiply", "float64", n, cupy_ms, gbs(nbytes, cupy_ms), f"{copy_ms / cupy_ms:.0%} of copy"))

    acc = cp.zeros(1, dtype=cp.float64)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grid = sms * 8

    def ours_sum():
        acc.fill(0)
        block_sum[grid, BLOCK](x, acc)

    sum_ms = _time(cp, ours_sum, reps)
    assert abs(float(acc[0]) - float(x.sum())) < 1e-9 * n
    cupy_sum_ms = _time(cp, lambda: x.sum(), reps)
    rows.append(("gpucompiler sum (shared+atomic)", "float64", n, sum_ms, gbs(x.nbytes, sum_ms),
                 f"{sum_ms / cupy_sum_ms:.2f}x CuPy time"))
    rows.append(("CuPy sum", "float64", n, cupy_sum_ms, gbs(x.nbytes, cupy_sum_ms), "reference"))
    cuda.synchronize()
    return rows


def launches(cp, count):
    rows = []
    x = cp.zeros(32, dtype=cp.float64)
    rows.append(("gpucompiler touch[1, 32](x)", _launch_us(cp, lambda: touch[1, 32](x), count)))
    raw = cp.RawKernel(r'''extern "C" __global__ void touch(double* x) {
        if (blockIdx.x * blockDim.x + threadIdx.x == 0) x[0] += 1.0; }''', "touch")
    rows.append(("CuPy RawKernel((1,), (32,), (x,))", _launch_us(cp, lambda: raw((1,), (32,), (x,)), count)))
    try:
        from numba import cuda as ncuda

        @ncuda.jit
        def ntouch(y):
            if ncuda.grid(1) == 0:
                y[0] += 1.0

        rows.append(("numba-cuda ntouch[1, 32](x)", _launch_us(cp, lambda: ntouch[1, 32](x), count)))
    except Exception as exc:  # noqa: BLE001 - report, do not fail the run
        rows.append((f"numba-cuda: not available ({type(exc).__name__})", float("nan")))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log2n", type=int, default=26, help="elements = 2**log2n (default 26)")
    parser.add_argument("--reps", type=int, default=20)
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
    scale.compile_ptx(scale.argument_types((2.0, cp.zeros(1), cp.zeros(1))), cuda.capability())
    compile_s = time.perf_counter() - t0
    bw = bandwidth(cp, n, opts.reps)
    ln = launches(cp, opts.launches)
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
                       "launch_us": dict(ln)}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
