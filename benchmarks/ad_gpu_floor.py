"""The Newton solve's gradient beside a hand-written CUDA C reverse on the same GPU: how far the tape is from the floor.

``benchmarks/ad_gpu.py``'s Newton kernel (``ad_kernels.newton``: ``y³ + y = x[i]`` by a data-dependent
``while``, at most 60 steps, ``out[i] = y²``) against CUDA C kernels compiled by CuPy's NVRTC:

* the primal, the same loop;
* its reverse by hand, as ``autodiff`` computes it: the forward sweep keeps each step's iterate in a
  per-thread ``double[61]`` (local memory), the reverse sweep walks them back with one division a step
  and adds into ``dx`` (``autodiff`` accumulates into the shadow it is given);
* for scale, the implicit derivative ``2y / (3y² + 1)`` of the converged solve (not the iterations').

Each kernel's median time over 21 launches after 3 (CUDA events), 2^24 threads, ``x`` uniform in [-2, 2] as in
``ad_gpu.py``; ours checked against the hand-written reverse first.

    PYTHONPATH=.:plugins python benchmarks/ad_gpu_floor.py [--log2n 24]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ad_kernels as K
from gpucompiler import kernel

SOURCE = r"""
extern "C" __global__ void primal(const double* x, double* out, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  double a = x[i], y = a, r = y * y * y + y - a; int it = 0;
  while (fabs(r) > TOL && it < 60) { y = y - r / (3.0 * y * y + 1.0); r = y * y * y + y - a; it++; }
  out[i] = y * y;
}
extern "C" __global__ void reverse(const double* x, double* dx, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  double ys[61];
  double a = x[i], y = a, r = y * y * y + y - a; int it = 0;
  while (fabs(r) > TOL && it < 60) { ys[it] = y; y = y - r / (3.0 * y * y + 1.0); r = y * y * y + y - a; it++; }
  double dy = 2.0 * y, da = 0.0;  /* d(y*y)/dy, then back through y_{k+1} = y_k - r_k / (3 y_k^2 + 1) */
  for (int k = it - 1; k >= 0; k--) {
    double yk = ys[k], q = 1.0 / (3.0 * yk * yk + 1.0), rk = yk * yk * yk + yk - a;
    da += dy * q; dy = dy * (6.0 * yk * rk * q * q);
  }
  dx[i] += da + dy;  /* y_0 = a */
}
extern "C" __global__ void implicit(const double* x, double* dx, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  double a = x[i], y = a, r = y * y * y + y - a; int it = 0;
  while (fabs(r) > TOL && it < 60) { y = y - r / (3.0 * y * y + 1.0); r = y * y * y + y - a; it++; }
  dx[i] += 2.0 * y / (3.0 * y * y + 1.0);
}
"""


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=24)
    opts = parser.parse_args()
    n = 1 << opts.log2n
    blocks = (n + 255) // 256
    module = cp.RawModule(code=SOURCE, options=(f"-DTOL={K.NEWTON_TOL!r}",))
    primal, reverse, implicit = (module.get_function(name) for name in ("primal", "reverse", "implicit"))
    x = cp.asarray(np.random.default_rng(0).uniform(-2.0, 2.0, n))
    out, dx = cp.zeros(n), cp.zeros(n)
    ours_primal, ours_grad = kernel(K.newton_primal, plugins=("enzyme",)), kernel(K.newton_grad, plugins=("enzyme",))
    size = np.int64(n)

    def median_us(launch) -> float:
        for _ in range(3):
            launch()
        times = []
        for _ in range(21):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            launch()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
        return float(np.median(times))

    reverse((blocks,), (256,), (x, dx, size))
    want = dx.get()
    dx.fill(0)
    ours_grad[blocks, 256](x, dx)
    error = float(np.max(np.abs(dx.get() - want)) / np.max(np.abs(want)))
    if not error < 1e-9:
        sys.exit(f"FAILED: our gradient differs from the hand-written reverse by {error:.1e} (relative)")
    rows = [("CUDA C primal", median_us(lambda: primal((blocks,), (256,), (x, out, size)))),
            ("CUDA C reverse (iterates in a local array)", median_us(lambda: reverse((blocks,), (256,), (x, dx, size)))),
            ("CUDA C implicit derivative (not the iterations')",
             median_us(lambda: implicit((blocks,), (256,), (x, dx, size)))),
            ("ours: primal", median_us(lambda: ours_primal[blocks, 256](x, out))),
            ("ours: gradient (autodiff inside)", median_us(lambda: ours_grad[blocks, 256](x, dx)))]
    base = rows[0][1]
    print(f"Newton solve, 2^{opts.log2n} threads, {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; "
          f"ours against the hand-written reverse: {error:.0e} (relative)")
    print("| kernel | µs | × CUDA C primal |\n|---|---:|---:|")
    for name, us in rows:
        print(f"| {name} | {us:.1f} | {us / base:.2f} |")
    print(f"ours gradient / ours primal: {rows[4][1] / rows[3][1]:.2f}x; "
          f"hand-written reverse / CUDA C primal: {rows[1][1] / base:.2f}x")


if __name__ == "__main__":
    main()
