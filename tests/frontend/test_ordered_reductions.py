"""Sums of floats keep the source's order and still run their elementwise work in vector lanes.

LLVM vectorises a loop summing floats only when it may reorder the sum
(fast-math) or keep it in order lane after lane (``-force-ordered-reductions``,
set by the compiler). References: the same additions in CPython's order, bit
for bit, and the optimised IR parsed back.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from enzyme_plugin import Duplicated, Reverse, autodiff
from gpucompiler import jit, types as T

A = T.ArrayType(T.float64, 1, "C")


def norms(a, b):
    return np.sum(np.sqrt(a * a + b * b))


def loop_dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


def grad_norms(a, da, b, db):
    autodiff(Reverse, norms, Duplicated(a, da), Duplicated(b, db))
    return 0.0


def _in_order(values) -> float:
    s = 0.0
    for v in values:
        s += float(v)
    return s


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 4099])
def test_float_sums_are_the_additions_in_source_order_bit_for_bit(n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n) * 1e3, rng.standard_normal(n) * 1e-3
    assert jit(norms)(a, b) == _in_order(np.sqrt(a * a + b * b))
    assert jit(loop_dot)(a, b) == _in_order(a * b)


def test_the_sum_of_an_expression_computes_its_elements_in_vector_lanes_and_adds_them_in_order():
    ir = jit(norms, boundscheck=False).inspect_llvm(A, A)
    assert re.search(r"call <\d+ x double> @llvm\.sqrt\.v\d+f64", ir)
    reductions = re.findall(r"call (.*)double @llvm\.vector\.reduce\.fadd\.v\d+f64\(double", ir)
    assert reductions and all("reassoc" not in flags and "fast" not in flags for flags in reductions)


@pytest.mark.parametrize("n", [5, 1000])
def test_the_vectorised_ordered_sum_differentiates(n):
    rng = np.random.default_rng(n)
    a, b = rng.uniform(0.5, 2.0, n), rng.uniform(-2.0, -0.5, n)
    da, db = np.zeros(n), np.zeros(n)
    jit(grad_norms, plugins=("enzyme",))(a, da, b, db)
    r = np.sqrt(a * a + b * b)
    np.testing.assert_allclose(da, a / r, rtol=1e-14)
    np.testing.assert_allclose(db, b / r, rtol=1e-14)
