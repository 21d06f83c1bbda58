"""Functions a worker process finds by reference (imported by the pickling tests and their workers)."""

from __future__ import annotations

import numpy as np

from enzyme_plugin import Active
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler.cache.default import default_cache


@jit
def poly(x: float) -> float:
    return 3.0 * x * x - 2.0 * x + 1.0


@jit
def total(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


@kernel
def scale(a, x, y):
    i = gd.grid(1)
    if i < y.shape[0]:
        y[i] = a * x[i]


def scaler(factor: float):
    """A ``@jit`` closure over ``factor``."""
    @jit
    def scaled(x: float) -> float:
        return factor * x + 1.0
    return scaled


def typed_scaler(factor: float):
    """A ``@jit`` closure compiled eagerly for one declared signature."""
    @jit("float64(float64)")
    def scaled(x):
        return factor * x
    return scaled


def shifter(shift: float):
    """A kernel closure over ``shift``."""
    @kernel
    def shifted(x, y):
        i = gd.grid(1)
        if i < y.shape[0]:
            y[i] = x[i] + shift
    return shifted


def call(fn, *args):
    """``(fn(*args), compiles)``: the result and how many compiles this process's cache ran."""
    return fn(*args), default_cache().stats["compile"]


def stats(fn, *args) -> dict:
    """This process's cache counters after ``fn(*args)``."""
    fn(*args)
    return dict(default_cache().stats)


def launch(k, n: int):
    """``(y, compiles)`` of ``k`` over ``arange(n)`` in the CPU grid emulation."""
    x = np.arange(n, dtype=np.float64)
    y = np.zeros(n)
    if k.bind.positional == 3:
        k[(n + 31) // 32, 32, "cpu"](2.0, x, y)
    else:
        k[(n + 31) // 32, 32, "cpu"](x, y)
    return y, default_cache().stats["compile"]


def cube(x):
    return x * x * x


def split_gradient(fwd, rev, x: float):
    """``(y, dy/dx, compiles)`` through pickled split-mode thunks."""
    tape, y = fwd(Active(x))
    (dx,) = rev(Active(x), 1.0, tape)
    return y, dx, default_cache().stats["compile"]


def with_helper(k: float):
    """A ``@jit`` closure calling a plain nested helper (itself a closure)."""
    def helper(x):
        return k * x
    @jit
    def use(x):
        return helper(x) + 1.0
    return use


def mutual():
    """Two ``@jit`` closures that call each other: no place to pickle them from."""
    @jit
    def even(n):
        return True if n == 0 else odd(n - 1)
    @jit
    def odd(n):
        return False if n == 0 else even(n - 1)
    return even
