"""Kernel gradients over loops of every shape: each kernel calls
``autodiff(Reverse, f, Duplicated(x, dx), Const(i))`` for its thread's ``i``
(the grid-stride kernel for several), so ``dx`` ends as the gradient of
``sum_i f(x, i)``. The functions are plain Python: CPython evaluates them for
the finite-difference reference; a few have exact derivatives written out.

Shapes: a constant trip count with if/else inside (13 steps), ``range`` with a
positive and a negative step, a loop-invariant bound, a data-dependent
``while`` (per-element Newton solve, and one long enough to leave the inline
segment for the heap), nested loops (counted in counted, ``while`` in counted),
``break``, ``return`` and ``continue`` inside loops, a strided ``while`` in the
differentiated function and a grid-stride ``while`` around ``autodiff`` in the
kernel."""

from __future__ import annotations

import math

import attrs
import numpy as np

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd

STEPS = 13
NEWTON_TOL = 1e-13
STRIDE = 5


# -- the differentiated functions ---------------------------------------------------------
def branchy_map(x, i):
    """An iterated map with a branch in each of its 13 steps."""
    s = x[i]
    for k in range(STEPS):
        if s > 0.2:
            s = 0.8 * s - 0.25 * s * s + 0.05 * k
        else:
            s = math.sin(1.5 * s) + 0.3
    return s


def branchy_map_derivative(v):
    """d branchy_map / d x[i] at x[i] = v, by the chain rule."""
    s, ds = v, 1.0
    for k in range(STEPS):
        if s > 0.2:
            s, ds = 0.8 * s - 0.25 * s * s + 0.05 * k, (0.8 - 0.5 * s) * ds
        else:
            s, ds = math.sin(1.5 * s) + 0.3, 1.5 * math.cos(1.5 * s) * ds
    return ds


def range_up(x, i):
    """``range(start, n, 3)`` with a start that depends on the thread."""
    s = x[i]
    for j in range(i % 3, x.shape[0], 3):
        s = s * math.cos(x[j]) + 0.1 * x[j]
    return s


def range_down(x, i):
    """``range(n - 1, i, -2)``: a negative step, empty for the last threads."""
    s = 1.0
    for j in range(x.shape[0] - 1, i, -2):
        s = s * (1.0 + 0.1 * math.sin(x[j] * x[i]))
    return s


def invariant_bound(x, i):
    """A ``while`` whose bound is computed before it and does not change in it."""
    m = 2 + i % 5
    s = x[i]
    j = 0
    while j < m:
        s = s - 0.1 * math.tanh(s * x[(i + j) % x.shape[0]])
        j += 1
    return s


def newton_solve(x, i):
    """y with y^3 + y = x[i] by Newton's method (a data-dependent ``while``), then y^2."""
    a = x[i]
    y = a
    r = y * y * y + y - a
    it = 0
    while abs(r) > NEWTON_TOL and it < 60:
        y = y - r / (3.0 * y * y + 1.0)
        r = y * y * y + y - a
        it += 1
    return y * y


def newton_solve_derivative(v):
    """d newton_solve / d x[i] = 2 y / (3 y^2 + 1) at the root y of y^3 + y = v."""
    y = np.cbrt(v / 2 + np.sqrt(v * v / 4 + 1 / 27)) + np.cbrt(v / 2 - np.sqrt(v * v / 4 + 1 / 27))
    return 2 * y / (3 * y * y + 1)


def long_while(x, i):
    """A data-dependent ``while`` of about 200 iterations: its array grows onto the heap."""
    s = x[i]
    while s < 50.0:
        s = s + 0.25 + 0.1 * math.sin(s)
    return s * s


def strided_while(x, i):
    """A grid-stride-shaped ``while`` inside the differentiated function."""
    s = 0.0
    j = i
    while j < x.shape[0]:
        s += math.sin(x[j]) * x[j] * x[i]
        j += STRIDE
    return s


def nested_counted(x, i):
    """A counted loop in a counted loop; the inner bound depends on the outer counter."""
    s = 0.0
    for j in range(i % 4 + 1):
        t = x[i]
        for k in range(j, x.shape[0], 4):
            t = t * 0.9 + math.sin(x[k]) * x[i]
        s += t * t
    return s


def nested_while(x, i):
    """A data-dependent ``while`` in a counted loop."""
    s = 0.0
    for j in range(3):
        y = x[i] + 0.5 * j
        while y > 0.1:
            y = 0.5 * y + 0.01 * math.sin(y)
        s += y * x[(i + j) % x.shape[0]]
    return s


def early_break(x, i):
    """``break`` out of a counted loop when the value grows past a threshold."""
    s = x[i]
    for _ in range(40):
        s = s * 1.1 + 0.05 * math.cos(s)
        if s > 2.0:
            break
    return s * x[i]


def early_return(x, i):
    """``return`` from inside a loop over the array."""
    s = x[i]
    for j in range(x.shape[0]):
        s = s + 0.2 * math.sin(x[j] * s)
        if abs(s) > 1.5:
            return s * s
    return s


def branch_continue(x, i):
    """``continue`` and an if/else inside a loop."""
    s = 0.0
    for j in range(x.shape[0]):
        if x[j] < x[i]:
            continue
        if j % 2 == 0:
            s += math.exp(-x[j] * x[i])
        else:
            s -= x[j] * x[j] * x[i]
    return s


# -- the kernels -----------------------------------------------------------------------------
def k_branchy_map(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, branchy_map, Duplicated(x, dx), Const(i))


