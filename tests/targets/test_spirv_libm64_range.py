"""float64 math on Vulkan over the whole double range (``gpucompiler.targets.spirv.libm64``).

sin, cos and tan reduce every finite argument (Cody-Waite, Payne-Hanek past ``1.5 2**26``): checked
against exact values computed here (``pi`` by Gauss-Legendre in ``Decimal``, independent of the
module's Machin series; the reduction in rationals; the Taylor series in 320-bit fixed point), both
as Python (the module's functions run in CPython as written) and as SPIR-V kernels on lavapipe, which
give the same bits. The exp/log family at its overflow, underflow and subnormal edges against NumPy.
"""

from __future__ import annotations

import math
import random
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import device as gd, kernel
from gpucompiler.runtime import vulkan
from gpucompiler.targets.spirv import libm64 as L

WORST = 6381956970095103 * 2.0 ** 797
"""The double closest to a multiple of pi/2 (``r`` about ``4.7e-19``)."""
TRIG = (("sin", L.sin64), ("cos", L.cos64), ("tan", L.tan64))
BOUND = {"sin": 1.0, "cos": 1.0, "tan": 2.5}


def _pi(digits: int) -> Fraction:
    getcontext().prec = digits + 10
    a, b, t, p = Decimal(1), Decimal(1) / Decimal(2).sqrt(), Decimal(1) / 4, Decimal(1)
    for _ in range(12):
        a, b, t, p = (a + b) / 2, (a * b).sqrt(), t - p * ((a - b) / 2) ** 2, 2 * p
    return Fraction((a + b) ** 2 / (4 * t))


PI = _pi(420)  # about 1390 bits
_FIXED = 320


def _sin_cos(r: Fraction) -> tuple[Fraction, Fraction]:
    """sin and cos of ``|r| <= 1`` to ``2**-300`` absolute, exact-ish relative for tiny ``r``."""
    if abs(r) < Fraction(1, 2 ** 100):
        return r - r ** 3 / 6, 1 - r * r / 2
    one = 1 << _FIXED
    x = (r.numerator << _FIXED) // r.denominator
    sums = []
    for term, k in ((x, 1), (one, 0)):
        total = 0
        while term:
            total += term
            term = -term * x // one * x // one // ((k + 1) * (k + 2))
            k += 2
        sums.append(Fraction(total, one))
    return sums[0], sums[1]


def exact(name: str, x: float) -> Fraction | None:
    """``name(x)`` as a rational (None for infinities and NaN, whose value is NaN)."""
    if not math.isfinite(x):
        return None
    k = round(Fraction(x) / (PI / 2))
    s, c = _sin_cos(Fraction(x) - k * PI / 2)
    sin_x, cos_x = ((s, c), (c, -s), (-s, -c), (-c, s))[k % 4]
    return {"sin": sin_x, "cos": cos_x}.get(name, sin_x / cos_x if cos_x else None)


def ulps(got: float, want: Fraction | None) -> float:
    """Distance from the exact value in ulps of it (0 for NaN where NaN is due)."""
    if want is None:
        return 0.0 if math.isnan(got) else math.inf
    if not math.isfinite(got):
        return math.inf
    return float(abs(Fraction(got) - want) / Fraction(float(np.spacing(abs(float(want))))))


