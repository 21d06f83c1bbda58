"""Structured (record) arrays through the compiled entry of warm ``@jit`` calls.

The entry takes a structured array whose dtype object is the one the dispatcher last typed for
that argument (by its address, names included); every other dtype object, layout, alignment or
contiguity goes to the Python dispatcher, which types it. Misses are counted by wrapping the
dispatcher's ``__call__`` (what the entry calls on a miss); results are checked against NumPy.
"""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler import types as T
from gpucompiler.runtime import pyentry

jit_module = sys.modules["gpucompiler.jit"]  # the module (the package's ``jit`` is the decorator)

PARTICLE = [("x", np.float64), ("v", np.float64), ("m", np.float64), ("id", np.int32)]


def _first_m(a):
    return a[0].m


def _weighted(a, w, scale):
    s = 0.0
    for i in range(len(a)):
        s += a[i].m * a[i].x * w[i]
    return s * scale


def _firsts(a):
    return a[0].x, a[0].v


def _sum_m(a):
    s = 0.0
    for p in a:
        s += p.m
    return s


def _bump(a):
    for p in a:
        p.v += 1.0
    return len(a)


def _total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def _particles(dtype, n=9, seed=0) -> Any:
    rng = np.random.default_rng(seed)
    a: Any = np.zeros(n, dtype)
    a["x"], a["v"], a["m"] = rng.standard_normal(n), rng.standard_normal(n), rng.random(n) + 0.5
    a["id"] = np.arange(n) * 3 + 1
    return a


@pytest.fixture(autouse=True)
def _cache_off(monkeypatch):
    monkeypatch.setenv("GPUC_CACHE", "off")


@pytest.fixture
def misses(monkeypatch) -> list:
    """The calls the Python dispatcher ran (first calls and the entry's misses) of jits made after it."""
    seen: list = []
    dispatch = jit_module.Dispatcher.__call__

    def counted(self, *args, **kwargs):
        seen.append(args)
        return dispatch(self, *args, **kwargs)

    monkeypatch.setattr(jit_module.Dispatcher, "__call__", counted)
    return seen


def _fast(f):
    return type(f).__dict__.get("__call__")


def test_the_same_dtype_object_runs_the_builtin_entry_after_the_first_call(misses):
    a = _particles(np.dtype(PARTICLE))
    f = jit(_first_m)
    assert f(a) == a[0]["m"] and len(misses) == 1
    assert isinstance(_fast(f), types.BuiltinFunctionType)
    b: Any = np.zeros(3, a.dtype)  # another array of the very dtype object
    b["m"] = 7.5
    for _ in range(5):
        assert f(a) == a[0]["m"] and f(b) == 7.5
    assert len(misses) == 1


def test_equal_dtypes_made_separately_miss_once_and_the_last_two_are_remembered(misses):
    first, second, third = np.dtype(PARTICLE), np.dtype(PARTICLE), np.dtype(PARTICLE)
    assert first == second == third and first is not second
    a, b, c = _particles(first, seed=1), _particles(second, seed=2), _particles(third, seed=3)
    f = jit(_first_m)

    def calls(*arrays):
        for x in arrays:
            assert f(x) == x[0]["m"]
        return len(misses)

    assert calls(a, a) == 1
    assert calls(b) == 2  # a new object: typed once, one specialization
    assert calls(b, b, a, b, a) == 2 and len(f.signatures) == 1  # both remembered
    assert calls(c) == 3 and calls(c, b, c) == 3  # the third replaces the older slot (a's)
    assert calls(a) == 4 and calls(a, c, a) == 4  # and a the next (b's)
    assert calls(b) == 5


