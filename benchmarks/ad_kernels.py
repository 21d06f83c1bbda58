"""Kernels of benchmarks/ad_gpu.py: four primal kernels and their gradient kernels (autodiff inside)."""

import math

from gpucompiler import device as gd
from enzyme_plugin import Const, Duplicated, Reverse, autodiff

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


# 2. a reduction: out[0] = sum_i w0 x_i^2 + w1 x_i. The primal sums each warp's 32 terms with
# shuffles and one lane adds the partial sum atomically (32x fewer atomics than one per element).
# The gradient of the sum differentiates one term per thread: dx[i] is at the thread's own address; the
# adjoints of w, which every thread adds to, are summed over the warp by the engine before one
# atomic add per warp and parameter.
def red(x, w, i):
    v = x[i]
    return w[0] * v * v + w[1] * v


def red_primal(x, w, out):
    i = gd.grid(1)
    v = 0.0
    if i < x.shape[0]:
        v = red(x, w, i)
    v += gd.shfl_down(v, 16)
    v += gd.shfl_down(v, 8)
    v += gd.shfl_down(v, 4)
    v += gd.shfl_down(v, 2)
    v += gd.shfl_down(v, 1)
    if gd.threadIdx.x % gd.WARP_SIZE == 0:
        gd.atomic_add(out, 0, v)


def red_grad(x, dx, w, dw):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, red, Duplicated(x, dx), Duplicated(w, dw), Const(i))


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


# 4. an n-body step: potential energy of body i against all bodies (softened pair potential).
# The loop over j stays outside the differentiated function, so its reverse needs no tape
# (a tape grows with realloc, which the GPU target rejects).
def pair(px, py, pz, i, j):
    dx = px[j] - px[i]
    dy = py[j] - py[i]
    dz = pz[j] - pz[i]
    return 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz + EPS)


def nbody_primal(px, py, pz, out):
    i = gd.grid(1)
    if i < px.shape[0]:
        e = 0.0
        for j in range(px.shape[0]):
            e += pair(px, py, pz, i, j)
        out[i] = e


def nbody_grad(px, dpx, py, dpy, pz, dpz):
    i = gd.grid(1)
    if i < px.shape[0]:
        for j in range(px.shape[0]):
            autodiff(Reverse, pair, Duplicated(px, dpx), Duplicated(py, dpy), Duplicated(pz, dpz), Const(i),
                     Const(j))