def arguments(seed: int, n: int) -> list[float]:
    """Random exponents over the whole range, subnormals, the doubles nearest to multiples of pi/2
    (random multiples up to 1e300, the first few hundred, their neighbours), the worst case, edges."""
    rng = random.Random(seed)
    xs = [rng.choice((-1, 1)) * 10 ** rng.uniform(-323.5, 308.25) for _ in range(n)]
    xs += [rng.uniform(-1e8, 1e8) for _ in range(n // 4)] + [rng.uniform(-4, 4) for _ in range(n // 4)]
    for k in [rng.randint(1, 10 ** rng.randint(1, 300)) for _ in range(n // 4)] + list(range(1, 300)):
        x = float(k * PI / 2)
        xs += [x, math.nextafter(x, 0), math.nextafter(x, math.inf), -x]
    return xs + [WORST, -WORST, 1.5 * 2 ** 26, math.nextafter(1.5 * 2 ** 26, 0), 1.7976931348623157e308,
                 -1.7976931348623157e308, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-310, 0.0, -0.0, 2.0 ** -26,
                 math.nextafter(2.0 ** -26, 0), 0.5, 0.75, 0.8, 1e22, 2.0 ** 1023]


def test_the_table_is_the_bits_of_two_over_pi():
    bits = L.TWO_OVER_PI_BITS[L.PAD:]
    assert L.TWO_OVER_PI_BITS[:L.PAD] == (0,) * L.PAD and all(0 <= c < 2 ** 24 for c in bits)
    value = Fraction(sum(c << 24 * (len(bits) - 1 - i) for i, c in enumerate(bits)), 1 << 24 * len(bits))
    assert 0 <= 2 / PI - value < Fraction(1, 2 ** (24 * len(bits)))
    # the split constants of the reductions are what they claim
    assert Fraction(L.CW1) + Fraction(L.CW2) + Fraction(L.CW3) - PI / 2 < Fraction(1, 2 ** 106)
    assert Fraction(L.PIO2_HI_1) + Fraction(L.PIO2_HI_2) == Fraction(L.PIO2_HI)


@pytest.mark.parametrize("name,fn", TRIG)
def test_trig_in_python_within_bound_of_the_exact_value_over_the_whole_range(name, fn):
    xs = arguments(1, 1500)
    errors = [ulps(fn(x), exact(name, x)) for x in xs]
    worst = int(np.argmax(errors))
    assert errors[worst] <= BOUND[name], (xs[worst], fn(xs[worst]))


@pytest.mark.parametrize("name,fn", TRIG)
def test_trig_agrees_with_cpython_math(name, fn):
    """Within a few ulp of CPython's ``math`` (the platform libm); the worst case of the reduction is
    left out: there this machine's libm is 8 (cos) and 14 (tan) ulp from the exact value, ours within 1-2."""
    ref = getattr(math, name)
    xs = [x for x in arguments(2, 1500) if abs(x) != WORST]
    got, want = np.array([fn(x) for x in xs]), np.array([ref(x) for x in xs])
    err = np.abs(got - want) / np.spacing(np.abs(want))
    assert float(np.max(err)) <= BOUND[name] + 1.0


def test_special_values():
    for name, fn in TRIG:
        for x in (math.inf, -math.inf, math.nan):
            assert math.isnan(fn(x)), (name, x)
        for x in (0.0, -0.0, 5e-324, -5e-324, 1e-310):
            want = 1.0 if name == "cos" else x
            assert fn(x) == want and math.copysign(1, fn(x)) == math.copysign(1, want), (name, x)


# -- the same on lavapipe ------------------------------------------------------------------------------


def launch(k, out, *arrays) -> None:
    vulkan.launch(k, (out.shape[-1] + 63) // 64, 64, (out, *arrays))


@kernel
def trig(out, x):
    i = gd.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[0, i] = math.sin(v)
        out[1, i] = math.cos(v)
        out[2, i] = math.tan(v)


def test_trig_kernels_on_vulkan_give_the_python_bits_and_the_bound(vulkan_device):
    xs = arguments(3, 3000) + [math.inf, -math.inf, math.nan]
    out = np.zeros((3, len(xs)))
    launch(trig, out, np.array(xs))
    python = np.array([[fn(x) for x in xs] for _, fn in TRIG])
    np.testing.assert_array_equal(out, python)
    for row, (name, _) in enumerate(TRIG):
        assert max(ulps(float(v), exact(name, x)) for v, x in zip(out[row], xs)) <= BOUND[name], name


def trig_law(v, a):
    return math.sin(v) + a * math.cos(v) + math.tan(v)


@kernel(plugins=("enzyme",))
def trig_derivative(xs, out, a):
    i = gd.grid(1)
    if i < xs.shape[0]:
        out[i] = autodiff(Reverse, trig_law, Active(xs[i]), Const(a))[0]


def test_gradient_through_both_reductions_on_vulkan(vulkan_device):
    """Past 1e8 and near multiples of pi/2 (Payne-Hanek) the derivative is still cos - a sin + 1/cos**2."""
    xs = np.array([1e200, WORST, 1e9, -3.3e15, float(12345 * PI / 2), float(7 * PI / 2) + 1e-7, 0.5, -2.0,
                   1.7976931348623157e308, 1.2e8] * 8)
    out = np.zeros_like(xs)
    vulkan.launch(trig_derivative, 2, 64, (xs, out, 0.3))
    s = np.array([float(exact("sin", x)) for x in xs])  # pyright: ignore[reportArgumentType]
    c = np.array([float(exact("cos", x)) for x in xs])  # pyright: ignore[reportArgumentType]
    np.testing.assert_allclose(out, c - 0.3 * s + 1 / c ** 2, rtol=1e-14)
    emulated = np.zeros_like(xs)
    trig_derivative[2, 64, "cpu"](xs, emulated, 0.3)
    np.testing.assert_allclose(out, emulated, rtol=1e-13)


@kernel(plugins=("enzyme",))
def trig_tangent(xs, out, a):
    i = gd.grid(1)
    if i < xs.shape[0]:
        out[i] = autodiff(Forward, trig_law, Duplicated(xs[i], 1.0), Const(a))[0]


def test_forward_derivative_past_cody_waite_on_vulkan(vulkan_device):
    xs = np.array([1e300, -WORST, 2.5e8, float(99991 * PI / 2), 3.0] * 13)
    out = np.zeros_like(xs)
    vulkan.launch(trig_tangent, 2, 64, (xs, out, 0.7))
    s = np.array([float(exact("sin", x)) for x in xs])  # pyright: ignore[reportArgumentType]
    c = np.array([float(exact("cos", x)) for x in xs])  # pyright: ignore[reportArgumentType]
    np.testing.assert_allclose(out, c - 0.7 * s + 1 / c ** 2, rtol=1e-14)


# -- exp, log and the rest at the edges of the range ---------------------------------------------------
FAMILY = (("exp", L.exp64, np.exp, 1), ("expm1", L.expm1_64, np.expm1, 1), ("log", L.log64, np.log, 1),
          ("log2", L.log2_64, np.log2, 1), ("log10", L.log10_64, np.log10, 1), ("log1p", L.log1p_64, np.log1p, 2),
          ("sinh", L.sinh64, np.sinh, 4), ("cosh", L.cosh64, np.cosh, 4), ("tanh", L.tanh64, np.tanh, 2))
_OVER = 709.782712893384  # the largest x whose exp is finite
_UNDER = -745.1332191019412  # below: exp rounds to 0


def edges() -> np.ndarray:
    rng = np.random.default_rng(7)
    near = [v for e in (_OVER, _UNDER, -708.3964185322641, 710.4758600739439, -710.4758600739439, 22.0, -22.0, -1.0)
            for v in (e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf))]
    x = np.concatenate([near, rng.uniform(-746, 711, 3000), rng.uniform(-745.2, -708, 1000),
                        rng.uniform(700, 710.5, 1000), 10.0 ** rng.uniform(-323.5, 308.25, 2000),
                        [0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1.7976931348623157e308, np.inf, np.nan, 1.0]])
    return np.concatenate([x, -x])


def within(got: np.ndarray, want: np.ndarray, bound: float) -> float:
    """The largest error in ulps (equal values, infinities and NaNs: 0)."""
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(all="ignore"):
        err = np.abs(got - want) / np.spacing(np.abs(want))
    return float(np.max(np.where(same, 0.0, err), initial=0.0)) - bound


def test_exp_log_family_at_the_edges_in_python():
    x = edges()
    for name, fn, ref, bound in FAMILY:
        with np.errstate(all="ignore"):
            got, want = np.array([_python(fn, v) for v in x]), ref(x)
        assert within(got, want, bound) <= 0, name
        zero = want == 0
        np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]), err_msg=name)


def _python(fn, v: float) -> float:
    try:
        return fn(float(v))
    except ValueError:  # CPython's math.sqrt of a negative (compiled: NaN)
        return math.nan


@kernel
def family(out, x):
    i = gd.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[0, i] = math.exp(v)
        out[1, i] = math.expm1(v)
        out[2, i] = math.log(v)
        out[3, i] = math.log2(v)
        out[4, i] = math.log10(v)
        out[5, i] = math.log1p(v)
        out[6, i] = math.sinh(v)
        out[7, i] = math.cosh(v)
        out[8, i] = math.tanh(v)


def test_exp_log_family_at_the_edges_on_vulkan(vulkan_device):
    x = edges()
    out = np.zeros((len(FAMILY), len(x)))
    launch(family, out, x)
    for row, (name, _, ref, bound) in enumerate(FAMILY):
        with np.errstate(all="ignore"):
            want = ref(x)
        assert within(out[row], want, bound) <= 0, name
    edge = np.abs(x) == 22.0  # sinh was 0 there
    np.testing.assert_allclose(out[6][edge], np.sinh(x[edge]), rtol=1e-15)
    python = np.array([[_python(fn, v) for v in x] for _, fn, _, _ in FAMILY])
    np.testing.assert_array_equal(out, python)
