"""Functions differentiated by the Enzyme plugin tests (module level: their sources name the jobs)."""

import math

from gpucompiler import device as gd
from enzyme_plugin import Active, Const, Duplicated, DuplicatedNoNeed, Forward, Reverse, autodiff, custom_rule


def f2(x, y):
    return math.sin(x) * y * y + math.exp(0.5 * x)


def df2(x, y):
    return (math.cos(x) * y * y + 0.5 * math.exp(0.5 * x), 2.0 * math.sin(x) * y)


def grad_f2(x, y):
    return autodiff(Reverse, f2, Active(x), Active(y))


def tangent_f2(x, dx, y, dy):
    return autodiff(Forward, f2, Duplicated(x, dx), Duplicated(y, dy))


def grad_f2_const_y(x, y):
    return autodiff(Reverse, f2, Active(x), Const(y))


def sumsq_scaled(a, s, n):
    t = 0.0
    for i in range(n):
        t += a[i] * a[i] * s
    return t


def grad_sumsq(a, da, s, n):
    return autodiff(Reverse, sumsq_scaled, Duplicated(a, da), Active(s), Const(n))


def grad_sumsq_noneed(a, da, s, n):
    return autodiff(Reverse, sumsq_scaled, DuplicatedNoNeed(a, da), Const(s), n)


def tangent_sumsq(a, da, s, n):
    return autodiff(Forward, sumsq_scaled, Duplicated(a, da), Const(s), Const(n))


def matvec(m, v, out):
    for i in range(m.shape[0]):
        acc = 0.0
        for j in range(m.shape[1]):
            acc += m[i, j] * math.tanh(v[j])
        out[i] = acc


def grad_matvec(m, dm, v, dv, out, dout):
    autodiff(Reverse, matvec, Duplicated(m, dm), Duplicated(v, dv), Duplicated(out, dout))
    return 0.0


# -- errors ----------------------------------------------------------------------
def active_int(n):
    return autodiff(Reverse, f2, Active(n), Active(1.0))


def dup_scalar_reverse(x, dx):
    return autodiff(Reverse, f2, Duplicated(x, dx), Active(1.0))


def active_forward(x):
    return autodiff(Forward, f2, Active(x), Const(1.0))


def not_a_function(x):
    return autodiff(Reverse, 3.0, Active(x))


# -- custom rules ----------------------------------------------------------------
def clip(x):
    return min(max(x, -1.0), 1.0)


def clip_forward(x, dx):
    return dx


def clip_reverse(x, dret):
    return (dret,)


custom_rule(clip, forward=clip_forward, reverse=clip_reverse)


def uses_clip(x):
    return clip(x) * 3.0 + x * x


def grad_uses_clip(x):
    return autodiff(Reverse, uses_clip, Active(x))


def tangent_uses_clip(x):
    return autodiff(Forward, uses_clip, Duplicated(x, 1.0))


def plain_uses_clip(x):
    return uses_clip(x)


# -- kernels ---------------------------------------------------------------------
def energy(x, w, i):
    return math.sin(x[i]) * w[0] * x[i] + w[1] * x[i] * x[i]


def grad_energy_kernel(x, dx, w, dw):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, energy, Duplicated(x, dx), Duplicated(w, dw), Const(i))


def scalar_law(x, a):
    return math.exp(a * x) + math.log(1.0 + x * x)


def derivative_kernel(xs, out, a):
    i = gd.grid(1)
    if i < xs.shape[0]:
        d = autodiff(Reverse, scalar_law, Active(xs[i]), Const(a))
        out[i] = d[0]


def forward_kernel(xs, out, a):
    i = gd.grid(1)
    if i < xs.shape[0]:
        d = autodiff(Forward, scalar_law, Duplicated(xs[i], 1.0), Const(a))
        out[i] = d[0]


def square_sync(x, out, i):
    v = x[i] * x[i]
    gd.syncthreads()
    out[i] = v * 2.0


def grad_square_sync_kernel(x, dx, out, dout):
    i = gd.grid(1)
    autodiff(Reverse, square_sync, Duplicated(x, dx), Duplicated(out, dout), Const(i))


def cumulative(x, i):
    s = 0.0
    for j in range(i + 1):
        s += math.sin(x[j]) * s + x[j]
    return s


def loop_in_kernel(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, cumulative, Duplicated(x, dx), Const(i))
