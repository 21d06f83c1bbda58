"""Zero adjoints cost nothing and stay zero. A value that only comparisons use (``abs(r) > tol``, through
any arithmetic) has no reverse: run with its zero adjoint, its rules added ``copysign(0, r)`` on the
reverse sweep's chain of dependent operations, and ``0 * inf`` = NaN into a gradient when a factor was
infinite. Adjoint slots of instructions start at ``-0.0``, which LLVM folds out of ``-0.0 + d``; an
argument's adjoint nothing reached is still ``+0.0``. (Leaving those reverses out once made a float32
Newton loop's batch gradient NaN on Vulkan: lavapipe read a divergent loop's values after it wrong, which
the SPIR-V target now avoids, ``tests/spirv/test_spirv_loop_exits.py``.)"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Reverse, autodiff
from gpucompiler import jit
from gpucompiler import types as T

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")


def scaled_guard(x, w):
    s = x
    for _ in range(4):
        if abs(s * w) > 100.0:
            break
        s = s * 1.5
    return s


def compared_product(x, w):
    if x * w > 1.0:
        return x * 2.0
    return x * 3.0


@pytest.mark.parametrize(("w", "dx"), [(math.inf, 1.0), (-math.inf, 1.0), (1.0, 1.5 ** 4), (100.0, 1.5 ** 2)])
def test_value_reaching_only_comparisons_leaves_the_gradient_exact(w, dx):
    """``s * w`` reaches only ``abs(...) > 100``: with an infinite ``w`` its reverse multiplied a zero
    adjoint by it (NaN for ``dx``)."""
    got = autodiff(Reverse, scaled_guard, Active(0.5), Active(w))
    assert got == (dx, 0.0)


@pytest.mark.parametrize("w", [math.inf, 0.5, 4.0])
def test_compared_product(w):
    ref = 2.0 if 0.5 * w > 1.0 else 3.0
    assert autodiff(Reverse, compared_product, Active(0.5), Active(w)) == (ref, 0.0)
    assert autodiff(Reverse, compared_product, Active(0.5), Const(w)) == (ref,)


def newton(x, i):
    a = x[i]
    y = a
    r = y * y * y + y - a
    it = 0
    while abs(r) > 1e-13 and it < 60:
        y = y - r / (3.0 * y * y + 1.0)
        r = y * y * y + y - a
        it += 1
    return y * y


@jit(plugins=P)
def newton_grad(x, dx):
    for i in range(x.shape[0]):
        autodiff(Reverse, newton, Duplicated(x, dx), Const(i))


def test_newton_reverse_has_no_sign_of_the_residual():
    """The residual's ``abs`` only decides the loop's exit: no ``copysign`` in the reverse."""
    assert "copysign" not in newton_grad.inspect_llvm(A, A)


def test_newton_reverse_has_no_zero_additions_and_is_exact():
    """No ``0.0 + d`` in the reverse (slots start at ``-0.0``); the gradient against the implicit function's."""
    text = newton_grad.inspect_llvm(A, A)
    assert not re.search(r"fadd (?:[a-z]+ )*double (?:[^,\n]+, 0\.000000e\+00|0\.000000e\+00,)", text), text
    x = np.linspace(-2.0, 2.0, 101)
    dx = np.zeros_like(x)
    newton_grad(x, dx)
    y = np.array([newton(x, i) for i in range(len(x))]) ** 0.5 * np.sign(x)
    np.testing.assert_allclose(dx, 2.0 * y / (3.0 * y * y + 1.0), rtol=1e-10, atol=1e-14)


def _unused(x, y):
    return x * 2.0


def test_an_argument_nothing_reached_gets_positive_zero():
    dx, dy = autodiff(Reverse, _unused, Active(1.0), Active(3.0))
    assert dx == 2.0 and dy == 0.0 and math.copysign(1.0, dy) == 1.0
