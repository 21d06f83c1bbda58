"""Kernels the SPIR-V tests run on Vulkan and compare with NumPy and the CPU grid emulation."""

import math

import numpy as np

from gpucompiler import device as gd, kernel

BLOCK = 64


@kernel
def saxpy(a, x, y):
    i = gd.grid(1)
    if i < y.shape[0]:
        y[i] = a * x[i] + y[i]


@kernel
def affine2d(out, x, scale, shift):
    i, j = gd.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j] * scale + shift + i - 2 * j


@kernel
def polynomial(out, x, n):
    i = gd.grid(1)
    if i < x.shape[0]:
        acc = 0.0
        for k in range(n):
            acc = acc * x[i] + (k + 1)
        out[i] = math.sqrt(abs(acc)) + math.floor(x[i])


@kernel
def histogram(counts, values):
    i = gd.grid(1)
    if i < values.shape[0]:
        gd.atomic_add(counts, values[i] % counts.shape[0], 1)


@kernel
def atomic_sum(total, x):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(total, 0, x[i])


@kernel
def atomic_extremes(out, x):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_max(out, 0, x[i])
        gd.atomic_min(out, 1, x[i])


@kernel
def first_claim(owner, ids):
    i = gd.grid(1)
    if i < ids.shape[0]:
        gd.atomic_cas(owner, ids[i], -1, i)


@kernel
def block_reverse(out, x):
    tile = gd.shared_array(BLOCK, np.float64)
    t = gd.threadIdx.x
    i = gd.blockIdx.x * gd.blockDim.x + t
    if i < x.shape[0]:
        tile[t] = x[i]
    gd.syncthreads()
    j = gd.blockIdx.x * gd.blockDim.x + (gd.blockDim.x - 1 - t)
    if i < x.shape[0] and j < x.shape[0]:
        out[i] = tile[gd.blockDim.x - 1 - t]


@kernel
def block_sum(out, x):
    tile = gd.shared_array(BLOCK, np.float32)
    t = gd.threadIdx.x
    i = gd.grid(1)
    tile[t] = x[i] if i < x.shape[0] else 0.0
    gd.syncthreads()
    step = BLOCK // 2
    while step > 0:
        if t < step:
            tile[t] += tile[t + step]
        gd.syncthreads()
        step //= 2
    if t == 0:
        out[gd.blockIdx.x] = tile[0]


@kernel
def grid_shape(out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = gd.gridDim.x * 1000 + gd.blockDim.x * 10 + gd.gridsize(1) % 7


@kernel
def masked(out, x, flags, limit):
    i = gd.grid(1)
    if i < x.shape[0]:
        if flags[i] and x[i] < limit:
            out[i] = x[i]
        else:
            out[i] = -1


@kernel
def sines(out, x):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = math.sin(x[i])


@kernel
def shuffle_sum(out, x):
    i = gd.grid(1)
    v = x[i]
    v += gd.shfl_down(v, 1)
    out[i] = v


@kernel
def nan_flags(out, x):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = 1 if math.isnan(x[i]) else (2 if math.isinf(x[i]) else 0)


@kernel
def float64_math(out, x):
    i = gd.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[0, i] = math.exp(v)
        out[1, i] = math.log(v)
        out[2, i] = math.log2(v)
        out[3, i] = math.log10(v)
        out[4, i] = math.sin(v)
        out[5, i] = math.cos(v)
        out[6, i] = math.tan(v)


@kernel
def arctangents(out, x):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = math.atan(x[i])


@kernel
def pick_array(out, x, y, flags):
    i = gd.grid(1)
    if i < out.shape[0]:
        a = x if flags[i] else y
        out[i] = a[i]


@kernel
def float64_math_more(out, x, y):
    i = gd.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[0, i] = math.expm1(v)
        out[1, i] = math.log1p(v)
        out[2, i] = math.tanh(v)
        out[3, i] = math.sinh(v)
        out[4, i] = math.cosh(v)
        out[5, i] = math.atan(v)
        out[6, i] = math.asin(v)
        out[7, i] = math.acos(v)
        out[8, i] = math.atan2(y[i], v)


@kernel
def error_functions(out, x):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = math.erf(x[i])


@kernel
def divisions(q, r, t, a, b):
    i = gd.grid(1)
    if i < a.shape[0]:
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        t[i] = int(a[i] / b[i])  # true division, truncated: the sign of a quotient both ways
