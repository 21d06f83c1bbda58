"""Methods of global arrays (``G.sum()`` as ``np.sum(G)``) and ``len`` of a string constant, against
NumPy and CPython."""

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import ReadOnlyArrayError, TypeInferenceError

G = np.arange(12.0).reshape(3, 4) - 5.5
V = np.array([3, -1, 7, 7, 0], dtype=np.int32)
WORD = "héllo wörld"
EMPTY = ""


def methods_2d(x):
    return G.sum() + G.prod() + G.min() + G.max() + G.mean() + G.argmin() + G.argmax() + x


def methods_1d(x):
    return V.sum() + V.prod() + V.min() + V.max() + V.argmax() + V.argmin() + x


def along_axis(i):
    return G.sum(axis=0)[i] + G.max(1)[i] + G.mean(axis=1, keepdims=True)[i, 0] + G.argmin(axis=0)[i]


def truth(x):
    return V.any() and not V.all() and x > 0


def dot(i):
    return G.dot(G.T)[i, i] + V.dot(V)


def copied(x):
    c = G.copy()
    c[0, 0] = x
    return c


def text(n):
    return len(WORD) + len(EMPTY) * 10 + len("abc") * n


@pytest.mark.parametrize("fn, arg", [(methods_2d, 1.5), (methods_1d, 2), (truth, 1.0), (text, 3)])
def test_numbers_as_cpython_and_numpy(fn, arg):
    got, want = jit(fn)(arg), fn(arg)
    want = want.item() if isinstance(want, np.generic) else want
    assert got == pytest.approx(want, rel=1e-15) and type(got) is type(want)


@pytest.mark.parametrize("i", [0, 1, 2])
def test_axis_keywords_and_products(i):
    assert jit(along_axis)(i) == along_axis(i)
    assert jit(dot)(i) == dot(i)


def test_a_method_copy_is_a_new_writable_array():
    got = jit(copied)(-9.0)
    np.testing.assert_array_equal(got, copied(-9.0))
    assert G[0, 0] == -5.5  # the global is unchanged


def sum_of_sum(x):
    return G.sum(axis=0).sum() + x


def unknown_method(x):
    return G.frobnicate()  # pyright: ignore[reportAttributeAccessIssue]  (refused when compiling)


def writes_global(x):
    G[0, 0] = x


def test_chained_and_refused():
    assert jit(sum_of_sum)(1.0) == sum_of_sum(1.0)
    with pytest.raises(TypeInferenceError, match=r"test_global_methods\.py"):
        jit(unknown_method)(1.0)
    with pytest.raises(ReadOnlyArrayError):
        jit(writes_global)(1.0)
