"""Random sequences of ``np.random`` calls, compiled, against NumPy making the same calls.

A compiled interpreter runs a program of operation codes with their
parameters (bounds of every magnitude, spans at the 32- and 64-bit edges of
the bounded-integer algorithms, normals interleaved with other draws so that
the legacy cached value and PCG64's buffered 32-bit half carry across calls);
NumPy's ``RandomState`` and ``Generator`` run the same program in CPython.
"""

import numpy as np
import pytest

from gpucompiler import jit

SPANS = [1, 2, 3, 7, 255, 256, 1000, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**33 - 5, 2**40, 2**53 + 1, 2**62,
         2**63 - 1]


def program(seed: int, n: int):
    """``n`` operation codes, float parameters and integer bounds ``lo < hi`` (no int64 overflow)."""
    r = np.random.default_rng(seed)
    ops = r.integers(0, 9, n)
    a = r.normal(0.0, 10.0, n)
    b = np.abs(r.normal(0.0, 10.0, n))
    span = np.array(SPANS, dtype=np.int64)[r.integers(0, len(SPANS), n)]
    room = (2**63 - 1) - span  # lo in [-2**63, 2**63 - 1 - span]
    frac = r.random(n)
    lo = np.array([int(-2**63 + f * (int(m) + 2**63)) for f, m in zip(frac, room)], dtype=np.int64)
    return ops, a, b, lo, lo + span


def legacy_ops(rs, seed, ops, a, b, lo, hi, out, iout):
    rs.seed(seed)
    for i in range(ops.shape[0]):
        op = ops[i]
        if op == 0:
            out[i] = rs.random_sample()
        elif op == 1:
            out[i] = rs.uniform(a[i], a[i] + b[i])
        elif op == 2:
            out[i] = rs.normal(a[i], b[i])
        elif op == 3:
            out[i] = rs.standard_normal()
        elif op == 4:
            out[i] = rs.exponential(b[i])
        elif op == 5:
            iout[i] = rs.randint(lo[i], hi[i])
        elif op == 6:
            out[i] = rs.randn()
        elif op == 8:
            out[i] = rs.rand()
        else:
            iout[i] = rs.randint(hi[i] - lo[i] if hi[i] - lo[i] > 0 else 1)


def draws(seed, ops, a, b, lo, hi, out, iout):
    legacy_ops(np.random, seed, ops, a, b, lo, hi, out, iout)


compiled_legacy = jit(draws)


def generator_ops(rng, ops, a, b, lo, hi, out, iout):
    for i in range(ops.shape[0]):
        op = ops[i]
        if op == 0:
            out[i] = rng.random()
        elif op == 1:
            out[i] = rng.uniform(a[i], a[i] + b[i])
        elif op == 2:
            out[i] = rng.normal(a[i], b[i])
        elif op == 3:
            out[i] = rng.standard_normal()
        elif op == 4:
            iout[i] = rng.integers(lo[i], hi[i], endpoint=True)
        elif op == 5:
            iout[i] = rng.integers(lo[i], hi[i])
        elif op == 6:
            iout[i] = rng.integers(0, 7)  # a 32-bit draw: PCG64's buffered half comes into play
        elif op == 8:
            out[i] = rng.exponential(b[i])
        else:
            iout[i] = rng.integers(hi[i] - lo[i] if hi[i] - lo[i] > 0 else 1)


@jit
def compiled_generator(seed, ops, a, b, lo, hi, out, iout):
    generator_ops(np.random.default_rng(seed), ops, a, b, lo, hi, out, iout)


def _check(got, igot, want, iwant):
    np.testing.assert_array_equal(igot, iwant)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_random_legacy_programs_are_numpys(seed):
    ops, a, b, lo, hi = program(seed, 3000)
    got, igot, want, iwant = np.zeros(3000), np.zeros(3000, np.int64), np.zeros(3000), np.zeros(3000, np.int64)
    compiled_legacy(seed * 7919, ops, a, b, lo, hi, got, igot)
    legacy_ops(np.random.RandomState(), seed * 7919, ops, a, b, lo, hi, want, iwant)
    _check(got, igot, want, iwant)


@pytest.mark.parametrize("seed", range(12))
def test_random_generator_programs_are_numpys(seed):
    ops, a, b, lo, hi = program(1000 + seed, 3000)
    got, igot, want, iwant = np.zeros(3000), np.zeros(3000, np.int64), np.zeros(3000), np.zeros(3000, np.int64)
    compiled_generator(seed * 104729, ops, a, b, lo, hi, got, igot)
    generator_ops(np.random.default_rng(seed * 104729), ops, a, b, lo, hi, want, iwant)
    _check(got, igot, want, iwant)
