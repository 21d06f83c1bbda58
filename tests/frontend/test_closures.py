"""Nested ``def`` and lambdas bound to locals, closing over locals, in ``@jit`` functions and kernels."""

import numpy as np
import pytest

from gpucompiler import device as gd, jit, kernel
from gpucompiler.errors import UnsupportedError


def late_binding(a, k):
    scale = 2.0

    def g(x, y=1.0):
        return x * scale + k + y

    sq = lambda v: v * v + g(v)  # noqa: E731  (the construct under test)
    s = 0.0
    for v in a:
        s += sq(v)
    scale = 3.0  # Python reads a closed-over local when the call runs
    s += g(1.0, 0.0)

    def triangle(n):
        t = 0
        for i in range(n):
            t += i
        return t

    return s + triangle(4)


def nested_twice(x):
    def outer_helper(y):
        def inner(z):
            return z * x + y
        return inner(y + 1.0)
    return outer_helper(x) + outer_helper(2.0)


def closure_in_a_branch(x, flag):
    offset = 1.0 if flag else -1.0
    f = lambda v: abs(v) + offset  # noqa: E731
    total = 0.0
    for k in range(3):
        total += f(x - k)
    return total


def test_nested_functions_and_lambdas_match_cpython():
    a = np.arange(4.0)
    assert jit(late_binding)(a, 1.5) == late_binding(a, 1.5)
    assert jit(nested_twice)(0.75) == nested_twice(0.75)
    assert [jit(closure_in_a_branch)(0.5, f) for f in (True, False)] == \
        [closure_in_a_branch(0.5, f) for f in (True, False)]


def test_a_nested_function_is_specialised_per_argument_type():
    def twice_each(n):
        double = lambda v: v + v  # noqa: E731
        return double(n), double(n * 0.5)

    assert jit(twice_each)(3) == twice_each(3) == (6, 3.0)
    assert isinstance(jit(twice_each)(3)[0], int)


def passes_a_closure(x):
    def g(v):
        return v
    return apply(g, x)


def apply(f, x):
    return f(x)


def rebinds_its_name(x):
    def g(v):
        return v
    g = 3  # noqa: F811  (the construct under test)
    return g + x


def immediately_called(x):
    return (lambda v: v + 1)(x)


@pytest.mark.parametrize("fn,construct", [(passes_a_closure, "nested function used as a value"),
                                          (rebinds_its_name, "bound more than once"),
                                          (immediately_called, "Lambda")])
def test_unsupported_uses_of_nested_functions_are_typed_errors_with_the_line(fn, construct):
    with pytest.raises(UnsupportedError, match=construct) as info:
        jit(fn)(1.0)
    assert info.value.loc[0] == __file__


@kernel
def smooth(x, out, w):
    i = gd.grid(1)
    clamp = lambda j: min(max(j, 0), x.shape[0] - 1)  # noqa: E731

    def at(j):
        return x[clamp(j)] * w

    if i < out.shape[0]:
        out[i] = at(i - 1) + at(i) + at(i + 1)


def test_closures_in_a_kernel_run_on_the_emulation_and_compile_to_ptx(check_ptx):
    x = np.arange(10.0) ** 2
    out = np.zeros(10)
    smooth[1, 16, "cpu"](x, out, 0.5)
    padded = np.concatenate([x[:1], x, x[-1:]])
    np.testing.assert_allclose(out, 0.5 * (padded[:-2] + padded[1:-1] + padded[2:]))
    check_ptx(smooth.inspect_asm(x, out, 0.5))


@pytest.mark.gpu
def test_closures_in_a_kernel_on_the_gpu():
    x = np.arange(10.0) ** 2
    out = np.zeros(10)
    smooth[1, 16](x, out, 0.5)
    padded = np.concatenate([x[:1], x, x[-1:]])
    np.testing.assert_allclose(out, 0.5 * (padded[:-2] + padded[1:-1] + padded[2:]))


def _scaler(k):
    def scaled(x):
        return x * k
    return scaled


_BY_3, _BY_5 = _scaler(3.0), _scaler(5.0)
_TWICE = lambda x: 2 * x  # noqa: E731  (two module-level lambdas share the qualname <lambda>)
_PLUS_100 = lambda x: x + 100.0  # noqa: E731


def _two_closures_of_one_factory(x):
    return _BY_3(x) + _BY_5(x)


def _two_lambdas(x):
    return _TWICE(x) + _PLUS_100(x)


@pytest.mark.parametrize("fn", [_two_closures_of_one_factory, _two_lambdas])
def test_functions_sharing_a_qualname_and_argument_types_each_compile_their_own_code(fn):
    """Two closures of one factory, or two module-level lambdas, called in one function: each call runs
    its own function (they were one LLVM function, named by module, qualname and types: 12.0, not 16.0)."""
    assert jit(fn)(2.0) == fn(2.0)
    assert jit(fn)(-4.5) == fn(-4.5)


def rebinds_from_a_nested_function(x):
    def bump():
        nonlocal x
        x = x + 1
    bump()
    return x


def test_nonlocal_in_a_nested_function_is_unsupported_at_its_line():
    # the nested function was compiled alone: a SyntaxError pointing at a line of its own
    with pytest.raises(UnsupportedError, match=r"test_closures.py:\d+: unsupported construct: nonlocal"):
        jit(rebinds_from_a_nested_function)(3)
