"""NumPy expressions differentiated by the Enzyme plugin tests (module level: their sources name the jobs)."""

import numpy as np

from enzyme_plugin import Active, Duplicated, Forward, Reverse, autodiff


def sum_sin_times(x):
    return np.sum(np.sin(x) * x)


def grad_sum_sin_times(x, dx):
    autodiff(Reverse, sum_sin_times, Duplicated(x, dx))
    return 0.0


def dot_scaled(a, b, s):
    return np.dot(a, b) * s + (a @ a)


def grad_dot_scaled(a, da, b, db, s):
    return autodiff(Reverse, dot_scaled, Duplicated(a, da), Duplicated(b, db), Active(s))


def fused_into(out, a, b, c):
    out[:] = a * b + np.exp(-c) / (1.0 + c * c)
    return np.sum(out * out) + np.max(a) + a.mean()


def grad_fused_into(out, dout, a, da, b, db, c, dc):
    autodiff(Reverse, fused_into, Duplicated(out, dout), Duplicated(a, da), Duplicated(b, db),
             Duplicated(c, dc))
    return 0.0


def rows_norm(m):
    return np.sum(np.sqrt(m * m + 1.0)) + np.prod(np.tanh(m[0]))


def grad_rows_norm(m, dm):
    autodiff(Reverse, rows_norm, Duplicated(m, dm))
    return 0.0


def dot4(a, b):
    """A dot product over four partial sums (plain Python: no NumPy function involved)."""
    s0 = s1 = s2 = s3 = 0.0
    for k in range(a.shape[0] // 4):
        i = 4 * k
        s0 += a[i] * b[i]
        s1 += a[i + 1] * b[i + 1]
        s2 += a[i + 2] * b[i + 2]
        s3 += a[i + 3] * b[i + 3]
    return (s0 + s1) + (s2 + s3)


def two_dot4(a, b, s):
    return dot4(a, b) * s + dot4(a, a)


def grad_two_dot4(a, da, b, db, s):
    return autodiff(Reverse, two_dot4, Duplicated(a, da), Duplicated(b, db), Active(s))


def two_sums(a, b, s):
    return np.sum(a * b) * s + np.dot(a, a)


def grad_two_sums(a, da, b, db, s):
    return autodiff(Reverse, two_sums, Duplicated(a, da), Duplicated(b, db), Active(s))


def extremes(x):
    return np.max(x) * 2.0 + x.min()


def grad_extremes(x, dx):
    autodiff(Reverse, extremes, Duplicated(x, dx))
    return 0.0


def tangent_extremes(x, dx):
    return autodiff(Forward, extremes, Duplicated(x, dx))


def residual_energy(a, x):
    """sum((A @ x)**2): a matrix-vector product, then a reduction."""
    r = a @ x
    return np.sum(r * r)


def grad_residual_energy(a, da, x, dx):
    autodiff(Reverse, residual_energy, Duplicated(a, da), Duplicated(x, dx))
    return 0.0


def gram_columns(a, b):
    """Matrix products and reductions along both axes."""
    c = a @ b
    return np.sum(np.sum(c * c, axis=0) * np.arange(c.shape[1])) + np.sum(np.mean(np.sin(a), axis=1) ** 2) \
        + np.sum(np.max(b, axis=1)) + np.sum(np.dot(a[0], b)) + np.sum(a[a > 0.5])


def grad_gram_columns(a, da, b, db):
    autodiff(Reverse, gram_columns, Duplicated(a, da), Duplicated(b, db))
    return 0.0
