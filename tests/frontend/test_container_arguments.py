"""Python lists and dicts passed to ``@jit`` functions: converted for the call, what the call does reflected
into the caller's object (as Numba reflects lists), against CPython running the same function on a copy."""

from __future__ import annotations

import copy
import linecache
import random

import numpy as np
import pytest

from gpucompiler import jit, kernel
from gpucompiler.errors import ArgumentTypeError


def _same(compiled, *args):
    """Result (exceptions by type) and the arguments afterwards equal CPython's on deep copies; the result."""
    mine, theirs = args, copy.deepcopy(args)
    try:
        want = compiled.py_func(*theirs)
    except Exception as exc:  # any CPython error is the reference
        with pytest.raises(type(exc)):
            compiled(*mine)
        _equal(mine, theirs)  # what ran before the error is seen, as in CPython
        return exc
    got = compiled(*mine)
    assert got == want and type(got) is type(want), (got, want)
    _equal(mine, theirs)
    return got


def _equal(mine, theirs) -> None:
    for m, t in zip(mine, theirs):  # items keep CPython's types (an int list stays ints)
        assert type(m) is type(t) and (np.array_equal(m, t) if isinstance(m, np.ndarray) else m == t), (m, t)
        if isinstance(m, list):
            assert [type(x) for x in m] == [type(x) for x in t]
        if isinstance(m, dict):
            assert [(type(k), type(v)) for k, v in m.items()] == [(type(k), type(v)) for k, v in t.items()]
            assert list(m) == list(t)  # the order too


@jit
def total(xs):
    s = 0.0
    for x in xs:
        s += x
    return s, len(xs), xs[-1]


@jit
def grow_and_set(xs, v):
    xs.append(v)
    xs[0] = v * 2
    return len(xs)


@jit
def shrink(xs, k):
    xs.pop()
    xs.pop(k)
    return xs


@jit
def count_into(d, a):
    for x in a:
        k = int(x)
        d[k] = d.get(k, 0) + 1
    return d, len(d)


@jit
def lookup(d, k):
    return d[k], k in d, sum(d.values())


@pytest.mark.parametrize("xs", [[1.0, 2.5, -3.0], [7], [True, False], [1 + 2j, 3.0 - 1j], [np.float64(0.5), 2.0]])
def test_a_list_argument_is_read_as_cpython_reads_it(xs):
    _same(total, xs)


def test_appends_pops_and_item_assignments_are_seen_by_the_caller():
    xs = [1.0, 2.0, 3.0]
    assert grow_and_set(xs, 4.0) == 4 and xs == [8.0, 2.0, 3.0, 4.0]
    ints = [5, 6, 7, 8]
    for k in (0, -1, 1):
        _same(shrink, list(ints), k)
    assert _same(grow_and_set, [1, 2], 3) == 3


def test_items_the_call_leaves_equal_keep_their_objects_and_the_list_its_identity():
    xs = [0.1 * i for i in range(10)]
    before = [id(x) for x in xs]
    grow_and_set(xs, 9.5)
    assert [id(x) for x in xs[1:10]] == before[1:] and xs[0] == 19.0
    ys = [1, 2, 3]
    assert shrink(ys, 0) is ys and ys == [2]  # the argument returned is the caller's list


def test_a_returned_argument_inside_a_tuple_is_the_callers_object_and_a_new_list_is_new():
    @jit
    def both(xs, d):
        ys = [x for x in xs]
        return xs, ys, d

    xs, d = [1.5, 2.5], {1: 2}
    a, b, c = both(xs, d)
    assert a is xs and c is d and b == xs and b is not xs


def test_a_call_that_raises_leaves_what_it_did_before_the_error():
    @jit
    def grow_then_fail(xs, d, k):
        xs.append(1.0)
        d[k] = 2.0
        return xs[k] + d[k + 100]

    _same(grow_then_fail, [0.5], {3: 1.0}, 0)  # KeyError after the appends
    _same(grow_then_fail, [0.5], {3: 1.0}, 5)  # IndexError


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 100])
def test_a_dict_argument_is_filled_and_looked_up_as_cpythons(n):
    d = {i * 3: 0 for i in range(n)} or {-1: 5}
    a = np.array([1.5, 2.0, 3.0, 3.5, 0.0, 9.0 * n])
    assert _same(count_into, d, a)[0] is d  # the caller's object, filled
    for k in (0, 3, 4, -1):
        _same(lookup, {0.5 * i: float(i) for i in range(n + 1)}, k)


def test_a_dict_reflects_its_order_and_keeps_float_keys_and_bool_values():
    @jit
    def rekey(d):
        d[2.0] = d[1.0] or d[2.0]
        d[-0.0] = True
        return len(d)

    _same(rekey, {1.0: False, 2.0: True})
    _same(rekey, {0.0: False, 2.0: True, 1.0: True})


def test_lists_and_dicts_of_what_compiled_code_cannot_hold_are_typed_errors_naming_the_parameter():
    cases = [([], "empty list"), ([1, 2.0], "list of float, int"), ([[1, 2], [3]], "list of list"),
             (["a"], "list of str"), ([2 ** 70], "beyond int64"), ({}, "empty dict"), ({"a": 1.0}, "str keys"),
             ({float("nan"): 1.0}, "NaN"), ({1: "x"}, "dict values of str"), ({1j: 1.0}, "complex"),
             ([(1, 2)], "list of tuple")]
    for value, text in cases:
        with pytest.raises(ArgumentTypeError) as info:
            total(value)
        assert info.value.parameter == "xs" and text in str(info.value), str(info.value)
        assert info.value.hint


