"""``np.concatenate``, ``np.stack``, ``np.vstack``, ``np.hstack`` against NumPy (values, shapes, dtypes,
layouts, errors with NumPy's messages), their derivatives against finite differences, and no leak."""

import gc

import numpy as np
import pytest

from enzyme_plugin import Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.errors import AxisError, TypeInferenceError


def cat0(a, b, c):
    return np.concatenate((a, b, c))


def cat1(a, b, c):
    return np.concatenate((a, b, c), axis=1)


def cat_last(a, b, c):
    return np.concatenate((a, b, c), -1)


def cat_flat(a, b, c):
    return np.concatenate((a, b, c), axis=None)


def stack0(a, b, c):
    return np.stack((a, b, c))


def stack1(a, b, c):
    return np.stack((a, b, c), axis=1)


def stack_last(a, b, c):
    return np.stack((a, b, c), axis=-1)


def vstack(a, b, c):
    return np.vstack((a, b, c))


def hstack(a, b, c):
    return np.hstack((a, b, c))


def pair(a, b, c):
    return np.concatenate((a * 2.0, c[::-1]))  # an expression, evaluated in the tuple


_ALL = [cat0, cat_last, cat_flat, stack0, stack1, stack_last, vstack, hstack]
_M = np.arange(12.0).reshape(3, 4) - 5.5
_TRIPLES_2D = [(_M, np.asfortranarray(_M) * 2, _M[::-1] + 0.25),
               (_M, np.arange(12, dtype=np.int32).reshape(3, 4), (np.arange(12) % 3 == 0).reshape(3, 4)),
               (np.zeros((0, 4)), np.zeros((0, 4)), np.zeros((0, 4))),
               (np.arange(8, dtype=np.uint8).reshape(2, 4), np.arange(8, dtype=np.int8).reshape(2, 4),
                np.ones((2, 4), dtype=np.uint8))]
_TRIPLES_1D = [(np.arange(3.0), np.arange(10.0)[::-4], np.array([-0.0, np.nan, 1e300])),
               (np.arange(4, dtype=np.int64), np.arange(4, dtype=np.float32) / 3, np.ones(4, dtype=bool)),
               (np.zeros(0), np.zeros(0), np.zeros(0)), (np.array([1 + 1j]), np.array([2.0]), np.array([3]))]


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert got.flags.c_contiguous


@pytest.mark.parametrize("fn", [*_ALL, cat1])
@pytest.mark.parametrize("k", range(len(_TRIPLES_2D)))
def test_2d_pieces_as_numpy(fn, k):
    args = _TRIPLES_2D[k]
    got = jit(fn)(*args)
    _same(got, fn(*args))
    assert not any(np.shares_memory(got, a) for a in args)


@pytest.mark.parametrize("fn", [*_ALL, pair])
@pytest.mark.parametrize("k", range(len(_TRIPLES_1D)))
def test_1d_pieces_as_numpy(fn, k):
    args = _TRIPLES_1D[k]
    if fn is pair and args[0].dtype.kind == "c":
        pytest.skip("covered by the other triples")
    _same(jit(fn)(*args), fn(*args))


def test_different_lengths_along_the_axis_and_mixed_vstack():
    a, b, c = np.ones((2, 3)), np.arange(3.0), np.zeros((4, 3))
    _same(jit(vstack)(a, b, c), vstack(a, b, c))
    a, b, c = np.ones((2, 1)), np.arange(10.0).reshape(2, 5), np.zeros((2, 0))
    _same(jit(hstack)(a, b, c), hstack(a, b, c))
    _same(jit(cat1)(a, b, c), cat1(a, b, c))


def _numpy_error(fn, *args):
    with pytest.raises(ValueError) as info:
        fn(*args)
    return str(info.value)


@pytest.mark.parametrize("fn, args", [(cat0, (np.ones((2, 3)), np.ones((2, 2)), np.ones((1, 3)))),
                                      (cat1, (np.ones((2, 3)), np.ones((2, 2)), np.ones((1, 3)))),
                                      (stack0, (np.ones(3), np.ones(3), np.ones(2)))])
def test_shape_mismatch_is_numpy_value_error(fn, args):
    with pytest.raises(ValueError, match=r"test_join\.py") as info:
        jit(fn)(*args)
    assert _numpy_error(fn, *args) in str(info.value)


def one_array(a):
    return np.concatenate(a)


def test_compile_time_refusals():
    with pytest.raises(TypeInferenceError, match="same number of dimensions"):
        jit(cat0)(np.ones(3), np.ones((1, 3)), np.ones(3))
    with pytest.raises(AxisError, match="axis 1 is out of bounds for array of dimension 1"):
        jit(cat1)(np.ones(3), np.ones(3), np.ones(3))
    with pytest.raises(TypeInferenceError, match="tuple of arrays"):
        jit(one_array)(np.ones((2, 2)))


def energy(x):
    a = x[:3]
    b = x[3:]
    c = np.concatenate((b, a * a))
    s = np.stack((a, b))
    h = np.hstack((c, a))
    return np.sum(c * np.arange(6.0)) + np.sum(s * s * s) + np.sum(h * h)


def reverse(x, dx):
    autodiff(Reverse, energy, Duplicated(x, dx))


def forward(x, tx):
    return autodiff(Forward, energy, Duplicated(x, tx))


def test_derivatives_against_finite_differences():
    x = np.array([0.3, -1.1, 0.8, 1.4, -0.6, 0.2])
    h = 1e-6
    fd = np.array([(energy(x + h * e) - energy(x - h * e)) / (2 * h) for e in np.eye(x.size)])
    dx = np.zeros(x.size)
    jit(reverse, plugins=("enzyme",))(x, dx)
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-9)
    t = np.linspace(1.0, -1.0, x.size)
    (dt,) = jit(forward, plugins=("enzyme",))(x, t)
    assert dt == pytest.approx(fd @ t, rel=1e-6)


def joined_sum(a, n):
    s = 0.0
    for _ in range(n):
        s += np.sum(np.concatenate((a * 2.0, a)))
    return s


def test_no_leak():
    from test_array_lifetimes import _heap_in_use

    f = jit(joined_sum)
    a = np.ones(1 << 16)
    f(a, 1)
    gc.collect()
    before = _heap_in_use()
    assert f(a, 50) == 50 * 3 * a.size
    gc.collect()
    assert _heap_in_use() - before < 1 << 20  # 50 iterations of 1.5 MiB each would show
