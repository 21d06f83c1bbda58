"""Differential suite: every corpus function compiled with @jit against CPython."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import frontend_corpus as C
from gpucompiler import jit

_INTS = st.integers(-1000, 1000)


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, float) and want != want:
        assert got != got
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), (got, want)


def _oracle(fn, *args):
    try:
        return fn(*args), None
    except ZeroDivisionError as exc:
        return None, type(exc)


@pytest.mark.parametrize("fn", C.SCALAR_FUNCS, ids=lambda f: f.__name__)
def test_scalar_function(fn):
    compiled = jit(fn)

    @settings(max_examples=25, deadline=None)
    @given(_INTS, _INTS)
    def check(a, b):
        want, exc = _oracle(fn, a, b)
        if exc is not None:
            with pytest.raises(exc):
                compiled(a, b)
        else:
            _same(compiled(a, b), want)

    check()


_SHAPES = {"arr_2d_sum": (4, 5), "arr_3d": (2, 3, 4), "arr_row": (3, 4)}


@pytest.mark.parametrize("fn", C.ARRAY_FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
def test_array_function(fn, dtype):
    rng = np.random.default_rng(7)
    shape = _SHAPES.get(fn.__name__, (9,))
    data = (rng.integers(-20, 20, size=shape)).astype(dtype)
    mine, ref = data.copy(), data.copy()
    got, want = jit(fn)(mine), fn(ref)
    _same(got, float(want) if isinstance(want, np.floating) else want)
    np.testing.assert_allclose(mine, ref, rtol=1e-6)


def test_strided_array_view():
    base = np.arange(40.0).reshape(8, 5)
    view = base[::2, 1:4]  # not contiguous: strides are read at the call
    assert jit(C.arr_2d_sum)(view) == pytest.approx(C.arr_2d_sum(view.copy()))


def test_writes_are_seen_by_caller():
    a = np.arange(5.0)
    jit(C.arr_scale)(a)
    np.testing.assert_array_equal(a, np.arange(5.0) * 2 + 1)
