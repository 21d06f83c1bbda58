"""Two gradients of benchmarks/ad_gpu.py beside hand-written CUDA C on the same GPU: how far each is from its floor.

``ad_kernels.newton`` (``y³ + y = x[i]`` by a data-dependent ``while``, at most 60 steps, ``out[i] = y²``):

* the primal, the same loop;
* its reverse by hand, as ``autodiff`` computes it: the forward sweep keeps each step's iterate in a
  per-thread ``double[61]`` (local memory), the reverse sweep walks them back with one division a step
  and adds into ``dx`` (``autodiff`` accumulates into the shadow it is given);
* for scale, the implicit derivative ``2y / (3y² + 1)`` of the converged solve (not the iterations').

``ad_kernels.sten`` (``out[i] = tanh(0.25 x[i-1] + 0.5 x[i] + 0.25 x[i+1])`` on the interior):

* the primal;
* its reverse by hand as a gather, no atomics: each thread computes the three ``tanh`` whose stencil
  reads its element and adds their share into ``dx[i]``; and tiled: each block computes one ``tanh`` per
  stencil centre (and a halo of one on each side) into shared memory, then gathers from there;
* its reverse by hand in the form our gradient takes (``ptx_neighbouradds``: shares shuffled to the owning
  lane, plain adds on lanes 1 to 30, atomics at the warp's edges), and the same loading ``dx[i]`` first;
* the memory floor of an accumulating gradient: ``dx[i] += x[i]`` against the copy ``out[i] = x[i]``.

Each kernel's median time over 21 launches after 3 (CUDA events), 2^24 threads, ``x`` uniform in [-2, 2] as in
``ad_gpu.py``; ours checked against the hand-written reverses first.

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
extern "C" __global__ void sten_primal(const double* x, double* out, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x; if (i <= 0 || i >= n - 1) return;
  out[i] = tanh(0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]);
}
extern "C" __global__ void sten_gather(const double* x, double* dx, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  double s = 0.0;
  for (int c = -1; c <= 1; c++) {  /* the stencil centred at j = i - c reads x[i] with weight w */
    long j = i - c; if (j <= 0 || j >= n - 1) continue;
    double t = tanh(0.25 * x[j - 1] + 0.5 * x[j] + 0.25 * x[j + 1]);
    s += (1.0 - t * t) * (c == 0 ? 0.5 : 0.25);
  }
  dx[i] += s;
}
extern "C" __global__ void sten_tiled(const double* x, double* dx, long n) {
  /* one tanh per stencil centre: the block's centres and a halo of one on each side, in shared memory */
  __shared__ double g[258];
  long i0 = (long)blockIdx.x * blockDim.x, i = i0 + threadIdx.x;
  for (int k = threadIdx.x; k < 258; k += blockDim.x) {
    long j = i0 - 1 + k; double w = 0.0;
    if (j > 0 && j < n - 1) { double t = tanh(0.25 * x[j - 1] + 0.5 * x[j] + 0.25 * x[j + 1]); w = 1.0 - t * t; }
    g[k] = w;
  }
  __syncthreads();
  if (i < n) dx[i] += 0.25 * g[threadIdx.x] + 0.5 * g[threadIdx.x + 1] + 0.25 * g[threadIdx.x + 2];
}
template <bool EARLY>
__device__ void sten_warp_form(const double* x, double* dx, long n) {
  /* our gradient's own form: one tanh a thread, the neighbours' shares shuffled to the lane owning the
     element, plain adds on lanes 1 to 30 of a one-dimensional launch, atomics at the warp's edges */
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x; if (i <= 0 || i >= n - 1) return;
  unsigned l = threadIdx.x & 31;
  bool plain = gridDim.y == 1 && gridDim.z == 1 && blockDim.y == 1 && blockDim.z == 1 && l > 0 && l < 31;
  double early = EARLY && plain ? dx[i] : 0.0;
  double t = tanh(0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]), g = 1.0 - t * t, q = 0.25 * g, h = 0.5 * g;
  if (__activemask() != 0xffffffffu || (blockDim.x & 31) != 0) {
    atomicAdd(&dx[i - 1], q); atomicAdd(&dx[i], h); atomicAdd(&dx[i + 1], q); return;
  }
  double left = __shfl_sync(0xffffffffu, q, l - 1), right = __shfl_sync(0xffffffffu, q, l + 1);
  double s = h + (l > 0 ? left : -0.0) + (l < 31 ? right : -0.0);
  if (plain) dx[i] = (EARLY ? early : dx[i]) + s; else atomicAdd(&dx[i], s);
  if (l == 0) atomicAdd(&dx[i - 1], q);
  if (l == 31) atomicAdd(&dx[i + 1], q);
}
extern "C" __global__ void sten_warp(const double* x, double* dx, long n) { sten_warp_form<false>(x, dx, n); }
extern "C" __global__ void sten_warp_early(const double* x, double* dx, long n) { sten_warp_form<true>(x, dx, n); }
extern "C" __global__ void copy(const double* x, double* out, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = x[i];
}
extern "C" __global__ void accumulate(const double* x, double* dx, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x; if (i < n) dx[i] += x[i];
}
extern "C" __global__ void implicit(const double* x, double* dx, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  double a = x[i], y = a, r = y * y * y + y - a; int it = 0;
  while (fabs(r) > TOL && it < 60) { y = y - r / (3.0 * y * y + 1.0); r = y * y * y + y - a; it++; }
  dx[i] += 2.0 * y / (3.0 * y * y + 1.0);
}
"""


