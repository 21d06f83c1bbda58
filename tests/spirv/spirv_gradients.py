"""Kernels that call ``autodiff``, in float32 (lavapipe has float32 atomic adds only): the SPIR-V tests
run them on Vulkan and compare with the CPU grid emulation, exact derivatives and finite differences
of the same Python functions evaluated by CPython."""

import math

import numpy as np

from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import device as gd

STEPS = 13


def energy(x, w, i):
    return math.sin(x[i]) * w[0] * x[i] + w[1] * x[i] * x[i]


def grad_energy(x, dx, w, dw):
    """Every thread reads w: its adjoints from all threads add up (float atomic adds)."""
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, energy, Duplicated(x, dx), Duplicated(w, dw), Const(i))


def branchy_map(x, i):
    """13 steps with a branch each: a constant trip count, so the tape needs no heap."""
    s = x[i]
    for k in range(STEPS):
        if s > np.float32(0.2):
            s = np.float32(0.8) * s - np.float32(0.25) * s * s + np.float32(0.05) * np.float32(k)
        else:
            s = math.sin(np.float32(1.5) * s) + np.float32(0.3)
    return s


def grad_branchy_map(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, branchy_map, Duplicated(x, dx), Const(i))


def law(v, a):
    return math.exp(a * v) + math.log(np.float32(1) + v * v)


def reverse_scalar(xs, out, a):
    i = gd.grid(1)
    if i < xs.shape[0]:
        out[i] = autodiff(Reverse, law, Active(xs[i]), Const(a))[0]


def forward_scalar(xs, out, a):
    i = gd.grid(1)
    if i < xs.shape[0]:
        out[i] = autodiff(Forward, law, Duplicated(xs[i], np.float32(1)), Const(a))[0]


def square_sync(x, out, i):
    v = x[i] * x[i]
    gd.syncthreads()
    out[i] = v * np.float32(2)


def grad_square_sync(x, dx, out, dout):
    """A barrier inside the differentiated function: the reverse sweep mirrors it."""
    i = gd.grid(1)
    autodiff(Reverse, square_sync, Duplicated(x, dx), Duplicated(out, dout), Const(i))


def neighbours(x, i):
    """Reads x[i - 1], x[i], x[i + 1]: three threads add into each adjoint."""
    n = x.shape[0]
    left = x[i - 1] if i > 0 else np.float32(0)
    right = x[i + 1] if i + 1 < n else np.float32(0)
    return x[i] * (left + right) + math.cos(x[i])


def grad_neighbours(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, neighbours, Duplicated(x, dx), Const(i))


def cumulative(x, i):
    """A loop whose trip count depends on the thread: its tape grows as it runs (the device heap on PTX,
    the tape heap on Vulkan)."""
    s = np.float32(0)
    for j in range(i + 1):
        s += math.sin(x[j]) * s + x[j]
    return s


def grad_cumulative(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, cumulative, Duplicated(x, dx), Const(i))
