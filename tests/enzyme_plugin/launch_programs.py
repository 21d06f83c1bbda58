"""Kernels and host programs of the launch-tape tests (module-level: the compiler reads their source)."""

from __future__ import annotations

import math

from gpucompiler import device as gd
from gpucompiler import kernel


@kernel
def square(x, y):
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = x[i] * x[i]


@kernel
def sin_in_place(y):
    i = gd.grid(1)
    if i < y.shape[0]:
        y[i] = math.sin(y[i])


@kernel
def weighted_total(y, w, out):
    i = gd.grid(1)
    if i < y.shape[0]:
        gd.atomic_add(out, 0, w[0] * y[i])


@kernel
def scale_by(y, out, z):
    i = gd.grid(1)
    if i < y.shape[0]:
        z[i] = y[i] * out[0]


@kernel
def ticket_scaled(x, counter, y):
    """``atomic_add`` whose old value is used: it reads ``counter``."""
    i = gd.grid(1)
    if i < x.shape[0]:
        old = gd.atomic_add(counter, 0, 1.0)
        y[i] = x[i] * (old * 0.0 + 1.0)


@kernel
def zero_out(x):
    i = gd.grid(1)
    if i < x.shape[0]:
        x[i] = 0.0


@kernel
def axpy(a, x, y):                      # a float scalar: a Const of the gradient kernel
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = a * x[i] + y[i]


@kernel
def power_steps(x, y, steps):           # a loop per thread: its tape is per-thread memory
    i = gd.grid(1)
    if i < x.shape[0]:
        v = x[i]
        acc = 1.0
        for _ in range(steps):
            acc = acc * v + 0.5
        y[i] = acc


@kernel
def rows(a, s):                         # a 2-D grid of 2-D blocks
    i, j = gd.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        gd.atomic_add(s, i, a[i, j] * a[i, j] * (j + 1.0))


def helper_store(a, i, v):
    a[i] = v


@kernel
def through_helper(x, y, z):
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = 2.0 * x[i]
        helper_store(z, i, x[i])


@kernel
def clip(x, y):                          # a hand-written gradient replaces the generated one
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = min(max(x[i], -1.0), 1.0)


@kernel
def clip_late(x, y):                     # its gradient is registered after a launch was recorded
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = min(max(x[i], -1.0), 1.0)


def clip_straight_through(x, y, dx, dy):
    i = gd.grid(1)
    if i < x.shape[0]:
        dx[i] += dy[i]
        dy[i] = 0.0


SCALE = 2.0


@kernel
def scaled_square(x, y):                # reads a module global: a rebound SCALE recompiles (world age)
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = SCALE * x[i] * x[i]


def store_step(x, y, i):               # only stores into y
    y[i] = 3.0 * x[i]


def scale_step(x, y, i):               # reads y too: its gradient needs y's old value
    y[i] = y[i] * x[i]


STEP = store_step


@kernel
def apply_step(x, y):                   # calls a module global: rebinding STEP changes what it writes and reads
    i = gd.grid(1)
    if i < x.shape[0]:
        STEP(x, y, i)


def program(x, y, w, out, grid, block, device):
    """A host program of three launches: out = sum(w0 * sin(x^2))."""
    square[grid, block, device](x, y)
    sin_in_place[grid, block, device](y)
    weighted_total[grid, block, device](y, w, out)


def square_impl(x_in, x_out):           # Enzyme's CUDA guide: the device function
    x_out[0] = x_in[0] * x_in[0]


@kernel
def square_kernel(x_in, x_out):         # the kernel that calls it
    square_impl(x_in, x_out)


def guide_host(x, y, device):           # the host code that launches it
    square_kernel[1, 1, device](x, y)


def two_kernel_program(device, x, w, y, out):
    """The wrappers' program: inputs x, w; outputs y = x^2 (then sin) and out = sum(w0 * y)."""
    blocks = (x.shape[0] + 63) // 64
    square[blocks, 64, device](x, y)
    sin_in_place[blocks, 64, device](y)
    weighted_total[blocks, 64, device](y, w, out)


def two_kernel_outputs(x, w):
    return [(x.shape, x.dtype), ((1,), x.dtype)]


def host_program(x, y):                 # a host function: launches are Python, not compiled code
    square[1, 32, "cpu"](x, y)


SQUARE_LAUNCH = square[1, 32, "cpu"]


def host_program_prepared(x, y):
    SQUARE_LAUNCH(x, y)
