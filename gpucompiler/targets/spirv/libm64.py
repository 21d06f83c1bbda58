"""float64 ``exp``, ``log``, ``log2``, ``log10``, ``sin``, ``cos``, ``tan`` for Vulkan, written in the kernel language.

Vulkan's GLSL.std.450 has no 64-bit transcendental functions (as NVIDIA's
GPUs have none: libdevice computes them in software). These are compiled by
this compiler like any function a kernel calls (:data:`FUNCTIONS` maps the
language's ``math`` functions to them; the SPIR-V overlay redirects float64
calls). Textbook methods with this module's own constants:

* ``exp``: ``x = k ln2 + r`` (Cody-Waite, ``ln2`` in two parts so ``k * LN2_HI``
  is exact), ``|r| <= ln2/2``, the Taylor polynomial to ``r**13``, then
  ``2**k`` built from its exponent bits in two halves (so subnormal results
  and ``k = 1024`` stay representable on the way);
* ``log``: ``x = 2**e * m`` by compares and exact scalings by powers of two
  (no bit access of ``x``, so gradients flow), ``m`` in ``[sqrt(1/2), sqrt(2))``,
  ``log(m) = 2 atanh(s)`` with ``s = (m-1)/(m+1)``, written as
  ``f - s (f - 2t)`` (``f = m - 1`` exact) with ``t`` the series in ``s**2``
  to ``s**20``; ``log2`` and ``log10`` from the same parts (exact at powers
  of two);
* ``sin``/``cos``/``tan``: ``x = k pi/2 + r`` with ``pi/2`` in five 27-bit
  parts (each ``k * part`` exact for ``|k| < 2**26``), Taylor polynomials to
  ``r**17``/``r**18`` on ``|r| <= pi/4``, the quadrant from ``k``. Past
  ``|x| = 2**26 pi/2`` (about ``1.05e8``) the reduction is not done and the
  result is NaN (docs/vulkan.md).

Accuracy against NumPy (glibc) is tested over wide ranges
(``tests/spirv/test_spirv_libm64.py``).
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

from llvmlite import ir

from ... import types as T
from ...interpreter.lattice import widen
from ...interpreter.rules import Number, RuleSet

# -- bit access (lowered by :func:`bit_rules`) -----------------------------------------------------


def from_bits(i):
    """The float64 whose IEEE bits are the int64 ``i`` (compiled code only)."""
    raise NotImplementedError("from_bits is compiled, not called from Python")


def bit_rules(rules: RuleSet) -> None:
    """Define :func:`from_bits` in ``rules`` (a bitcast)."""
    @rules.define(from_bits, Number, restype=T.float64)
    def _from_bits(cg, args, argtypes, rt):
        return cg.b.bitcast(cg.cast(args[0], widen(argtypes[0]), T.int64), ir.DoubleType())


# -- constants, computed here from exact values ----------------------------------------------------
def _split(value: Fraction, parts: int, bits: int) -> tuple[float, ...]:
    """``value`` as ``parts`` floats of at most ``bits`` significant bits each, their sum ``value``
    to about ``parts * bits`` bits (each part the truncation of what remains)."""
    out = []
    rest = value
    for _ in range(parts):
        e = math.floor(math.log2(abs(rest)))
        scale = Fraction(2) ** (bits - 1 - e)
        part = Fraction(math.floor(rest * scale)) / scale
        out.append(float(part))
        rest -= part
    return tuple(out)


getcontext().prec = 80
_PI = Fraction(Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863"))
_LN2 = Fraction(Decimal("0.69314718055994530941723212145817656807550013436025525412068000949339362196969471561"))
_LN10 = Fraction(Decimal("2.30258509299404568401799145468436420760110148862877297603332790096757260967735248023"))

PIO2 = _split(_PI / 2, 5, 27)
TWO_OVER_PI = float(2 / _PI)
LN2_HI, LN2_LO = _split(_LN2, 2, 32)
INV_LN2 = float(1 / _LN2)
INV_LN10 = float(1 / _LN10)
LOG10_2_HI, LOG10_2_LO = _split(_LN2 / _LN10, 2, 32)
SQRT2 = math.sqrt(2.0)
EXP_MAX = 709.782712893384      # exp(x) overflows above (log of the largest float64, rounded down)
EXP_MIN = -745.1332191019412    # exp(x) rounds to 0 below (log of half the smallest subnormal)
REDUCE_MAX = 2.0 ** 26 * float(_PI / 2)
U512, U256, U128, U64, U32, U16, U8, U4, U2, U1 = (2.0 ** k for k in (512, 256, 128, 64, 32, 16, 8, 4, 2, 1))
D512, D256, D128, D64, D32, D16, D8, D4, D2, D1 = (2.0 ** -k for k in (512, 256, 128, 64, 32, 16, 8, 4, 2, 1))
D511, D255, D127, D63, D31, D15, D7, D3 = (2.0 ** -k for k in (511, 255, 127, 63, 31, 15, 7, 3))
INF = math.inf
NAN = math.nan
EXP_TAYLOR = tuple(float(Fraction(1, math.factorial(k))) for k in range(14))
SIN_TAYLOR = tuple(float(Fraction((-1) ** k, math.factorial(2 * k + 1))) for k in range(9))
COS_TAYLOR = tuple(float(Fraction((-1) ** k, math.factorial(2 * k))) for k in range(10))
ATANH_SERIES = tuple(float(Fraction(1, 2 * k + 1)) for k in range(1, 11))
E0, E1, E2, E3, E4, E5, E6, E7, E8, E9, E10, E11, E12, E13 = EXP_TAYLOR
S1, S3, S5, S7, S9, S11, S13, S15, S17 = SIN_TAYLOR
C0, C2, C4, C6, C8, C10, C12, C14, C16, C18 = COS_TAYLOR
A1, A2, A3, A4, A5, A6, A7, A8, A9, A10 = ATANH_SERIES
P1, P2, P3, P4, P5 = PIO2


# -- the functions (the kernel language) -----------------------------------------------------------
def exp64(x):
    x = float(x)
    big = x > EXP_MAX
    small = x < EXP_MIN
    nan = math.isnan(x)
    v = 0.0 if big or small or nan else x  # every path computes (branch-free code: see _select)
    k = math.floor(v * INV_LN2 + 0.5)
    kf = float(k)
    r = (v - kf * LN2_HI) - kf * LN2_LO
    p = E13
    p = p * r + E12
    p = p * r + E11
    p = p * r + E10
    p = p * r + E9
    p = p * r + E8
    p = p * r + E7
    p = p * r + E6
    p = p * r + E5
    p = p * r + E4
    p = p * r + E3
    p = p * r + E2
    p = p * r + E1
    p = p * r + E0
    k1 = k // 2
    k2 = k - k1
    y = p * from_bits((k1 + 1023) << 52) * from_bits((k2 + 1023) << 52)
    y = INF if big else y
    y = 0.0 if small else y
    return x if nan else y


def _log_parts(x):
    """``(e, log(m))`` with ``x = 2**e * m``, ``m`` in ``[sqrt(1/2), sqrt(2))``; ``x`` positive and finite.

    The exponent comes from compares and exact scalings by powers of two (halvings first, then
    doublings: twice 512 for subnormals), not from the bits: the scaled value stays a float function
    of ``x``, so a gradient flows through it."""
    e = 0
    m = x
    if m >= U512:
        m = m * D512
        e += 512
    if m >= U256:
        m = m * D256
        e += 256
    if m >= U128:
        m = m * D128
        e += 128
    if m >= U64:
        m = m * D64
        e += 64
    if m >= U32:
        m = m * D32
        e += 32
    if m >= U16:
        m = m * D16
        e += 16
    if m >= U8:
        m = m * D8
        e += 8
    if m >= U4:
        m = m * D4
        e += 4
    if m >= U2:
        m = m * D2
        e += 2
    if m >= U1:
        m = m * D1
        e += 1
    if m < D511:
        m = m * U512
        e -= 512
    if m < D511:
        m = m * U512
        e -= 512
    if m < D255:
        m = m * U256
        e -= 256
    if m < D127:
        m = m * U128
        e -= 128
    if m < D63:
        m = m * U64
        e -= 64
    if m < D31:
        m = m * U32
        e -= 32
    if m < D15:
        m = m * U16
        e -= 16
    if m < D7:
        m = m * U8
        e -= 8
    if m < D3:
        m = m * U4
        e -= 4
    if m < D1:
        m = m * U2
        e -= 2
    if m < 1.0:
        m = m * U1
        e -= 1
    if m > SQRT2:
        m = m * 0.5
        e += 1
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    t = A10
    t = t * z + A9
    t = t * z + A8
    t = t * z + A7
    t = t * z + A6
    t = t * z + A5
    t = t * z + A4
    t = t * z + A3
    t = t * z + A2
    t = t * z + A1
    t = t * z
    return e, f - s * (f - 2.0 * t)


def _log_special(x, y):
    """``y`` where ``x`` is positive and finite, else ``log``'s value there (NaN, -inf, inf)."""
    y = NAN if math.isnan(x) or x < 0.0 else y
    y = -INF if x == 0.0 else y
    return INF if x == INF else y


