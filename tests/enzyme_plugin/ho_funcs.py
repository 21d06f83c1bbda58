"""Functions for the higher-order AD tests: autodiff of functions that call autodiff."""

from __future__ import annotations

import math

import numpy as np

from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import device as gd


# -- a scalar: f(x) = x^3 sin x --------------------------------------------------
def cubic_sin(x):
    return x * x * x * math.sin(x)


def d2_cubic_sin(x):
    return 6 * x * math.sin(x) + 6 * x * x * math.cos(x) - x ** 3 * math.sin(x)


def d3_cubic_sin(x):
    return 6 * math.sin(x) + 18 * x * math.cos(x) - 9 * x * x * math.sin(x) - x ** 3 * math.cos(x)


def cubic_sin_rev(x):
    return autodiff(Reverse, cubic_sin, Active(x))[0]


def cubic_sin_fwd(x):
    return autodiff(Forward, cubic_sin, Duplicated(x, 1.0))[0]


def cubic_sin_fwd_rev(x):
    """f'' by forward over reverse (a function of x: differentiated once more for f''')."""
    return autodiff(Forward, cubic_sin_rev, Duplicated(x, 1.0))[0]


# -- arrays: g(x) = sum_i x_i^3 sin(x_{i+1 mod n}) -------------------------------
def cubic_sin_ring(x, n):
    s = 0.0
    for i in range(n):
        s += x[i] ** 3 * math.sin(x[(i + 1) % n])
    return s


def hess_cubic_sin_ring(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n):
        j = (i + 1) % n
        h[i, i] += 6 * x[i] * math.sin(x[j])
        h[j, j] -= x[i] ** 3 * math.sin(x[j])
        h[i, j] += 3 * x[i] ** 2 * math.cos(x[j])
        h[j, i] += 3 * x[i] ** 2 * math.cos(x[j])
    return h


def grad_cubic_sin_ring(x, dx, n):
    autodiff(Reverse, cubic_sin_ring, Duplicated(x, dx), Const(n))


# -- Rosenbrock over an array ----------------------------------------------------
def rosenbrock(x, n):
    s = 0.0
    for i in range(n - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        s += 100.0 * a * a + b * b
    return s


def hess_rosenbrock(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] -= 400 * x[i]
        h[i + 1, i] -= 400 * x[i]
    return h


def grad_rosenbrock(x, dx, n):
    autodiff(Reverse, rosenbrock, Duplicated(x, dx), Const(n))


# -- a small MLP-like loss: (sum_j a_j tanh(sum_i w[j*n+i] x_i) - y)^2 ------------
def mlp_loss(w, x, a, y, hidden, n):
    o = 0.0
    for j in range(hidden):
        z = 0.0
        for i in range(n):
            z += w[j * n + i] * x[i]
        o += a[j] * math.tanh(z)
    r = o - y
    return r * r


def hess_mlp_loss(w, x, a, y, hidden, n):
    z = np.array([w[j * n:(j + 1) * n] @ x for j in range(hidden)])
    t = np.tanh(z)
    s = 1 - t * t
    r = a @ t - y
    g = np.concatenate([a[j] * s[j] * x for j in range(hidden)])
    h = 2 * np.outer(g, g)
    for j in range(hidden):
        blk = slice(j * n, (j + 1) * n)
        h[blk, blk] += 2 * r * a[j] * (-2 * t[j] * s[j]) * np.outer(x, x)
    return h


def grad_mlp_loss(w, dw, x, a, y, hidden, n):
    autodiff(Reverse, mlp_loss, Duplicated(w, dw), Const(x), Const(a), Const(y), Const(hidden), Const(n))


# -- Hessian-vector products in compiled code ------------------------------------
def rosenbrock_hvp_fwd_rev(x, v, dx, hv, n):
    autodiff(Forward, grad_rosenbrock, Duplicated(x, v), Duplicated(dx, hv), Const(n))


def rosenbrock_hvp_rev_rev(x, hv, dx, v, n):
    """H v by reverse over reverse: the gradient of v . grad(x), seeded through the shadow of dx."""
    autodiff(Reverse, grad_rosenbrock, Duplicated(x, hv), Duplicated(dx, v), Const(n))


def scalar_second_derivatives(x):
    """f'' four ways: forward over reverse, reverse over reverse, forward over forward, reverse over forward."""
    fr = autodiff(Forward, cubic_sin_rev, Duplicated(x, 1.0))[0]
    rr = autodiff(Reverse, cubic_sin_rev, Active(x))[0]
    ff = autodiff(Forward, cubic_sin_fwd, Duplicated(x, 1.0))[0]
    rf = autodiff(Reverse, cubic_sin_fwd, Active(x))[0]
    return fr, rr, ff, rf


# -- in kernels: one thread per element --------------------------------------------
def elem_cubic_sin(x, i):
    return x[i] * x[i] * x[i] * math.sin(x[i])


def grad_elem_cubic_sin(x, dx, i):
    autodiff(Reverse, elem_cubic_sin, Duplicated(x, dx), Const(i))


def second_derivative_kernel(x, v, dx, hv):
    """hv[i] = f''(x[i]) v[i] (forward over reverse), dx[i] = f'(x[i])."""
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Forward, grad_elem_cubic_sin, Duplicated(x, v), Duplicated(dx, hv), Const(i))


def second_derivative_rev_rev_kernel(x, hv, dx, v):
    """hv[i] += f''(x[i]) v[i] (reverse over reverse: the seed v is the shadow of dx)."""
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, grad_elem_cubic_sin, Duplicated(x, hv), Duplicated(dx, v), Const(i))


def differentiates_itself(x):
    return autodiff(Reverse, differentiates_itself, Active(x))[0] + x


# -- a data-dependent while loop per element: the inner tape grows on the device ---------
def until_four(x, i):
    s = x[i]
    while s < 4.0:
        s = s + 0.5 + 0.1 * math.sin(s)
    return s * s


def grad_until_four(x, dx, i):
    autodiff(Reverse, until_four, Duplicated(x, dx), Const(i))


def until_four_second_derivative_kernel(x, v, dx, hv):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Forward, grad_until_four, Duplicated(x, v), Duplicated(dx, hv), Const(i))


def until_four_rev_rev_kernel(x, hv, dx, v):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, grad_until_four, Duplicated(x, hv), Duplicated(dx, v), Const(i))


# -- an unsupported construct under a nested autodiff ---------------------------------
def reads_old_value(x, out, i):
    old = gd.atomic_add(out, 0, x[i] * x[i])
    return old * x[i]


def grad_reads_old_value(x, dx, out, dout, i):
    autodiff(Reverse, reads_old_value, Duplicated(x, dx), Duplicated(out, dout), Const(i))


def nested_unsupported_kernel(x, v, dx, hv, out, dout):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Forward, grad_reads_old_value, Duplicated(x, v), Duplicated(dx, hv), Const(out), Const(dout),
                 Const(i))


# -- a sum of cubes: its gradient and Hessian-vector product (forward over reverse) ------------
def cube_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * x[i]
    return s


def cube_sum_gradient(x, dx):
    autodiff(Reverse, cube_sum, Duplicated(x, dx))


def cube_sum_hvp(x, v, dx, hv):
    autodiff(Forward, cube_sum_gradient, Duplicated(x, v), Duplicated(dx, hv))
