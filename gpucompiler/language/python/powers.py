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

In a loop the frontend versions (frontend/powerloops.py) a power is
:func:`fast_power`: the same value with no branch, and a flag saying where
the checked operator must run instead (the loop is then rerun checked).
"""

from __future__ import annotations

import operator
import struct

from llvmlite import ir

from ... import types as T
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, const, widen
from ...interpreter.rules import Any_, CallResult, Constant
from ..precedence import base
from .floatint import exact_pow, finite

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


# -- loops whose powers are versioned (frontend/powerloops.py): the unchecked copy's intrinsics
_SCALAR = {T.float64, T.float32, T.int64, T.boolean}
#: n -> (comparison, float bits -> log2 bound): ``x * x`` is infinite exactly where ``|x| >= 2**512``
#: (``2**64`` in float32), ``1 / x`` where ``|x| <= 2**-1024`` (``2**-128``)
_OVERFLOWS = {2: (">=", {64: 512, 32: 64}), -1: ("<=", {64: -1024, 32: -128})}


def fast_power(cg, x, n: int):
    """``x ** n`` as :func:`small_power` computes it on its hot path, with no branch: ``(value, outside)``,
    ``value`` the checked operator's result wherever the ``i1`` ``outside`` is false. A zero, infinite or
    NaN base gives the plain product's IEEE value, which is libm's ``pow`` there; ``outside`` holds
    where the operator raises (under the Python error model) or takes libm's ``pow`` for a finite
    nonzero base whose power is huge or tiny."""
    b = cg.b
    r, ok, always = small_power(cg, x, n)
    # check_cases's test; under fastmath (``ninf``) LLVM folds the checked operator's finiteness test away,
    # so no flag either: the copy is the only loop left
    checked = cg.mod.python_errors and not cg.mod.error_slot and cg.mod.math_errors and not cg.mod.fastmath
    if always:  # raises where the result is not finite for a finite base (an overflow, 0.0 ** -1)
        if not checked:
            return r, ir.Constant(ir.IntType(1), 0)
        bits = 64 if isinstance(x.type, ir.DoubleType) else 32
        if n in _OVERFLOWS:  # one comparison of |x| (the only ones, as the scan of a chunk needs no r)
            sym, bound = _OVERFLOWS[n]
            size = cg.call_intrinsic("llvm.fabs", _ftype(x), [x])
            return r, b.fcmp_ordered(sym, size, ir.Constant(x.type, 2.0 ** bound[bits]))
        return r, b.and_(b.not_(ok), finite(cg, x))
    if cg.mod.error_slot:  # code the AD engine transforms: libm's pow in a select, never a rerun
        libm = exact_pow(cg, _ftype(x), [x, ir.Constant(x.type, float(n))])
        return b.select(ok, r, libm), ir.Constant(ir.IntType(1), 0)
    plain = _plain(b, x, abs(n))
    if n < 0:
        plain = b.fdiv(ir.Constant(x.type, 1.0), plain)
    zero = b.fcmp_ordered("==", x, ir.Constant(x.type, 0.0))
    outside = b.and_(b.not_(ok), _ordinary(cg, x, zero))
    if checked and n < 0:  # 0.0 ** -n: ZeroDivisionError
        outside = b.or_(outside, zero)
    return b.select(ok, r, plain), outside


def _ordinary(cg, x, zero):
    """``x`` is finite and not zero: on the host one unsigned comparison of the bits shifted past the sign
    (LLVM's SLP vectorizer leaves scalar the ``is.fpclass`` test it makes of float comparisons)."""
    b = cg.b
    if cg.mod.error_slot or cg.target.is_gpu:
        return b.and_(finite(cg, x), b.not_(zero))
    double = isinstance(x.type, ir.DoubleType)
    word = ir.IntType(64 if double else 32)
    infinity = (0x7FF0000000000000 if double else 0x7F800000) << 1
    size = b.shl(b.bitcast(x, word), word(1))
    return b.icmp_unsigned("<", b.sub(size, word(1)), word(infinity - 1))


@base.handler
def _versioned_power(interp, fn, args):
    """``power_fast(x, n)``, ``power_outside(x, n)``."""
    if fn not in (K.power_fast, K.power_outside) or len(args) != 2:
        return None
    x, n = args
    checked = interp.abstract_call(operator.pow, [x, n])
    if checked is None:
        return None
    rt = checked.restype
    if isinstance(rt, Const) or not isinstance(n, Const) or widen(rt).kind != "f":  # folded, or an int power
        return checked if fn is K.power_fast else CallResult(const(False))
    which = 0 if fn is K.power_fast else 1
    return CallResult(rt if which == 0 else T.boolean, lambda cg, a, at, _rt: fast_power(
        cg, cg.cast(a[0], widen(at[0]), widen(rt)), int(n.value))[which])


def _unchecked_type(roles, *values):
    ok = len(roles.value) == len(values)
    for role, v in zip(roles.value, values):
        w = widen(v)
        if role == 0:
            ok = ok and w in _SCALAR
        else:
            ok = (ok and isinstance(w, T.ArrayType) and w.ndim == abs(role) and w.dtype in (T.float32, T.float64)
                  and not (role < 0 and w.readonly))
    return const(ok)


@base.define(K.powers_unchecked, Constant, Any_, varargs=True, restype=_unchecked_type)
def _powers_unchecked(cg, args, argtypes, rt):
    return None


@base.define(K.unit_strides, Any_, varargs=True,
             restype=lambda *arrays: const(all(getattr(widen(a), "layout", None) == "C" for a in arrays)))
def _unit_strides(cg, args, argtypes, rt):
    return None


#: the function a module declares when it holds a power loop's blocks (frontend/powerloops.py): the
#: optimisation runs the SLP vectorizer over it (stages/optimize.py)
SLP_MARKER = "gpuc.vector_blocks"


@base.define(K.vector_block, T.boolean, restype=T.boolean, pure=False)
def _vector_block(cg, args, argtypes, rt):
    cg.mod.declare(SLP_MARKER, ir.VoidType(), [])
    return args[0]


def _extent(cg, arr, t):
    """``(lo, hi, empty)``: the addresses ``[lo, hi)`` spanned by the elements of ``arr`` (an array of
    type ``t``), and whether it has none."""
    b, i64 = cg.b, ir.IntType(64)
    lo = hi = b.ptrtoint(b.extract_value(arr, 0), i64)
    empty = ir.Constant(ir.IntType(1), 0)
    size = i64(t.dtype.itemsize)
    for axis in range(t.ndim):
        n = b.extract_value(arr, [1, axis])
        empty = b.or_(empty, b.icmp_signed("<=", n, i64(0)))
        if t.layout == "C":
            size = b.mul(size, n)
            continue
        span = b.mul(b.sub(n, i64(1)), b.extract_value(arr, [2, axis]))
        negative = b.icmp_signed("<", span, i64(0))
        lo = b.add(lo, b.select(negative, span, i64(0)))
        hi = b.add(hi, b.select(negative, i64(0), span))
    return lo, b.add(hi, size if t.layout == "C" else i64(t.dtype.itemsize)), empty


@base.define(K.disjoint, T.ArrayType, T.ArrayType, restype=lambda a, b: T.boolean, pure=False)
def _disjoint(cg, args, argtypes, rt):
    b = cg.b
    if cg.mod.error_slot:  # no power is rerun there (fast_power): the copies compute the same
        return ir.Constant(ir.IntType(1), 1)
    (alo, ahi, aempty), (blo, bhi, bempty) = (_extent(cg, v, widen(t)) for v, t in zip(args, argtypes))
    apart = b.or_(b.icmp_unsigned("<=", ahi, blo), b.icmp_unsigned("<=", bhi, alo))
    return b.or_(apart, b.or_(aempty, bempty))
