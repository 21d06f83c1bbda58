"""``np.random.default_rng(seed)`` in compiled code against NumPy's Generator (PCG64, SeedSequence).

Doubles and bounded integers (Lemire's method, with PCG64's buffered
32-bit halves) are NumPy's bit for bit; normals come from the ziggurat with
tables built here, NumPy's within rounding.
"""

import numpy as np
import pytest

from enzyme_plugin import gradient
from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError

SEEDS = [0, 1, 42, 2**32 - 1, 2**32, 2**40 + 3, 2**62 + 12345] + list(range(200, 230))


def mixed(rng, out, iout):
    k = 0
    for i in range(iout.shape[0]):
        out[k] = rng.random()
        out[k + 1] = rng.uniform(-2.0, 3.0)
        out[k + 2] = rng.normal(1.0, 2.0)
        out[k + 3] = rng.standard_normal()
        out[k + 4] = rng.normal()
        out[k + 5] = rng.uniform()
        out[k + 6] = rng.exponential(2.5)
        out[k + 7] = rng.standard_exponential()
        k += 8
        iout[i, 0] = rng.integers(10)
        iout[i, 1] = rng.integers(-5, 1000)
        iout[i, 2] = rng.integers(0, 2**32)  # a range of 2**32 - 1 + 1: a whole 32-bit half
        iout[i, 3] = rng.integers(-2**62, 2**62)  # 64-bit Lemire
        iout[i, 4] = rng.integers(7, 8)  # one value: no draw
        iout[i, 5] = rng.integers(0, 6, endpoint=True)
        iout[i, 6] = rng.integers(-2**63, 2**63 - 1, endpoint=True)  # every int64: a whole 64-bit word
        iout[i, 7] = rng.integers(3, 2**33)


@jit
def compiled_mixed(seed, out, iout):
    mixed(np.random.default_rng(seed), out, iout)


@pytest.mark.parametrize("seed", SEEDS)
def test_generator_draws_are_numpys_for_the_seed(seed):
    n = 300
    got, igot = np.zeros(8 * n), np.zeros((n, 8), np.int64)
    want, iwant = np.zeros(8 * n), np.zeros((n, 8), np.int64)
    compiled_mixed(seed, got, igot)
    mixed(np.random.default_rng(seed), want, iwant)
    np.testing.assert_array_equal(igot, iwant)
    np.testing.assert_array_equal(got[0::8], want[0::8])  # random(): bit for bit
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@jit
def normals(seed, n):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.standard_exponential(n)


def test_a_million_normals_and_exponentials_are_numpys_within_rounding():
    """Every layer of the ziggurats, their wedges and their tails are reached (the normal's tail
    about once in 3,600 draws): one wrong table entry would change a value or shift the stream."""
    for seed in range(100):
        rng = np.random.default_rng(seed)
        want = rng.standard_normal(10_000), rng.standard_exponential(10_000)
        for got, w in zip(normals(seed, 10_000), want):
            np.testing.assert_allclose(got, w, rtol=1e-13, atol=1e-13)


def arrays(rng):
    return (rng.random((3, 4)), rng.random(5), rng.normal(1.0, 2.0, size=5), rng.integers(0, 10, size=(2, 3)),
            rng.integers(5, size=4), rng.standard_normal((2, 2)), rng.uniform(0.0, 1.0, 7), rng.random(0),
            rng.integers(0, 2**40, size=3, endpoint=True), rng.exponential(3.0, (2, 2)),
            rng.standard_exponential(3))


@jit
def compiled_arrays(seed):
    return arrays(np.random.default_rng(seed))


@pytest.mark.parametrize("seed", [0, 3, 2**33])
def test_generator_arrays_are_numpys(seed):
    got, want = compiled_arrays(seed), arrays(np.random.default_rng(seed))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