def test_one_list_passed_twice_is_refused_and_copies_are_taken():
    @jit
    def both(a, b):
        a.append(1)
        return len(b)

    xs = [1, 2]
    with pytest.raises(ArgumentTypeError) as info:
        both(xs, xs)
    assert info.value.parameter == "b" and "'a'" in str(info.value)
    assert both(xs, list(xs)) == 2 and xs == [1, 2, 1]


def test_kernels_refuse_lists_with_the_way_that_works():
    @kernel
    def k(out, xs):
        out[0] = xs[0]

    with pytest.raises(ArgumentTypeError) as info:
        k[1, 1, "cpu"](np.zeros(1), [1.0])
    assert "np.asarray" in info.value.hint


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_list_and_dict_arguments_do_not_leak():
    @jit(tier=False)
    def churn(xs, d):
        xs.append(1.0)
        xs.pop(0)
        d[len(d)] = 1.0
        return xs, d

    xs, d = [float(i) for i in range(200)], {i: 0.5 for i in range(200)}
    for _ in range(1000):
        churn(xs, d)
        d.popitem()
    before = _rss()
    for _ in range(30_000):
        churn(xs, d)
        d.popitem()
    grown = _rss() - before
    assert grown < 16 << 20, f"RSS grew {grown} bytes over 3*10^4 calls"
    assert len(xs) == 200 and len(d) == 200


# -- a small differential fuzzer -------------------------------------------------------------
def _program(rng: random.Random) -> str:
    lines = ["def prog(xs, ys, d, n):", "    t = 0.0"]
    for _ in range(rng.randint(1, 8)):
        k = rng.randint(-3, 3)
        lines.append("    " + rng.choice([
            f"xs.append(t * {k} + 0.5)", f"ys.append(n + {k})", f"t += xs[{k}]", "t += xs.pop()",
            f"xs[{k}] = t", f"ys[{k}] = ys[{k}] * 2", "t += sum(ys)", f"t += ys.pop({k})",
            f"d[n + {k}] = t", f"t += d.get({k}, 1.5)", f"t += d[{k}]", f"t += 1.0 if {k} in d else 0.0",
            "for x in xs:\n        t = t * 0.5 + x", "for key, v in d.items():\n        t += key * v",
            f"d[{k}] = d.get({k}, 0.0) + len(xs)"]))
    lines.append("    return t")
    return "\n".join(lines)


@pytest.mark.slow  # a fuzzer: with the slow set (README, tests/conftest.py)
def test_random_programs_on_list_and_dict_arguments_against_cpython():
    rng = random.Random(2030)
    checked = raised = 0
    for p in range(50):
        source = _program(rng)
        name = f"<arguments {p}>"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # its source, as IPython keeps it
        space: dict = {}
        exec(compile(source, name, "exec"), space)  # the program under test
        fn = jit(space["prog"])
        for _ in range(3):
            xs = [rng.uniform(-2, 2) for _ in range(rng.randint(1, 5))]
            ys = [rng.randint(-9, 9) for _ in range(rng.randint(1, 5))]
            d = {rng.randint(-4, 4): rng.uniform(-1, 1) for _ in range(rng.randint(1, 6))}
            out = _same(fn, xs, ys, d, rng.randint(0, 4))
            raised += isinstance(out, Exception)
            checked += 1
    assert checked == 150 and 0 < raised < checked


def test_del_of_items_compiles_without_source_too():
    """``del`` read back from bytecode (exec of a string: no source file) is the same statement."""
    source = "def f(xs, d, k):\n    del xs[k]\n    del xs[::2]\n    del d[k]\n    return len(xs)\n"
    space: dict = {}
    exec(compile(source, "<no source>", "exec"), space)  # the function under test, without a source file
    _same(jit(space["f"]), [1, 2, 3, 4, 5, 6], {1: 0.5, 2: 1.5}, 2)
    _same(jit(space["f"]), [1, 2], {1: 0.5}, 2)  # IndexError, as CPython's


_TYPED = """
import warnings
warnings.simplefilter("ignore")
from numba import njit, typed, types
from gpucompiler import jit
from gpucompiler.errors import ArgumentTypeError

def update(xs, d, k):
    xs.append(xs[0] * 2.0)
    del xs[0]
    d[k] = d.get(k, 0.0) + 1.0
    d.pop(1, 0.0)
    return xs, d, len(xs)

def made(kind):
    xs, d = typed.List([1.0, 2.0, 3.0]), typed.Dict.empty(types.int64, types.float64)
    d[1], d[2] = 5.0, 6.0
    return xs, d

ours, theirs = made(0), made(1)
got, want = jit(update)(*ours, 7), njit(update)(*theirs, 7)
assert got[0] is ours[0] and got[1] is ours[1] and got[2] == want[2] == 3
assert list(ours[0]) == list(theirs[0]) == [2.0, 3.0, 2.0] and dict(ours[1]) == dict(theirs[1]) == {2: 6.0, 7: 1.0}
def grow(xs):
    xs.append(4)
    return len(xs)

empty = typed.List.empty_list(types.int64)
assert jit(grow)(empty) == 1 and list(empty) == [4]
try:
    jit(update)(typed.List(), ours[1], 1)
except ArgumentTypeError as exc:
    assert exc.parameter == "xs" and "empty_list" in exc.hint
else:
    raise AssertionError("an untyped typed.List was taken")
print("same as Numba")
"""


def test_numbas_typed_list_and_dict_are_taken_and_changed_as_numba_changes_them():
    """Numba's typed containers in a process of their own: two LLVM JITs in the test's process once crashed."""
    pytest.importorskip("numba", reason="numba.typed's objects exist only where Numba is installed")
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _TYPED], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "same as Numba" in out.stdout, out.stderr[-3000:]