def test_the_same_itemsize_with_other_offsets_is_another_specialization(misses):
    xy = np.dtype({"names": ["x", "v", "m", "id"], "formats": ["f8", "f8", "f8", "i4"],
                   "offsets": [0, 8, 16, 24], "itemsize": 32})
    swapped = np.dtype({"names": ["x", "v", "m", "id"], "formats": ["f8", "f8", "f8", "i4"],
                        "offsets": [16, 8, 0, 28], "itemsize": 32})
    assert xy.itemsize == swapped.itemsize and xy.num == swapped.num
    a, b = _particles(xy, seed=3), _particles(swapped, seed=4)
    f = jit(_weighted, tier=False)
    w = np.linspace(0.5, 2.0, 9)

    def want(p):
        return float(np.sum(p["m"] * p["x"] * w)) * 1.5

    for _ in range(3):
        assert f(a, w, 1.5) == pytest.approx(want(a), rel=1e-12)
        assert f(b, w, 1.5) == pytest.approx(want(b), rel=1e-12)
    assert len(f.signatures) == 2
    count = len(misses)
    for _ in range(3):
        assert f(b, w, 1.5) == pytest.approx(want(b), rel=1e-12)
    assert len(misses) == count  # the third argument (a float) and the array after it are checked too


def test_a_multi_field_view_keeps_the_itemsize_but_not_the_fields(misses):
    a = _particles(np.dtype(PARTICLE), seed=5)
    view = a[["x", "m"]]  # x at 0 and m at 16 of a 28-byte element: another layout
    assert view.dtype.itemsize == a.dtype.itemsize
    f = jit(_sum_m, tier=False)
    for arr in (a, view, a, view):
        assert f(arr) == pytest.approx(float(a["m"].sum()), rel=1e-12)
    assert len(f.signatures) == 2
    count = len(misses)
    assert f(view) == pytest.approx(float(a["m"].sum()), rel=1e-12) and len(misses) == count


def test_packed_and_aligned_dtypes_of_the_same_offsets_are_told_apart(misses):
    packed = np.dtype([("x", np.float64), ("v", np.float64)])
    aligned = np.dtype([("x", np.float64), ("v", np.float64)], align=True)
    assert packed == aligned and packed.alignment != aligned.alignment  # NumPy calls them equal
    f = jit(_firsts)
    a, b = np.array([(1.0, 2.0)] * 3, packed), np.array([(3.0, 4.0)] * 3, aligned)
    for _ in range(3):
        assert f(a) == (1.0, 2.0) and f(b) == (3.0, 4.0)
    assert len(f.signatures) == 2
    count = len(misses)
    assert f(b) == (3.0, 4.0) and f(b) == (3.0, 4.0) and len(misses) == count


def test_an_unaligned_array_of_an_aligned_dtype_misses_to_its_own_specialization(misses):
    dtype = np.dtype(PARTICLE, align=True)
    a = _particles(dtype, seed=6)
    raw = np.zeros(a.nbytes + 1, np.uint8)
    odd: Any = np.frombuffer(raw.data, dtype, count=len(a), offset=1)
    assert not odd.flags.aligned and odd.dtype is dtype
    odd.flags.writeable = True
    odd[...] = a
    f = jit(_sum_m, tier=False)
    assert f(a) == pytest.approx(float(a["m"].sum())) and f(a) == pytest.approx(float(a["m"].sum()))
    count = len(misses)
    assert f(a) == pytest.approx(float(a["m"].sum())) and len(misses) == count
    assert f(odd) == pytest.approx(float(a["m"].sum())) and len(misses) == count + 1
    assert {t.aligned for (t,) in f.signatures} == {True, False}


