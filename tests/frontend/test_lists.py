"""Lists made in compiled code, comprehensions and keyword arguments between compiled functions,
against CPython running the same functions."""

from __future__ import annotations

import linecache
import math
import random

import numpy as np
import pytest

from enzyme_plugin import gradient
from gpucompiler import jit, prange
from gpucompiler.errors import TypeInferenceError


def _same(compiled, *args):
    """The compiled result equals CPython's (exceptions by type), returned."""
    try:
        want = compiled.py_func(*args)
    except Exception as exc:  # any CPython error is the reference
        with pytest.raises(type(exc)):
            compiled(*args)
        return exc
    got = compiled(*args)
    assert got == want and type(got) is type(want), (got, want)
    return got


# -- displays, methods, iteration -------------------------------------------------------------
@jit
def grow(n):
    out = []
    for i in range(n):
        out.append(i * 0.5)
    return out


@jit
def walk(n):
    xs = [1.0, 2.5, -3.0]
    for i in range(n):
        xs.append(xs[i] * 2.0 - xs[-1])
    s = 0.0
    for x in xs:
        s += x
    return xs, len(xs), s, sum(xs), xs.pop(), xs.pop(0), xs


@jit
def index_any(n, k):
    xs = [i * 3 for i in range(n)]
    xs[k] = -1
    return xs[k], xs


@jit
def pop_at(n, k):
    xs = [i for i in range(n)]
    return xs.pop(k), xs


@jit
def aliases(n):
    a = [1.0]
    b = a
    for i in range(n):
        b.append(float(i))
    return a, len(a) == len(b)


@jit
def comprehension(a, lo):
    return [x * x for x in a if x > lo]


@jit
def nested_comprehension(n):
    return [i * 10 + j for i in range(n) for j in range(i) if (i + j) % 3 != 0]


@jit
def loop_variable_is_the_comprehensions(a):
    x = 7.5
    ys = [x + 1.0 for x in a]
    return x, ys


@jit
def generator_sum(a):
    return sum(x * x for x in a), sum([v for v in a], 10.0)


@jit
def bools(a):
    flags = [x > 0.0 for x in a]
    return flags, sum(flags)


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 17, 100])
def test_appends_grow_the_list_past_its_room(n):
    assert _same(grow, n) == [i * 0.5 for i in range(n)]


@pytest.mark.parametrize("n", [0, 2, 9])
def test_methods_len_indexing_and_iteration_are_cpythons(n):
    _same(walk, n)


@pytest.mark.parametrize("n, k", [(5, 0), (5, 4), (5, -1), (5, -5), (5, 5), (5, -6), (0, 0)])
def test_a_bad_index_is_an_index_error(n, k):
    _same(index_any, n, k)
    _same(pop_at, n, k)


def test_pop_of_an_empty_list_is_an_index_error():
    @jit
    def pop_empty(n):
        xs = [1]
        for _ in range(n):
            xs.pop()
        return xs

    assert _same(pop_empty, 1) == []
    assert "pop from empty list" in str(_same(pop_empty, 2))


def test_every_name_of_a_list_sees_its_appends():
    assert _same(aliases, 6) == ([1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0], True)


def test_comprehensions_filters_nesting_and_scope():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.normal(size=int(rng.integers(0, 12)))
        _same(comprehension, a, float(rng.normal()))
        _same(generator_sum, a)
        _same(bools, a)
        _same(loop_variable_is_the_comprehensions, a)
    for n in range(7):
        _same(nested_comprehension, n)


def test_a_list_passed_to_a_compiled_function_and_keywords():
    def total(xs, scale=1.0, shift=0.0):
        s = shift
        for x in xs:
            s += x * scale
        return s

    @jit
    def caller(n):
        xs = [float(i) for i in range(n)]
        return total(xs, scale=2.0), total(xs), total(xs, shift=1.0, scale=3.0), total(shift=0.5, xs=xs)

    for n in (0, 1, 10):
        _same(caller, n)