def _log_input(x):
    """``x`` where the logarithms compute it, else 1.0 (their special values are selected after)."""
    return x if x > 0.0 and x < INF else 1.0


def log64(x):
    x = float(x)
    e, lm = _log_parts(_log_input(x))
    ef = float(e)
    return _log_special(x, ef * LN2_HI + (lm + ef * LN2_LO))


def log2_64(x):
    x = float(x)
    e, lm = _log_parts(_log_input(x))
    return _log_special(x, float(e) + lm * INV_LN2)


def log10_64(x):
    x = float(x)
    e, lm = _log_parts(_log_input(x))
    ef = float(e)
    return _log_special(x, ef * LOG10_2_HI + (lm * INV_LN10 + ef * LOG10_2_LO))


def _reduce(x):
    """``(r, k mod 4)`` with ``x = k pi/2 + r``, ``|r| <= pi/4`` (about)."""
    k = math.floor(x * TWO_OVER_PI + 0.5)
    kf = float(k)
    r = x - kf * P1
    r = r - kf * P2
    r = r - kf * P3
    r = r - kf * P4
    r = r - kf * P5
    return r, k & 3


def _sin_poly(r):
    z = r * r
    p = S17
    p = p * z + S15
    p = p * z + S13
    p = p * z + S11
    p = p * z + S9
    p = p * z + S7
    p = p * z + S5
    p = p * z + S3
    return r + r * z * p


