"""Loops whose powers are versioned (frontend/powerloops.py): CPython's results and errors, vector code.

The reference is the same function run by CPython on arrays whose elements
read as Python floats (:class:`PyArray`: ``1e200 ** 2.0`` raises there, as
in CPython, where a NumPy scalar would give inf), writing into the same
NumPy memory, so aliasing behaves as it does for the compiled call. Each
case compares the values bit for bit (signed zeros and NaNs included), the
exception type, and the arrays' state after an exception. Arrays span
several blocks (``BLOCK``) and a partial one, with the interesting elements at their edges.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

import numpy as np
import pytest

from enzyme_plugin import Duplicated, Reverse, autodiff
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler.frontend.powerloops import BLOCK, CHUNK
from gpucompiler.targets import PTXTarget


_ONE: dict = {}


def _scalar_power(n):
    """The compiled scalar ``x ** n`` (tests/frontend/test_power_ranges.py holds it to CPython: the same
    exceptions, the same values but where glibc's ``pow`` is an ulp off the correctly rounded power)."""
    if n not in _ONE:
        scope: dict = {}
        exec(f"def one(x):\n    return x ** {n!r}\n", scope)
        _ONE[n] = jit(scope["one"])
    return _ONE[n]


class F(float):
    """A Python float whose ``**`` is the compiled scalar power; arithmetic keeps the type."""

    def __pow__(self, n):  # pyright: ignore[reportIncompatibleMethodOverride]
        return F(_scalar_power(n)(float(self)))

    def __add__(self, o):
        return F(float(self) + o)

    def __radd__(self, o):
        return F(o + float(self))

    def __sub__(self, o):
        return F(float(self) - o)

    def __rsub__(self, o):
        return F(o - float(self))

    def __mul__(self, o):
        return F(float(self) * o)

    def __rmul__(self, o):
        return F(o * float(self))

    def __truediv__(self, o):
        return F(float(self) / o)


class PyArray:
    """A NumPy array run by CPython: its elements read as :class:`F` (a Python float, raising where
    CPython raises, where a NumPy scalar would give inf)."""

    def __init__(self, a):
        self.a, self.shape = a, a.shape

    def __getitem__(self, i):
        return F(self.a[i])

    def __setitem__(self, i, v):
        self.a[i] = v


def square_into(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ** 2.0


def cube_into(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ** 3


def reciprocal_into(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ** -1


def inverse_square_into(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ** -2


def eighth_into(a, out):
    for i in range(1, a.shape[0]):
        out[i - 1] = 0.5 * a[i] ** 8 - a[i - 1]


def square_in_place(a):
    for i in range(a.shape[0]):
        a[i] = a[i] ** 2.0


def add_cube_in_place(a):
    for i in range(a.shape[0]):
        a[i] += a[i] ** 3


def smoothed_cubes(a, out):
    t = 1.0
    for i in range(a.shape[0]):
        t = t * 0.5 + a[i]
        out[i] = t ** 3


def cube_over(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ** 3 / a[i]


def sum_cubes(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] ** 3
    return s


def sum_mixed(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] ** 2 - 3.0 * a[i] ** -1 + a[i] ** -5
    return s


def sum_squares_rows(m, out):
    for i in range(m.shape[0]):
        s = 0.0
        for j in range(m.shape[1]):
            s += m[i, j] ** 2
        out[i] = s


def every_third_square(a, out):
    for i in range(1, a.shape[0], 3):
        out[i] = a[i] ** 2.0


def sum_cubes_backwards(a):
    s = 0.0
    for i in range(a.shape[0] - 1, -1, -1):
        s += a[i] ** 3
    return s


STORES = [square_into, cube_into, reciprocal_into, inverse_square_into, eighth_into, smoothed_cubes,
          every_third_square]
N = 3 * BLOCK + 7
EDGES = (0, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 3, 3 * BLOCK, N - 1)
SPECIALS = (0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.0 ** -1022, 1e-300, 1e200, -1e200,
            2.0 ** 512, 2.0 ** -1024, 1.7976931348623157e308)


def _run(f, *arrays):
    """``("value", result, arrays)`` or ``("raises", type, arrays)``: the arrays as the call left them."""
    try:
        result = f(*arrays)
    except ArithmeticError as exc:
        return "raises", type(exc), arrays
    return "value", result, arrays


def _same(x, y) -> bool:
    """Bit for bit (NaNs equal, zeros by sign)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return x.shape == y.shape and bool(np.all((x == y) & (np.signbit(x) == np.signbit(y))
                                              | (np.isnan(x) & np.isnan(y))))


def _check(fn, f, *arrays):
    """``f`` (compiled ``fn``) as CPython runs ``fn`` on copies of ``arrays`` (and the ints among them)."""
    mine = [a.copy() for a in arrays]
    theirs = [a.copy() for a in arrays]
    got = _run(f, *mine)
    want = _run(fn, *(PyArray(a) if isinstance(a, np.ndarray) else a for a in theirs))
    assert got[0] == want[0], (got[:2], want[:2])
    if got[0] == "raises":
        assert got[1] is want[1]
    elif got[1] is not None:
        assert _same(got[1], want[1]), (got[1], want[1])
    for m, t in zip(mine, theirs):
        assert _same(m, t), np.flatnonzero(~((m == t) | (np.isnan(m) & np.isnan(t))))[:10]


def _base(rng, n=N):
    return rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)


@pytest.mark.parametrize("fn", STORES, ids=lambda f: f.__name__)
def test_stores_raise_at_their_element(fn):
    """An overflow or a zero division at a block's edge, inside one or in the last partial one: the
    elements before it written, the rest untouched, CPython's exception."""
    f, rng = jit(fn), np.random.default_rng(1)
    _check(fn, f, _base(rng), np.full(N, 7.0))
    for at in EDGES:
        for bad in (1e200, -1e120, 0.0, 1e-200, math.inf, math.nan):
            a = _base(rng)
            a[at] = bad
            _check(fn, f, a, np.full(N, 7.0))


@pytest.mark.parametrize("fn", [sum_cubes, sum_mixed, sum_cubes_backwards], ids=lambda f: f.__name__)
def test_sums_raise_as_cpython(fn):
    f, rng = jit(fn), np.random.default_rng(2)
    _check(fn, f, _base(rng))
    for at in EDGES:
        for bad in (1e200, 1e-120, 0.0, -0.0, math.inf, math.nan, 5e-324):
            a = _base(rng)
            a[at] = bad
            _check(fn, f, a)


def test_the_first_failing_element_decides_the_exception():
    """``0.0 ** -1`` (ZeroDivisionError) before ``1e200 ** 2`` (OverflowError), and the other way round."""
    f = jit(sum_mixed)
    for first, then, exc in ((0.0, 1e200, ZeroDivisionError), (1e200, 0.0, OverflowError)):
        a = np.ones(N)
        a[BLOCK + 5], a[2 * BLOCK] = first, then
        with pytest.raises(exc):
            f(a)


@pytest.mark.parametrize("fn", [square_in_place, add_cube_in_place], ids=lambda f: f.__name__)
def test_in_place(fn):
    f, rng = jit(fn), np.random.default_rng(3)
    _check(fn, f, _base(rng))
    for at in EDGES:
        a = _base(rng)
        a[at] = 1e160
        _check(fn, f, a)


VIEWS = [lambda x: (x, x), lambda x: (x[1:], x[:-1]), lambda x: (x[:-1], x[1:]), lambda x: (x[::-1], x),
         lambda x: (x[: N // 2], x[N // 2 + 1:]), lambda x: (x[::2], x[1::2])]


@pytest.mark.parametrize("views", range(len(VIEWS)))
@pytest.mark.parametrize("big", [None, 0, -1])
def test_aliased_arrays(views, big):
    """The same memory through two names, and overlapping views: a store changes a later read (the
    squares chain up to an overflow the original values do not have, or overwrite a huge one first)."""
    f = jit(square_into)
    x = np.full(N + 1, 1.5)
    if big is not None:
        x[big] = 1e200
    mine, theirs = x.copy(), x.copy()
    got = _run(f, *VIEWS[views](mine))
    want = _run(square_into, *(PyArray(v) for v in VIEWS[views](theirs)))
    assert got[:2] == want[:2]
    assert _same(mine, theirs)


@pytest.mark.parametrize("error_model", ["python", "numpy"])
@pytest.mark.parametrize("n", [-8, -5, -3, -2, -1, 0, 1, 2, 3, 4, 5, 7, 8])
def test_special_bases_as_the_scalar_power(n, error_model):
    """NaN, infinities, zeros, subnormals and the range's edges in a versioned loop: the values and
    errors of the scalar ``x ** n`` (tests/frontend/test_power_ranges.py holds it to CPython and NumPy)."""
    scope: dict = {}
    exec(f"def loop(a, out):\n    for i in range(a.shape[0]):\n        out[i] = a[i] ** {n}\n\n"
         f"def one(x):\n    return x ** {n}\n", scope)
    loop, one = jit(scope["loop"], error_model=error_model), jit(scope["one"], error_model=error_model)
    rng = np.random.default_rng(4)
    xs = np.concatenate([SPECIALS, -np.asarray(SPECIALS), _base(rng, 40)])
    for x in xs:  # each between ordinary values, past the first block
        want = _run(one, float(x))
        a = np.concatenate([_base(rng, BLOCK - 3), [x], _base(rng, 9)])
        out = np.full(a.size, 7.0)
        got = _run(loop, a, out)
        assert got[0] == want[0], (x, got[:2], want[:2])
        k = BLOCK - 3
        if got[0] == "raises":
            assert got[1] is want[1]
            assert np.all(out[k:] == 7.0)
        else:
            assert _same(out[k], want[1]), (x, out[k], want[1])
        assert _same(out[:k], [one(float(v)) for v in a[:k]])


def _edges_of_range(n) -> list[float]:
    """Bases where ``|x| ** |n|`` crosses the largest double, 2**1024, the compensated products' bound
    2**960 and 2**-960, the smallest normal, the smallest subnormal and half of it; each with its
    neighbours three ulps either way, of both signs, and the special values."""
    m = abs(n) or 1
    found = []
    top = sys.float_info.max
    for edge in (top ** (1 / m), *(2.0 ** (e / m) if e / m < 1024 else top for e in (1024, 960)),
                 *(2.0 ** (e / m) for e in (-960, -1022, -1074, -1075))):
        x = edge
        for _ in range(3):
            x = math.nextafter(x, 0.0)
        for _ in range(7):
            found += [x, -x]
            x = math.nextafter(x, math.inf)
    return found + list(SPECIALS) + [-x for x in SPECIALS]


def _cpython(x: float, n) -> tuple[str, Any]:
    """``("value", x ** n)`` or ``("raises", type)``: CPython's own power."""
    try:
        return "value", x ** n
    except ArithmeticError as exc:
        return "raises", type(exc)


def _ulps(x: float, y: float) -> bool:
    """Equal bit for bit, or a neighbour (glibc's ``pow``, which CPython calls, is within 0.52 ulp)."""
    return _same(x, y) or (math.isfinite(x) and math.isfinite(y) and math.nextafter(x, y) == y)


EXPONENTS = [2.0, -1, -2, 3, pytest.param(2, marks=pytest.mark.slow), pytest.param(-2.0, marks=pytest.mark.slow)] + [
    pytest.param(n, marks=pytest.mark.slow) for n in (-8, -7, -5, -4, -3, 1, 4, 5, 6, 7, 8, 3.0, -1.0)]


@pytest.mark.parametrize("n", EXPONENTS)
def test_edges_of_the_range_as_cpython(n):
    """Every base near an edge of ``x ** n``'s range, at a block's last element, the next block's first,
    the first and the last of the partial block: CPython's exception, the elements before it as the
    scalar power (CPython's within an ulp), the rest untouched; where none raises, every element."""
    scope: dict = {}
    exec(f"def loop(a, out):\n    for i in range(a.shape[0]):\n        out[i] = a[i] ** {n!r}\n\n"
         f"def one(x):\n    return x ** {n!r}\n", scope)
    loop, one = jit(scope["loop"]), jit(scope["one"])
    rng = np.random.default_rng(8)
    size = 3 * BLOCK + 5
    ordinary = _base(rng, size)
    for x in _edges_of_range(n):
        want = _cpython(x, n)
        for at in (BLOCK - 1, BLOCK, 3 * BLOCK, size - 1):
            a = ordinary.copy()
            a[at] = x
            out = np.full(size, 7.0)
            got = _run(loop, a, out)
            assert got[0] == want[0], (x, at, got[:2], want)
            if got[0] == "raises":
                assert got[1] is want[1] and np.all(out[at:] == 7.0), (x, at)
            else:
                assert _same(out[at], one(x)) and _ulps(out[at], want[1]), (x, at, out[at], want[1])
            k = at if got[0] == "raises" else size
            assert _same(out[:k], [one(float(v)) for v in a[:k]]), (x, at)


@pytest.mark.parametrize("fn", [square_into, cube_into, reciprocal_into, smoothed_cubes], ids=lambda f: f.__name__)
def test_strided_stores_run_in_chunks(fn):
    """Arrays whose elements are apart in memory (every other one) take the chunks, each scanned first: an
    error at a chunk's edge leaves the elements before it written and the rest untouched."""
    f, rng = jit(fn), np.random.default_rng(11)
    n = 2 * CHUNK + 9
    for at in (None, 0, CHUNK - 1, CHUNK, 2 * CHUNK + 3, n - 1):
        for bad in (1e200, 0.0, math.nan):
            a = _base(rng, 2 * n)
            if at is not None:
                a[2 * at] = bad
            mine, theirs = (np.full(2 * n, 7.0) for _ in range(2))
            got = _run(f, a[::2], mine[::2])
            want = _run(fn, PyArray(a[::2]), PyArray(theirs[::2]))
            assert got[:2] == want[:2], (at, bad, got[:2], want[:2])
            assert _same(mine, theirs), (at, bad)
            if at is None:
                break


def squares_and_names(a, out, start):
    t = -1.0
    i = -7
    for i in range(start, a.shape[0] - 3):
        t = a[i + 3] * 0.5
        out[i + 3] = t ** 2 + a[i + 3] ** 3
    return t, i


def rows_of_squares(m, out):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            out[i, j] = m[i, j] ** 2.0


@pytest.mark.parametrize("size", [3, 4, 5, BLOCK + 2, BLOCK + 3, BLOCK + 4, 2 * BLOCK + 3, 2 * BLOCK + 10])
def test_names_after_the_blocks(size):
    """The loop variable and a name the body assigns keep their last values (a whole block's last
    iteration, the partial block's, none at all), from a negative start too; a failing block's rerun
    leaves them as CPython does. Two dimensions: the inner loop in blocks, the outer not."""
    f, rng = jit(squares_and_names), np.random.default_rng(10)
    for start in (0, -3, 1):
        _check(squares_and_names, f, _base(rng, size), np.full(size, 7.0), np.int64(start))
        if size > 4:
            a = _base(rng, size)
            a[size - 2] = 1e300
            _check(squares_and_names, f, a, np.full(size, 7.0), np.int64(start))
    m = _base(rng, 3 * size).reshape(3, size)
    m[1, size - 1] = 1e160
    _check(rows_of_squares, jit(rows_of_squares), m, np.full((3, size), 7.0))


@pytest.mark.slow
@pytest.mark.parametrize("n", [2.0, -1, 3, -2, 8, -8])
def test_pairs_of_edges_in_one_block(n):
    """Two bases near the range's edges in one block or in neighbouring ones (a rerun that does not raise
    followed by one that does, a NaN beside an overflow...): as the same loop run by CPython."""
    scope: dict = {}
    exec(f"def loop(a, out):\n    for i in range(a.shape[0]):\n        out[i] = a[i] ** {n!r}\n", scope)
    f = jit(scope["loop"])
    rng = np.random.default_rng(9)
    edges = _edges_of_range(n)
    picks = rng.choice(len(edges), (300, 2))
    places = rng.integers(0, 2 * BLOCK + 3, (300, 2))
    for (p, q), (i, j) in zip(picks, places):
        a = _base(rng, 2 * BLOCK + 3)
        a[i], a[j] = edges[p], edges[q]
        _check(scope["loop"], f, a, np.full(a.size, 7.0))


@pytest.mark.parametrize("error_model", ["python", "numpy"])
def test_sums_of_special_bases(error_model):
    rng = np.random.default_rng(5)
    f = jit(sum_mixed, error_model=error_model)
    one = jit(lambda x: x ** 2 - 3.0 * x ** -1 + x ** -5, error_model=error_model)
    for x in SPECIALS:
        a = np.concatenate([_base(rng, 100), [x], _base(rng, 100)])
        s = 0.0  # the same additions in the same order
        try:
            for e in a:
                s += one(float(e))
            want = ("value", s)
        except ArithmeticError as exc:
            want = ("raises", type(exc))
        got = _run(f, a)
        assert got[0] == want[0] and (got[1] is want[1] if got[0] == "raises" else _same(got[1], want[1])), x


def sum_squares(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] ** 2
    return s


def test_fastmath_loops_record_no_range_flag():
    """Under fastmath the checked operator's finiteness test folds away (``ninf``): the versioned copy
    records nothing either, so no rerun is left and the loop is Numba's (it compared every |x| with
    2**512, the square's overflow bound: 1.23x Numba's time)."""
    bound = "0x5FF0000000000000"  # 2.0 ** 512 as LLVM prints it
    a = np.linspace(0.5, 2.0, 64)
    checked, fast = jit(sum_squares), jit(sum_squares, fastmath=True)
    checked(a)
    assert fast(a) == pytest.approx(float(np.sum(a * a)), rel=1e-12)
    assert np.isinf(fast(np.array([1e200, 1.0])))  # as the unversioned fastmath loop: inf, no OverflowError
    with pytest.raises(OverflowError):
        checked(np.array([1e200, 1.0]))
    text = lambda f: "\n".join(f.inspect_llvm().values())  # noqa: E731
    assert bound in text(checked) and bound not in text(fast)


def test_fastmath_and_float32():
    rng = np.random.default_rng(6)
    a = _base(rng)
    out = np.zeros(N)
    jit(cube_into, fastmath=True)(a, out)
    assert _same(out, [x * x * x for x in a.tolist()])
    a32 = a.astype(np.float32)
    out32 = np.zeros(N, np.float32)
    jit(square_into)(a32, out32)
    assert _same(out32, a32 * a32)
    a32[BLOCK + 1] = np.float32(2.0 ** 64)
    out32[:] = 7.0
    with pytest.raises(OverflowError):
        jit(square_into)(a32, out32)
    assert _same(out32[:BLOCK + 1], a32[:BLOCK + 1] * a32[:BLOCK + 1]) and np.all(out32[BLOCK + 1:] == 7.0)


def test_loops_left_alone():
    """An int array, a body that divides or calls, a variable unbound before the loop: as CPython."""
    ints = np.arange(-5, N - 5)
    _check(square_into, jit(square_into), ints, np.zeros(N))
    out = np.zeros(N, np.int64)
    jit(cube_into)(ints, out)
    assert np.array_equal(out, ints ** 3)
    a = _base(np.random.default_rng(7))
    a[BLOCK + 2], a[2 * BLOCK] = 0.0, 1e200
    _check(cube_over, jit(cube_over), a, np.full(N, 7.0))
    a[BLOCK + 2], a[2 * BLOCK] = 1e200, 0.0
    _check(cube_over, jit(cube_over), a, np.full(N, 7.0))

    def unbound(a):
        for i in range(a.shape[0]):
            s += a[i] ** 3  # noqa: F821, F841  # pyright: ignore[reportUnboundVariable]
        return 0.0

    g = jit(unbound)
    assert g(np.zeros(0)) == 0.0
    with pytest.raises(UnboundLocalError):
        g(np.ones(3))


def _vector(f, *args) -> bool:
    f(*args)
    text = "\n".join(f.inspect_llvm().values())
    return re.search(r"<(2|4|8) x double>", text) is not None


@pytest.mark.parametrize("fn, options", [
    (square_into, {}), (cube_into, {}), (square_in_place, {}), (sum_cubes, {}),
    (sum_cubes, {"error_model": "numpy"}), (sum_mixed, {})],
    ids=lambda v: v.__name__ if callable(v) else "-".join(f"{k}={w}" for k, w in v.items()) or "default")
def test_the_loop_is_vectorised(fn, options):
    """The unchecked copy has no branch per element: LLVM vectorises it (the checked loop it replaces did
    not: the overflow test, or the range test of the compensated power, stopped the vectorizer)."""
    a = np.linspace(0.5, 2.0, 64)
    args = (a, np.zeros(64)) if fn.__code__.co_argcount == 2 else (a,)
    assert _vector(jit(fn, **options), *args)


@pytest.mark.parametrize("fn", [square_into, cube_into, square_in_place], ids=lambda f: f.__name__)
def test_a_storing_loop_loads_each_element_once(fn):
    """A block's test and its products read the same vector load (the SLP vectorizer's): one vector load
    per vector store. A scan of each chunk before its stores loaded every element twice (1.2-1.4x Numba's
    time for ``out[i] = a[i] ** 2.0``)."""
    a = np.linspace(0.5, 2.0, 64)
    f = jit(fn)
    f(*((a, np.zeros(64)) if fn.__code__.co_argcount == 2 else (a,)))
    text = "\n".join(f.inspect_llvm().values())
    loads = len(re.findall(r"= load <\d+ x double>", text))
    stores = len(re.findall(r"store <\d+ x double>", text))
    assert stores >= 1 and loads == stores, (loads, stores)


def store_then_sum(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ** 3
    s = 0.0
    for i in range(out.shape[0]):
        s += out[i]
    return s


def gradient_of_cubes(a, da):
    autodiff(Reverse, sum_cubes, Duplicated(a, da))


def gradient_of_stored_cubes(a, da, out, dout):
    autodiff(Reverse, store_then_sum, Duplicated(a, da), Duplicated(out, dout))


def test_versioned_loops_differentiated():
    """In differentiated code no power is rerun (libm's pow in a select): the gradients exact."""
    a = np.linspace(-2.0, 2.0, N)
    da = np.zeros(N)
    jit(gradient_of_cubes, plugins=("enzyme",))(a, da)
    np.testing.assert_allclose(da, 3 * a ** 2, rtol=1e-15)
    da[:] = 0.0
    jit(gradient_of_stored_cubes, plugins=("enzyme",))(a, da, np.zeros(N), np.zeros(N))
    np.testing.assert_allclose(da, 3 * a ** 2, rtol=1e-15)


@kernel
def cubes_kernel(x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        s = 0.0
        for j in range(x.shape[0]):
            s += x[j] ** 3
        out[i] = s


def test_versioned_loop_in_a_kernel(check_ptx):
    x, out = np.linspace(0.5, 2.0, 64), np.zeros(4)
    check_ptx(cubes_kernel.inspect_asm(x, out, target=PTXTarget(capability=(9, 0))), arch="sm_90")
    cubes_kernel[1, 4, "cpu"](x, out)  # pyright: ignore[reportIndexIssue]
    np.testing.assert_allclose(out, np.sum(x ** 3), rtol=1e-14)


def _square_into(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ** 2.0


def _square_rows(a, out):
    i = gd.grid(1)
    if i < a.shape[0]:
        for j in range(4):
            out[i, j] = a[i, j] ** 2.0


@pytest.mark.parametrize("opt_level", [0, 1, 2])
def test_power_loops_link_at_every_opt_level(opt_level):
    # the blocks' SLP marker is a declaration nothing calls: opt level 0 keeps such declarations, and the
    # linker refused it (LinkError: unresolved gpuc.vector_blocks) before the pipeline dropped it
    a = np.linspace(-3.0, 3.0, 3 * BLOCK + 5)
    out = np.zeros_like(a)
    jit(_square_into, opt_level=opt_level)(a, out)
    assert np.array_equal(out, a * a)
    m, mo = np.linspace(-2.0, 2.0, 64).reshape(16, 4), np.zeros((16, 4))
    kernel(_square_rows, opt_level=opt_level)[1, 32, "cpu"](m, mo)
    assert np.array_equal(mo, m * m)
