"""``round``, ``pow``, ``divmod``, ``math.log(x, base)``, ``math.isclose``, ``math.gcd``, ``min``/``max``/
``any``/``all`` of a tuple and ``np.round``/``np.rint`` in compiled code, against CPython and NumPy: values,
result types, the sign of zeros and the exception classes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from gpucompiler import device as gd, jit, kernel

FLOATS = [0.5, 1.5, 2.5, -0.5, -1.5, -2.4999999999999996, 0.49999999999999994, 4503599627370495.5, 1e18,
          -0.0, 0.0, math.inf, -math.inf, math.nan, -3.7, 7.0]
NUMBERS = [3, -7, 0, 2.5, -0.5, 0.0, 1e308, True]


def _outcome(f, *args):
    try:
        return "ok", f(*args)
    except Exception as exc:
        return "raises", type(exc)


def _same(got, want) -> bool:
    if isinstance(want, tuple):
        return isinstance(got, tuple) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, np.ndarray):
        return (isinstance(got, np.ndarray) and got.dtype == want.dtype
                and np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want)))
    if isinstance(want, (float, np.floating)):
        return (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want))
    return got == want and type(got) is type(want)


def _agree(f, *args):
    want, got = _outcome(f, *args), _outcome(jit(f), *args)
    if want[0] == "raises":
        assert got[0] == "raises" and issubclass(got[1], want[1]), (args, got, want)
    else:
        assert got[0] == "ok" and _same(got[1], want[1]), (args, got, want)


def rounded(x):
    return round(x)


def numpy_rounded(x):
    return np.round(x), np.around(x * 3), np.rint(x)


def numpy_rounded_arrays(a):
    return np.round(a), np.rint(a * 2)


@pytest.mark.parametrize("x", FLOATS + [3, -4, True])
def test_round_rounds_half_to_even_to_an_int_like_cpython(x):
    _agree(rounded, x)  # NaN: ValueError, infinities: OverflowError


@pytest.mark.parametrize("x", FLOATS)
def test_numpy_round_and_rint_round_half_to_even_keeping_the_sign_of_zero(x):
    _agree(numpy_rounded, x)


def test_numpy_round_of_arrays():
    _agree(numpy_rounded_arrays, np.array(FLOATS))


def numpy_rounded_decimals(a, x):
    return (np.round(a, 2), np.round(a, -1), np.around(a * 3, decimals=3), np.round(x, 1), np.round(a, 12),
            np.round(a.astype(np.float32), 2))


@pytest.mark.parametrize("seed", range(3))
def test_numpy_round_to_decimals_is_numpys_to_the_bit(seed):
    rng = np.random.default_rng(seed)
    a = np.concatenate([rng.standard_normal(40) * 10 ** seed, [2.675, 0.125, -0.5, 1e300, np.inf, np.nan, -0.0]])
    got, want = jit(numpy_rounded_decimals)(a, float(a[0])), numpy_rounded_decimals(a, float(a[0]))
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype or np.ndim(w) == 0
        np.testing.assert_array_equal(g, w)  # the same operations: the same bits, NaN and -0.0 included


def power(x, y):
    return pow(x, y)


def quotient_and_remainder(a, b):
    return divmod(a, b)


def log_in_base(x, b):
    return math.log(x, b)


def close(a, b):
    return math.isclose(a, b)


@pytest.mark.parametrize("f", [power, quotient_and_remainder, log_in_base, close])
def test_two_argument_builtins_match_cpython(f):
    for x, y in itertools.product(NUMBERS, repeat=2):
        if isinstance(x, int) and isinstance(y, int) and y < 0 and f is power:
            continue  # int ** negative int: a float in CPython, a ValueError here (int64 results)
        want = _outcome(f, x, y)
        if want[0] == "ok" and isinstance(want[1], complex):
            continue  # compiled code has no complex result there (a ValueError)
        _agree(f, x, y)


def greatest_common_divisor(a, b):
    return math.gcd(a, b)


def test_gcd_matches_cpython_and_refuses_two_to_the_63():
    low = -9223372036854775807 - 1
    for a, b in itertools.product([0, 12, -18, 7, 9223372036854775807, low], repeat=2):
        want = math.gcd(a, b)
        if want >= 2**63:
            with pytest.raises(OverflowError):
                jit(greatest_common_divisor)(a, b)
        else:
            assert jit(greatest_common_divisor)(a, b) == want


def of_a_tuple(a, b, c):
    return max((a, b, c)), min((a, b, c)), any((a > 1, b > 1)), all((a > 1, b > 1))


@pytest.mark.parametrize("args", [(1.0, 2.0, 3.0), (3, 1, 2), (math.nan, 1.0, 2.0), (1.0, math.nan, 0.5),
                                  (True, False, True), (2, 2, 1)])
def test_min_max_any_all_of_a_tuple_keep_cpythons_first_item(args):
    _agree(of_a_tuple, *args)


def _round_each(a, out):
    i = gd.grid(1)
    if i < a.shape[0]:
        out[i] = round(a[i]) + math.gcd(i, 4)


def test_round_and_gcd_in_a_kernel_on_the_emulation_and_in_ptx(check_ptx):
    a = np.array([0.5, 1.5, 2.5, -2.5, 3.7])
    out = np.zeros(5, np.int64)
    k = kernel(_round_each)
    k[1, 8, "cpu"](a, out)
    assert out.tolist() == [round(v) + math.gcd(i, 4) for i, v in enumerate(a.tolist())]
    check_ptx(k.inspect_asm(a, out))


def bitwise_of_bools(a, b):
    return a & b, a | b, a ^ b, a & True, False | b


def rounded_ints(n):
    return math.floor(n), math.ceil(n), math.trunc(n)


@pytest.mark.parametrize("a,b", list(itertools.product([True, False], repeat=2)))
def test_bitwise_operators_of_bools_are_bools(a, b):
    _agree(bitwise_of_bools, a, b)


@pytest.mark.parametrize("n", [2**63 - 1, -(2**63) + 1, 2**53 + 1, -7, 0, True])
def test_floor_ceil_trunc_of_an_int_are_exact(n):
    _agree(rounded_ints, n)


def int_power(a, b):
    return a ** b


def test_zero_to_a_negative_int_power_is_cpythons_zero_division_error():
    for b in (-1, -4):
        with pytest.raises(ZeroDivisionError, match="cannot be raised to a negative power"):
            int_power(0, b)
        with pytest.raises(ZeroDivisionError, match="cannot be raised to a negative power"):
            jit(int_power)(0, b)
    with pytest.raises(ValueError, match="negative exponent"):  # CPython's 0.5: a float, documented
        jit(int_power)(2, -1)


def angles(x):
    return math.degrees(x), math.radians(x), math.radians(math.degrees(x))


@pytest.mark.parametrize("x", FLOATS + [3, -4, True, 1e308, 5e-324])
def test_degrees_and_radians_are_cpythons_to_the_bit(x):
    got, want = jit(angles)(x), angles(x)
    for g, w in zip(got, want):
        assert (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1.0, g) == math.copysign(1.0, w))


def test_degrees_differentiated_and_in_a_kernel():
    from enzyme_plugin import Active, Reverse, autodiff
    (d,) = autodiff(Reverse, lambda x: math.degrees(x) * math.radians(x), Active(0.7))
    assert d == pytest.approx(2 * 0.7, rel=1e-15)

    def to_degrees(a, out):
        i = gd.grid(1)
        if i < a.shape[0]:
            out[i] = math.degrees(a[i])

    a, out = np.linspace(-3.0, 3.0, 40), np.zeros(40)
    kernel(to_degrees)[2, 32, "cpu"](a, out)
    assert np.array_equal(out, [math.degrees(v) for v in a])
