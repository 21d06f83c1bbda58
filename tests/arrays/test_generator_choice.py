"""``np.random.default_rng(seed).choice(a, size, replace, p, shuffle)`` in compiled code against NumPy's Generator.

Integers and items are NumPy's bit for bit for the same seed (the indices come from Lemire's bounded
draws, Floyd's algorithm or a tail shuffle, and, with ``p``, doubles searched in the cumulative sum),
and the generator's state goes on from where NumPy's does.
"""

import random

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError


def ints(seed, n, k, replace):
    rng = np.random.default_rng(seed)
    return rng.choice(n, k, replace=replace), rng.choice(n, replace=replace), rng.integers(1000)


def ints_unshuffled(seed, n, k):
    rng = np.random.default_rng(seed)
    return rng.choice(n, size=k, replace=False, shuffle=False), rng.random()


def items(seed, a, p, k, replace):
    rng = np.random.default_rng(seed)
    return rng.choice(a, k, replace, p), rng.choice(a, (2, 2), p=p), rng.choice(a, p=p), rng.random()


def uniform_items(seed, a, k, replace):
    rng = np.random.default_rng(seed)
    return rng.choice(a, size=(k, 2), replace=replace), rng.choice(a, replace=replace), rng.random()


def from_lists(seed, k):
    rng = np.random.default_rng(seed)
    return rng.choice([1.5, 2.5, 4.0], k, p=[0.25, 0.25, 0.5]), rng.choice([7, 8, 9]), rng.choice(5, p=[0.2, 0.2, 0.2, 0.2, 0.2])


