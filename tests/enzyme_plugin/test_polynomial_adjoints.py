"""Adjoints of polynomial expressions taken whole (``enzyme_plugin/ad/rules/polynomial.py``): which trees are
found, the IR their adjoints make, and random polynomial programs' gradients against dual numbers."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from dual import Dual
from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from enzyme_plugin.ad.rules.polynomial import PolynomialTrees
from gpucompiler import jit, kernel, types as T
from gpucompiler.llvm import parse
from program_files import load_program

NEWTON_IR = """
define double @f(double %y, double %a) {
  %t1 = fmul double %y, %y
  %t2 = fmul double %t1, %y
  %t3 = fadd double %t2, %y
  %r = fsub double %t3, %a
  %m = fmul double %y, 3.0
  %m2 = fmul double %m, %y
  %d = fadd double %m2, 1.0
  %q = fdiv double %r, %d
  %x1 = fmul double %y, %a
  %x2 = fmul double %x1, %y
  %l1 = fmul double %y, 0.25
  %l2 = fadd double %l1, %a
  %s = fmul double %y, %y
  %z = fsub double %s, %s
  %u = fadd double %q, %x2
  %v = fadd double %u, %l2
  %w = fadd double %v, %z
  ret double %w
}
"""


def _trees():
    fn = parse(NEWTON_IR).functions["f"]
    named = {i.name: i for i in fn.instructions()}
    return PolynomialTrees(fn.instructions()), named, fn


def test_the_residual_and_the_denominator_are_taken_whole():
    trees, v, fn = _trees()
    y, a = fn.args
    r, d = trees.roots[v["r"]], trees.roots[v["d"]]
    assert r.derivative(y) == [1.0, 0.0, 3.0] and r.derivative(a) == [-1.0]
    assert d.derivative(y) == [0.0, 6.0] and list(d.terms) == [y]
    assert {v["t1"], v["t2"], v["t3"], v["m"], v["m2"]} <= trees.inner


def test_cross_terms_single_uses_and_vanishing_derivatives_keep_their_rules():
    trees, v, _ = _trees()
    # y * a * y: a monomial of two leaves; 0.25 y + a: each leaf once, linearly; s - s: s is used twice (not
    # inner), and the difference's derivative vanishes
    for name in ("x1", "x2", "l1", "l2", "s", "z", "q", "u", "v", "w"):
        assert v[name] not in trees.roots and v[name] not in trees.inner, name


def cubic(y, a):
    return y * y * y + y - a


@jit(plugins=("enzyme",))
def cubic_grad(x, dx):
    autodiff(Reverse, _cubic_of, Duplicated(x, dx))


def _cubic_of(x):
    return cubic(x[0], x[1])


A = T.ArrayType(T.float64, 1, "C")


def test_the_derivative_is_one_polynomial_in_horner_form():
    """``3y² + 1`` as ``(y*3)*y + 1``: a product by 3, which term by term (``y*y + y*y + y*y + 1``) has not."""
    text = cubic_grad.inspect_llvm(A, A)
    assert "3.000000e+00" in text, text
    for y in (-2.5, -1.0, 0.0, 0.5, 1.75, 1e150):
        dx = np.zeros(2)
        cubic_grad(np.array([y, 0.3]), dx)
        assert dx[0] == pytest.approx(3 * y * y + 1, rel=1e-15) and dx[1] == -1.0


@pytest.mark.parametrize("y", [math.inf, -math.inf, math.nan])
def test_special_values_as_the_rules_give_them(y):
    dx = np.zeros(2)
    cubic_grad(np.array([y, 0.3]), dx)
    want = Dual(y, 1.0) * Dual(y, 1.0) * Dual(y, 1.0) + Dual(y, 1.0)
    assert (math.isnan(dx[0]) and math.isnan(want.b)) or dx[0] == want.b


def test_the_newton_kernel_shares_the_denominator_with_the_derivative():
    """The reverse of the Newton step computes ``3y² + 1`` once (the step's denominator and the residual's
    derivative: one product by 3 a step) and differentiates the denominator as ``6y``."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    import ad_kernels as K

    text = kernel(K.newton_grad, plugins=("enzyme",)).inspect_llvm(A, A)
    assert "6.000000e+00" in text, text
    x = np.linspace(-2.0, 2.0, 33)
    dx = np.zeros_like(x)
    kernel(K.newton_grad, plugins=("enzyme",))[1, 33, "cpu"](x, dx)
    np.testing.assert_allclose(dx, [_dual_newton(v) for v in x], rtol=1e-12, atol=1e-15)


def _dual_newton(a0: float) -> float:
    a = Dual(a0, 1.0)
    y = a
    r = y * y * y + y - a
    it = 0
    while abs(r.a) > 1e-13 and it < 60:
        y = y - r / (3.0 * y * y + 1.0)
        r = y * y * y + y - a
        it += 1
    return (y * y).b


# -- random polynomial programs against dual numbers ------------------------------------------------
X = np.array([-1.7, -0.6, -0.05, 0.0, 0.35, 0.9, 1.6])


def _expr(rng: random.Random, names: list[str], depth: int) -> str:
    if depth == 0 or rng.random() < 0.2:
        return rng.choice([*names, *names, f"{rng.uniform(-1.5, 1.5):.3f}"])
    op = rng.choice(["+", "-", "*", "*", "*", "neg", "/"])
    left = _expr(rng, names, depth - 1)
    if op == "neg":
        return f"(-{left})"
    right = _expr(rng, names, depth - 1)
    if op == "/":
        return f"({left}) / (1.25 + ({right}) * ({right}))"
    return f"({left} {op} {right})"


def program(seed: int) -> str:
    """``f(x, i)`` over ``y = x[i]`` and ``z = x[i+1]``: one polynomial of ``y`` alone (taken whole), one that
    may mix ``y`` and ``z`` (cross terms keep the rules), combined."""
    rng = random.Random(seed)
    p = _expr(rng, ["y", "y", "y", "c"], 4)
    q = _expr(rng, ["y", "z"], 3)
    lines = ["def f(x, i):", "    y = x[i]", "    z = x[i + 1]", f"    c = {rng.uniform(-1, 1):.3f}",
             f"    p = {p}", f"    q = {q}", f"    return {rng.choice(['p + q', 'p * q', 'p - 2.0 * q', 'p'])}"]
    return "\n".join(lines) + "\n"


def _dual_gradient(fn, x, i):
    out = np.zeros_like(x)
    for j in (i, i + 1):
        xs = [Dual(float(v), 1.0 if k == j else 0.0) for k, v in enumerate(x)]
        r = fn(xs, i)
        out[j] = r.b if isinstance(r, Dual) else 0.0
    return out


@pytest.mark.parametrize("seed", range(40))
def test_random_polynomials(seed, tmp_path):
    fn = load_program(tmp_path, f"poly_{seed}", program(seed))
    for i in range(len(X) - 1):
        want = _dual_gradient(fn, X, i)
        dx = np.zeros_like(X)
        autodiff(Reverse, fn, Duplicated(X.copy(), dx), Const(i))
        scale = max(1.0, float(np.max(np.abs(want))))
        np.testing.assert_allclose(dx, want, rtol=1e-10, atol=1e-11 * scale, err_msg=program(seed))
