"""Kernels of benchmarks/ad_gpu.py: four primal kernels and their gradient kernels (autodiff inside)."""

import math

from gpucompiler import device as gd
from enzyme_plugin import Active, Const, Duplicated, Reverse, autodiff

EPS = 1e-3


# 1. elementwise with math: out[i] = sin(x) exp(-x^2 / 2) + log(1 + x^2)
def elem(x, i):
    v = x[i]
    return math.sin(v) * math.exp(-0.5 * v * v) + math.log(1.0 + v * v)


def elem_primal(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = elem(x, i)


def elem_grad(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, elem, Duplicated(x, dx), Const(i))


# 2. a reduction: out[0] = sum_i w0 x_i^2 + w1 x_i, written as a CUDA programmer would: a grid-stride
# loop (launch about one wave of blocks; each thread sums many elements in a register), warp shuffles,
# the block's warp sums through shared memory, one atomic add per block. The gradient kernel has the same
# shape around autodiff: w0 and w1 are Active scalars, so each call returns their derivatives and the thread
# sums them in registers; the block sums them like the primal and adds once per block and parameter. Only
# dx[i] (a different address per call) is accumulated by the engine, with one atomic add per element.
def red(x, w0, w1, i):
    v = x[i]
    return w0 * v * v + w1 * v


def warp_sum(v):
    """The sum of ``v`` over the 32 lanes of the warp, in lane 0 (every lane must call it)."""
    v += gd.shfl_down(v, 16)
    v += gd.shfl_down(v, 8)
    v += gd.shfl_down(v, 4)
    v += gd.shfl_down(v, 2)
    v += gd.shfl_down(v, 1)
    return v


def red_primal(x, w, out):
    n = x.shape[0]
    w0 = w[0]
    w1 = w[1]
    step = gd.gridsize(1)
    i = gd.grid(1)
    a0 = 0.0
    a1 = 0.0
    while i + step < n:  # two loads in flight per thread
        a0 += red(x, w0, w1, i)
        a1 += red(x, w0, w1, i + step)
        i += 2 * step
    if i < n:
        a0 += red(x, w0, w1, i)
    v = warp_sum(a0 + a1)
    buf = gd.shared_array(32, "float64")  # one slot per warp of the block (up to 1024 threads)
    lane = gd.threadIdx.x % gd.WARP_SIZE
    warp = gd.threadIdx.x // gd.WARP_SIZE
    if lane == 0:
        buf[warp] = v
    gd.syncthreads()
    if warp == 0:
        v = 0.0
        if lane < gd.blockDim.x // gd.WARP_SIZE:
            v = buf[lane]
        v = warp_sum(v)
        if lane == 0:
            gd.atomic_add(out, 0, v)


def red_grad(x, dx, w, dw):
    n = x.shape[0]
    w0 = w[0]
    w1 = w[1]
    step = gd.gridsize(1)
    i = gd.grid(1)
    g0 = 0.0
    g1 = 0.0
    while i + step < n:
        d0, d1 = autodiff(Reverse, red, Duplicated(x, dx), Active(w0), Active(w1), Const(i))
        e0, e1 = autodiff(Reverse, red, Duplicated(x, dx), Active(w0), Active(w1), Const(i + step))
        g0 += d0 + e0
        g1 += d1 + e1
        i += 2 * step
    if i < n:
        d0, d1 = autodiff(Reverse, red, Duplicated(x, dx), Active(w0), Active(w1), Const(i))
        g0 += d0
        g1 += d1
    g0 = warp_sum(g0)
    g1 = warp_sum(g1)
    buf = gd.shared_array(64, "float64")
    lane = gd.threadIdx.x % gd.WARP_SIZE
    warp = gd.threadIdx.x // gd.WARP_SIZE
    if lane == 0:
        buf[warp] = g0
        buf[32 + warp] = g1
    gd.syncthreads()
    if warp == 0:
        g0 = 0.0
        g1 = 0.0
        if lane < gd.blockDim.x // gd.WARP_SIZE:
            g0 = buf[lane]
            g1 = buf[32 + lane]
        g0 = warp_sum(g0)
        g1 = warp_sum(g1)
        if lane == 0:
            gd.atomic_add(dw, 0, g0)
            gd.atomic_add(dw, 1, g1)


# 3. a stencil: out[i] = tanh(0.25 x[i-1] + 0.5 x[i] + 0.25 x[i+1]) on the interior
def sten(x, i):
    return math.tanh(0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1])


def sten_primal(x, out):
    i = gd.grid(1)
    if i > 0 and i < x.shape[0] - 1:
        out[i] = sten(x, i)


