"""Kernels shared by the CPU-emulation tests, the ptxas checks and the GPU tests.

Each case is ``(kernel, grid, block, make_args, check)``: ``make_args(rng)``
returns fresh NumPy arguments, ``check(args, before)`` compares the results
(``before``: copies of the arguments taken before the launch) against NumPy.
"""

from __future__ import annotations

import math

import numpy as np

from gpucompiler import device as gd
from gpucompiler import kernel

BLOCK = 64
TILE = 16


@kernel
def saxpy(a, x, y, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]


@kernel
def small_ints_complex(a8, u16, z, scale, out, wrapped, u):
    """int8, uint16 and complex128 arrays and a complex scalar: NumPy's promotion and wrap-around."""
    i = gd.grid(1)
    if i < out.shape[0]:
        w = z[i] * z[i].conjugate() + a8[i] * scale
        out[i] = w.real + abs(z[i]) + (u16[i] >> 3) + np.float32(a8[i])
        wrapped[i] = a8[i] + a8[i]
        u[i] = u16[i] * 3 - 7


@kernel
def numpy_ufuncs(x, y, out):
    """NumPy's ufuncs on the numbers of a thread (libdevice on the GPU, NaN rather than errors)."""
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = (np.sin(x[i]) * np.exp(-np.abs(y[i])) + np.maximum(x[i], y[i]) - np.minimum(y[i], 0.5)
                  + np.where(x[i] > 0, np.sqrt(x[i]), np.tanh(y[i])) + np.isnan(np.sqrt(x[i] - 2.0)))


def _numpy_ufuncs_ref(x, y):
    with np.errstate(invalid="ignore"):
        return (np.sin(x) * np.exp(-np.abs(y)) + np.maximum(x, y) - np.minimum(y, 0.5)
                + np.where(x > 0, np.sqrt(np.abs(x)), np.tanh(y)) + np.isnan(np.sqrt(x - 2.0)))


@kernel
def grid_stride_scale(x, factor):
    i = gd.grid(1)
    step = gd.gridsize(1)
    while i < x.shape[0]:
        x[i] = x[i] * factor
        i += step


@kernel
def stencil2d(a, out):
    i, j = gd.grid(2)
    if 1 <= i < a.shape[0] - 1 and 1 <= j < a.shape[1] - 1:
        out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) - a[i, j]


