"""``x ** n`` for small constant integral ``n``: multiplications (no ``pow`` call), CPython's results.

Each compiled value is compared with the exactly rounded power (``Fraction``)
and with CPython's ``x ** n`` (glibc's ``pow``, within 0.52 ulp, so one ulp
apart at most); the exceptions are CPython's; the IR is read back for the
absence of ``pow``; the derivatives are the exact ``n * x ** (n - 1)``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler import types as T

EXPONENTS = (-8, -3, -2, -1, 0, 1, 2, 3, 4, 5, 7, 8)


def _ulps(a: float, b: float) -> int:
    ia, ib = np.array([a, b]).view(np.int64)
    return abs(int(ia) - int(ib))


def _values():
    rng = np.random.default_rng(28)
    xs = rng.uniform(-1e3, 1e3, 300) * np.exp2(rng.integers(-12, 12, 300))
    return [float(x) for x in xs] + [1.0, -1.0, 0.5, 3.0, 1e-30, -7.25]


def _compiled(n, tmp_path, as_float=False, **options):
    """A function ``x ** n`` written in a file (the frontend reads its source)."""
    path = tmp_path / f"pow_{'f' if as_float else 'i'}{n if n >= 0 else 'm' + str(-n)}.py"
    path.write_text(f"def p(x):\n    return x ** {float(n) if as_float else n}\n")
    scope: dict = {"__name__": path.stem, "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    return scope["p"], jit(**options)(scope["p"])


@pytest.mark.parametrize("n", EXPONENTS)
def test_rounded_once_and_within_an_ulp_of_cpython(n, tmp_path):
    fn, f = _compiled(n, tmp_path)
    for x in _values():
        got, want = f(x), fn(x)
        exact = float(Fraction(x) ** n)
        if n in (-3, -2, -1, 0, 1, 2, 3, 4):
            assert got == exact, (n, x, got, exact)  # correctly rounded (pow is within 0.52 ulp)
        else:
            assert _ulps(got, exact) <= 1, (n, x, got, exact)
        assert _ulps(got, want) <= 1, (n, x, got, want)


@pytest.mark.parametrize("n", (2, 3, -1, -2, 4))
def test_float_exponent_and_float32(n, tmp_path):
    _, f = _compiled(n, tmp_path, as_float=True)
    for x in _values()[:50]:
        assert f(x) == float(Fraction(x) ** n)
    x32 = np.float32(1.1)
    got = f(x32)
    assert isinstance(got, (float, np.floating))
    assert np.float32(got) == np.float32(Fraction(float(x32)) ** n)


@pytest.mark.parametrize("n", (2, 3, 4, -1, -2, 5, -3))
def test_special_values_and_errors_as_cpython(n, tmp_path):
    fn, f = _compiled(n, tmp_path)
    for x in (0.0, -0.0, math.inf, -math.inf, math.nan, 1e200, -1e200, 1e-200, 5e-324):
        try:
            want = fn(x)
        except ArithmeticError as exc:
            with pytest.raises(type(exc)):
                f(x)
            continue
        got = f(x)
        if math.isnan(want):
            assert math.isnan(got)
        else:
            assert got == want and math.copysign(1, got) == math.copysign(1, want), (n, x, got, want)


@pytest.mark.parametrize("n", (2, 3, -2, 5))
def test_ieee_under_the_numpy_error_model(n, tmp_path):
    _, f = _compiled(n, tmp_path, error_model="numpy")
    with np.errstate(all="ignore"):
        for x in (0.0, -0.0, 1e200, -1e200, math.inf, math.nan, 2.5):
            want = np.float64(x) ** n
            got = f(x)
            assert (math.isnan(got) and math.isnan(want)) or (got == want and
                                                             math.copysign(1, got) == math.copysign(1, want))


@pytest.mark.parametrize("n,options", [(2, {}), (3, {}), (-1, {}), (-2, {}), (8, {}), (2, {"error_model": "numpy"}),
                                       (3, {"fastmath": True}), (4, {"error_model": "numpy"})])
def test_no_pow_call(n, options, tmp_path):
    """No ``pow`` but on the cold path of a result beyond the products' exact range (powers.py)."""
    _, f = _compiled(n, tmp_path, **options)
    ir = f.inspect_llvm(T.float64)
    block, calls = "", []
    for line in ir.splitlines():
        label = re.match(r"^([\w.]+):", line)
        block = label.group(1) if label else block
        if re.search(r"call [^@]*@(llvm\.)?pow(f|\.f64|\.f32)?\(", line):
            calls.append(block)
    assert all(b.startswith("pow.cold") for b in calls), ir
    assert not calls or (n not in (2, -1) and not options.get("fastmath")), ir
    assert f(1.5) == pytest.approx(1.5 ** n, rel=1e-15)


