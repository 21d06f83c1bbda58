"""int8-uint64 and complex numbers in ``@jit`` functions, against NumPy and CPython.

Arithmetic follows NumPy's promotion table and wraps around like NumPy;
Python number literals take the other operand's type (NumPy 2's rule);
complex division and ``abs`` are CPython's algorithms.
"""

import importlib.util
import itertools
import operator

import numpy as np
import pytest

from gpucompiler import jit, types as T
from gpucompiler.errors import TypeInferenceError

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
PAIRS = [(d, d) for d in INTS] + [
    (np.int8, np.uint8), (np.uint8, np.int16), (np.int16, np.uint16), (np.uint32, np.int32), (np.uint32, np.int64),
    (np.uint64, np.int64), (np.uint64, np.int8), (np.int8, np.int64), (np.uint16, np.uint64), (np.uint8, np.float32)]


def _values(dt, rng, n=64):
    if np.dtype(dt).kind == "f":
        return rng.uniform(-300, 300, n).astype(dt)
    info = np.iinfo(dt)
    edges = np.array([info.min, info.max, 0, 1, info.max // 2, info.min // 2 + 1], dtype=dt)
    return np.concatenate([edges, rng.integers(info.min, int(info.max) + 1, n - edges.size, dtype=dt)])


@jit
def _arith(a, b, add, sub, mul, floordiv, mod, truediv):
    for i in range(a.shape[0]):
        x, y = a[i], b[i]
        add[i], sub[i], mul[i] = x + y, x - y, x * y
        floordiv[i], mod[i], truediv[i] = x // y, x % y, x / y


@jit
def _bitwise(a, b, and_, or_, xor):
    for i in range(a.shape[0]):
        and_[i], or_[i], xor[i] = a[i] & b[i], a[i] | b[i], a[i] ^ b[i]


@pytest.mark.parametrize("da,db", PAIRS)
def test_integer_arithmetic_promotes_and_wraps_like_numpy(da, db):
    rng = np.random.default_rng(7)
    a, b = _values(da, rng), _values(db, rng)[::-1].copy()
    b[b == 0] = 1
    with np.errstate(all="ignore"):
        want = [a + b, a - b, a * b, a // b, a % b, a / b]
    outs = [np.zeros_like(w) for w in want]
    _arith(a, b, *outs)
    for got, w, name in zip(outs, want, ["+", "-", "*", "//", "%", "/"]):
        np.testing.assert_array_equal(got, w, err_msg=name)
    if np.result_type(da, db).kind == "f":  # uint64 with a signed type, or a float: NumPy's TypeError
        with pytest.raises(TypeError):
            operator.and_(a, b)
        with pytest.raises(TypeInferenceError, match="no implementation"):
            _bitwise(a, b, *[np.zeros(a.size)] * 3)
        return
    want = [a & b, a | b, a ^ b]
    outs = [np.zeros_like(w) for w in want]
    _bitwise(a, b, *outs)
    for got, w in zip(outs, want):
        np.testing.assert_array_equal(got, w)


@pytest.mark.parametrize("dt", INTS)
def test_comparisons_shifts_and_min_max_of_every_integer_type(dt):
    @jit
    def f(a, b, k):
        return a < b, a >= b, a == b, a >> k, a << k, min(a, b), max(a, b), abs(a), -a, ~a

    rng = np.random.default_rng(1)
    bits = np.iinfo(dt).bits
    for x, y in zip(_values(dt, rng, 16), _values(dt, rng, 16)[::-1]):
        k = dt(int(rng.integers(0, bits)))
        with np.errstate(all="ignore"):
            want = (x < y, x >= y, x == y, x >> k, x << k, min(x, y), max(x, y), abs(x), -x, ~x)
        got = f(x, y, k)
        assert [int(v) for v in got] == [int(v) for v in want], (x, y, k)


def test_uint64_compares_exactly_with_signed_integers_as_numpy_2_does():
    @jit
    def cmp(u, s):
        return u > s, u == s, s < u

    big = np.uint64(2**64 - 1)
    assert cmp(big, np.int64(-1)) == (True, False, True)
    assert cmp(np.uint64(2**63), np.int64(2**63 - 1)) == (True, False, True)
    assert cmp(np.uint64(5), np.int64(5)) == (False, True, False)


def test_literals_take_the_other_operands_type_numpy_2_rules():
    @jit
    def f(x, y):
        return x + 1, y * 2.0

    a, b = f(np.uint8(255), np.float32(1.1))
    assert a == (np.uint8(255) + 1) == 0
    assert b == np.float32(1.1) * 2.0 and isinstance(b, float)
    assert f(np.uint8(3), np.float32(0.5)) == (4, 1.0)

    @jit
    def typed(x):
        return x + 1

    assert "add i8" in typed.inspect_llvm(T.uint8)


def test_result_types_follow_numpys_table():
    @jit
    def mixed(a, b):
        return a + b

    for da, db in itertools.product([np.int8, np.uint8, np.uint32, np.uint64, np.float32], repeat=2):
        x, y = da(7), db(3)
        got = mixed(x, y)
        want = x + y
        assert got == want and isinstance(got, float) == (want.dtype.kind == "f"), (da, db)


def test_arrays_of_every_integer_dtype_read_and_write_and_convert():
    @jit
    def convert(src, dst):
        for i in range(src.shape[0]):
            dst[i] = src[i]

    rng = np.random.default_rng(3)
    for sd, dd in itertools.product(INTS + [np.float64, np.float32], INTS):
        src = _values(sd, rng, 32) if sd in INTS else rng.uniform(-100, 100, 32).astype(sd)
        dst = np.zeros(32, dd)
        convert(src, dst)
        np.testing.assert_array_equal(dst, src.astype(dd), err_msg=f"{sd} -> {dd}")


COMPLEX_CASES = [(1 + 2j, 3 - 4j), (-0.5j, 2.0 + 0j), (1e300 + 1e300j, 1e-300 + 1j), (2.5 + 0j, 0.0 - 7j),
                 (complex("nan+1j"), 1 + 1j), (3 + 4j, 1e-320 + 0j)]


@pytest.mark.parametrize("z,w", COMPLEX_CASES)
def test_complex_arithmetic_matches_cpython(z, w):
    @jit
    def f(z, w):
        return z + w, z - w, z * w, z / w, -z, abs(z), z.real, z.imag, z.conjugate(), z == w, z != w, z * 2, 1.5 / w

    want = (z + w, z - w, z * w, z / w, -z, abs(z), z.real, z.imag, z.conjugate(), z == w, z != w, z * 2, 1.5 / w)
    for g, r in zip(f(z, w), want):
        assert g == r or (g != g and r != r) or repr(g) == repr(r), (g, r)


def test_complex_division_by_zero_and_abs_overflow_raise_like_cpython():
    @jit
    def div(z, w):
        return z / w

    with pytest.raises(ZeroDivisionError) as ref:
        (1 + 1j) / 0j
    with pytest.raises(ZeroDivisionError, match=str(ref.value)):
        div(1 + 1j, 0j)

    @jit
    def magnitude(z):
        return abs(z)

    with pytest.raises(OverflowError):
        abs(complex(1.5e308, 1.5e308))
    with pytest.raises(OverflowError):
        magnitude(complex(1.5e308, 1.5e308))


def test_complex64_arrays_keep_single_precision():
    @jit
    def scale(z, out):
        for i in range(z.shape[0]):
            out[i] = z[i] * z[i] + 1.0

    z = (np.arange(5) + 1j * np.arange(5)[::-1]).astype(np.complex64)
    out = np.zeros(5, np.complex64)
    scale(z, out)
    np.testing.assert_array_equal(out, z * z + np.float32(1.0))


def test_numpy_and_python_constructors_convert_like_numpy():
    @jit
    def conv(x):
        return np.float32(x), np.int8(x), np.uint16(x), int(x), float(x), complex(x, 2.0), np.complex64(x)

    x = 300.75
    want = (float(np.float32(x)), int(np.int8(np.int64(x))), int(np.uint16(np.int64(x))), int(x), x,
            complex(x, 2.0), complex(np.complex64(x)))
    assert conv(x) == want


def test_complex_to_real_conversions_are_refused_at_compile_time():
    @jit
    def bad(z):
        return float(z)

    with pytest.raises(TypeInferenceError, match="no implementation of float"):
        bad(1j)

    @jit
    def store(z, out):
        out[0] = z

    with pytest.raises(TypeInferenceError, match="setitem"):
        store(1j, np.zeros(1))


def test_int_of_a_uint64_beyond_int64_raises_instead_of_wrapping():
    @jit
    def to_int(u):
        return int(u) - 1

    assert to_int(np.uint64(2**63 - 1)) == 2**63 - 2
    with pytest.raises(OverflowError, match="int64"):
        to_int(np.uint64(2**63))


# -- a Python int that a NumPy integer type cannot hold (NEP 50): NumPy's OverflowError ------------------
_NARROW_OPS = ["add", "sub", "mul", "floordiv", "mod", "pow", "and_", "or_", "xor", "lshift", "rshift",
               "lt", "le", "eq", "ne", "gt", "ge", "truediv"]


def _numpy_outcome(fn, *args):
    with np.errstate(all="ignore"):
        try:
            return "ok", fn(*args)
        except OverflowError as exc:
            return "raises", str(exc)


@pytest.mark.parametrize("name", _NARROW_OPS)
@pytest.mark.parametrize("dt, literal", [(np.uint8, 300), (np.uint8, -1), (np.int8, 1000), (np.int16, -40000),
                                         (np.uint64, -1), (np.uint32, 7)])
def test_python_int_literal_out_of_range_raises_like_numpy(name, dt, literal, tmp_path):
    """``np.uint8(3) + 300``: NumPy 2 raises OverflowError (it was silently an int64 303); comparisons and
    ``/`` keep the literal's exact value; in range, the NumPy type's arithmetic."""
    path = tmp_path / f"narrow_{name}.py"
    path.write_text(f"from operator import {name} as op\n\n\ndef right(a):\n    return op(a, {literal})\n\n\n"
                    f"def left(a):\n    return op({literal}, a)\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for fn, arg in [(mod.right, dt(3)), (mod.right, np.array([0, 3, np.iinfo(dt).max], dt)),
                    (mod.left, np.array([1, 3], dt))]:
        kind, want = _numpy_outcome(fn, arg)
        if kind == "raises":
            with pytest.raises(OverflowError) as info:
                jit(fn)(arg)
            assert str(info.value) == want
        else:
            got = jit(fn)(arg)
            if isinstance(want, np.ndarray):
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
            else:
                assert got == want


def test_python_int_argument_next_to_an_array_is_range_checked():
    """A Python int argument next to an array is NumPy's weak int: out of the array's range it is NumPy's
    OverflowError at run time (the product wrapped silently in int8)."""

    def scale(a, k):
        return a * k

    a = np.arange(4, dtype=np.int8)
    np.testing.assert_array_equal(jit(scale)(a, 5), a * 5)
    for k in (128, -129, 1 << 40):
        with pytest.raises(OverflowError, match=f"Python integer {k} out of bounds for int8"):
            jit(scale)(a, k)
        with pytest.raises(OverflowError, match=f"Python integer {k} out of bounds for int8"):
            scale(a, k)


@jit
def _read_at(a, i):
    return a[i]


@pytest.mark.parametrize("dt", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_unsigned_integer_index(dt):
    """An unsigned index reads like NumPy's (it was a TypeInferenceError); one past the array, or a uint64
    beyond int64's range, is an IndexError (never wrapped around to a negative index)."""
    a = np.arange(5.0)
    for i in (0, 3, 4):
        assert _read_at(a, dt(i)) == a[dt(i)]
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        _read_at(a, dt(5))
    if dt is np.uint64:
        with pytest.raises(IndexError, match="index 18446744073709551615 is out of bounds"):
            _read_at(a, dt(2**64 - 1))


def test_power_of_numpy_integers_stays_in_the_promoted_type_and_wraps():
    @jit
    def power(a, b):
        return a ** b, 2 ** a, a ** 2

    for a, b in [(np.int8(2), np.int8(7)), (np.int8(3), np.int8(5)), (np.uint64(2), np.uint64(63)),
                 (np.uint8(7), np.uint8(3)), (np.int16(11), np.int16(5))]:
        with np.errstate(all="ignore"):
            want = (a ** b, 2 ** a, a ** 2)
        got = power(a, b)
        assert got == want and all(isinstance(g, int) for g in got), (a, b, got, want)


def test_float32_floor_division_and_modulo_by_a_literal_stay_float32():
    @jit
    def divide(x):
        return x % 2**40, x // 2**40, x % 3

    for x in [np.float32(-2.5), np.float32(1e12), np.float32(7.25)]:
        assert divide(x) == tuple(float(v) for v in (x % 2**40, x // 2**40, x % 3)), x