def test_non_contiguous_read_only_and_2d_structured_arrays(misses):
    dtype = np.dtype(PARTICLE)
    a = _particles(dtype, n=12, seed=7)
    f, bump = jit(_sum_m, tier=False), jit(_bump, tier=False)
    strided = a[::3]
    assert f(strided) == pytest.approx(float(strided["m"].sum()))
    count = len(misses)
    assert f(strided) == pytest.approx(float(strided["m"].sum())) and len(misses) == count
    assert f(a) == pytest.approx(float(a["m"].sum())) and len(misses) == count + 1  # C layout: typed again
    frozen = a.copy()
    frozen.flags.writeable = False
    assert f(frozen) == pytest.approx(float(a["m"].sum())) and len(misses) == count + 2
    assert f(frozen) == pytest.approx(float(a["m"].sum())) and len(misses) == count + 2
    v = a["v"].copy()
    assert bump(strided) == 4 and bump(strided) == 4
    assert np.allclose(a["v"][::3], v[::3] + 2.0) and np.array_equal(np.delete(a["v"], np.s_[::3]),
                                                                     np.delete(v, np.s_[::3]))
    grid = a.reshape(3, 4)
    g = jit(lambda b: b[1, 2].m + b[2, 3].x)
    count = len(misses)
    for _ in range(3):
        assert g(grid) == grid[1, 2]["m"] + grid[2, 3]["x"]
    assert len(misses) == count + 1


def test_a_field_view_is_an_ordinary_strided_array_on_the_entry(misses):
    a = _particles(np.dtype(PARTICLE), seed=8)
    total = jit(_total, tier=False)
    assert total(a["m"]) == pytest.approx(float(a["m"].sum()))
    count = len(misses)
    assert total(a["m"]) == pytest.approx(float(a["m"].sum()))
    assert total(a["x"]) == pytest.approx(float(a["x"].sum()))
    assert len(misses) == count
    assert T.typeof(a["m"]) == T.ArrayType(T.float64, 1, "A")


def _views(a, k):
    return a["m"], a[1:]["x"], a[k].v


def _mixed(w, a, b):
    return w[0] + a[0].m + b[1].x


def test_field_views_returned_from_the_entry_keep_the_array_alive(misses):
    f = jit(_views)
    a = _particles(np.dtype(PARTICLE), seed=9)
    f(a, 2)
    count = len(misses)
    for k in range(3):
        m, x, v = f(a, k)
        assert np.array_equal(m, a["m"]) and np.array_equal(x, a["x"][1:]) and v == a[k]["v"]
        assert np.shares_memory(m, a) and np.shares_memory(x, a) and m.strides == (a.dtype.itemsize,)
    assert len(misses) == count
    b = a.copy()
    m, x, _ = f(b, 0)
    want_m, want_x = b["m"].copy(), b["x"][1:].copy()
    del b  # the views hold the array's memory
    assert np.array_equal(m, want_m) and np.array_equal(x, want_x)


def test_two_structured_arguments_after_a_plain_array_are_checked_each_by_its_own_words(misses):
    packed, aligned = np.dtype(PARTICLE), np.dtype(PARTICLE, align=True)
    w = np.array([0.25, 0.5])
    a, b = _particles(packed, seed=10), _particles(aligned, seed=11)
    f = jit(_mixed)

    def want(p, q):
        return 0.25 + p[0]["m"] + q[1]["x"]

    assert f(w, a, b) == want(a, b) and f(w, a, b) == want(a, b)
    count = len(misses)
    assert f(w, a, b) == want(a, b) and len(misses) == count
    assert f(w, b, a) == want(b, a) and len(misses) == count + 1  # swapped: another specialization
    assert f(w, a, a) == want(a, a) and f(w, a, a) == want(a, a) and len(misses) == count + 2
    assert len(f.signatures) == 3