# -- keyword arguments between compiled functions -------------------------------------------
def scaled(x, scale=2.0, offset=0.0):
    return x * scale + offset


def positional_only(x, /, y=1.0):
    return x - y


@jit
def keywords(x):
    return scaled(x, scale=3.0), scaled(x, offset=1.0), scaled(offset=-1.0, x=x), scaled(x, 0.5, offset=2.0)


def test_keyword_arguments_bind_as_in_cpython():
    for x in (0.0, 1.5, -2.25):
        _same(keywords, x)


def test_keyword_arguments_that_cpython_refuses_are_typed_errors_at_the_line():
    @jit
    def unknown(x):
        return scaled(x, factor=2.0)  # pyright: ignore[reportCallIssue]  (the error under test)

    @jit
    def twice(x):
        return scaled(x, 2.0, scale=1.0)  # pyright: ignore[reportCallIssue]  (the error under test)

    @jit
    def by_name(x):
        return positional_only(x=x)  # pyright: ignore[reportCallIssue]  (the error under test)

    for fn, text in ((unknown, "unexpected keyword argument 'factor'"),
                     (twice, "multiple values for argument 'scale'"),
                     (by_name, "positional-only")):
        with pytest.raises(TypeError):
            fn.py_func(1.0)
        with pytest.raises(TypeInferenceError) as info:
            fn(1.0)
        assert text in str(info.value) and info.value.filename == __file__
        assert info.value.line == fn.py_func.__code__.co_firstlineno + 2


# -- what stays refused: typed errors with the line ---------------------------------------
def test_lists_of_several_types_are_typed_errors_naming_them():
    @jit
    def mixed():
        return [1, 2.0]

    @jit
    def appended(n):
        xs = [1.0]
        xs.append(1j * n)
        return xs

    @jit
    def of_arrays(a):
        return [a, a]

    for fn, arg, shown in ((mixed, (), "int64, float64"), (appended, (1,), "complex128"),
                           (of_arrays, (np.ones(2),), "array(float64")):
        with pytest.raises(TypeInferenceError) as info:
            fn(*arg)
        assert shown in str(info.value) and info.value.filename == __file__
        assert info.value.line == fn.py_func.__code__.co_firstlineno + 2 + (fn is appended)


def test_reading_an_empty_list_nothing_is_appended_to_is_a_typed_error():
    @jit
    def never_typed(n):
        xs = []
        return xs[n]

    with pytest.raises(TypeInferenceError) as info:
        never_typed(0)
    assert "no type" in str(info.value) and info.value.filename == __file__


def test_an_empty_list_returned_is_an_empty_python_list():
    @jit
    def empty():
        xs = []
        return xs, len(xs)

    assert empty() == ([], 0)


@jit
def sliced(n, a, b, c):
    xs = [i * 1.5 for i in range(n)]
    return xs[a:b], xs[::c], xs[a::c], xs[:b:c], xs[a:], xs[:b], xs[::-1], xs[a:b:c]


@pytest.mark.parametrize("n", [0, 1, 5, 8])
@pytest.mark.parametrize("a,b,c", [(0, 3, 1), (-2, 9, 2), (5, -6, -1), (1, 1, 3), (-9, -1, -2), (3, 0, -2)])
def test_slices_are_cpythons(n, a, b, c):
    _same(sliced, n, a, b, c)


def test_a_slice_step_of_zero_is_cpythons_value_error():
    _same(sliced, 4, 0, 2, 0)


@jit
def spliced(n, a, b, c, m):
    xs = [i for i in range(n)]
    ys = [-i for i in range(m)]
    xs[a:b] = ys
    zs = [i for i in range(n)]
    zs[a:b:c] = ys  # an extended slice takes exactly as many items as it has places
    ws = [i for i in range(n)]
    del ws[a:b:c]
    vs = [i for i in range(n)]
    vs[a:b] = vs  # a copy of itself spliced in
    return xs, zs, ws, vs


