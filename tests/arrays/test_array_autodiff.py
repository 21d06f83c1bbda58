"""Arrays allocated inside a differentiated function: gradients against finite differences.

The allocation is ``malloc`` and the release ``free`` after codegen; the AD
engine gives each a shadow allocation. ``MALLOC_PERTURB_`` is not needed for
the check to bite: the reference is computed independently.
"""

import math

import numpy as np
import pytest

from enzyme_plugin import ADError, Active, BatchDuplicated, Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.errors import PluginError, TypeInferenceError


def energy(a, s, n):
    t = np.empty(n)
    for i in range(n):
        t[i] = a[i] * s
    w = np.zeros((n, 2))
    for i in range(n):
        w[i, 0] = t[i] * t[i] + math.sin(t[i])
        w[i, 1] = t[n - 1 - i]
    acc = 0.0
    for i in range(n):
        acc += w[i, 0] * a[i] + w[i, 1] * w[i, 1]
    return acc


def grad_energy(a, da, s, n):
    return autodiff(Reverse, energy, Duplicated(a, da), Active(s), Const(n))


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("s", [1.3, -0.4])
def test_gradient_through_allocated_temporaries_matches_finite_differences(s):
    a = np.array([0.5, -1.0, 2.0, 0.25])
    da = np.zeros(4)
    (ds,) = jit(grad_energy, plugins=("enzyme",))(a, da, s, 4)
    assert ds == pytest.approx(_fd(lambda v: energy(a, v, 4), s), rel=1e-6)
    for k in range(4):
        def along(v, k=k):
            b = a.copy()
            b[k] = v
            return energy(b, s, 4)
        assert da[k] == pytest.approx(_fd(along, a[k]), rel=1e-6)
    assert jit(energy)(a, s, 4) == pytest.approx(energy(a, s, 4), rel=1e-15)


def sumsq(a, n):
    t = 0.0
    for i in range(n):
        t += a[i] * a[i]
    return t


def grad_of_new_arrays(n):
    a = np.arange(n, dtype=np.float64)
    da = np.zeros(n)  # value and shadow both made here, lent to the differentiated function
    autodiff(Reverse, sumsq, Duplicated(a, da), Const(n))
    return da


def test_arrays_made_in_the_caller_are_differentiated_as_arguments():
    np.testing.assert_array_equal(jit(grad_of_new_arrays, plugins=("enzyme",))(5), 2.0 * np.arange(5.0))


def product_of_copy(a):
    c = np.zeros(2)
    c[0] = a[0]
    c[1] = a[1]
    return c[0] * c[1]


def product_twice(a):
    return product_of_copy(a) + 3.0 * product_of_copy(a)


def test_a_helper_that_allocates_called_twice_is_differentiated():
    # the helper stays out of line (two calls, an allocation); its array argument is a struct by value
    a, da = np.array([2.0, 5.0]), np.zeros(2)
    autodiff(Reverse, product_twice, Duplicated(a, da))
    np.testing.assert_allclose(da, [20.0, 8.0], rtol=1e-14)
    da[:] = 0.0
    jit(lambda a, da: autodiff(Reverse, product_twice, Duplicated(a, da)), plugins=("enzyme",))(a, da)
    np.testing.assert_allclose(da, [20.0, 8.0], rtol=1e-14)


def doubled(a):
    b = np.empty_like(a)
    for i in range(a.shape[0]):
        b[i] = 2.0 * a[i]
    return b


def grad_of_doubled(a, da):
    return autodiff(Reverse, doubled, Duplicated(a, da))


@pytest.mark.parametrize("mode", [Reverse, Forward])
def test_differentiating_a_function_that_returns_an_array_is_a_typed_error(mode):
    a, da = np.ones(3), np.ones(3)
    with pytest.raises(TypeInferenceError, match="returns an array"):
        autodiff(mode, doubled, Duplicated(a, da))
    with pytest.raises(TypeInferenceError, match=r"test_array_autodiff\.py:\d+: autodiff: .*returns an array"):
        jit(grad_of_doubled, plugins=("enzyme",))(a, da)


def tangent_along_ones(a):
    t = np.ones(a.shape[0])  # a shadow made here for a value lent by Python
    return autodiff(Forward, sumsq, Duplicated(a, t), Const(a.shape[0]))


def batch_tangents(a):
    return autodiff(Forward, sumsq, BatchDuplicated(a, (np.ones(a.shape[0]), np.zeros_like(a))), Const(a.shape[0]))


def adjoint_of_new_value(da):
    a = np.linspace(1.0, 3.0, 3)  # a value made here, its shadow lent by Python
    autodiff(Reverse, sumsq, Duplicated(a, da), Const(3))


def test_a_shadow_made_in_compiled_code_pairs_with_a_value_lent_by_python_and_back():
    a = np.array([1.0, -1.0, 0.5])
    assert jit(tangent_along_ones, plugins=("enzyme",))(a) == (pytest.approx(2.0 * a.sum(), rel=1e-15),)
    ((t1, t2),) = jit(batch_tangents, plugins=("enzyme",))(a)
    assert (t1, t2) == (pytest.approx(2.0 * a.sum(), rel=1e-15), 0.0)
    da = np.zeros(3)
    jit(adjoint_of_new_value, plugins=("enzyme",))(da)
    np.testing.assert_allclose(da, 2.0 * np.linspace(1.0, 3.0, 3), rtol=1e-15)


def recursive_sum_of_squares(a, k):
    if k == 0:
        return 0.0
    return a[k - 1] * a[k - 1] + recursive_sum_of_squares(a, k - 1)


def through_recursion(a):
    return recursive_sum_of_squares(a, a.shape[0])


def mutual_even(a, x, k):
    return x if k <= 0 else mutual_odd(a, x * a[0], k - 1)


def mutual_odd(a, x, k):
    return x if k <= 0 else mutual_even(a, x * a[0], k - 1)


def through_mutual_recursion(x, a):
    return mutual_even(a, x, 3)


@pytest.mark.parametrize("f, args", [(through_recursion, ()), (through_mutual_recursion, (Active(2.0),))],
                         ids=["recursive", "mutually-recursive"])
def test_a_recursive_helper_taking_an_array_is_a_typed_error_not_a_zero_gradient(f, args):
    """Such a helper cannot be inlined; the engine follows no shadow through the call (dv stayed zero)."""
    a, da = np.array([1.0, 2.0, 3.0]), np.zeros(3)
    with pytest.raises(PluginError) as info:
        autodiff(Reverse, f, *args, Duplicated(a, da))
    cause = info.value.__cause__ or info.value.__context__
    assert isinstance(cause, ADError) and "recursive function" in str(cause)
    assert "test_array_autodiff.py:" in str(info.value)
    assert np.all(da == 0.0)
