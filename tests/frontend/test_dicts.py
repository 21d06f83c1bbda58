"""Dicts made in compiled code, ``in`` and loops over containers that change, against CPython running
the same functions."""

from __future__ import annotations

import linecache
import random

import numpy as np
import pytest

from enzyme_plugin import gradient
from gpucompiler import jit
from gpucompiler.errors import GPUCompilerError, TypeInferenceError, UnsupportedError


def _same(compiled, *args):
    """The compiled result equals CPython's (exceptions by type), returned."""
    try:
        want = compiled.py_func(*args)
    except Exception as exc:  # any CPython error is the reference
        with pytest.raises(type(exc)):
            compiled(*args)
        return exc
    got = compiled(*args)
    assert got == want, (got, want)
    if isinstance(want, dict):
        assert list(got) == list(want), "the order of insertion"
    return got


@jit
def histogram(a, width):
    counts = {}
    for x in a:
        b = int(x // width)
        counts[b] = counts.get(b, 0) + 1
    return counts


@jit
def display(k, v):
    d = {1: 2.0, 3: 4.5, -7: 0.25}
    d[k] = v
    s = 0.0
    for key, value in d.items():
        s += key * value
    return d, len(d), k in d, 5 not in d, s, [key for key in d], [x for x in d.values()], sum(d.keys())


@jit
def lookup(k):
    d = {1: 2.0, 3: 4.5}
    return d[k]


@jit
def defaults(k):
    d = {10: 1.5}
    return d.get(k, 0), d.get(k, -1.0)


@jit
def comprehension(n):
    return {i * i % 17: float(i) for i in range(n) if i % 3 != 1}


@jit
def float_keys(a):
    d = {}
    for x in a:
        d[x] = d.get(x, 0.0) + 1.0
    return d


@jit
def bool_values(a):
    d = {}
    for i in range(a.shape[0]):
        d[i] = a[i] > 0.0
    return d


@jit
def grow_while_walking(n):
    d = {0: 0}
    for k in d:
        if k < n:
            d[k + 1] = k
    return d


@jit
def list_grows_while_walking(n):
    xs = [0]
    for x in xs:
        if x < n:
            xs.append(x + 1)
    return xs, n in xs, -1 in xs


@pytest.mark.parametrize("width", [0.1, 0.5, 3.0])
def test_a_histogram_is_cpythons_in_values_and_order(width):
    rng = np.random.default_rng(11)
    for size in (0, 1, 7, 300):
        _same(histogram, rng.normal(size=size), width)


@pytest.mark.parametrize("k, v", [(1, 9.0), (9, -1.0), (-7, 3.0), (0, 0.0)])
def test_displays_items_views_in_and_len(k, v):
    _same(display, k, v)


@pytest.mark.parametrize("k", [1, 3, 2, -1])
def test_a_missing_key_is_a_key_error(k):
    _same(lookup, k)


def test_get_with_a_default_and_comprehensions():
    for k in (10, 11):
        _same(defaults, k)
    for n in (0, 1, 5, 40, 200):  # past the first rooms of 8, 16, 32...: the table grows
        _same(comprehension, n)


def test_float_keys_compare_by_value_minus_zero_included():
    got = _same(float_keys, np.array([0.0, -0.0, 1.5, 1.5, 2.0, -3.25]))
    assert got == {0.0: 2.0, 1.5: 2.0, 2.0: 1.0, -3.25: 1.0}
    _same(bool_values, np.array([1.0, -1.0, 0.0]))


def test_a_dict_that_grows_inside_a_loop_over_it_is_cpythons_runtime_error():
    assert "changed size" in str(_same(grow_while_walking, 3))
    assert _same(grow_while_walking, 0) == {0: 0}


def test_a_list_that_grows_inside_a_loop_over_it_is_walked_to_its_end():
    assert _same(list_grows_while_walking, 4) == ([0, 1, 2, 3, 4], True, False)


def test_many_keys_against_cpython():
    rng = np.random.default_rng(5)
    for _ in range(10):
        keys = rng.integers(-50, 50, size=int(rng.integers(0, 400)))

        @jit
        def counts(ks):
            d = {}
            for k in ks:
                if k in d:
                    d[k] += 1
                else:
                    d[k] = 1
            return d, len(d)

        _same(counts, keys)


# -- refused: typed errors at the line -------------------------------------------------------
def test_what_compiled_dicts_refuse_is_a_typed_error_at_the_line():
    @jit
    def get_without_default(k):
        d = {1: 2.0}
        return d.get(k)

    @jit
    def mixed_values(k):
        d = {1: 2.0, 2: 3}
        return d[k]

    @jit
    def float_lookup_in_int_keys(x):
        d = {1: 2.0}
        return d[x]

    @jit
    def array_values(a):
        d = {1: a}
        return len(d)

    for fn, arg, text, line in ((get_without_default, 1, "default", 3), (mixed_values, 1, "int64", 2),
                                (float_lookup_in_int_keys, 1.0, "float64", 3), (array_values, np.ones(2), "array", 2)):
        with pytest.raises(TypeInferenceError) as info:
            fn(arg)
        assert text in str(info.value) and info.value.filename == __file__, str(info.value)
        assert info.value.line == fn.py_func.__code__.co_firstlineno + line


def test_mapping_unpacking_and_del_of_a_name_stay_refused():
    @jit
    def unpacking(k):
        return {**{1: 2.0}}

    @jit
    def unbinding(k):
        d = {1: 2.0}
        del d
        return k

    for fn in (unpacking, unbinding):
        with pytest.raises(UnsupportedError) as info:
            fn(1)
        assert info.value.filename == __file__


@jit
def removals(n, k):
    d = {i % 11: i * 0.5 for i in range(n)}
    a = d.pop(k, -1.0)
    if k + 1 in d:
        del d[k + 1]
    d[100 + k] = 2.5  # after the removals: the new entry goes last, as in CPython
    b = d.popitem() if d else (0, 0.0)
    s = 0.0
    for key, v in d.items():
        s = s * 0.5 + key * v
    return a, b, s, d, len(d), d.pop(k + 2)


@pytest.mark.parametrize("n", [0, 3, 9, 20, 40])
@pytest.mark.parametrize("k", [0, 4, 9, 30])
def test_pop_popitem_and_del_keep_cpythons_order_and_errors(n, k):
    _same(removals, n, k)


@jit
def merged(n, k):
    d = {i: i * 0.5 for i in range(n)}
    e = dict(d)
    e[100] = 1.0
    f = d.copy()
    f.update(e)
    f.update({k: -1.0, 200: 2.0})
    a = f.setdefault(k, 7.5)
    b = f.setdefault(300 + k, 8.5)
    return d, e, f, a, b


@pytest.mark.parametrize("n", [0, 3, 12])
@pytest.mark.parametrize("k", [1, 50])
def test_copy_update_and_setdefault_are_cpythons(n, k):
    _same(merged, n, k)


def test_emptied_dicts_are_refilled_and_a_deleting_loop_is_cpythons_runtime_error():
    @jit
    def churn(n):
        d = {}
        for i in range(n):
            d[i % 7] = i
            if i % 3 == 0:
                del d[i % 7]
        kept = len(d)
        d.clear()
        d[1] = 2
        return kept, d

    @jit
    def deleting_loop(n):
        d = {i: i for i in range(n)}
        for k in d:
            del d[k]
        return len(d)

    for n in (0, 1, 5, 50):
        _same(churn, n)
        _same(deleting_loop, n)


# -- memory ----------------------------------------------------------------------------------
def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_dicts_made_and_dropped_in_a_loop_of_calls_do_not_leak():
    @jit(tier=False)  # the full level's code at once: no tier-up compile in the measured loop
    def churn(n):
        d = {}
        for i in range(n):
            d[i % 37] = d.get(i % 37, 0.0) + i
        view = d.items()
        s = 0.0
        for k, v in view:
            s += k * v
        return s, d

    for _ in range(1000):
        churn(200)
    before = _rss()
    for _ in range(100_000):
        churn(200)
    grown = _rss() - before
    assert grown < 16 << 20, f"RSS grew {grown} bytes over 10^5 calls (each makes a dict of ~1.5 kB)"
    assert churn(200) == churn.py_func(200)


# -- derivatives ------------------------------------------------------------------------------
def weighted(x):
    d = {}
    for i in range(20):  # past the first room of 8: the values move while the table grows
        d[i % 11] = d.get(i % 11, 0.0) + x * (i + 1.0)
    s = 0.0
    for k, v in d.items():
        s += v * v * (k + 1.0)
    return s


def float_keyed(x):
    d = {0.5: x, 1.5: 2.0 * x}
    d[2.5] = d[0.5] * d[1.5]
    return d[2.5] + d.get(9.0, x)


@pytest.mark.parametrize("fn", [weighted, float_keyed])
def test_a_gradient_through_dict_values_is_right_or_a_typed_error_at_the_line(fn):
    """The table's integers (keys, index) share one allocation with the values: the AD engine's type
    analysis refuses the block, naming the line; never a silent zero or a wrong number."""
    x, h = 0.3, 1e-6
    fd = (fn(x + h) - fn(x - h)) / (2 * h)
    try:
        got = gradient(fn, x)
    except GPUCompilerError as exc:
        assert "ADError" in str(exc) and f"{__file__}:" in str(exc), str(exc)
        return
    assert abs(got - fd) < 1e-6 * max(1.0, abs(fd))


# -- a small differential fuzzer -------------------------------------------------------------
def _program(rng: random.Random) -> str:
    lines = ["def prog(a, n):", "    d = {0: 0.5}", "    t = 0.0"]
    for _ in range(rng.randint(1, 8)):
        k = rng.randint(-4, 4)
        lines.append("    " + rng.choice([
            f"d[{k}] = t", f"d[n + {k}] = d.get(n, 1.0) * 2.0", f"t += d.get({k}, -1.0)", f"t += d[{k}]",
            "for x in a:\n        d[int(x * 3.0)] = x", "t += len(d)", f"t += 1.0 if {k} in d else 2.0",
            "for key, v in d.items():\n        t = t * 0.5 + key * v",
            f"d = {{i % 5: i * 0.5 for i in range(n + {abs(k)})}}", "t += sum([v for v in d.values()])",
            f"t += d.pop({k}, 0.25)", f"t += d.pop(n + {k})", f"del d[{k}]", "t += d.popitem()[1]",
            f"if {k} in d:\n        del d[{k}]"]))
    lines.append("    return t, d")
    return "\n".join(lines)


@pytest.mark.slow  # a fuzzer: with the slow set (README, tests/conftest.py)
def test_random_dict_programs_against_cpython():
    rng = random.Random(2029)
    checked = raised = 0
    for p in range(60):
        source = _program(rng)
        name = f"<dicts {p}>"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # its source, as IPython keeps it
        space: dict = {}
        exec(compile(source, name, "exec"), space)  # the program under test
        fn = jit(space["prog"])
        for _ in range(3):
            a = np.array([rng.uniform(-2, 2) for _ in range(rng.randint(0, 6))])
            out = _same(fn, a, rng.randint(0, 4))
            raised += isinstance(out, Exception)
            checked += 1
    assert checked == 180 and 0 < raised < checked


# -- `in` -------------------------------------------------------------------------------------
@jit
def membership(x, a, t):
    xs = [1.0, 2.0]
    return x in a, x not in a, x in t, 2 in (1, 2, 3), x in xs, x not in xs


def test_in_of_arrays_tuples_and_lists_is_cpythons():
    for x in (1.0, 2.0, 5.0, -0.0):
        _same(membership, x, np.array([0.0, 2.0]), (3.0, 1.0))


def test_a_nan_in_a_list_tuple_or_dict_key_is_a_value_error_where_cpython_compares_identity():
    """CPython finds a NaN in a list or as a dict key when it is the same object; compiled numbers have
    no identity, so the answer would depend on it: a ValueError, never a guess. NumPy arrays compare
    by ``==`` (NaN is never in one), as NumPy does."""
    nan = float("nan")
    with pytest.raises(ValueError, match="identity"):
        membership(nan, np.array([nan]), (nan,))

    @jit
    def nan_in_array(x, a):
        return x in a

    assert nan_in_array(nan, np.array([nan])) is False
    with pytest.raises(ValueError, match="identity"):
        float_keys(np.array([1.0, nan]))