@pytest.mark.parametrize("n,a,b,c,m", [(6, 1, 3, 1, 4), (6, 1, 3, 1, 0), (6, 4, 1, 1, 2), (6, 0, 6, 2, 3),
                                       (6, 5, 0, -2, 3), (6, -1, -7, -1, 6), (5, 0, 5, 2, 2), (0, 0, 0, 1, 1)])
def test_slice_assignment_and_deletion_are_cpythons(n, a, b, c, m):
    _same(spliced, n, a, b, c, m)


@jit
def methods(n, k, x):
    xs = [i * 0.5 for i in range(n)]
    xs.extend([x, x])
    xs.extend((1.0, 2.0))
    xs.extend(np.arange(3.0))
    xs.insert(k, x)
    both = xs + [x] + xs[:2]
    twice, thrice = xs[:3] * 2, 3 * xs[:2]
    none = xs * -1
    xs.reverse()
    c = xs.count(x)
    ys = xs.copy()
    ys.append(1.0)
    del xs[k]
    aliased = xs
    aliased += [9.0]
    aliased *= 2
    xs.extend(xs)  # its length read once: doubled, as in CPython
    i = xs.index(x)
    zs = [1.0]
    zs.clear()
    return both, twice, thrice, none, c, ys, xs, aliased is xs, i, zs, len(ys) == len(xs)


@pytest.mark.parametrize("n", [0, 1, 4])
@pytest.mark.parametrize("k", [-9, -1, 0, 2, 50])
@pytest.mark.parametrize("x", [0.5, 7.0])
def test_list_methods_and_operators_are_cpythons(n, k, x):
    _same(methods, n, k, x)


def test_is_of_lists_and_dicts_is_identity():
    """Compiled code answered False for ``a is b`` of two names of one list (a wrong answer)."""
    @jit
    def same(n):
        a, c, d, f = [1.0 * n], [1.0 * n], {n: 1}, {n: 1}
        b, e = a, d
        return a is b, a is c, a is not b, a is not c, d is e, d is not f

    assert same(2) == same.py_func(2) == (True, False, False, True, True, True)


def test_truth_of_lists_and_dicts_is_their_length():
    @jit
    def truth(n):
        a = [1.0] * n
        d = {i: 1 for i in range(n)}
        return (1 if a else 2), (3 if d else 4), bool(a), not d, not a

    for n in (0, 1, 3):
        _same(truth, n)


@jit
def ordered(xs, reverse):
    ys = list(xs)
    ys.sort()
    zs = sorted(xs, reverse=True) if reverse else sorted(xs)
    ws = list(xs)
    ws.sort(reverse=True)  # a constant, as sorted()'s
    return ys, zs, ws, min(xs), max(xs), any(xs), all(xs), xs == ys, xs != zs, ys == zs


@pytest.mark.parametrize("xs", [[3.0, -1.0, 2.5, -1.0], [0.0, -0.0, 1.0, -0.0], [5], [2, 9, -4, 9, 0],
                                [True, False, True], [float("inf"), -2.0]])
@pytest.mark.parametrize("reverse", [False, True])
def test_sort_sorted_min_max_any_all_and_equality_are_cpythons(xs, reverse):
    got = _same(ordered, list(xs), reverse)
    want = ordered.py_func(list(xs), reverse)
    signs = lambda r: [[math.copysign(1.0, v) for v in part] for part in r[:3]]  # noqa: E731  (-0.0 kept in place)
    assert signs(got) == signs(want)


def test_what_cpython_orders_by_identity_or_not_at_all_is_a_value_error():
    nan = float("nan")
    for xs in ([1.0, nan], [nan]):
        with pytest.raises(ValueError, match="NaN"):
            ordered(xs, False)
    bounds = jit(lambda xs: (min(xs), max(xs)))
    assert all(map(math.isnan, bounds([nan, 1.0, 2.0])))  # CPython keeps the first: compared, never replaced
    assert all(map(math.isnan, bounds.py_func([nan, 1.0, 2.0])))
    assert bounds([1.0, nan, 0.5]) == bounds.py_func([1.0, nan, 0.5]) == (0.5, 1.0)
    _same(jit(lambda xs: xs == [1.0]), [nan])  # one NaN: not equal, whatever its identity
    _same(jit(lambda n: min([i * 1.0 for i in range(n)])), 0)  # empty: CPython's ValueError


