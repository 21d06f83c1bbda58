"""A reverse custom rule reads its array operands as they were at the call.

The reverse sweep runs after the rest of the function: an operand written since, or a temporary array
freed since, used to reach the rule as it was then (a stale or garbage gradient, silently). The augmented
forward now copies each operand (the span its strides reach) as the rule's tape."""

from __future__ import annotations

import math

import numpy as np
import pytest

from enzyme_plugin import Duplicated, Reverse, autodiff, custom_rule


def wnorm(a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += (i + 1.0) * a[i] * a[i]
    return math.sqrt(acc)


def wnorm_reverse(a, da, dret):
    n = wnorm(a)
    for i in range(a.shape[0]):
        da[i] += dret * (i + 1.0) * a[i] / n
    return ()


custom_rule(wnorm, reverse=wnorm_reverse)


def of_a_temporary(v):
    t = v * 2.0 + 1.0
    other = np.ones(300) * 5.0  # allocations after the call may reuse freed memory
    return wnorm(t) + other[7]


def overwritten_after(v):
    t = v * 2.0 + 1.0
    s = wnorm(t)
    for i in range(t.shape[0]):
        t[i] = 100.0
    return s


def argument_overwritten(v):
    s = wnorm(v)
    v[0] = -7.0
    return s


def of_a_strided_view(m):
    return wnorm(m[:, 1])  # a column: strides of a row


def _exact_temporary(v):
    t = 2.0 * v + 1.0
    w = np.arange(1.0, len(v) + 1.0)
    return 2.0 * w * t / math.sqrt(float(np.sum(w * t * t)))


@pytest.mark.parametrize("fn", [of_a_temporary, overwritten_after])
@pytest.mark.parametrize("n", [1, 2, 5, 33])
def test_the_rule_sees_the_operand_as_it_was_at_the_call(fn, n):
    v = np.linspace(-1.0, 2.0, n)
    dv = np.zeros(n)
    autodiff(Reverse, fn, Duplicated(v, dv))
    np.testing.assert_allclose(dv, _exact_temporary(v), rtol=1e-13)


def test_an_argument_written_after_the_call():
    v = np.array([3.0, -1.0, 0.5])
    orig = v.copy()
    dv = np.zeros(3)
    autodiff(Reverse, argument_overwritten, Duplicated(v, dv))
    w = np.arange(1.0, 4.0)
    np.testing.assert_allclose(dv, w * orig / math.sqrt(float(np.sum(w * orig * orig))), rtol=1e-13)
    assert v[0] == -7.0  # the primal ran


def test_a_strided_view():
    m = np.arange(12.0).reshape(4, 3) / 7.0
    dm = np.zeros_like(m)
    autodiff(Reverse, of_a_strided_view, Duplicated(m, dm))
    col, w = m[:, 1], np.arange(1.0, 5.0)
    want = np.zeros_like(m)
    want[:, 1] = w * col / math.sqrt(float(np.sum(w * col * col)))
    np.testing.assert_allclose(dm, want, rtol=1e-13, atol=1e-15)