def test_a_recarray_and_its_plain_array_both_run_the_entry(misses):
    a = _particles(np.dtype(PARTICLE), seed=12)
    r = a.view(np.recarray)
    assert r.dtype is not a.dtype  # a dtype of np.record items: another object of the same layout
    f, bump = jit(_first_m), jit(_bump, tier=False)
    assert f(r) == a[0]["m"] and isinstance(_fast(f), types.BuiltinFunctionType)
    count = len(misses)
    for _ in range(3):
        assert f(r) == a[0]["m"]
    assert len(misses) == count
    assert f(a) == a[0]["m"] and len(misses) == count + 1
    for _ in range(3):  # both dtype objects remembered
        assert f(r) == a[0]["m"] and f(a) == a[0]["m"]
    assert len(misses) == count + 1
    v = a["v"].copy()
    assert bump(r) == 9 and bump(a) == 9 and bump(r) == 9 and bump(r) == 9
    assert np.allclose(a["v"], v + 4.0) and len(f.signatures) == 1

    class Tagged(np.ndarray):
        pass

    t = a.view(Tagged)
    count = len(misses)
    assert f(t) == a[0]["m"] and f(t) == a[0]["m"] and len(misses) == count + 2  # other subclasses: dispatcher


def test_renaming_fields_in_place_is_seen_by_the_next_call(misses):
    dtype = np.dtype([("x", np.float64), ("v", np.float64)])
    a = np.array([(1.0, 2.0), (3.0, 4.0)], dtype)
    f = jit(_firsts)
    assert f(a) == (1.0, 2.0) and f(a) == (1.0, 2.0)
    count = len(misses)
    dtype.names = ("v", "x")  # the same object, now x at offset 8
    assert a.dtype is dtype and f(a) == (2.0, 1.0) and f(a) == (2.0, 1.0) and f(a) == (2.0, 1.0)
    assert len(misses) == count + 1  # typed once with its new names, then the entry again
    dtype.names = ("x", "v")
    assert f(a) == (1.0, 2.0) and f(a) == (1.0, 2.0) and len(misses) == count + 2


def test_dtypes_of_another_layout_made_after_one_was_freed_are_never_taken(misses):
    f = jit(_firsts)
    for k in range(200):  # each dtype dies after its call; a later one may be allocated at its address
        order = [("x", np.float64), ("v", np.float64)]
        dtype = np.dtype(order if k % 2 else order[::-1])
        a = np.zeros(2, dtype)
        a["x"], a["v"] = k, -k
        assert f(a) == (k, -k)
        del a, dtype
    assert len(f.signatures) == 2


def test_a_remembered_dtype_is_held_while_remembered_and_released_after():
    first, second, third = np.dtype(PARTICLE), np.dtype(PARTICLE), np.dtype(PARTICLE)
    f = jit(_first_m)
    a, b, c = _particles(first), _particles(second, seed=1), _particles(third, seed=2)
    assert f(a) == a[0]["m"]  # typeof's memo keeps the first dtype of a layout; ``second`` is never a key
    held = sys.getrefcount(second)
    assert f(b) == b[0]["m"] and sys.getrefcount(second) == held + 1  # its address is in the entry's words
    assert f(a) == a[0]["m"] and f(c) == c[0]["m"] and sys.getrefcount(second) == held + 1  # c replaced a
    assert f(a) == a[0]["m"] and sys.getrefcount(second) == held  # a replaced it: released


def test_threads_alternating_equal_and_other_dtype_objects():
    dtypes = [np.dtype(PARTICLE), np.dtype(PARTICLE), np.dtype(PARTICLE, align=True)]
    arrays = [_particles(d, seed=k) for k, d in enumerate(dtypes)]
    f = jit(_first_m)
    for a in arrays:
        assert f(a) == a[0]["m"]
    errors: list = []

    def work(k):
        try:
            for i in range(3000):
                a = arrays[(i * (k + 1)) % 3]
                assert f(a) == a[0]["m"]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_without_the_names_offset_structured_calls_stay_on_the_ctypes_path(monkeypatch, misses):
    monkeypatch.setattr(pyentry, "names_offset", lambda: None)
    a = _particles(np.dtype(PARTICLE))
    f = jit(_first_m)
    assert f(a) == a[0]["m"] and f(a) == a[0]["m"] and len(misses) == 2 and _fast(f) is None


def test_this_numpy_has_the_names_offset_the_entries_read():
    assert pyentry.names_offset() in (104, 56)