@jit
def searched(xs, x, a, b):
    i = xs.index(x, a)
    j = xs.index(x, a, b)
    ys = list(xs)  # the argument unchanged: _same runs CPython first on the same list
    ys.remove(x)
    return i, j, ys, ys.index(x)


@pytest.mark.parametrize("x,a,b", [(2, 0, 5), (2, 2, -1), (2, -3, 10), (2, -10, -1), (2, 1, 1), (3, 2, 3),
                                   (7, 0, 5), (5, 4, 5)])
def test_index_with_bounds_and_remove_are_cpythons(x, a, b):
    _same(searched, [1, 2, 3, 2, 5], x, a, b)


def test_what_lists_cannot_take_is_a_typed_error_at_the_line():
    @jit
    def mixed(n):
        return [1, 2] + [1.0 * n]

    @jit
    def floats_into_ints(n):
        xs = [1, 2]
        xs.extend([0.5 * n])
        return xs

    @jit
    def nan_count(x):
        return [1.0, x].count(x)

    for fn, line in ((mixed, 2), (floats_into_ints, 3)):  # counted from the decorator's line
        with pytest.raises(TypeInferenceError) as info:
            fn(1)
        assert info.value.filename == __file__ and info.value.line == fn.py_func.__code__.co_firstlineno + line
    with pytest.raises(ValueError, match="identity"):
        nan_count(float("nan"))


# -- memory ----------------------------------------------------------------------------------
def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_lists_made_and_dropped_in_a_loop_of_calls_do_not_leak():
    def helper(xs, scale=1.0):
        return sum(xs) * scale

    @jit(tier=False)  # the full level's code at once: no tier-up compile in the measured loop
    def churn(n):
        xs = [i * 1.0 for i in range(n)]
        ys = xs
        ys.append(2.0)
        kept = [0]
        for i in range(n):
            kept.append(i)
            if i % 3 == 0:
                kept.pop(0)
        return helper(xs, scale=0.5) + sum(kept), xs

    for _ in range(1000):
        churn(200)
    before = _rss()
    for _ in range(100_000):
        churn(200)
    grown = _rss() - before
    assert grown < 16 << 20, f"RSS grew {grown} bytes over 10^5 calls (each makes ~5 kB of lists)"
    assert churn(200) == churn.py_func(200)


# -- derivatives ------------------------------------------------------------------------------
def squares_listed(a):
    return sum([x * x for x in a])


def grown_product(x):
    xs = []
    for i in range(9):  # past the first room of 4 items: the list moves while it grows
        xs.append(x * (i + 1.0))
    xs.pop()
    xs[1] = xs[1] * xs[2]
    s = 0.0
    for v in xs:
        s += v * v
    return s


def shifted(x):
    xs = [x, 2.0 * x, 3.0 * x]
    xs.pop(0)
    return xs[0] * xs[1]


def test_gradients_through_lists_match_finite_differences():
    a = np.array([0.5, -1.25, 2.0, 3.0])
    assert np.allclose(gradient(squares_listed, a), 2 * a)
    x, h = 0.7, 1e-6
    fd = (grown_product(x + h) - grown_product(x - h)) / (2 * h)
    assert abs(gradient(grown_product, x) - fd) < 1e-5 * max(1.0, abs(fd))


def rearranged(x):
    xs = [x, 2.0 * x, 3.0 * x, x * x]
    ys = xs[1:3] + xs[::-1]
    ys.extend(xs)
    ys.insert(2, x * 5.0)
    ys.reverse()
    ys.pop()
    ys[1:3] = [x, x * x * x]
    ys *= 2
    s = 0.0
    for v in ys:
        s = s * 0.5 + v * v
    return s


