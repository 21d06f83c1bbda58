"""``x ** n`` for a float ``x`` and a small integral constant ``n``: multiplications, not ``pow``.

``x ** 2`` and ``x ** -1`` are one correctly rounded operation each
(``x * x``, ``1 / x``). Larger powers keep the square's rounding error with
an FMA (``x * x`` as the unevaluated sum ``h + l``, exactly) and carry it
through each product, so the result is rounded once, as a correctly
rounded ``pow`` would round it; glibc's ``pow``, which CPython calls, is
within 0.52 ulp and so differs from this in rare cases by one ulp (measured
in docs/benchmarks.md "Integer powers"). The products are exact only while
``|x| ** |n|`` stays well inside the normal range (``SAFE``): a zero,
infinite or NaN base, an overflow, and a result or reciprocal near or
below the subnormals (where a square already rounds, ``x ** -2`` was 4 ulp
off near 2**1024 and ``x ** -8`` 0.0 for a subnormal result) are libm's
``pow`` on a cold path, as CPython computes them (on a GPU, whose device
``pow`` is not CPython's and Vulkan's has no float64, the plain product
there: IEEE's zero, inf and NaN, an ulp or so off at the ends). Under ``fastmath`` every
power is the plain product chain (LLVM's and Numba's ``afn`` rewriting).
"""

from __future__ import annotations

import struct

from llvmlite import ir

from ... import types as T
from .floatint import finite

#: the exponents that compile to multiplications (beyond them: ``pow``)
SMALL = 8
#: float bits -> the log2 bound on ``|x| ** |n|`` within which the compensated products are exact (an
#: FMA's error of a product above 2**-960 is a normal double) and a reciprocal stays normal
SAFE = {32: 100, 64: 960}


def small_exponent(value) -> int | None:
    """``value`` as an int when it is an integral int or float constant with ``|value| <= SMALL``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    n = int(value)
    return n if abs(n) <= SMALL else None


def _plain(b, x, n: int):
    """``x ** |n|`` by squaring, each product rounded."""
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else b.fmul(result, base)
        n >>= 1
        if n:
            base = b.fmul(base, base)
    return result


def _two_product(cg, a, b):
    """``a * b`` as ``(p, e)`` with ``p + e`` exact (FMA)."""
    p = cg.b.fmul(a, b)
    return p, cg.call_intrinsic("llvm.fma", _ftype(a), [a, b, cg.b.fneg(p)])


def _ftype(v):
    return T.float32 if isinstance(v.type, ir.FloatType) else T.float64


def _dd_mul(cg, a, b):
    """The product of two double-word values ``(h, l)`` (``l`` None: exactly zero); the ``l * l``
    term is below rounding."""
    (ah, al), (bh, bl) = a, b
    p, e = _two_product(cg, ah, bh)
    for hi, lo in ((ah, bl), (bh, al)):
        if lo is not None:
            e = cg.b.fadd(e, cg.b.fmul(hi, lo))
    return p, e


def _compensated(cg, x, n: int):
    """``x ** |n|`` as a double-word ``(h, l)``, by squaring."""
    result, base = None, (x, None)
    while n:
        if n & 1:
            result = base if result is None else _dd_mul(cg, result, base)
        n >>= 1
        if n:
            base = _dd_mul(cg, base, base)
    assert result is not None and result[1] is not None
    return result


def small_power(cg, x, n: int):
    """``x ** n`` (``n`` from :func:`small_exponent`), in ``x``'s float type, as ``(r, ok, always)``:
    ``always`` (a Python bool): ``r`` is the value for every ``x`` and ``ok`` (an ``i1``) says it is
    finite (the Python error model's check); otherwise ``r`` is the value where ``ok`` holds, and
    elsewhere the caller computes libm's ``pow`` (on a cold path: ``ok`` holds for every ``x`` whose
    power is neither tiny nor huge)."""
    b, one = cg.b, ir.Constant(x.type, 1.0)
    if n == 0:
        return one, ir.Constant(ir.IntType(1), 1), True  # CPython: x ** 0 is 1.0 for every x, NaN included
    plain = _plain(b, x, abs(n))
    if n < 0:
        plain = b.fdiv(one, plain)
    if n in (1, 2, -1) or cg.mod.fastmath:  # one correctly rounded operation (or afn's products)
        return plain, finite(cg, plain), True
    h, low = _compensated(cg, x, abs(n))
    if n > 0:
        r = b.fadd(h, low)
    else:  # 1 / (h + l): the reciprocal of h, corrected by one Newton step on the double word
        r0 = b.fdiv(one, h)
        t = cg.call_intrinsic("llvm.fma", _ftype(x), [b.fneg(r0), h, one])
        err = b.fsub(t, b.fmul(r0, low))
        r = cg.call_intrinsic("llvm.fma", _ftype(x), [r0, err, r0])
    ok = _in_range(cg, h)
    if cg.target.is_gpu:  # no pow on the side (Vulkan has no float64 one; device pows are not CPython's)
        value = b.select(ok, r, plain)  # the plain product: IEEE's zero, inf and NaN, an ulp or so at the ends
        return value, finite(cg, value), True
    return r, ok, False


def _in_range(cg, h):
    """``2**-SAFE <= |h| <= 2**SAFE`` (false for a zero, an infinity, NaN): one unsigned comparison of
    the bits shifted past the sign; in code the AD engine may differentiate (it refuses an active
    float's bits as an integer: ``error_slot`` functions, and any on a GPU) two float comparisons."""
    b, bits = cg.b, 64 if isinstance(h.type, ir.DoubleType) else 32
    if cg.mod.error_slot or cg.target.is_gpu:
        size = cg.call_intrinsic("llvm.fabs", _ftype(h), [h])
        return b.and_(b.fcmp_ordered(">=", size, ir.Constant(h.type, 2.0 ** -SAFE[bits])),
                      b.fcmp_ordered("<=", size, ir.Constant(h.type, 2.0 ** SAFE[bits])))
    word = ir.IntType(bits)
    fmt = "<d" if bits == 64 else "<f"
    code = "<q" if bits == 64 else "<i"

    def shifted(v: float) -> int:
        return struct.unpack(code, struct.pack(fmt, v))[0] << 1

    lo, hi = shifted(2.0 ** -SAFE[bits]), shifted(2.0 ** SAFE[bits])
    offset = b.sub(b.shl(b.bitcast(h, word), ir.Constant(word, 1)), ir.Constant(word, lo))
    return b.icmp_unsigned("<=", offset, ir.Constant(word, hi - lo))
