"""autodiff's arguments are checked from Python, ``@jit`` and kernels: one activity per parameter
(an extra ``Active`` got a phantom 0.0 derivative, a missing one an internal IndexError), and a
``Duplicated`` shadow of its value's dtype, rank and shape (a shorter shadow corrupted the heap)."""

from __future__ import annotations

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd, jit, kernel
from gpucompiler.errors import ArgumentBindingError, ArgumentTypeError, ReadOnlyArrayError, TypeInferenceError

P = ("enzyme",)


def square(x):
    return x * x


def mul(x, y):
    return x * y


def sumsq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def test_from_python_each_parameter_takes_one_activity():
    assert autodiff(Reverse, mul, Active(2.0), Active(3.0)) == (3.0, 2.0)
    with pytest.raises(ArgumentBindingError, match=r"square\(x\) takes 1 arguments, got 2"):
        autodiff(Reverse, square, Active(2.0), Active(3.0))
    with pytest.raises(ArgumentBindingError, match=r"missing the argument.*'y'"):
        autodiff(Reverse, mul, Active(2.0))


def extra_active(x):
    return autodiff(Reverse, square, Active(x), Active(x))[0]


def missing_active(x):
    return autodiff(Reverse, mul, Active(x))[0]


@pytest.mark.parametrize("fn,text", [(extra_active, "takes 1 arguments, got 2"),
                                     (missing_active, "missing the argument")])
def test_in_jit_a_wrong_number_of_activities_is_a_typed_error_at_the_call(fn, text):
    with pytest.raises(TypeInferenceError, match=text) as info:
        jit(fn, plugins=P)(3.0)
    assert info.value.line == fn.__code__.co_firstlineno + 1


def test_shadow_of_another_dtype_or_rank_is_refused_naming_the_parameter():
    a = np.ones(4)
    for shadow in (np.zeros(4, np.float32), np.zeros((4, 1)), [0.0] * 4):
        with pytest.raises(ArgumentTypeError, match=r"parameter 'a'.*shadow"):
            autodiff(Reverse, sumsq, Duplicated(a, shadow))


def test_shadow_of_another_shape_is_a_value_error_from_python_and_jit():
    a = np.arange(1.0, 1001.0)
    with pytest.raises(ValueError, match=r"argument 'a' must have the shape.*1000 elements in the value, 2 in"):
        autodiff(Reverse, sumsq, Duplicated(a, np.zeros(2)))

    def grad_into(a, da):
        autodiff(Reverse, sumsq, Duplicated(a, da))
        return 0.0

    g = jit(grad_into, plugins=P)
    with pytest.raises(ValueError, match="1000 elements in the value, 999 in the shadow"):
        g(a, np.zeros(999))
    da = np.zeros(1000)
    g(a, da)
    np.testing.assert_allclose(da, 2 * a)


def test_a_read_only_shadow_is_refused():
    a, da = np.ones(3), np.zeros(3)
    da.flags.writeable = False
    with pytest.raises(ReadOnlyArrayError, match="read-only"):
        autodiff(Reverse, sumsq, Duplicated(a, da))
    a.flags.writeable = False  # a read-only value with a writeable shadow is fine
    db = np.zeros(3)
    autodiff(Reverse, sumsq, Duplicated(a, db))
    np.testing.assert_allclose(db, 2 * a)


def _grad_kernel(a, da):
    if gd.grid(1) == 0:
        autodiff(Reverse, sumsq, Duplicated(a, da))


def _extra_kernel(x, out):
    if gd.grid(1) == 0:
        out[0] = autodiff(Reverse, square, Active(x[0]), Const(1.0))[0]


def test_in_kernels_shadow_shape_is_checked_in_the_emulation_and_arity_at_compile_time():
    a = np.arange(1.0, 9.0)
    k = kernel(_grad_kernel, plugins=P)
    with pytest.raises(ValueError, match="argument 'a' must have the shape of its value"):
        k[1, 1, "cpu"](a, np.zeros(4))
    da = np.zeros(8)
    k[1, 1, "cpu"](a, da)
    np.testing.assert_allclose(da, 2 * a)
    with pytest.raises(TypeInferenceError, match="takes 1 arguments, got 2"):
        kernel(_extra_kernel, plugins=P)[1, 1, "cpu"](np.ones(1), np.zeros(1))


def weighted_sumsq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i] * (i + 1)
    return s


def weighted_grad_into(a, da):
    autodiff(Reverse, weighted_sumsq, Duplicated(a, da))
    return 0.0


def test_a_shadow_with_other_strides_is_a_value_error_not_a_gradient_in_the_wrong_places():
    """The engine reads a shadow with its value's strides: a shadow view of other strides used to receive the
    gradient at the value's offsets (silently wrong)."""
    x = np.arange(8.0)[::2]
    expect = 2 * x * np.arange(1, 5)
    big = np.zeros(12)
    with pytest.raises(ValueError, match="strides of its value: axis 0 steps 16 bytes in the value, 24"):
        autodiff(Reverse, weighted_sumsq, Duplicated(x, big[::3]))
    with pytest.raises(ValueError, match="strides of its value: axis 0 steps 8 bytes in the value, 16"):
        autodiff(Reverse, weighted_sumsq, Duplicated(np.ascontiguousarray(x), np.zeros(8)[::2]))
    g = jit(weighted_grad_into, plugins=P)
    with pytest.raises(ValueError, match="strides of its value: axis 0 steps 16 bytes in the value, 24 in"):
        g(x, big[::3])
    assert not big.any()
    same = np.zeros(8)[::2]  # the value's strides: right
    g(x, same)
    np.testing.assert_array_equal(same, expect)


def test_gradient_and_hvp_of_a_strided_view():
    from enzyme_plugin import gradient, hvp

    x = np.arange(8.0)[::2]
    np.testing.assert_array_equal(gradient(weighted_sumsq, x), 2 * x * np.arange(1, 5))
    np.testing.assert_array_equal(hvp(weighted_sumsq, x, np.ones(8)[::2]), 2 * np.arange(1, 5))


def test_a_shadow_sharing_memory_with_its_value_is_a_value_error():
    """``Duplicated(a, a)`` used to add the gradient into the value it was reading (silently wrong)."""
    a = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="shadow of weighted_sumsq's argument 'a' shares memory with its value"):
        autodiff(Reverse, weighted_sumsq, Duplicated(a, a))
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])
    b = np.zeros(6)
    b[::2] = [1.0, 2.0, 3.0]
    autodiff(Reverse, weighted_sumsq, Duplicated(b[::2], b[1::2]))  # interleaved, apart: fine
    np.testing.assert_array_equal(b, [1.0, 2.0, 2.0, 8.0, 3.0, 18.0])


def test_a_float_value_takes_a_numpy_float64_tangent_and_back():
    """float and np.float64 are both doubles (np.float64 subclasses float): a tangent taken from an array
    (``Duplicated(x, v[0])``) was an ArgumentTypeError, and np.float64 with a float an AttributeError."""
    from enzyme_plugin import Forward, ForwardWithPrimal

    for x, t in ((0.5, np.float64(2.0)), (np.float64(0.5), 2.0)):
        assert autodiff(Forward, square, Duplicated(x, t)) == (2.0,)
        assert autodiff(ForwardWithPrimal, mul, Duplicated(x, t), Duplicated(3.0, 0.0)) == (6.0, 1.5)
    with pytest.raises(ArgumentTypeError, match="shadow float"):
        autodiff(Forward, square, Duplicated(np.float32(0.5), 2.0))  # a double shadow of a float32