def sten_grad(x, dx):
    i = gd.grid(1)
    if i > 0 and i < x.shape[0] - 1:
        autodiff(Reverse, sten, Duplicated(x, dx), Const(i))


# 4. an n-body step: potential energy of body i against all bodies (softened pair potential). Thread t
# handles body t % n over slice t // n of the j range (launch n * slices threads: 16384 bodies alone are
# 64 blocks, half an H100), so out[i] += e accumulates the slices (zero out first). Loads of body j are the
# same address across the warp (one broadcast load); body i's coordinates stay in registers. Compiled with
# fastmath=True, 1 / sqrt(s) is libdevice's rsqrt (as XLA computes it) instead of sqrt.rn then rcp.rn.
#
# The gradient gathers: d/dp_i sum_k e_k = sum_j d/dp_i [pair(p_i, p_j) + pair(p_j, p_i)], so each thread
# differentiates the pair's two terms with respect to its own body (Active scalars, Const body j) and sums
# the derivatives in registers: no atomics in the loop, no tape, one atomic add per thread and coordinate.
def pair(xi, yi, zi, xj, yj, zj):
    dx = xj - xi
    dy = yj - yi
    dz = zj - zi
    return 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz + EPS)


def pair_both(xi, yi, zi, xj, yj, zj):
    """The pair's terms in e_i and in e_j (their sum's derivative in p_i is body i's share of the gradient)."""
    return pair(xi, yi, zi, xj, yj, zj) + pair(xj, yj, zj, xi, yi, zi)


def nbody_primal(px, py, pz, out):
    n = px.shape[0]
    t = gd.grid(1)
    slices = gd.gridsize(1) // n
    if t < n * slices:
        i = t % n
        chunk = (n + slices - 1) // slices
        j0 = max((t // n) * chunk, 0)  # known non-negative: no wrap-around of negative indices
        j1 = min(j0 + chunk, n)
        xi = px[i]
        yi = py[i]
        zi = pz[i]
        e = 0.0
        for j in range(j0, j1):
            e += pair(xi, yi, zi, px[j], py[j], pz[j])
        gd.atomic_add(out, i, e)


def nbody_grad(px, dpx, py, dpy, pz, dpz):
    n = px.shape[0]
    t = gd.grid(1)
    slices = gd.gridsize(1) // n
    if t < n * slices:
        i = t % n
        chunk = (n + slices - 1) // slices
        j0 = max((t // n) * chunk, 0)  # known non-negative: no wrap-around of negative indices
        j1 = min(j0 + chunk, n)
        xi = px[i]
        yi = py[i]
        zi = pz[i]
        gx = 0.0
        gy = 0.0
        gz = 0.0
        for j in range(j0, j1):
            ax, ay, az = autodiff(Reverse, pair_both, Active(xi), Active(yi), Active(zi), Const(px[j]),
                                  Const(py[j]), Const(pz[j]))
            gx += ax
            gy += ay
            gz += az
        gd.atomic_add(dpx, i, gx)
        gd.atomic_add(dpy, i, gy)
        gd.atomic_add(dpz, i, gz)


# 5. an iterated branchy map per element, 13 steps: a loop of constant trip count with an if/else inside
# (what JAX writes with `where`, computing both sides). The tape is 13 values and 13 branch decisions
# per thread in local memory or registers; no heap.
MAP_STEPS = 13


def bmap(x, i):
    s = x[i]
    for k in range(MAP_STEPS):
        if s > 0.2:
            s = 0.8 * s - 0.25 * s * s + 0.05 * k
        else:
            s = math.sin(1.5 * s) + 0.3
    return s


def bmap_primal(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = bmap(x, i)


def bmap_grad(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, bmap, Duplicated(x, dx), Const(i))


# 6. a per-element Newton solve: y with y^3 + y = x[i] by a data-dependent while (to |residual| <= 1e-13,
# at most 60 steps), out[i] = y^2. The tape grows with the iterations: it starts in a 256-byte inline
# segment per thread and reaches the device heap only past it. JAX cannot reverse-differentiate a
# while_loop: its version runs a fixed NEWTON_STEPS steps (enough for |x| <= 2, as a JAX user writes it).
NEWTON_TOL = 1e-13
NEWTON_STEPS = 8


def newton(x, i):
    a = x[i]
    y = a
    r = y * y * y + y - a
    it = 0
    while abs(r) > NEWTON_TOL and it < 60:
        y = y - r / (3.0 * y * y + 1.0)
        r = y * y * y + y - a
        it += 1
    return y * y


def newton_primal(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = newton(x, i)


def newton_grad(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, newton, Duplicated(x, dx), Const(i))