@kernel
def sum_atomic(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(out, 0, x[i])


@kernel
def sum_shared(x, out):
    buf = gd.shared_array(BLOCK, np.float64)
    t = gd.threadIdx.x
    i = gd.grid(1)
    buf[t] = x[i] if i < x.shape[0] else 0.0
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
def minmax_atomic(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_min(out, 0, x[i])
        gd.atomic_max(out, 1, x[i])


@kernel
def histogram(values, bins):
    i = gd.grid(1)
    if i < values.shape[0]:
        gd.atomic_add(bins, values[i] % bins.shape[0], 1)


@kernel
def first_claim(owner, ids):
    """Each slot keeps the first id written by compare-and-swap; exchanges count claims."""
    i = gd.grid(1)
    if i < ids.shape[0]:
        slot = ids[i] % owner.shape[0]
        gd.atomic_cas(owner, slot, -1, ids[i])


@kernel
def exchange_last(slot, x):
    i = gd.grid(1)
    if i < x.shape[0]:
        old = gd.atomic_exch(slot, 0, x[i])
        x[i] = old


@kernel
def transpose_tile(a, out):
    tile = gd.shared_array((TILE, TILE + 1), np.float32)
    tx = gd.threadIdx.x
    ty = gd.threadIdx.y
    row = gd.blockIdx.y * TILE + ty
    col = gd.blockIdx.x * TILE + tx
    if row < a.shape[0] and col < a.shape[1]:
        tile[ty, tx] = a[row, col]
    gd.syncthreads()
    orow = gd.blockIdx.x * TILE + ty
    ocol = gd.blockIdx.y * TILE + tx
    if orow < out.shape[0] and ocol < out.shape[1]:
        out[orow, ocol] = tile[tx, ty]


@kernel
def math_f(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[i] = math.sin(v) + math.exp(v) * math.cos(v) - math.sqrt(math.fabs(v)) + math.log1p(v * v) \
            + math.tanh(v) + math.atan2(v, 1.5) + math.pow(math.fabs(v), 1.5)


@kernel
def index3d(out):
    i, j, k = gd.grid(3)
    if i < out.shape[0] and j < out.shape[1] and k < out.shape[2]:
        out[i, j, k] = i * 10000 + j * 100 + k + 1000000 * (gd.blockDim.x * gd.blockDim.y * gd.blockDim.z
                                                               + gd.gridDim.z)


def _math_ref(v):
    return (np.sin(v) + np.exp(v) * np.cos(v) - np.sqrt(np.abs(v)) + np.log1p(v * v) + np.tanh(v)
            + np.arctan2(v, v.dtype.type(1.5)) + np.power(np.abs(v), v.dtype.type(1.5)))


def _cases():
    n = 1000  # not a multiple of BLOCK
    def close(got, want, rtol=1e-6, atol=0.0):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)

    cases = {
        "saxpy_f32": (saxpy, -(-n // BLOCK), BLOCK,
                      lambda r: (2.5, r.random(n, np.float32), r.random(n, np.float32), np.zeros(n, np.float32)),
                      lambda a, b: close(a[3], np.float32(2.5) * b[1] + b[2], 1e-6)),
        "saxpy_f64": (saxpy, -(-n // BLOCK), BLOCK,
                      lambda r: (-1.5, r.random(n), r.random(n), np.zeros(n)),
                      lambda a, b: close(a[3], -1.5 * b[1] + b[2], 1e-15)),
        "grid_stride": (grid_stride_scale, 3, 32, lambda r: (r.random(n), 3.0),
                        lambda a, b: close(a[0], 3.0 * b[0], 1e-15)),
        "stencil2d": (stencil2d, (-(-37 // TILE), -(-45 // TILE)), (TILE, TILE),
                      lambda r: (r.random((37, 45)), np.zeros((37, 45))),
                      lambda a, b: close(a[1][1:-1, 1:-1], 0.25 * (b[0][:-2, 1:-1] + b[0][2:, 1:-1]
                                                                    + b[0][1:-1, :-2] + b[0][1:-1, 2:])
                                         - b[0][1:-1, 1:-1], 1e-12, 1e-12)),
        "sum_atomic": (sum_atomic, -(-n // BLOCK), BLOCK,
                       lambda r: (r.random(n), np.zeros(1)),
                       lambda a, b: close(a[1][0], b[0].sum(), 1e-12)),
        "sum_shared": (sum_shared, -(-n // BLOCK), BLOCK,
                       lambda r: (r.random(n), np.zeros(1)),
                       lambda a, b: close(a[1][0], b[0].sum(), 1e-12)),
        "minmax_atomic_i64": (minmax_atomic, -(-n // BLOCK), BLOCK,
                              lambda r: (r.integers(-10**9, 10**9, n), np.array([2**62, -2**62])),
                              lambda a, b: np.testing.assert_array_equal(a[1], [b[0].min(), b[0].max()])),
        "minmax_atomic_f32": (minmax_atomic, -(-n // BLOCK), BLOCK,
                              lambda r: (r.standard_normal(n).astype(np.float32),
                                         np.array([np.inf, -np.inf], np.float32)),
                              lambda a, b: np.testing.assert_array_equal(a[1], [b[0].min(), b[0].max()])),
        "histogram_i32": (histogram, -(-n // BLOCK), BLOCK,
                          lambda r: (r.integers(0, 1000, n).astype(np.int32), np.zeros(7, np.int32)),
                          lambda a, b: np.testing.assert_array_equal(a[1], np.bincount(b[0] % 7, minlength=7))),
        "cas": (first_claim, -(-n // BLOCK), BLOCK,
                lambda r: (np.full(16, -1), r.permutation(n).astype(np.int64)),
                lambda a, b: _check_claims(a[0], b[1])),
        "exchange": (exchange_last, -(-n // BLOCK), BLOCK,
                     lambda r: (np.array([-1.0]), r.permutation(n).astype(np.float64)),
                     lambda a, b: _check_exchange(a[0], a[1], b[1])),
        "transpose_tile": (transpose_tile, (-(-45 // TILE), -(-37 // TILE)), (TILE, TILE),
                           lambda r: (r.random((37, 45), np.float32), np.zeros((45, 37), np.float32)),
                           lambda a, b: np.testing.assert_array_equal(a[1], b[0].T)),
        "math_f32": (math_f, -(-n // BLOCK), BLOCK,
                     lambda r: (r.uniform(-3, 3, n).astype(np.float32), np.zeros(n, np.float32)),
                     lambda a, b: close(a[1], _math_ref(b[0]), 2e-5, 2e-5)),
        "numpy_ufuncs": (numpy_ufuncs, -(-n // BLOCK), BLOCK,
                         lambda r: (r.uniform(-3, 3, n), r.uniform(-3, 3, n), np.zeros(n)),
                         lambda a, b: np.testing.assert_allclose(a[2], _numpy_ufuncs_ref(b[0], b[1]), rtol=1e-13,
                                                                 atol=1e-13)),
        "math_f64": (math_f, -(-n // BLOCK), BLOCK,
                     lambda r: (r.uniform(-3, 3, n), np.zeros(n)),
                     lambda a, b: close(a[1], _math_ref(b[0]), 1e-13, 1e-13)),
        "small_ints_complex": (small_ints_complex, -(-n // BLOCK), BLOCK,
                               lambda r: (r.integers(-128, 128, n).astype(np.int8),
                                          r.integers(0, 2**16, n).astype(np.uint16),
                                          r.standard_normal(n) + 1j * r.standard_normal(n), 0.5 - 2j,
                                          np.zeros(n), np.zeros(n, np.int8), np.zeros(n, np.uint16)),
                               _check_small_ints),
        "index3d": (index3d, (2, 3, 2), (4, 2, 3),
                    lambda r: (np.zeros((7, 5, 6), np.int64),),
                    lambda a, b: np.testing.assert_array_equal(
                        a[0], np.fromfunction(lambda i, j, k: i * 10000 + j * 100 + k + 1000000 * 26,
                                              (7, 5, 6), dtype=np.int64))),
    }
    return cases


def _small_ints_ref(a8, u16, z, scale):
    w = z * z.conjugate() + a8.astype(np.complex128) * scale
    return (w.real + np.abs(z) + (u16 >> np.uint16(3)).astype(np.float64) + a8.astype(np.float32).astype(np.float64),
            (a8 + a8).astype(np.int8), u16 * np.uint16(3) - np.uint16(7))


def _check_small_ints(a, b):
    out, wrapped, u = _small_ints_ref(b[0], b[1], b[2], b[3])
    np.testing.assert_allclose(a[4], out, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(a[5], wrapped)
    np.testing.assert_array_equal(a[6], u)


def _check_claims(owner, ids):
    # every slot holds one id that maps to it, and every slot that some id maps to is claimed
    for slot, who in enumerate(owner):
        mapped = ids[ids % owner.size == slot]
        if mapped.size:
            assert who in mapped
        else:
            assert who == -1


def _check_exchange(slot, out, x):
    # the values read form a chain: every original value is read back exactly once, -1 starts it
    assert sorted(np.append(out, slot[0]).tolist()) == sorted(np.append(x, -1.0).tolist())


CASES = _cases()


def run_case(name, device, rng_seed=0):
    """Launch case ``name`` on ``device`` (``"cpu"`` or a stream/None); check it."""
    k, grid, block, make, check = CASES[name]
    args = make(np.random.default_rng(rng_seed))
    before = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    if device is None:
        k[grid, block](*args)
    else:
        k[grid, block, device](*args)
    check(args, before)