def shuffles(rng):
    x = np.arange(10.0)
    rng.shuffle(x)
    m = np.arange(12).reshape(4, 3)
    rng.shuffle(m)
    big = np.arange(300)
    rng.shuffle(big)
    return (x, m, big, rng.permutation(9), rng.permutation(np.arange(5.0)), rng.permutation(m),
            rng.random(), rng.integers(5))


@jit
def compiled_shuffles(seed):
    return shuffles(np.random.default_rng(seed))


@pytest.mark.parametrize("seed", [0, 5, 2**35])
def test_generator_shuffles_and_permutations_are_numpys(seed):
    for g, w in zip(compiled_shuffles(seed), shuffles(np.random.default_rng(seed))):
        np.testing.assert_array_equal(g, w)
        assert np.asarray(g).dtype == np.asarray(w).dtype


@jit
def two_generators(seed):
    a = np.random.default_rng(seed)
    b = np.random.default_rng(seed + 1)
    return a.random(), b.random(), a.random(), b.random()


def test_each_generator_draws_from_its_own_state():
    a, b = np.random.default_rng(8), np.random.default_rng(9)
    assert two_generators(8) == (a.random(), b.random(), a.random(), b.random())


@jit
def unseeded(n):
    return np.random.default_rng().random(n), np.random.default_rng().random(n)


def test_unseeded_generators_differ():
    a, b = unseeded(1000)
    assert not np.array_equal(a, b) and a.min() >= 0.0 and b.max() < 1.0 and 0.4 < a.mean() < 0.6


@jit
def bad_integers(a, b):
    return np.random.default_rng(0).integers(a, b)


@jit
def bad_seed(s):
    return np.random.default_rng(s).random()


def test_run_time_errors_are_numpys():
    with pytest.raises(ValueError, match="low >= high"):
        bad_integers(3, 3)
    with pytest.raises(ValueError, match="non-negative"):
        bad_seed(-1)


def gamma(s):
    return np.random.default_rng(s).gamma(2.0)


def inverse_method(s):
    return np.random.default_rng(s).standard_exponential(method="inv")


def float32(s):
    return np.random.default_rng(s).random(dtype=np.float32)


def out(a):
    return np.random.default_rng(1).random(out=a)


@pytest.mark.parametrize("fn,arg,match", [
    (gamma, 1, "Generator.gamma\\(\\) is not supported"), (inverse_method, 1, "method=.* 'zig'"), (float32, 1, "dtype=.* float64"),
    (out, np.zeros(3), "out=.* not supported"),
])
def test_unsupported_methods_are_typed_errors_at_the_users_line(fn, arg, match):
    with pytest.raises(TypeInferenceError, match=match) as info:
        jit(fn)(arg)
    assert f"{__file__}:{fn.__code__.co_firstlineno + 1}" in str(info.value)


def noisy(x):
    rng = np.random.default_rng(3)
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * rng.normal(x[0], x[1]) + rng.random() * x[i] ** 2 + rng.uniform(x[2], 2.0)
    return s


def test_generator_draws_are_constants_of_the_derivative():
    x = np.array([0.3, 1.2, -0.7])
    eps = 1e-6
    fd = np.array([(noisy(x + eps * e) - noisy(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(gradient(noisy, x), fd, rtol=1e-6)
    assert np.all(np.abs(fd) > 0.1)


@jit
def dtypes_spelled(seed):
    rng = np.random.default_rng(seed)
    np.random.seed(seed)
    return (rng.random(2, dtype=np.float64), rng.integers(9, size=2, dtype="int64"),
            rng.standard_normal(dtype=float), np.random.randint(5, size=2, dtype=np.int64))


def test_dtype_spelled_as_numpy_accepts_it():
    rng, rs = np.random.default_rng(4), np.random.RandomState(4)
    want = (rng.random(2), rng.integers(9, size=2), rng.standard_normal(), rs.randint(5, size=2))
    for g, w in zip(dtypes_spelled(4), want):
        np.testing.assert_allclose(g, w, rtol=1e-13)
        assert np.asarray(g).dtype == np.asarray(w).dtype
