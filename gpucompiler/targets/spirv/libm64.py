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
* ``sin``/``cos``/``tan``: ``x = k pi/2 + r``, ``|r| <= pi/4``, ``r`` as a
  double-double: Cody-Waite (``pi/2`` in three parts) below ``|x| = 1.5 2**26``
  (about ``1.0e8``), Payne-Hanek (``|x|`` times a window of 168 bits of the
  1200 bits of ``2/pi``, :data:`TWO_OVER_PI_BITS`, in int64 words) above it
  and wherever Cody-Waite's ``2**-79`` is not small beside ``r``; every finite
  ``x`` reduces, NaN only for infinities and NaN. Taylor polynomials to
  ``r**17``/``r**18`` with the low part's correction, the quadrant from ``k``.
  The reduction reads ``|x|``'s exponent and significand by compares and a
  conversion to int64, then adds ``x - |x|'`` (zero, derivative one) so
  gradients flow through it too.

Accuracy, measured against the exact values (``pi`` to 1390 bits, the
reduction in rationals) on the CPU, where these functions run as Python, and
on lavapipe, where the compiled kernels give the same bits: sin and cos within
1 ulp (0.77 measured), tan within 2.5 (2.10 measured), over random exponents
up to ``1.8e308``, the doubles nearest to multiples of ``pi/2`` (the worst case
``6381956970095103 2**797`` included), subnormals and signed zeros;
exp, expm1, the logarithms, atan, acos within 1-2 ulp of NumPy, tanh, asin,
sinh and cosh within 2-4, at the overflow and underflow edges too
(``tests/spirv/test_spirv_libm64.py``, ``tests/targets/test_spirv_libm64_range.py``).
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal, getcontext
from fractions import Fraction

from llvmlite import ir

from ... import types as T
from ...interpreter.lattice import widen
from ...interpreter.rules import Number, RuleSet

# -- bit access (lowered by :func:`bit_rules`) -----------------------------------------------------


def from_bits(i):
    """The float64 whose IEEE bits are the int64 ``i`` (compiled: a bitcast; in Python, for running this
    module's functions as they are written)."""
    return struct.unpack("<d", struct.pack("<q", i))[0]


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

TWO_OVER_PI = float(2 / _PI)
LN2_HI, LN2_LO = _split(_LN2, 2, 32)
INV_LN2 = float(1 / _LN2)
INV_LN10 = float(1 / _LN10)
LOG10_2_HI, LOG10_2_LO = _split(_LN2 / _LN10, 2, 32)
SQRT2 = math.sqrt(2.0)
EXP_MAX = 709.782712893384      # exp(x) overflows above (log of the largest float64, rounded down)
EXP_MIN = -745.1332191019412    # exp(x) rounds to 0 below (log of half the smallest subnormal)


