"""A 100-step time loop (an explicit heat equation, two buffers swapped each step) recorded by a
``LaunchTape`` and differentiated: the gradient against the exact one (the loop is linear, so the
gradient of ``sum(c * u_final)`` is ``(A^T)^steps c``), and the tape's memory growing with what each
step overwrites (one array per step) and nothing more."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import gpucompiler.device as gd
from enzyme_plugin import LaunchTape
from gpucompiler import kernel

ALPHA = 0.23


@kernel
def heat_step(u, v, alpha):
    i = gd.grid(1)
    n = u.shape[0]
    if i < n:
        if i == 0 or i == n - 1:
            v[i] = u[i]
        else:
            v[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])


@kernel
def weighted_total(u, c, out):
    i = gd.grid(1)
    if i < u.shape[0]:
        gd.atomic_add(out, 0, c[i] * u[i])


def run(u0, c, steps: int, split: bool):
    n = u0.shape[0]
    a, b, out = u0.copy(), np.zeros(n), np.zeros(1)
    tape = LaunchTape(split=split)
    blocks = (n + 63) // 64
    with tape:
        first = a
        for _ in range(steps):
            heat_step[blocks, 64, "cpu"](a, b, ALPHA)
            a, b = b, a
        weighted_total[blocks, 64, "cpu"](a, c, out)
    return tape, first, a, out


def step_matrix(n: int) -> np.ndarray:
    m = np.eye(n)
    for i in range(1, n - 1):
        m[i, i - 1] += ALPHA
        m[i, i] -= 2.0 * ALPHA
        m[i, i + 1] += ALPHA
    return m


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_hundred_step_heat_equation_gradient_is_exact(split):
    n, steps = 48, 100
    rng = np.random.default_rng(7)
    u0, c = rng.standard_normal(n), rng.standard_normal(n)
    tape, first, final, out = run(u0, c, steps, split)
    a = np.linalg.matrix_power(step_matrix(n), steps)
    assert np.allclose(final, a @ u0, rtol=1e-12, atol=1e-12)     # the primal ran as NumPy's
    assert np.isclose(out[0], c @ (a @ u0), rtol=1e-12)
    tape.backward(loss=out)
    assert np.allclose(tape.gradient(first), a.T @ c, rtol=1e-11, atol=1e-12)


def _recorded_bytes(steps: int, n: int) -> int:
    u0, c = np.linspace(0.0, 1.0, n), np.ones(n)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tape, *_ = run(u0, c, steps, split=False)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del tape
    return grown


def test_time_loop_memory_grows_by_what_each_step_overwrites():
    # Each step after the first overwrites the buffer an earlier step read: one copy of n doubles per step.
    # Fifty more steps must cost fifty such copies (plus the records' small bookkeeping), not more.
    n = 1 << 14
    run(np.zeros(n), np.ones(n), 2, split=False)               # compile outside the measurement
    grown = _recorded_bytes(150, n) - _recorded_bytes(100, n)
    per_step = grown / 50
    assert 0.9 * n * 8 <= per_step <= 1.25 * n * 8, per_step