def test_gradients_through_slices_extend_insert_and_reverse_match_finite_differences():
    x, h = 0.7, 1e-6
    fd = (rearranged(x + h) - rearranged(x - h)) / (2 * h)
    assert abs(gradient(rearranged, x) - fd) < 1e-6 * max(1.0, abs(fd))


def test_pop_of_an_inner_item_in_differentiated_code_is_a_typed_error_at_the_line():
    """The items' shift gave a wrong derivative (21.0 for 18.2 at 0.7): refused, never a wrong number."""
    with pytest.raises(TypeInferenceError) as info:
        gradient(shifted, 0.7)
    assert "pop(i)" in str(info.value) and info.value.filename == __file__
    assert info.value.line == shifted.__code__.co_firstlineno + 2


# -- a small differential fuzzer -------------------------------------------------------------
def _program(rng: random.Random) -> str:
    lines = ["def prog(a, n):", "    xs = [float(v) for v in a]", "    ys = [0]", "    t = 0.0"]
    for _ in range(rng.randint(1, 8)):
        k = rng.randint(-3, 3)
        lines.append("    " + rng.choice([
            f"xs.append(t * {k} + 1.5)", "ys.append(len(xs))", f"t += xs[{k}]", "t += xs.pop()",
            f"xs[{k}] = t", f"t += sum([x * {k} for x in xs if x > t])", f"ys = [i * {k} for i in range(n)]",
            "t += sum(ys)", f"t += ys.pop({k})" if k else "t -= ys.pop(0)",
            "for x in xs:\n        t = t * 0.5 + x", f"xs = xs[{k}:] + xs[:{k}:2]", "xs = xs[::-1] * 2",
            f"xs[{k}:{k + 2}] = [t, 0.5]", f"del xs[{k}]", f"del ys[{k}::2]", f"xs.insert({k}, t)", "xs.reverse()",
            "xs.extend(xs)", "t += xs.count(0.5) + ys.count(0)", f"t += ys.index({k})", f"xs += [t * {k}]",
            f"ys.remove({k})", f"t += ys.index(0, {k})",
            f"ys *= {k}"]))
    lines.append("    return t, xs, ys")
    return "\n".join(lines)


@pytest.mark.slow  # a fuzzer: with the slow set (README, tests/conftest.py)
def test_random_list_programs_against_cpython():
    rng = random.Random(2028)
    checked = raised = 0
    for p in range(60):
        source = _program(rng)
        space: dict = {}
        name = f"<lists {p}>"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # its source, as IPython keeps it
        exec(compile(source, name, "exec"), space)  # the program under test
        fn = jit(space["prog"])
        for _ in range(3):
            a = np.array([rng.uniform(-2, 2) for _ in range(rng.randint(0, 6))])
            out = _same(fn, a, rng.randint(0, 4))
            raised += isinstance(out, Exception)
            checked += 1
    assert checked == 180 and 0 < raised < checked


def test_np_array_of_a_list_is_numpys():
    @jit
    def as_array(n):
        return np.array([i * 0.5 for i in range(n)]), np.array([i for i in range(n)]), np.asarray([True, False])

    for n in (0, 1, 3):
        got, want = as_array(n), as_array.py_func(n)
        for g, w in zip(got, want):
            assert g.tolist() == w.tolist()
            assert g.dtype == w.dtype or (n == 0 and g.dtype == np.int64)  # NumPy: an empty list is float64


def test_a_list_made_before_a_prange_loop_is_refused_inside_it_and_one_made_inside_works():
    @jit(parallel=True)
    def shared(n):
        xs = [0.0]
        for i in prange(n):
            xs.append(i * 1.0)
        return len(xs)

    @jit(parallel=True)
    def private(n):
        s = 0.0
        for i in prange(n):
            xs = [i * 1.0, 2.0]
            xs.append(3.0)
            s += sum(xs)
        return s

    with pytest.raises(TypeInferenceError) as info:
        shared(1000)
    assert "prange" in str(info.value) and info.value.line == shared.py_func.__code__.co_firstlineno + 3
    assert private(1000) == private.py_func(1000) == sum(i + 5.0 for i in range(1000))
