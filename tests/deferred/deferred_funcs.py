"""Functions compiled by the deferred-job tests (module level, so job ids name them stably)."""

import math

from gpucompiler import device as gd
from gpucompiler_plugins.mock_autodiff import in_autodiff, mock_autodiff

SCALE = 2.0


def square(x):
    return x * x


def poly(x, n):
    acc = 0.0
    for k in range(n):
        acc = acc * x + k
    return acc


def scaled(x):
    return SCALE * x


def uses_square_twice(x, y):
    return mock_autodiff(square, x) + mock_autodiff(square, y) + square(x)


def calls_poly(x, n):
    return mock_autodiff(poly, x, n) - 1.0


def int_result(n):
    return mock_autodiff(triangle, n) * 2


def triangle(n):
    s = 0
    for k in range(n + 1):
        s += k
    return s


def inner(x):
    return math.sin(x) + x


def middle(x):
    return mock_autodiff(inner, x) * 2.0 + mock_autodiff(square, x)


def outer(x):
    return mock_autodiff(middle, x) + 1.0


def even(n):
    if n == 0:
        return 1
    return mock_autodiff(odd, n - 1)


def odd(n):
    if n == 0:
        return 0
    return mock_autodiff(even, n - 1)


def parity(n):
    return mock_autodiff(even, n)


def probe(x):
    return x + (1.0 if in_autodiff() else 0.0)


def probe_both(x):
    return mock_autodiff(probe, x) * 10.0 + probe(x)


def uses_scaled(x):
    return mock_autodiff(scaled, x)


def with_sin(x):
    return math.sin(x) * (2.0 if in_autodiff() else 3.0)


def kernel_like(x):
    return mock_autodiff(with_sin, x) + math.sin(x)


def not_a_function(x):
    return mock_autodiff(SCALE, x)


def sin_plus(x):
    return math.sin(x) * 2.0 + x * (3.0 if in_autodiff() else 1.0)


def sin_plus_direct(x):
    """CPython's value of ``mock_autodiff(sin_plus, x)``: in_autodiff() is True in the nested job."""
    return math.sin(x) * 2.0 + x * 3.0


def autodiff_kernel(xs, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = mock_autodiff(sin_plus, xs[i]) + mock_autodiff(square, xs[i])
