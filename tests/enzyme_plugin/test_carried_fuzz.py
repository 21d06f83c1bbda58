"""Random loops that carry one value computed from another (``enzyme_plugin/ad/carried.py``), differentiated
and checked against dual numbers.

Each program carries an iterate ``y`` and a residual ``r = g(y, a)`` through a ``while`` whose test may read
``r``: the residual's start and update are the same expression (rebuilt from ``y`` before AD), or differ by
a constant (left carried), sometimes with a second residual, sometimes returned with the iterate. The update
of ``y`` is a contraction, so every value stays bounded. The primal that ``ReverseWithPrimal`` returns must
be CPython's, bit for bit (the rebuilt residual is the same operations on the same operands: the loop's
decisions must not change), and the gradient the dual numbers' exact one."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dual import dual_grad
from enzyme_plugin import Const, Duplicated, Reverse, ReverseWithPrimal, autodiff
from gpucompiler import device as gd
from gpucompiler import kernel
from program_files import load_program

X = np.array([-1.9, -0.7, -0.05, 0.0, 0.3, 1.1, 1.95])


def _expr(rng: random.Random, names: list[str], depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([*names, *names, f"{rng.uniform(0.1, 1.5):.3f}"])
    left, right = _expr(rng, names, depth - 1), _expr(rng, names, depth - 1)
    op = rng.choice("+-*+-*/")
    if op == "/":
        return f"({left}) / (1.5 + ({right}) * ({right}))"
    return f"({left} {op} {right})"


def program(seed: int) -> str:
    rng = random.Random(seed)
    g = _expr(rng, ["y", "a"], 3)
    start = g if rng.random() < 0.8 else g.replace("y", "(y + 0.125)", 1)  # sometimes not g at the start
    h = _expr(rng, ["y", "r", "a"], 3)
    second = rng.random() < 0.3
    test = rng.choice(["k < {K}", "abs(r) > 1e-3 and k < {K}", "r > -0.5 and k < {K}", "k < {K} and r < 2.0",
                       "abs(r) > 1e-9 and k < {K}"])
    lines = ["def f(x, i):", "    a = x[i]", f"    y = {rng.choice(['a', '0.5 * a', 'a * a - 0.25'])}",
             f"    r = {start}"]
    if second:
        lines.append("    s = y * y - a")
    lines += ["    k = 0", f"    while {test.format(K=rng.randint(1, 40))}:",
              f"        u = {h}", "        y = 0.5 * y + 0.1 * u / (1.0 + u * u)", f"        r = {g}"]
    if second:
        lines.append("        s = y * y - a")
    lines.append("        k += 1")
    result = rng.choice(["y", "y * y", "r + y", "r * y - a"]) + (" + s" if second else "")
    lines.append(f"    return {result}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(32))
def test_random_carried_loops(seed, tmp_path):
    fn = load_program(tmp_path, f"carried_{seed}", program(seed))
    expected = dual_grad(fn, X)
    for i in range(len(X)):
        dx = np.zeros_like(X)
        _, y = autodiff(ReverseWithPrimal, fn, Duplicated(X.copy(), dx), Const(i))
        assert y == fn(X, i), (program(seed), X[i])
        np.testing.assert_allclose(dx[i], expected[i], rtol=1e-9, atol=1e-12, err_msg=f"{program(seed)}x={X[i]}")
        assert not np.any(np.delete(dx, i))


@pytest.mark.parametrize("seed", range(0, 32, 4))
def test_random_carried_loops_in_a_kernel_on_the_emulation(seed, tmp_path):
    """The same programs inside a kernel (atomic adjoints, the device's tape arena), on the CPU grid."""
    fn = load_program(tmp_path, f"carried_{seed}", program(seed))

    def grad_kernel(x, dx):
        i = gd.grid(1)
        if i < x.shape[0]:
            autodiff(Reverse, fn, Duplicated(x, dx), Const(i))

    dx = np.zeros_like(X)
    kernel(grad_kernel, plugins=("enzyme",))[1, 32, "cpu"](X.copy(), dx)
    np.testing.assert_allclose(dx, dual_grad(fn, X), rtol=1e-9, atol=1e-12, err_msg=program(seed))
