"""The call boundary of ``@jit`` and kernels: arguments bound as Python binds them, arrays checked.

Each test pins a behaviour that used to be a crash or a silent wrong answer:
returned arrays (once a segfault), extra arguments (ignored), missing ones and
defaults (an internal IndexError), read-only arrays (written), 0-d arrays,
objects that only look like arrays (read at NumPy's struct offsets).
"""

import array
import inspect

import numpy as np
import pytest

from gpucompiler import device as gd, jit, kernel
from gpucompiler.errors import ArgumentBindingError, ArgumentTypeError, ReadOnlyArrayError, TypeInferenceError


def _line(fn, text: str) -> int:
    """The line of ``fn``'s source that contains ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def ident(a):
    return a


def pair(a, n):
    return (n, a)


def test_returning_an_argument_array_returns_that_array():
    a = np.arange(3.0)
    assert jit(ident)(a) is a
    n, b = jit(pair)(a, 3)
    assert n == 3 and b is a


def lin(x, y=2.0, *, scale=10.0):
    return (x - y) * scale


def two(x, y):
    return x - y


def test_arguments_bind_as_python_binds_them():
    f = jit(lin)
    for args, kwargs in [((5.0,), {}), ((5.0, 1.0), {}), ((5.0,), {"y": 4.5}), ((), {"y": 1.0, "x": 3.0}),
                         ((5.0, 1.0), {"scale": -1.0}), ((7,), {"scale": 2})]:
        assert f(*args, **kwargs) == lin(*args, **kwargs)
    g = jit(two)
    assert g(y=1, x=5) == 4 and g(5, y=1) == 4


@pytest.mark.parametrize("args,kwargs", [((1.0, 2.0, 3.0), {}), ((), {}), ((1.0,), {"z": 2.0}),
                                         ((1.0,), {"x": 2.0})])
def test_arguments_that_python_would_not_bind_raise_its_type_error(args, kwargs):
    with pytest.raises(TypeError) as ref:
        two(*args, **kwargs)
    with pytest.raises(ArgumentBindingError) as info:
        jit(two)(*args, **kwargs)
    assert isinstance(info.value, TypeError)
    assert info.value.line == two.__code__.co_firstlineno and "two()" in str(info.value)
    assert type(ref.value) is TypeError


def test_a_default_value_is_typed_like_an_argument():
    f = jit(lin)
    assert f(1) == -10.0 and isinstance(f(1), float)  # y=2.0 keeps float arithmetic

    def ints(n, k=3):
        return n // k

    assert jit(ints)(10) == 3 and isinstance(jit(ints)(10), int)


def fill(a, v):
    for i in range(a.shape[0]):
        a[i] = v


def total(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


def test_writing_a_read_only_array_is_refused_as_numpy_does_and_reading_it_works():
    a = np.arange(4.0)
    a.flags.writeable = False
    with pytest.raises(ValueError, match="read-only") as ref:
        a[0] = 1.0
    with pytest.raises(ReadOnlyArrayError, match=str(ref.value)) as info:
        jit(fill)(a, 1.0)
    assert isinstance(info.value, ValueError) and info.value.line == _line(fill, "a[i] = v")
    np.testing.assert_array_equal(a, np.arange(4.0))
    assert jit(total)(a) == 6.0
    b = np.zeros(4)
    jit(fill)(b, 2.0)  # the writeable specialisation is another one
    assert b.tolist() == [2.0] * 4


def test_zero_dimensional_arrays_are_arrays_read_and_written_with_an_empty_index_and_numpy_scalars_work():
    def bump(a):
        a[()] = a[()] * 3 + 1
        return a[()]

    a = np.array(2.5)
    assert jit(bump)(a) == 8.5 and a[()] == 8.5
    with pytest.raises(IndexError):
        total(np.array(1.0))
    with pytest.raises(TypeInferenceError, match="tuple index 0 out of range"):
        jit(total)(np.array(1.0))  # a.shape is (): CPython's IndexError, found at compile time

    def twice(x):
        return 2 * x

    assert jit(twice)(np.float32(1.5)) == 3.0 and jit(twice)(np.int64(4)) == 8


class LooksLikeAnArray:
    dtype = np.dtype("float64")
    ndim = 1
    shape = (4,)

    class flags:
        c_contiguous = True
        writeable = True


def test_an_object_that_only_looks_like_an_array_is_refused():
    with pytest.raises(ArgumentTypeError, match=r"parameter 'a'.*LooksLikeAnArray"):
        jit(total)(LooksLikeAnArray())
    with pytest.raises(ArgumentTypeError, match="'a'"):
        kernel(_fill_kernel)[1, 4, "cpu"](LooksLikeAnArray(), 1.0)


class Exposes:
    """An object with ``__array_interface__`` over a NumPy buffer (as other array libraries have)."""

    def __init__(self, base):
        self.base = base
        self.__array_interface__ = base.__array_interface__


def test_array_interface_and_buffer_objects_are_viewed_without_a_copy():
    buf = array.array("d", [1.0, 2.0, 3.0])
    assert jit(total)(buf) == 6.0
    jit(fill)(buf, 5.0)  # written in place: the view shares the buffer
    assert buf.tolist() == [5.0] * 3
    base = np.zeros(3)
    jit(fill)(Exposes(base), 7.0)
    assert base.tolist() == [7.0] * 3
    with pytest.raises(ReadOnlyArrayError):
        jit(fill)(memoryview(b"\0" * 16).cast("d"), 1.0)  # bytes: a read-only buffer
    with pytest.raises(TypeInferenceError, match="no attribute 'shape'") as info:
        jit(total)([1.0, 2.0])  # a list is a list, not an array viewed (NumPy would copy it: writes would be lost)
    assert info.value.line == _line(total, "a.shape[0]") and "np.asarray" in info.value.hint


def _fill_kernel(a, v):
    i = gd.grid(1)
    if i < a.shape[0]:
        a[i] = v


def _axpy(y, x, a=2.0, *, offset=0.0):
    i = gd.grid(1)
    if i < y.shape[0]:
        y[i] = a * x[i] + offset


def test_kernel_launches_bind_arguments_and_refuse_read_only_arrays():
    x, y = np.arange(4.0), np.zeros(4)
    k = kernel(_axpy)
    k[1, 4, "cpu"](y, x)
    assert y.tolist() == (2.0 * x).tolist()
    k[1, 4, "cpu"](y, x=x, offset=1.0, a=3.0)
    assert y.tolist() == (3.0 * x + 1.0).tolist()
    with pytest.raises(ArgumentBindingError, match="too many"):
        k[1, 4, "cpu"](y, x, 1.0, 2.0)
    with pytest.raises(ArgumentBindingError, match="missing"):
        k[1, 4, "cpu"](y)
    y.flags.writeable = False
    with pytest.raises(ReadOnlyArrayError) as info:
        k[1, 4, "cpu"](y, x)
    assert info.value.line == _line(_axpy, "y[i] = a")


def scaled(a, b):
    return a * b


class Tagged(np.ndarray):
    """A subclass that only carries an attribute: its elements are what compiled code computes with."""

    def __array_finalize__(self, obj):
        self.tag = getattr(obj, "tag", None)

    def describe(self):
        return f"tagged {self.tag}"


class Doubled(np.ndarray):
    def __getitem__(self, k):
        return 2 * np.asarray(self)[k]


def test_array_subclasses_that_redefine_array_behaviour_are_refused_not_computed_as_plain_arrays(tmp_path):
    # a masked array's masked elements were summed (3.0 where NumPy says 1.0), np.matrix's * multiplied
    # elementwise: the subclass's own behaviour was silently ignored
    f, g = jit(total), jit(scaled)
    assert f(np.arange(3.0)) == 3.0  # the plain array's entry exists: the subclasses must not slip through it
    masked = np.ma.array([1.0, 2.0], mask=[False, True])
    for value, words in ((masked, "MaskedArray redefines"), (np.arange(3.0).view(Doubled), "__getitem__")):
        with pytest.raises(ArgumentTypeError, match=words):
            f(value)
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ArgumentTypeError, match="matrix redefines"):
        g(m, m)
    np.testing.assert_array_equal(g(np.asarray(m), np.asarray(m)), np.asarray(m) ** 2)  # the hint's way out
    # subclasses that add attributes or methods, and memory maps, compute as their elements
    assert f(np.arange(4.0).view(Tagged)) == 6.0
    mm = np.memmap(tmp_path / "a.bin", dtype=np.float64, mode="w+", shape=(3,))
    mm[:] = [1.0, 2.0, 4.0]
    assert f(mm) == 7.0


def _times_two(x):
    return x * 2


def _mixed(x, y):
    return -x + np.sin(y) - (x > y) + x % 3


@pytest.mark.parametrize("x, y", [(np.array(2.5), np.array(0.5)), (np.array(7), np.array(-1.5)),
                                  (np.array(2.5), 1.0), (np.float32(1.5), np.array(2, np.int16))])
def test_arithmetic_on_0d_arrays_is_numpys(x, y):
    """NumPy computes on a 0-d array's element (it was an llvmlite error inside the compiler)."""
    assert jit(_times_two)(x) == _times_two(x)
    want = _mixed(x, y)
    got = jit(_mixed)(x, y)
    assert got == pytest.approx(float(want), rel=1e-6)