def _same(got, want):
    """Arrays of NumPy's dtype and numbers; a single item is a Python number (compiled code's scalars)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        same_type = g.dtype == w.dtype if w.ndim else g.dtype.kind == w.dtype.kind
        assert g.shape == w.shape and same_type and np.array_equal(g, w), (g, w)


# populations at the algorithms' edges: Floyd's set sizes, the tail shuffle past 10000 items and a fiftieth
# (a twentieth unshuffled), Lemire's 32-bit and 64-bit ranges
CASES = [(1, 1), (2, 2), (10, 3), (10, 10), (100, 50), (10001, 200), (10001, 201), (10001, 10001), (12000, 700),
         (2**32 - 1, 4), (2**32, 4), (2**32 + 1, 4), (2**40, 6), (2**63 - 1, 3), (5, 0)]


@pytest.mark.parametrize("n,k", CASES)
@pytest.mark.parametrize("replace", [True, False])
def test_choice_of_an_integer_is_numpys_bit_for_bit(n, k, replace):
    compiled = jit(ints)
    for seed in (0, 1, 2**40 + 3):
        _same(compiled(seed, n, k, replace), ints(seed, n, k, replace))


@pytest.mark.parametrize("n,k", [(10, 3), (10001, 500), (10001, 501), (30, 30), (2**33, 3)])
def test_choice_without_shuffle_is_numpys(n, k):
    for seed in (3, 4):
        _same(jit(ints_unshuffled)(seed, n, k), ints_unshuffled(seed, n, k))


@pytest.mark.slow  # every dtype at each algorithm's size thresholds: with the slow set
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_, np.complex128])
def test_choice_of_items_with_and_without_p_is_numpys(dtype):
    a = (np.arange(12) * 3 - 7).astype(dtype)
    weights = np.random.default_rng(5).random(12)
    weights[[2, 7]] = 0.0
    for seed in range(6):
        for p in (weights / weights.sum(), np.full(12, 1 / 12)):
            for replace in (True, False):
                _same(jit(items)(seed, a, p, 5, replace), items(seed, a, p, 5, replace))
        _same(jit(uniform_items)(seed, a, 3, False), uniform_items(seed, a, 3, False))


def test_p_of_float32_has_its_tolerance_and_lists_are_sequences():
    p32 = np.array([0.1, 0.2, 0.3, 0.4001], dtype=np.float32)  # off by 1e-4: within float32's tolerance
    for seed in range(4):
        _same(jit(items)(seed, np.arange(4.0), p32, 3, False), items(seed, np.arange(4.0), p32, 3, False))
        _same(jit(from_lists)(seed, 6), from_lists(seed, 6))
    with pytest.raises(ValueError, match="do not sum to 1"):
        jit(items)(0, np.arange(4.0), p32.astype(np.float64), 3, False)


def bad(case, seed):
    rng = np.random.default_rng(seed)
    if case == 0:
        return float(rng.choice(0, 3)[0])
    if case == 1:
        return float(rng.choice(np.zeros(0), 2)[0])
    if case == 2:
        return float(rng.choice(5, 6, replace=False)[0])
    if case == 3:
        return float(rng.choice(3, 2, p=np.array([0.5, 0.5]))[0])
    if case == 4:
        return float(rng.choice(3, 2, p=np.array([0.5, np.nan, 0.5]))[0])
    if case == 5:
        return float(rng.choice(3, 2, p=np.array([0.5, -0.5, 1.0]))[0])
    if case == 6:
        return float(rng.choice(3, 2, p=np.array([0.5, 0.2, 0.2]))[0])
    if case == 7:
        return float(rng.choice(3, 3, replace=False, p=np.array([0.5, 0.5, 0.0]))[0])
    return float(rng.choice(-2))


@pytest.mark.parametrize("case", range(9))
def test_run_time_errors_are_numpys(case):
    with pytest.raises(ValueError) as want:
        bad(case, 1)
    with pytest.raises(ValueError) as got:
        jit(bad)(case, 1)
    assert str(got.value).split(".")[0] == str(want.value).split(".")[0]


def by_rows(seed, m):
    return np.random.default_rng(seed).choice(m, 2)


def other_axis(seed, a):
    return np.random.default_rng(seed).choice(a, 2, axis=1)


def p_of_rows(seed, m):
    return np.random.default_rng(seed).choice(2, p=m)


@pytest.mark.parametrize("fn,arg,match", [(by_rows, np.ones((3, 2)), "pass a 1-d array"),
                                          (other_axis, np.ones(3), "axis=.* other than 0"),
                                          (p_of_rows, np.ones((2, 2)), "p=.* not supported")])
def test_what_compiled_choice_lacks_is_a_typed_error_at_the_users_line(fn, arg, match):
    with pytest.raises(TypeInferenceError, match=match) as info:
        jit(fn)(1, arg)
    assert f"{__file__}:{fn.__code__.co_firstlineno + 1}" in str(info.value)


def fuzzed(seed, n, k, replace, p, shuffle, draws):
    rng = np.random.default_rng(seed)
    out = np.empty(draws * k, dtype=np.int64)
    for d in range(draws):
        out[d * k:(d + 1) * k] = rng.choice(n, k, replace=replace, p=p, shuffle=shuffle)
    return out, rng.integers(2**40)


def fuzzed_uniform(seed, n, k, replace, shuffle, draws):
    rng = np.random.default_rng(seed)
    out = np.empty(draws * k, dtype=np.int64)
    for d in range(draws):
        out[d * k:(d + 1) * k] = rng.choice(n, k, replace=replace, shuffle=shuffle)
    return out, rng.integers(2**40)


def test_random_choices_against_numpy():
    """Random populations, sizes, weights and flags, several draws on one generator each."""
    rng = random.Random(2031)
    compiled = {True: jit(fuzzed), False: jit(fuzzed_uniform)}
    for _ in range(120):
        n = rng.choice([rng.randint(1, 40), rng.randint(10001, 30000), rng.randint(1, 2**62)])
        replace = rng.random() < 0.5
        weighted = n <= 40 and rng.random() < 0.5
        k = rng.randint(0, n if not replace and n <= 40 else 60)
        if n > 10000 and not replace and rng.random() < 0.3 and n < 2**20:
            k = rng.randint(n // 50 - 2, n // 50 + 300)
        p = None
        if weighted:
            w = np.array([rng.random() if rng.random() < 0.8 else 0.0 for _ in range(n)])
            w[0] += 0.1
            p = w / w.sum()
            if not replace:
                k = min(k, int(np.count_nonzero(p)))
        args = (rng.randint(0, 2**40), n, k, replace, *((p,) if weighted else ()), rng.random() < 0.8,
                rng.randint(1, 3))
        reference = fuzzed if weighted else fuzzed_uniform
        try:
            want = reference(*args)
        except ValueError as exc:
            with pytest.raises(ValueError, match=str(exc).split(".")[0]):
                compiled[weighted](*args)
            continue
        _same(compiled[weighted](*args), want)


# -- the legacy np.random.choice(..., p=...) -------------------------------------------------------------------
def legacy_weighted(seed, a, p, k):
    np.random.seed(seed)
    return (np.random.choice(a, k, p=p), np.random.choice(a, (2, 2), replace=False, p=p), np.random.choice(a, p=p),
            np.random.choice(a.shape[0], k, replace=False, p=p), np.random.choice(a.shape[0], p=p),
            np.random.random())


def _legacy_reference(seed, a, p, k):
    rs = np.random.RandomState(seed)
    return (rs.choice(a, k, p=p), rs.choice(a, (2, 2), replace=False, p=p), rs.choice(a, p=p),
            rs.choice(a.shape[0], k, replace=False, p=p), rs.choice(a.shape[0], p=p), rs.random())


@pytest.mark.parametrize("seed", range(8))
def test_legacy_choice_with_p_is_randomstates_bit_for_bit(seed):
    a = np.arange(15) * 2 - 9
    p = np.random.default_rng(seed + 50).random(15)
    p[[0, 6, 7]] = 0.0
    p /= p.sum()
    _same(jit(legacy_weighted)(seed, a, p, 7), _legacy_reference(seed, a, p, 7))


def legacy_bad(case):
    np.random.seed(0)
    if case == 0:
        return float(np.random.choice(3, 2, p=np.array([0.5, 0.5]))[0])
    if case == 1:
        return float(np.random.choice(2, 2, p=np.array([np.nan, 0.5]))[0])
    if case == 2:
        return float(np.random.choice(2, 2, p=np.array([-0.5, 1.5]))[0])
    if case == 3:
        return float(np.random.choice(2, 2, p=np.array([0.4, 0.5]))[0])
    if case == 4:
        return float(np.random.choice(3, 3, replace=False, p=np.array([0.5, 0.5, 0.0]))[0])
    if case == 5:
        return float(np.random.choice(3, 4, replace=False, p=np.array([0.5, 0.25, 0.25]))[0])
    return float(np.random.choice(0, 2, p=np.zeros(0))[0])


@pytest.mark.parametrize("case", range(7))
def test_legacy_choice_errors_are_randomstates(case):
    with pytest.raises(ValueError) as want:
        legacy_bad(case)
    with pytest.raises(ValueError) as got:
        jit(legacy_bad)(case)
    assert str(got.value) == str(want.value)
