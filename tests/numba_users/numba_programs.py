"""Programs written as Numba users write them; only the import line differs from Numba's.

With ``from numba import njit, prange, vectorize, guvectorize`` in place of the
line below, this file runs under Numba unchanged (test_numba_programs.py checks
that where Numba is installed). Each ``CASES`` entry is a compiled function
and its arguments; the reference is the same function run by CPython
(``f.py_func``) on copies of the arguments.
"""

import math

import numpy as np

from gpucompiler import guvectorize, njit, prange, vectorize


@njit
def sum_of_squares(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] ** 2
    return s


@njit(fastmath=True)
def sum_of_squares_fast(a):
    s = 0.0
    for x in a:
        s += x * x
    return s


@njit(cache=True)
def horner(coeffs, x):
    r = 0.0
    for c in coeffs:
        r = r * x + c
    return r


@njit
def histogram(data, lo, hi, nbins):
    counts = np.zeros(nbins, dtype=np.int64)
    width = (hi - lo) / nbins
    for x in data:
        if lo <= x < hi:
            counts[int((x - lo) / width)] += 1
    return counts


@njit(parallel=True)
def parallel_norm(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i] ** 2
    return math.sqrt(s)


@njit(parallel=True)
def row_means(m):
    out = np.empty(m.shape[0])
    for i in prange(m.shape[0]):
        acc = 0.0
        for j in range(m.shape[1]):
            acc += m[i, j]
        out[i] = acc / m.shape[1]
    return out


@njit(nogil=True)
def pairwise_distances(x):
    n = x.shape[0]
    d = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(x.shape[1]):
                s += (x[i, k] - x[j, k]) ** 2
            d[i, j] = math.sqrt(s)
    return d


@njit(boundscheck=True)
def moving_average(a, w):
    out = np.empty(a.shape[0] - w + 1)
    s = a[:w].sum()
    out[0] = s / w
    for i in range(1, out.shape[0]):
        s += a[i + w - 1] - a[i - 1]
        out[i] = s / w
    return out


@njit(error_model="numpy")
def safe_ratios(a, b):
    return a / b


@njit(inline="always")
def clamp(x, lo, hi):
    return min(max(x, lo), hi)


@njit
def clamp_all(a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = clamp(a[i], -1.0, 1.0)
    return out


@njit
def stencil_slices(u):
    v = u.copy()
    v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return v


@njit
def masked_sum(a, threshold):
    return a[a > threshold].sum()


@njit
def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@njit
def inverse_powers(x):
    return x ** -1 + x ** -2 + x ** 3 + x ** 2.0


@njit
def int_powers(n):
    total = 0
    for i in range(n):
        total += i ** 2 + i ** 3
    return total


@njit
def mandelbrot(re, im, maxiter):
    out = np.zeros((im.shape[0], re.shape[0]), dtype=np.int64)
    for i in range(im.shape[0]):
        for j in range(re.shape[0]):
            c = complex(re[j], im[i])
            z = 0j
            k = 0
            while k < maxiter and abs(z) <= 2.0:
                z = z * z + c
                k += 1
            out[i, j] = k
    return out


@njit
def returns_tuple(a):
    return a.min(), a.max(), a.mean()


@njit("float64(float64[:], float64)")
def eager_dot_scale(a, k):
    s = 0.0
    for x in a:
        s += x * k
    return s


@vectorize(["float64(float64, float64)", "float32(float32, float32)"])
def rel_diff(x, y):
    return abs(x - y) / (abs(x) + abs(y) + 1e-12)


@vectorize
def logistic(x):
    return 1.0 / (1.0 + math.exp(-x))


@vectorize(target="parallel")
def cube(x):
    return x ** 3


@guvectorize(["void(float64[:], float64, float64[:])"], "(n),()->(n)")
def shift(x, k, res):
    for i in range(x.shape[0]):
        res[i] = x[i] + k


@guvectorize(["void(float64[:], float64[:])"], "(n)->()")
def norm_rows(x, res):
    s = 0.0
    for v in x:
        s += v * v
    res[0] = math.sqrt(s)


_rng = np.random.default_rng(28)
_A = _rng.standard_normal(1000)
_M = _rng.standard_normal((40, 30))
_U = _rng.random((32, 32))
_P = _rng.random((20, 3))

#: (name, function, arguments)
CASES = [
    ("sum_of_squares", sum_of_squares, (_A,)),
    ("horner", horner, (np.array([1.0, -2.0, 0.5, 3.0]), 1.7)),
    ("histogram", histogram, (_A, -2.0, 2.0, 16)),
    ("parallel_norm", parallel_norm, (_A,)),
    ("row_means", row_means, (_M,)),
    ("pairwise_distances", pairwise_distances, (_P,)),
    ("moving_average", moving_average, (_A, 7)),
    ("clamp_all", clamp_all, (_A,)),
    ("stencil_slices", stencil_slices, (_U,)),
    ("masked_sum", masked_sum, (_A, 0.5)),
    ("collatz_steps", collatz_steps, (27,)),
    ("inverse_powers", inverse_powers, (1.375,)),
    ("int_powers", int_powers, (100,)),
    ("mandelbrot", mandelbrot, (np.linspace(-2, 0.5, 24), np.linspace(-1, 1, 16), 50)),
    ("returns_tuple", returns_tuple, (_A,)),
    ("eager_dot_scale", eager_dot_scale, (_A, 0.5)),
    ("safe_ratios", safe_ratios, (np.array([1.0, -1.0, 0.0, 2.0]), np.array([0.0, 0.0, 0.0, 4.0]))),
    ("sum_of_squares_fast", sum_of_squares_fast, (_A,)),
]