def median_us(cp, launch) -> float:
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


def checked(cp, ours, hand, x, dx, size, blocks, what: str) -> float:
    """Our gradient's relative difference from the hand-written one (exits when above 1e-9); both add into a
    zeroed ``dx``."""
    dx.fill(0)
    hand((blocks,), (256,), (x, dx, size))
    want = dx.get()
    dx.fill(0)
    ours[blocks, 256](x, dx)
    error = float(np.max(np.abs(dx.get() - want)) / np.max(np.abs(want)))
    if not error < 1e-9:
        sys.exit(f"FAILED: our {what} gradient differs from the hand-written reverse by {error:.1e} (relative)")
    return error


def table(title: str, rows: list[tuple[str, float]]) -> None:
    print(title)
    print("| kernel | µs | × CUDA C primal |\n|---|---:|---:|")
    for name, us in rows:
        print(f"| {name} | {us:.1f} | {us / rows[0][1]:.2f} |")


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=24)
    opts = parser.parse_args()
    n = 1 << opts.log2n
    blocks = (n + 255) // 256
    module = cp.RawModule(code=SOURCE, options=(f"-DTOL={K.NEWTON_TOL!r}",))
    fn = module.get_function
    x = cp.asarray(np.random.default_rng(0).uniform(-2.0, 2.0, n))
    out, dx = cp.zeros(n), cp.zeros(n)
    size = np.int64(n)
    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    time = lambda k: median_us(cp, lambda: k((blocks,), (256,), (x, out, size)))  # noqa: E731
    time_dx = lambda k: median_us(cp, lambda: k((blocks,), (256,), (x, dx, size)))  # noqa: E731
    ours_time = lambda k, a: median_us(cp, lambda: k[blocks, 256](x, a))  # noqa: E731

    primal, grad = kernel(K.newton_primal, plugins=("enzyme",)), kernel(K.newton_grad, plugins=("enzyme",))
    error = checked(cp, grad, fn("reverse"), x, dx, size, blocks, "Newton")
    rows = [("CUDA C primal", time(fn("primal"))),
            ("CUDA C reverse (iterates in a local array)", time_dx(fn("reverse"))),
            ("CUDA C implicit derivative (not the iterations')", time_dx(fn("implicit"))),
            ("ours: primal", ours_time(primal, out)), ("ours: gradient (autodiff inside)", ours_time(grad, dx))]
    table(f"Newton solve, 2^{opts.log2n} threads, {device}; ours against the hand-written reverse: {error:.0e} "
          "(relative)", rows)
    print(f"ours gradient / ours primal: {rows[4][1] / rows[3][1]:.2f}x; "
          f"hand-written reverse / CUDA C primal: {rows[1][1] / rows[0][1]:.2f}x\n")

    primal, grad = kernel(K.sten_primal), kernel(K.sten_grad, plugins=("enzyme",))
    hand = ("sten_gather", "sten_tiled", "sten_warp", "sten_warp_early")
    error = max(checked(cp, grad, fn(name), x, dx, size, blocks, "stencil") for name in hand)
    rows = [("CUDA C primal", time(fn("sten_primal"))),
            ("CUDA C reverse by gather (three tanh, no atomics)", time_dx(fn("sten_gather"))),
            ("CUDA C reverse by a tiled gather (one tanh, shared memory)", time_dx(fn("sten_tiled"))),
            ("CUDA C reverse in our gradient's form (shuffles, plain adds)", time_dx(fn("sten_warp"))),
            ("the same, dx[i] loaded before the tanh", time_dx(fn("sten_warp_early"))),
            ("CUDA C copy out[i] = x[i]", time(fn("copy"))), ("CUDA C dx[i] += x[i]", time_dx(fn("accumulate"))),
            ("ours: primal", ours_time(primal, out)), ("ours: gradient (autodiff inside)", ours_time(grad, dx))]
    table(f"Stencil, 2^{opts.log2n} threads, {device}; ours against the hand-written gathers: {error:.0e} (relative)",
          rows)
    print(f"ours gradient / ours primal: {rows[8][1] / rows[7][1]:.2f}x; "
          f"hand-written gathers / CUDA C primal: {rows[1][1] / rows[0][1]:.2f}x, {rows[2][1] / rows[0][1]:.2f}x "
          f"(tiled); our form by hand: {rows[3][1] / rows[0][1]:.2f}x, {rows[4][1] / rows[0][1]:.2f}x (dx read early); "
          f"accumulate / copy: {rows[6][1] / rows[5][1]:.2f}x")


if __name__ == "__main__":
    main()
