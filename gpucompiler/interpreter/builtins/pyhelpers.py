"""Python-semantics arithmetic written in Python and compiled by the frontend itself."""

import math

from ...frontend.intrinsics import check, check_math, ffloor, fmod_ieee


def int_pow(base, exp):
    """``base ** exp`` on ints (exponent >= 0) by repeated squaring."""
    check(exp >= 0, "ValueError", "negative exponent in int ** int; use a float base")
    result = 1
    while exp > 0:
        if exp & 1:
            result *= base
        base *= base
        exp >>= 1
    return result


def float_mod(a, b):
    """``a % b`` on floats: the sign of the result follows ``b``."""
    check_math(b != 0, "ZeroDivisionError", "float modulo")
    mod = fmod_ieee(a, b)
    if mod:
        if (b < 0) != (mod < 0):
            mod += b
    else:
        mod = math.copysign(0.0, b)
    return mod


def float_floordiv(a, b):
    """``a // b`` on floats, exactly as CPython computes it."""
    check_math(b != 0, "ZeroDivisionError", "float floor division by zero")
    mod = fmod_ieee(a, b)
    div = (a - mod) / b
    if mod and (b < 0) != (mod < 0):
        div -= 1.0
    if div:
        floordiv = ffloor(div)
        if div - floordiv > 0.5:
            floordiv += 1.0
    else:
        floordiv = math.copysign(0.0, a / b)
    return floordiv
