"""Python-semantics arithmetic written in Python and compiled by the frontend itself."""

from ...pristine import math  # as imported (pristine.py: the rules key on its functions)

from ...frontend.intrinsics import check, check_math, ffloor, fmod_ieee, make_complex, one_of



def _division_message() -> str:
    """The message of the running CPython's ``ZeroDivisionError`` for complex division."""
    try:
        _ = 1j / 0
    except ZeroDivisionError as exc:
        return str(exc)
    return "complex division by zero"


_COMPLEX_DIVISION_BY_ZERO = _division_message()


def int_pow(base, exp):
    """``base ** exp`` on ints (exponent >= 0) by repeated squaring, in the type of ``base``."""
    check(exp >= 0 or base != 0, "ZeroDivisionError", "0.0 cannot be raised to a negative power")
    check(exp >= 0, "ValueError", "negative exponent in int ** int; use a float base")
    result = one_of(base)
    while exp > 0:
        if exp & 1:
            result *= base
        base *= base
        exp >>= 1
    return result


def complex_powi(x, n):
    """CPython's ``x ** n`` for a complex ``x`` and an integral ``n`` (``|n| <= 100``): its c_powi, the
    binary powers from ``1+0j`` (so ``(inf+0j) ** 2`` is NaN as there), then an overflow check."""
    m = -n if n < 0 else n
    r = complex(1.0, 0.0)
    p = x
    mask = 1
    while m >= mask:
        if m & mask:
            r = r * p
        mask <<= 1
        p = p * p
    if n < 0:
        check_math(r.real != 0.0 or r.imag != 0.0, "ZeroDivisionError", "0.0 to a negative or complex power")
        r = 1.0 / r
    check_math(not (math.isinf(r.real) or math.isinf(r.imag)), "OverflowError", "complex exponentiation")
    return r


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


def complex_div(a, b):
    """``a / b`` on complex numbers: CPython's ``_Py_c_quot`` (Smith's method, scaled by the larger part)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    abs_br, abs_bi = math.fabs(br), math.fabs(bi)
    if abs_br >= abs_bi:
        check_math(abs_br != 0.0, "ZeroDivisionError", _COMPLEX_DIVISION_BY_ZERO)
        ratio = bi / br
        denom = br + bi * ratio
        return make_complex((ar + ai * ratio) / denom, (ai - ar * ratio) / denom)
    if abs_bi >= abs_br:
        ratio = br / bi
        denom = br * ratio + bi
        return make_complex((ar * ratio + ai) / denom, (ai * ratio - ar) / denom)
    nan = br + bi  # a part of b is NaN
    return make_complex(nan, nan)


def complex_abs(z):
    """``abs(z)`` of a complex number: ``hypot`` of its parts (an infinite result from finite parts is
    an OverflowError)."""
    return math.hypot(z.real, z.imag)
