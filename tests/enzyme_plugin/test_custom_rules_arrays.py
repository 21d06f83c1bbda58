"""Custom forward and reverse rules of functions with float array arguments: the rules are used (a
marker factor in them shows it), their results match the analytic derivative of what they claim."""

from __future__ import annotations

import math

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff, custom_rule
from gpucompiler import jit
from gpucompiler.errors import GPUCompilerError

P = ("enzyme",)
K = 10.0  # the rules below scale their derivatives by K: a result with K came from the rule


def norm2(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * a[i]
    return math.sqrt(acc)


def norm2_forward(a, da):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * da[i]
    return K * acc / norm2(a)  # calls of f inside its own rules compile as usual


def norm2_reverse(a, da, dret):
    n = norm2(a)
    for i in range(a.shape[0]):
        da[i] += K * dret * a[i] / n
    return ()


custom_rule(norm2, forward=norm2_forward, reverse=norm2_reverse)


def scaled_norm(a, s):
    return s * norm2(a)


def scale_into(a, out, s):
    for i in range(a.shape[0]):
        out[i] = a[i] * s


def scale_forward(a, da, out, dout, s, ds):
    for i in range(a.shape[0]):
        dout[i] = K * (da[i] * s + a[i] * ds)


def scale_reverse(a, da, out, dout, s):
    ds = 0.0
    for i in range(a.shape[0]):
        da[i] += K * dout[i] * s
        ds += K * dout[i] * a[i]
        dout[i] = 0.0
    return (ds,)


custom_rule(scale_into, forward=scale_forward, reverse=scale_reverse)


def program(a, out, s):
    scale_into(a, out, s)
    return out[0] + 2.0 * out[1]


A = np.array([3.0, 4.0])


def test_reverse_rule_of_an_array_function_adds_into_the_shadow():
    da = np.zeros(2)
    (ds,) = autodiff(Reverse, scaled_norm, Duplicated(A, da), Active(2.0))
    assert ds == 5.0
    np.testing.assert_allclose(da, K * 2.0 * A / 5.0, rtol=1e-15)


def test_forward_rule_of_an_array_function_gives_the_tangent():
    (t,) = autodiff(Forward, scaled_norm, Duplicated(A, np.array([1.0, -1.0])), Const(2.0))
    assert t == pytest.approx(K * 2.0 * (3.0 - 4.0) / 5.0, rel=1e-15)


def test_rules_of_a_function_writing_an_array_and_taking_a_scalar():
    da, dout = np.zeros(2), np.zeros(2)
    (ds,) = autodiff(Reverse, program, Duplicated(A, da), Duplicated(np.zeros(2), dout), Active(2.0))
    assert ds == K * (A[0] + 2.0 * A[1])
    np.testing.assert_allclose(da, K * 2.0 * np.array([1.0, 2.0]))
    (t,) = autodiff(Forward, program, Duplicated(A, np.ones(2)), Duplicated(np.zeros(2), np.zeros(2)),
                    Duplicated(2.0, 0.5))
    assert t == pytest.approx(K * ((2.0 + 0.5 * 3.0) + 2.0 * (2.0 + 0.5 * 4.0)), rel=1e-15)


def grad_in_jit(a, da, s):
    return autodiff(Reverse, scaled_norm, Duplicated(a, da), Active(s))


def test_array_rules_in_jit_functions():
    da = np.zeros(2)
    (ds,) = jit(grad_in_jit, plugins=P)(A, da, 2.0)
    assert ds == 5.0 and np.allclose(da, K * 2.0 * A / 5.0)


def test_rule_arrays_without_shadow_at_the_call_is_a_typed_error():
    with pytest.raises(GPUCompilerError, match="needs a shadow at the call"):
        autodiff(Reverse, program, Const(A), Duplicated(np.zeros(2), np.zeros(2)), Active(2.0))


def integer_arg(a, n):
    return a[0] * n


def integer_arg_forward(a, da, n, dn):
    return da[0]


def uses_integer_arg(a):
    return integer_arg(a, 3)


custom_rule(integer_arg, forward=integer_arg_forward)


def test_rule_of_a_function_with_an_integer_argument_is_a_typed_error():
    with pytest.raises(GPUCompilerError, match="float scalars or float arrays, got int64"):
        autodiff(Forward, uses_integer_arg, Duplicated(A, np.ones(2)))


def length(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * a[i]
    return math.sqrt(acc)


def length_reverse_without_shadow(a, dret):  # the convention is (a, da, dret)
    return ()


def scaled_length(a, s):
    return s * length(a)


def test_a_rule_of_the_wrong_arity_is_a_typed_error_not_a_dropped_gradient():
    """A reverse rule taking (a, dret) used to be called anyway: the gradient of ``a`` was silently zero."""
    custom_rule(length, reverse=length_reverse_without_shadow)
    with pytest.raises(TypeError, match=r"takes 2 arguments; at this call it is given 3: "
                                        r"length_reverse_without_shadow\(a, da, dret\)") as info:
        autodiff(Reverse, scaled_length, Duplicated(np.ones(2), np.zeros(2)), Active(2.0))
    assert f"in autodiff called at {__file__}" in str(info.value)


def test_registering_something_that_is_not_a_rule_is_a_typed_error_at_the_call():
    from enzyme_plugin import CustomRuleError

    with pytest.raises(CustomRuleError, match="forward must be a Python function, got int") as info:
        custom_rule(length, forward=3)
    assert info.value.filename == __file__
    with pytest.raises(CustomRuleError, match="needs forward=, reverse= or both"):
        custom_rule(length)
