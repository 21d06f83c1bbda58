"""Derivatives at the singular points of math functions: where the derivative is undefined or infinite
it is NaN or an infinity (the same in forward and reverse mode), never a finite number; where the
one-sided limits agree it is that limit."""

from __future__ import annotations

import math

import pytest

from enzyme_plugin import Active, Duplicated, Forward, Reverse, autodiff


def sqrt_(x):
    return math.sqrt(x)


def half_power(x):
    return x ** 0.5


def pow_half(x):
    return math.pow(x, 0.5)


def asin_(x):
    return math.asin(x)


def acos_(x):
    return math.acos(x)


def acosh_(x):
    return math.acosh(x)


def atanh_(x):
    return math.atanh(x)


def log_(x):
    return math.log(x)


def log1p_(x):
    return math.log1p(x)


def fmod_by_zero(x):
    return math.fmod(x, 0.0)


def fmod_of_inf(x):
    return math.fmod(x * math.inf, 1.5)


def hypot_origin(x):
    return math.hypot(x, 0.0)


def atan2_origin(x):
    return math.atan2(x, 0.0)


def sqrt_square(x):
    return math.sqrt(x * x)


#: (function, point, what the derivative is: "nan", math.inf or -math.inf)
UNDEFINED = [
    (sqrt_, 0.0, math.inf), (half_power, 0.0, math.inf), (pow_half, 0.0, math.inf),
    (asin_, 1.0, math.inf), (acos_, 1.0, -math.inf), (acosh_, 1.0, math.inf), (atanh_, 1.0, math.inf),
    (log_, 0.0, math.inf), (log1p_, -1.0, math.inf),
    (fmod_by_zero, 1.0, "nan"),  # was 1.0: the remainder's x-derivative ignored that the result is NaN
    (fmod_of_inf, 1.0, "nan"),
    (hypot_origin, 0.0, "nan"), (atan2_origin, 0.0, "nan"), (sqrt_square, 0.0, "nan"),
]


@pytest.mark.parametrize("fn, x, want", UNDEFINED, ids=[c[0].__name__ for c in UNDEFINED])
def test_an_undefined_derivative_is_nan_or_infinite_in_both_modes(fn, x, want):
    (dx,) = autodiff(Reverse, fn, Active(x))
    (t,) = autodiff(Forward, fn, Duplicated(x, 1.0))
    for got in (dx, t):
        assert (math.isnan(got) if want == "nan" else got == want), (fn.__name__, dx, t)


def power_three_halves(x):
    return x ** 1.5


def tanh_(x):
    return math.tanh(x)


def erf_(x):
    return math.erf(x)


def fmod_(x):
    return math.fmod(x, 0.75)


@pytest.mark.parametrize("fn, x, want", [
    (power_three_halves, 0.0, 0.0), (tanh_, 1e3, 0.0), (erf_, 40.0, 0.0), (fmod_, 2.0, 1.0),
    (fmod_, -2.0, 1.0),
], ids=["x**1.5 at 0", "tanh at 1e3", "erf at 40", "fmod", "fmod negative"])
def test_limits_where_the_derivative_exists(fn, x, want):
    assert autodiff(Reverse, fn, Active(x)) == (want,)
    assert autodiff(Forward, fn, Duplicated(x, 1.0)) == (want,)
