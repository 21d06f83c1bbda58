"""Dual numbers: the exact derivative of a Python function run as written, the reference of the loop
gradients' tests."""

from __future__ import annotations

import numpy as np


class Dual:
    """a + b·ε: the exact derivative of the Python function, run as written."""

    def __init__(self, a, b=0.0):
        self.a, self.b = a, b

    @staticmethod
    def _of(v):
        return v if isinstance(v, Dual) else Dual(float(v))

    def __add__(self, o):
        o = Dual._of(o)
        return Dual(self.a + o.a, self.b + o.b)

    __radd__ = __add__

    def __sub__(self, o):
        o = Dual._of(o)
        return Dual(self.a - o.a, self.b - o.b)

    def __rsub__(self, o):
        return Dual._of(o) - self

    def __mul__(self, o):
        o = Dual._of(o)
        return Dual(self.a * o.a, self.a * o.b + self.b * o.a)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = Dual._of(o)
        return Dual(self.a / o.a, (self.b * o.a - self.a * o.b) / (o.a * o.a))

    def __rtruediv__(self, o):
        return Dual._of(o) / self

    def __neg__(self):
        return Dual(-self.a, -self.b)

    def __abs__(self):
        return -self if self.a < 0.0 else self

    def __lt__(self, o):
        return self.a < Dual._of(o).a

    def __gt__(self, o):
        return self.a > Dual._of(o).a

    def __le__(self, o):
        return self.a <= Dual._of(o).a

    def __ge__(self, o):
        return self.a >= Dual._of(o).a


def dual_grad(fn, x):
    """d fn(x, i) / d x[i] for each i: ``fn`` run on dual numbers."""
    out = np.zeros_like(x)
    for i in range(len(x)):
        xs = [Dual(float(v), 1.0 if j == i else 0.0) for j, v in enumerate(x)]
        out[i] = fn(xs, i).b
    return out