def _atan_inverse(n: int, bits: int) -> int:
    """``atan(1/n) 2**bits`` to within ``bits`` units (its alternating series in integers)."""
    total, power, k = 0, (1 << bits) // n, 0
    while power:
        total += -(power // (2 * k + 1)) if k % 2 else power // (2 * k + 1)
        power //= n * n
        k += 1
    return total


_PI_BITS = 1400
_PI_FIXED = 16 * _atan_inverse(5, _PI_BITS) - 4 * _atan_inverse(239, _PI_BITS)  # Machin: pi 2**1400
PAD = 4
"""Zero chunks in front of :data:`TWO_OVER_PI_BITS` (the reduction of ``|x| >= 1/2`` indexes from 0)."""
_CHUNKS = 50
TWO_OVER_PI_BITS = (0,) * PAD + tuple(
    ((1 << (24 * _CHUNKS + _PI_BITS + 1)) // _PI_FIXED >> 24 * (_CHUNKS - 1 - i)) & 0xFFFFFF for i in range(_CHUNKS))
"""``2/pi = sum c_i 2**(-24 (i + 1))``: 1200 bits in 24-bit chunks, after :data:`PAD` zeros (enough for
``|x| < 2**1024``, whose reduction reads the chunks of exponents up to ``2**-1170``)."""
TWO_OVER_PI_PAIRS = tuple((TWO_OVER_PI_BITS[i] << 24) + TWO_OVER_PI_BITS[i + 1] for i in range(0, PAD + _CHUNKS, 2))
"""The chunks two by two in 48 bits."""
_WINDOW = (((1023 - 52 + 24 * PAD) // 24 - 1) >> 1) + 1  # the pairs j of _payne_hanek (largest exponent 1023)
PAIRS0, PAIRS1, PAIRS2, PAIRS3, PAIRS4, PAIRS5 = (TWO_OVER_PI_PAIRS[n:n + _WINDOW] for n in range(6))
"""The pairs ``j``, ``j + 1``... ``j + 5`` as six tables read at ``j`` (a shader reads a table through a
chain of compares and selects: the six share their compares, and each has half as many entries as the
chunks would)."""
MASK24 = 0xFFFFFF
CW1, CW2 = _split(_PI / 2, 2, 27)
CW3 = float(_PI / 2 - Fraction(CW1) - Fraction(CW2))
"""``pi/2`` in three parts (Cody-Waite): two of 27 bits, the rest rounded."""
CW_MAX = 1.5 * 2.0 ** 26
"""Cody-Waite below (``|k| < 2**26``, so ``k CW1`` and ``k CW2`` are exact); Payne-Hanek above."""
CW_TINY = 2.0 ** -20
TINY = 2.0 ** -26
TWO52 = 2.0 ** 52
D48, D96, D144 = 2.0 ** -48, 2.0 ** -96, 2.0 ** -144
SPLIT = 2.0 ** 27 + 1.0


def _atan_exact(x: Decimal) -> Decimal:
    """atan(x) for |x| <= 2/3 by its series, at the context's precision."""
    total, term, k, x2 = Decimal(0), x, 0, x * x
    while abs(term) > Decimal(10) ** -70:
        total += term / (2 * k + 1) * (-1 if k % 2 else 1)
        term *= x2
        k += 1
    return total


_ATAN_HALF = Fraction(_atan_exact(Decimal(1) / 2))
_ATAN_1_5 = _PI / 2 - Fraction(_atan_exact(Decimal(2) / 3))
ATAN_HALF_HI, ATAN_HALF_LO = _split(_ATAN_HALF, 2, 53)
ATAN_ONE_HI, ATAN_ONE_LO = _split(_PI / 4, 2, 53)
ATAN_1_5_HI, ATAN_1_5_LO = _split(_ATAN_1_5, 2, 53)
PIO2_HI, PIO2_LO = _split(_PI / 2, 2, 53)
PI_HI, PI_LO = _split(_PI, 2, 53)
PIO2_HI_1, PIO2_HI_2 = _split(Fraction(PIO2_HI), 2, 27)  # exactly PIO2_HI (53 bits): 27 + 26
U512, U256, U128, U64, U32, U16, U8, U4, U2, U1 = (2.0 ** k for k in (512, 256, 128, 64, 32, 16, 8, 4, 2, 1))
D512, D256, D128, D64, D32, D16, D8, D4, D2, D1 = (2.0 ** -k for k in (512, 256, 128, 64, 32, 16, 8, 4, 2, 1))
D511, D255, D127, D63, D31, D15, D7, D3 = (2.0 ** -k for k in (511, 255, 127, 63, 31, 15, 7, 3))
INF = math.inf
NAN = math.nan
EXP_TAYLOR = tuple(float(Fraction(1, math.factorial(k))) for k in range(21))
SIN_TAYLOR = tuple(float(Fraction((-1) ** k, math.factorial(2 * k + 1))) for k in range(9))
COS_TAYLOR = tuple(float(Fraction((-1) ** k, math.factorial(2 * k))) for k in range(10))
ATANH_SERIES = tuple(float(Fraction(1, 2 * k + 1)) for k in range(1, 11))
ATAN_SERIES = tuple(float(Fraction((-1) ** k, 2 * k + 1)) for k in range(1, 21))
T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15, T16, T17, T18, T19, T20 = ATAN_SERIES
E0, E1, E2, E3, E4, E5, E6, E7, E8, E9, E10, E11, E12, E13, E14, E15, E16, E17, E18, E19, E20 = EXP_TAYLOR
S1, S3, S5, S7, S9, S11, S13, S15, S17 = SIN_TAYLOR
C0, C2, C4, C6, C8, C10, C12, C14, C16, C18 = COS_TAYLOR
A1, A2, A3, A4, A5, A6, A7, A8, A9, A10 = ATANH_SERIES


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


def _two_sum(a, b):
    """``(s, e)`` with ``s = a + b`` rounded and ``s + e = a + b`` exactly (Knuth; no order of magnitudes
    needed). ``e`` carries no derivative: it is the rounding error of ``s``, whose derivative is the sum's."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _exponent(ax):
    """``(e, m)`` with ``ax = 2**e * m``, ``m`` in ``[1, 2)``, for ``ax`` in ``[1/2, 2**1024)`` (compares and
    exact scalings, as in :func:`_log_parts`)."""
    e = 0
    m = ax
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
    if m < 1.0:
        m = m * U1
        e -= 1
    return e, m


def _payne_hanek(x):
    """``(r_hi, r_lo, k mod 4)`` with ``x = k pi/2 + r_hi + r_lo``, ``|r| <= pi/4``, for finite ``|x| >= 1/2``.

    ``|x| = M 2**s`` (``M`` an integer of 53 bits) times ``2/pi = sum c_i 2**(-24 (i+1))``: with
    ``s = 24 Q + b``, the chunks ``i <= Q - 2`` give multiples of 4 (dropped), the next ten give the
    quadrant and 168 bits of the fraction (enough for the closest a double comes to a multiple of
    ``pi/2``, about ``2**-61``), in 24-bit words of int64 products. ``r_hi`` gets ``x``'s derivative."""
    ax = abs(x)
    e, m = _exponent(ax)
    big = int(m * TWO52)
    s = e - 52 + 24 * PAD  # >= 24 for ax >= 1/2
    q = s // 24
    b = s - 24 * q
    t0 = (big & MASK24) << b
    t1 = (((big >> 24) & MASK24) << b) + (t0 >> 24)
    n0 = t0 & MASK24
    n1 = t1 & MASK24
    n2 = ((big >> 48) << b) + (t1 >> 24)  # < 2**30
    j = (q - 1) >> 1  # the chunks q - 1 ... q + 8 lie in the pairs j ... j + 5
    odd = (q - 1) & 1 == 1
    p0 = PAIRS0[j]
    p1 = PAIRS1[j]
    p2 = PAIRS2[j]
    p3 = PAIRS3[j]
    p4 = PAIRS4[j]
    p5 = PAIRS5[j]
    c0 = p0 & MASK24 if odd else p0 >> 24
    c1 = p1 >> 24 if odd else p0 & MASK24
    c2 = p1 & MASK24 if odd else p1 >> 24
    c3 = p2 >> 24 if odd else p1 & MASK24
    c4 = p2 & MASK24 if odd else p2 >> 24
    c5 = p3 >> 24 if odd else p2 & MASK24
    c6 = p3 & MASK24 if odd else p3 >> 24
    c7 = p4 >> 24 if odd else p3 & MASK24
    c8 = p4 & MASK24 if odd else p4 >> 24
    c9 = p5 >> 24 if odd else p4 & MASK24
    w = n0 * c7 + n1 * c8 + n2 * c9  # the word of 2**-168 (each product < 2**54)
    w = n0 * c6 + n1 * c7 + n2 * c8 + (w >> 24)
    f6 = w & MASK24
    w = n0 * c5 + n1 * c6 + n2 * c7 + (w >> 24)
    f5 = w & MASK24
    w = n0 * c4 + n1 * c5 + n2 * c6 + (w >> 24)
    f4 = w & MASK24
    w = n0 * c3 + n1 * c4 + n2 * c5 + (w >> 24)
    f3 = w & MASK24
    w = n0 * c2 + n1 * c3 + n2 * c4 + (w >> 24)
    f2 = w & MASK24
    w = n0 * c1 + n1 * c2 + n2 * c3 + (w >> 24)
    f1 = w & MASK24
    k = n0 * c0 + n1 * c1 + n2 * c2 + (w >> 24)  # the integer part, of which only k mod 4 counts
    a = float(f1 * 16777216 + f2) * D48  # the fraction's words as three exact doubles
    up = a >= 0.5
    a = a - 1.0 if up else a  # to the nearest quadrant
    k = k + 1 if up else k
    hi, lo = _two_sum(a, float(f3 * 16777216 + f4) * D96)
    hi, lo = _two_sum(hi, lo + float(f5 * 16777216 + f6) * D144)
    p = hi * PIO2_HI  # (hi + lo) pi/2 in double-double: Dekker's exact product of hi and PIO2_HI
    u = SPLIT * hi
    h1 = u - (u - hi)
    h2 = hi - h1
    err = ((h1 * PIO2_HI_1 - p) + h1 * PIO2_HI_2 + h2 * PIO2_HI_1) + h2 * PIO2_HI_2
    r, rl = _two_sum(p, err + (hi * PIO2_LO + lo * PIO2_HI))
    neg = x < 0.0
    exact = float(big) * from_bits((e - 52 + 1023) << 52)  # |x| again, from integers (no derivative)
    r = (-r if neg else r) + (x - (-exact if neg else exact))  # + 0, with the derivative 1
    return r, -rl if neg else rl, (-k if neg else k) & 3


def _reduce(x):
    """``(r_hi, r_lo, k mod 4)`` with ``x = k pi/2 + r_hi + r_lo``, ``|r| <= pi/4``, for finite ``x``
    (``(0, 0, 0)`` for infinities and NaN: the callers select NaN for them).

    Cody-Waite below :data:`CW_MAX` (``|k| < 2**26``): ``pi/2 = CW1 + CW2 + CW3``, ``k CW1`` and ``k CW2``
    exact, the sum carried in double-double, absolute error below ``2**-79``; where that is not small
    beside ``r`` (``|r| < 2**-20``, ``k != 0``: ``x`` near a multiple of ``pi/2``) and above
    :data:`CW_MAX`, :func:`_payne_hanek`."""
    ax = abs(x)
    moderate = ax < CW_MAX  # False for NaN and infinities
    xm = x if moderate else 0.0
    k = math.floor(xm * TWO_OVER_PI + 0.5)
    kf = float(k)
    hi, lo = _two_sum(xm - kf * CW1, -(kf * CW2))  # (k CW1 is exact and close to x: Sterbenz)
    hi, lo2 = _two_sum(hi, -(kf * CW3))
    hi, lo = _two_sum(hi, lo + lo2)
    far = ax < INF and not (moderate and (k == 0 or abs(hi) >= CW_TINY))
    # computed on every path: with a branch here, sin(x) + cos(2 x) stops LLVM 22's SPIR-V pre-legalizer
    ph_hi, ph_lo, ph_q = _payne_hanek(x if far else 1.0)
    return ph_hi if far else hi, ph_lo if far else lo, ph_q if far else k & 3


def _sin_poly(r, rl):
    """``sin(r + rl)`` for ``|r| <= pi/4``, ``rl`` below an ulp of ``r``: Taylor to ``r**17``."""
    z = r * r
    p = S17
    p = p * z + S15
    p = p * z + S13
    p = p * z + S11
    p = p * z + S9
    p = p * z + S7
    p = p * z + S5
    p = p * z + S3
    return r + (r * z * p + rl * (1.0 - 0.5 * z))


def _cos_poly(r, rl):
    """``cos(r + rl)`` for ``|r| <= pi/4``: Taylor to ``r**18``, ``1 - r**2/2`` with its rounding error."""
    z = r * r
    p = C18
    p = p * z + C16
    p = p * z + C14
    p = p * z + C12
    p = p * z + C10
    p = p * z + C8
    p = p * z + C6
    p = p * z + C4
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + (z * z * p - r * rl))


def sin64(x):
    x = float(x)
    r, rl, q = _reduce(x)
    v = _cos_poly(r, rl) if q & 1 == 1 else _sin_poly(r, rl)
    v = -v if q >= 2 else v
    v = x if abs(x) < TINY else v  # sin(x) rounds to x (and -0.0 stays -0.0)
    return v if abs(x) < INF else NAN


def cos64(x):
    x = float(x)
    r, rl, q = _reduce(x)
    q = (q + 1) & 3
    v = _cos_poly(r, rl) if q & 1 == 1 else _sin_poly(r, rl)
    v = -v if q >= 2 else v
    return v if abs(x) < INF else NAN


def tan64(x):
    x = float(x)
    r, rl, q = _reduce(x)
    s, c = _sin_poly(r, rl), _cos_poly(r, rl)
    v = -c / s if q & 1 == 1 else s / c
    v = x if abs(x) < TINY else v  # tan(x) rounds to x
    return v if abs(x) < INF else NAN


def _expm1_small(x):
    """``exp(x) - 1`` for ``|x| <= 1`` by its Taylor series to ``x**20`` (no cancellation)."""
    p = E20
    p = p * x + E19
    p = p * x + E18
    p = p * x + E17
    p = p * x + E16
    p = p * x + E15
    p = p * x + E14
    p = p * x + E13
    p = p * x + E12
    p = p * x + E11
    p = p * x + E10
    p = p * x + E9
    p = p * x + E8
    p = p * x + E7
    p = p * x + E6
    p = p * x + E5
    p = p * x + E4
    p = p * x + E3
    p = p * x + E2
    return x + x * x * p


def expm1_64(x):
    x = float(x)
    small = abs(x) <= 1.0
    v = _expm1_small(x if small else 0.0)
    v = x if x == 0.0 else v  # -0.0 stays -0.0
    w = exp64(x) - 1.0
    return v if small else w


def log1p_64(x):
    # log(u) * x / (u - 1) with u = 1 + x rounded: the quotient undoes u's rounding (Goldberg)
    x = float(x)
    u = 1.0 + x
    d = u - 1.0
    exact = d == 0.0
    v = log64(u) * (x / (1.0 if exact else d))
    v = x if exact else v
    return v if u < INF and x > -1.0 else log64(u)


def tanh64(x):
    x = float(x)
    ax = abs(x)
    t = expm1_64(2.0 * (ax if ax < 22.0 else 0.0))
    v = t / (t + 2.0)
    v = 1.0 if ax >= 22.0 else v
    v = x if math.isnan(x) else v
    return math.copysign(v, x)


def sinh64(x):
    x = float(x)
    ax = abs(x)
    t = expm1_64(ax if ax < 22.0 else 0.0)
    near = 0.5 * (t + t / (t + 1.0))  # no cancellation near 0
    e = exp64(0.5 * ax)
    far = e * (0.5 * e)  # exp(ax) / 2 without overflowing before the result does
    v = far if ax >= 22.0 else near  # (near is computed at 0 from 22 on)
    v = x if math.isnan(x) else v
    return math.copysign(v, x)


def cosh64(x):
    x = float(x)
    ax = abs(x)
    e = exp64(ax if ax <= 22.0 else 0.0)
    near = 0.5 * e + 0.5 / e
    h = exp64(0.5 * ax)
    v = h * (0.5 * h) if ax > 22.0 else near
    return x if math.isnan(x) else v


def _atan_poly(t):
    z = t * t
    p = T20
    p = p * z + T19
    p = p * z + T18
    p = p * z + T17
    p = p * z + T16
    p = p * z + T15
    p = p * z + T14
    p = p * z + T13
    p = p * z + T12
    p = p * z + T11
    p = p * z + T10
    p = p * z + T9
    p = p * z + T8
    p = p * z + T7
    p = p * z + T6
    p = p * z + T5
    p = p * z + T4
    p = p * z + T3
    p = p * z + T2
    p = p * z + T1
    return t + t * z * p


def atan64(x):
    # atan(|x|) = atan(c) + atan((|x| - c) / (1 + |x| c)) at c = 0, 1/2, 1, 3/2; past 39/16, pi/2 - atan(1/|x|)
    x = float(x)
    ax = abs(x)
    i1 = ax >= 0.4375
    i2 = ax >= 0.6875
    i3 = ax >= 1.1875
    i4 = ax >= 2.4375
    c = 1.5 if i3 else (1.0 if i2 else (0.5 if i1 else 0.0))
    hi = ATAN_1_5_HI if i3 else (ATAN_ONE_HI if i2 else (ATAN_HALF_HI if i1 else 0.0))
    lo = ATAN_1_5_LO if i3 else (ATAN_ONE_LO if i2 else (ATAN_HALF_LO if i1 else 0.0))
    t = (ax - c) / (1.0 + ax * c)
    t = -1.0 / ax if i4 else t
    hi = PIO2_HI if i4 else hi
    lo = PIO2_LO if i4 else lo
    v = hi + (lo + _atan_poly(t))
    v = x if math.isnan(x) else v
    return math.copysign(v, x)


def atan2_64(y, x):
    y = float(y)
    x = float(x)
    both_inf = math.isinf(x) and math.isinf(y)
    a = atan64(abs(y) / (abs(x) if x != 0.0 else 1.0))  # x = 0 and inf/inf are chosen below
    a = 0.0 if y == 0.0 else a
    a = PIO2_HI if x == 0.0 and y != 0.0 else a
    a = PIO2_HI * 0.5 if both_inf else a  # pi/4, reflected below where x is -inf
    a = (PI_HI - a) + PI_LO if x < 0.0 or (x == 0.0 and math.copysign(1.0, x) < 0.0 and y == 0.0) else a
    a = NAN if math.isnan(x) or math.isnan(y) else a
    return math.copysign(a, y)


def asin64(x):
    x = float(x)
    return atan2_64(x, math.sqrt((1.0 - x) * (1.0 + x)))


def acos64(x):
    x = float(x)
    return atan2_64(math.sqrt((1.0 - x) * (1.0 + x)), x)


FUNCTIONS = {math.exp: exp64, math.log: log64, math.log2: log2_64, math.log10: log10_64,
             math.sin: sin64, math.cos: cos64, math.tan: tan64, math.expm1: expm1_64, math.log1p: log1p_64,
             math.tanh: tanh64, math.sinh: sinh64, math.cosh: cosh64, math.atan: atan64, math.atan2: atan2_64,
             math.asin: asin64, math.acos: acos64}
"""The language's ``math`` functions this module implements in float64."""
IMPLEMENTED = tuple(f.__name__ for f in FUNCTIONS)
"""Their names, for messages."""

__all__ = ["FUNCTIONS", "IMPLEMENTED", "bit_rules", "cos64", "exp64", "from_bits", "log10_64", "log2_64", "log64",
           "sin64", "tan64"]