def _cos_poly(r):
    z = r * r
    p = C18
    p = p * z + C16
    p = p * z + C14
    p = p * z + C12
    p = p * z + C10
    p = p * z + C8
    p = p * z + C6
    p = p * z + C4
    return 1.0 - 0.5 * z + z * z * p


def sin64(x):
    x = float(x)
    ok = abs(x) <= REDUCE_MAX  # False for NaN and infinities too
    r, q = _reduce(x if ok else 0.0)
    v = _cos_poly(r) if q & 1 == 1 else _sin_poly(r)
    v = -v if q >= 2 else v
    return v if ok else NAN


def cos64(x):
    # written out, not sharing a helper with sin64: a function called from two places stays a call,
    # and the gradient of a call keeps its values on a heap tape Vulkan does not have
    x = float(x)
    ok = abs(x) <= REDUCE_MAX
    r, q = _reduce(x if ok else 0.0)
    q = (q + 1) & 3
    v = _cos_poly(r) if q & 1 == 1 else _sin_poly(r)
    v = -v if q >= 2 else v
    return v if ok else NAN


def tan64(x):
    x = float(x)
    ok = abs(x) <= REDUCE_MAX
    r, q = _reduce(x if ok else 0.0)
    s, c = _sin_poly(r), _cos_poly(r)
    v = -c / s if q & 1 == 1 else s / c
    return v if ok else NAN


FUNCTIONS = {math.exp: exp64, math.log: log64, math.log2: log2_64, math.log10: log10_64,
             math.sin: sin64, math.cos: cos64, math.tan: tan64}
"""The language's ``math`` functions this module implements in float64."""
IMPLEMENTED = tuple(f.__name__ for f in FUNCTIONS)
"""Their names, for messages."""

__all__ = ["FUNCTIONS", "IMPLEMENTED", "bit_rules", "cos64", "exp64", "from_bits", "log10_64", "log2_64", "log64",
           "sin64", "tan64"]