def k_range_up(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, range_up, Duplicated(x, dx), Const(i))


def k_range_down(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, range_down, Duplicated(x, dx), Const(i))


def k_invariant_bound(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, invariant_bound, Duplicated(x, dx), Const(i))


def k_newton_solve(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, newton_solve, Duplicated(x, dx), Const(i))


def k_long_while(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, long_while, Duplicated(x, dx), Const(i))


def k_strided_while(x, dx):
    i = gd.grid(1)
    if i < STRIDE:
        autodiff(Reverse, strided_while, Duplicated(x, dx), Const(i))


def k_grid_stride(x, dx):
    """A grid-stride ``while`` around ``autodiff``: each thread differentiates several elements."""
    i = gd.grid(1)
    while i < x.shape[0]:
        autodiff(Reverse, branchy_map, Duplicated(x, dx), Const(i))
        i += gd.gridsize(1)


def k_nested_counted(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, nested_counted, Duplicated(x, dx), Const(i))


def k_nested_while(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, nested_while, Duplicated(x, dx), Const(i))


def k_early_break(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, early_break, Duplicated(x, dx), Const(i))


def k_early_return(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, early_return, Duplicated(x, dx), Const(i))


def k_branch_continue(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, branch_continue, Duplicated(x, dx), Const(i))


# -- the corpus ------------------------------------------------------------------------------
@attrs.frozen
class Case:
    """One kernel gradient: its kernel, the function it differentiates and its reference."""

    name: str
    kernel: object
    fn: object
    #: input values (the array x)
    x: np.ndarray = attrs.field(eq=False)
    #: ``(blocks, threads)`` of the launch
    launch: tuple[int, int] = (2, 16)
    #: threads i that call autodiff (default: every element)
    threads: int | None = None
    #: exact d f(x, i) / d x[i] as a function of x[i] (only f's own element counts), else None
    exact: object = None

    def total(self, x) -> float:
        """sum over the differentiating threads of ``fn(x, i)``, in CPython."""
        n = len(x) if self.threads is None else self.threads
        return sum(self.fn(x, i) for i in range(n))

    def reference(self, h: float = 1e-6) -> np.ndarray:
        """The gradient of :meth:`total`: exact when known, else central differences."""
        if self.exact is not None:
            return np.array([self.exact(v) for v in self.x])
        fd = np.zeros_like(self.x)
        for k in range(len(self.x)):
            up, dn = self.x.copy(), self.x.copy()
            up[k] += h
            dn[k] -= h
            fd[k] = (self.total(up) - self.total(dn)) / (2 * h)
        return fd


def _x(n, lo, hi, seed):
    return np.random.default_rng(seed).uniform(lo, hi, n)


CASES = (
    Case("constant trip, if/else (13 steps)", k_branchy_map, branchy_map, _x(24, -1.0, 1.5, 1),
         exact=branchy_map_derivative),
    Case("range(start, n, 3)", k_range_up, range_up, _x(24, -1.0, 1.0, 2)),
    Case("range(n - 1, i, -2)", k_range_down, range_down, _x(24, -1.0, 1.0, 3)),
    Case("loop-invariant bound", k_invariant_bound, invariant_bound, _x(24, -1.0, 1.0, 4)),
    Case("data-dependent while (Newton)", k_newton_solve, newton_solve, _x(24, -3.0, 3.0, 5),
         exact=newton_solve_derivative),
    Case("long data-dependent while (heap)", k_long_while, long_while, _x(12, -1.0, 1.0, 6)),
    Case("strided while in f", k_strided_while, strided_while, _x(23, -1.0, 1.0, 7), threads=STRIDE),
    Case("grid-stride while in the kernel", k_grid_stride, branchy_map, _x(40, -1.0, 1.5, 8),
         launch=(1, 8), exact=branchy_map_derivative),
    Case("nested counted loops", k_nested_counted, nested_counted, _x(18, -1.0, 1.0, 9)),
    Case("while in a counted loop", k_nested_while, nested_while, _x(18, -0.5, 2.0, 10)),
    Case("break inside a loop", k_early_break, early_break, _x(24, 0.1, 1.5, 11)),
    Case("return inside a loop", k_early_return, early_return, _x(20, -1.0, 1.0, 12)),
    Case("continue and if/else in a loop", k_branch_continue, branch_continue, _x(20, -1.0, 1.0, 13)),
)


# -- a gradient that cannot be built -----------------------------------------------------------
def atomic_old_value(x, out, i):
    """Uses the old value of an atomic add into active memory inside a loop (order-dependent)."""
    s = 0.0
    for j in range(4):
        s += gd.atomic_add(out, 0, x[i] * j)  # the line the error names
    return s


def k_atomic_old_value(x, dx, out, dout):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, atomic_old_value, Duplicated(x, dx), Duplicated(out, dout), Const(i))


# -- the 13-step map through @jit on the host (LLVM unrolls the loop 4 times there) ------------
def grad_branchy_map_all(x, dx):
    for i in range(x.shape[0]):
        autodiff(Reverse, branchy_map, Duplicated(x, dx), Const(i))


# -- a tape larger than the device heap (gpu test only) -----------------------------------------
def endless_while(x, i):
    """About four million iterations of 16 bytes of tape each: 64 MiB per thread."""
    s = x[i]
    while s < 1.0e6:
        s = s + 0.25 + 0.1 * math.sin(s)
    return s


def k_endless_while(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, endless_while, Duplicated(x, dx), Const(i))