def test_larger_powers_still_call_pow(tmp_path):
    _, f = _compiled(9, tmp_path)
    assert re.search(r"call [^@]*@pow\(", f.inspect_llvm(T.float64))
    assert f(1.5) == 1.5 ** 9


def test_fastmath_products_within_a_few_ulps(tmp_path):
    for n in (3, 5, -3, 8):
        fn, f = _compiled(n, tmp_path, fastmath=True)
        for x in _values()[:100]:
            assert _ulps(f(x), fn(x)) <= 4


def test_integer_base(tmp_path):
    for n in (2, 3, 0, -1, -2):
        fn, f = _compiled(n, tmp_path)
        for i in (3, -7, 1, 12345):
            assert f(i) == fn(i) and type(f(i)) is type(fn(i))
    _, f = _compiled(-1, tmp_path)
    with pytest.raises(ZeroDivisionError):
        f(0)


def test_derivatives_exact(tmp_path):
    enzyme = pytest.importorskip("enzyme_plugin")
    for n in (2, 3, 4, -1, -2, 5, -3, 8):
        fn, _ = _compiled(n, tmp_path)
        for x in (1.7, -0.6, 2.5):
            assert enzyme.gradient(fn, x) == pytest.approx(n * x ** (n - 1), rel=1e-14)


def square_of(a):
    return a ** 2


def float_square_of(a):
    return a ** 2.0


def root_of(a):
    return a ** 0.5


def sum_of_squares(a):
    return (a ** 2).sum()


@pytest.mark.parametrize("fn", [square_of, float_square_of, root_of, sum_of_squares])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.int64, np.uint16])
def test_array_powers_as_numpy(fn, dtype):
    """``a ** 2`` and ``a ** 0.5`` of arrays are NumPy's ``square``/``sqrt`` (its own fast path),
    bit for bit and in NumPy's dtype; no ``pow`` per element."""
    x = np.array([-3.5, -0.0, 0.0, 2.0, 1e200, np.nan, 7.25, 100.0]).astype(dtype) if np.dtype(dtype).kind == "f" \
        else np.array([0, 1, 3, 17, 100, 127]).astype(dtype)
    with np.errstate(all="ignore"):
        want = fn(x)
        got = jit(fn)(x)
    np.testing.assert_array_equal(got, want)
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype
        assert np.array_equal(np.signbit(got), np.signbit(want))
    if fn in (square_of, sum_of_squares) or np.dtype(dtype).kind == "f":
        ir = jit(fn).inspect_llvm(x)
        assert not re.search(r"call [^@]*@(llvm\.)?pow(f|\.f64|\.f32)?\(", ir)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, -1, -2, -5, 2.0, -3.0, 100, 2 + 0j])
def test_complex_integral_powers_as_cpython(n, tmp_path):
    """``z ** n`` of a complex and an integral constant: CPython's c_powi (multiplications from
    ``1+0j``), bit for bit, with its ZeroDivisionError and OverflowError (was: not compiled)."""
    name = f"cpow_{abs(hash(repr(n)))}"
    path = tmp_path / f"{name}.py"
    path.write_text(f"def p(z):\n    return z ** {n!r}\n")
    scope: dict = {"__name__": name, "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    fn, f = scope["p"], jit(scope["p"])
    rng = np.random.default_rng(7)
    values = [complex(a, b) for a, b in rng.standard_normal((100, 2)) * 3]
    values += [0j, 1e200 + 1j, complex(math.inf, 0), complex(math.nan, 1), 1e-200j, -2 + 0j, 1j]
    for z in values:
        try:
            want = fn(z)
        except ArithmeticError as exc:
            with pytest.raises(type(exc), match=re.escape(str(exc))):
                f(z)
            continue
        assert repr(f(z)) == repr(want), (n, z)


def power_terms(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] ** 3 + x[i] ** -2 + x[i] ** 4
    return s


def test_forward_and_second_derivatives_exact():
    enzyme = pytest.importorskip("enzyme_plugin")
    x = np.array([0.7, -1.3, 2.0])
    np.testing.assert_allclose(enzyme.jacobian(power_terms, x), 3 * x ** 2 - 2 * x ** -3.0 + 4 * x ** 3, rtol=1e-14)
    np.testing.assert_allclose(enzyme.hvp(power_terms, x, np.ones(3)), 6 * x + 6 * x ** -4.0 + 12 * x ** 2,
                               rtol=1e-13)
