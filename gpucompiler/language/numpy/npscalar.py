"""NumPy's scalar loops that Python's operators do not give, written in Python and compiled.

Each takes its arguments already cast to the loop's input types
(``ufunc.resolve_dtypes``); none raises a math error (NumPy gives IEEE
results: ``1 // 0`` is 0 on integers, ``x // 0.0`` an infinity or NaN).
"""

from ...pristine import math  # as imported (pristine.py: the rules key on its functions)

from ...frontend.intrinsics import ffloor, make_complex
from .npintrinsics import fmaximum, fminimum


def maximum(a, b):
    """``np.maximum``: NaN propagates."""
    return fmaximum(a, b)


def minimum(a, b):
    """``np.minimum``: NaN propagates."""
    return fminimum(a, b)


def fmax(a, b):
    """``np.fmax``: NaN is ignored where the other argument is a number."""
    return a if a >= b or b != b else b


def fmin(a, b):
    """``np.fmin``: NaN is ignored where the other argument is a number."""
    return a if a <= b or b != b else b


def int_floor_divide(a, b):
    """``np.floor_divide`` on integers: 0 for a zero divisor."""
    return a // b if b != 0 else a - a


def int_remainder(a, b):
    """``np.remainder`` on integers: 0 for a zero divisor."""
    return a % b if b != 0 else a - a


def int_fmod(a, b):
    """``np.fmod`` on integers: C's ``%`` (the sign of ``a``); 0 for a zero divisor."""
    if b == 0:
        return a - a
    r = a % b
    return r - b if r != 0 and (r < 0) != (a < 0) else r


def float_floor_divide(a, b):
    """``np.floor_divide`` on floats: ``a / b`` (an infinity or NaN) for a zero divisor."""
    if b == 0:
        return a * math.copysign(math.inf, b) if a != 0 else math.nan
    return a // b


def float_remainder(a, b):
    """``np.remainder`` on floats: NaN for a zero divisor."""
    if b == 0:
        return math.nan
    return a % b


def complex_true_divide(a, b):
    """``np.true_divide`` on complex numbers: NumPy's loop (Smith's method through the reciprocal of
    the scaled divisor); a zero divisor gives infinities and NaNs, part by part."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    abs_br, abs_bi = abs(br), abs(bi)
    if abs_br >= abs_bi:
        if abs_br == 0:  # NumPy divides each part by +0.0 (no divisor below is 0: no ZeroDivisionError)
            return make_complex(ar * math.inf, ai * math.inf)
        rat = bi / br
        scl = 1.0 / (br + bi * rat)
        return make_complex((ar + ai * rat) * scl, (ai - ar * rat) * scl)
    if bi == 0:  # br is NaN
        return make_complex(br, br)
    rat = br / bi
    scl = 1.0 / (bi + br * rat)
    return make_complex((ar * rat + ai) * scl, (ai * rat - ar) * scl)


def floor(x):
    return ffloor(x)


def ceil(x):
    return -ffloor(-x)


def trunc(x):
    return ffloor(x) if x >= 0 else -ffloor(-x)


def rint(x):
    """``np.rint``: the integer nearest to the float ``x``, ties to even, as a float (NaN and infinities as
    they are, the sign of a zero kept); Python's ``round`` rounds so before converting to int."""
    f = ffloor(x)
    d = x - f  # exact: f is within 1 of x
    if d > 0.5 or (d == 0.5 and ffloor(f * 0.5) * 2.0 != f):
        f += 1.0
    return math.copysign(f, x)


def square(x):
    return x * x


def sign(x):
    """``np.sign``: -1, 0 or 1 in the argument's type (NaN for NaN)."""
    if x != x:
        return x
    return (x > 0) - (x < 0)


def logical_and(a, b):
    return bool(a) and bool(b)


def logical_or(a, b):
    return bool(a) or bool(b)


def logical_xor(a, b):
    return bool(a) != bool(b)


def logical_not(a):
    return not a


def where(c, x, y):
    """``np.where(c, x, y)`` of one element."""
    return x if c else y
