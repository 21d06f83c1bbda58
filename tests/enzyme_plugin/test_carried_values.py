"""Loop-carried floats rebuilt from another carried value before AD (``enzyme_plugin/ad/carried.py``).

The rewrite must keep every value bitwise (the primal returned beside a gradient equals CPython's run of
the function), the gradients exact (dual numbers), and leave alone what only looks alike: a residual
whose start differs from its update, one made of two carried values, an update with a call in it."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from dual import dual_grad
from enzyme_plugin import Const, Duplicated, Reverse, ReverseWithPrimal, autodiff
from enzyme_plugin.ad.carried import rebuild_carried
from gpucompiler import device as gd
from gpucompiler import kernel
from gpucompiler.llvm import parse, parse_ir

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from ad_kernels import newton  # the benchmark's solve of y³ + y = a: the residual carried beside the iterate

P = ("enzyme",)
X = np.array([-2.0, -1.3, -0.4, -1e-3, 0.0, 0.25, 0.9, 1.7, 2.0, 7.5])


def commuted(x, i):
    """The residual's start spelled with its terms the other way round."""
    a = x[i]
    y = 0.5 * a
    r = a * 0.25 + y * y
    it = 0
    while r > 0.01 and it < 40:
        y = y * 0.5 + r * 0.01
        r = y * y + a * 0.25
        it += 1
    return r * y


def other_start(x, i):
    """Looks alike, but the start uses ``2a`` and the update ``a``: not a function of ``y`` alone."""
    a = x[i]
    y = a
    r = y * y - 2.0 * a
    it = 0
    while abs(r) > 1e-9 and it < 30:
        y = y - 0.01 * r
        r = y * y - a
        it += 1
    return y + r


def two_carried(x, i):
    """``r = y·z`` of two carried values: left as it is."""
    a = x[i]
    y, z = a, 1.0 + a * a
    r = y * z
    it = 0
    while abs(r) > 1e-6 and it < 25:
        y = y * 0.5
        z = z * 0.9
        r = y * z
        it += 1
    return r + y


FUNCTIONS = [newton, commuted, other_start, two_carried]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_gradient_is_exact_and_primal_bitwise(fn):
    expected = dual_grad(fn, X)
    for i in range(len(X)):
        dx = np.zeros_like(X)
        _, y = autodiff(ReverseWithPrimal, fn, Duplicated(X.copy(), dx), Const(i))
        assert y == fn(X, i), (fn.__name__, X[i])  # CPython's doubles: the rebuilt residual changed nothing
        np.testing.assert_allclose(dx[i], expected[i], rtol=1e-12, atol=1e-14, err_msg=f"x={X[i]}")
        assert not np.any(np.delete(dx, i))


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_gradient_in_a_kernel_on_the_emulation(fn):
    def grad_kernel(x, dx):
        i = gd.grid(1)
        if i < x.shape[0]:
            autodiff(Reverse, fn, Duplicated(x, dx), Const(i))

    dx = np.zeros_like(X)
    kernel(grad_kernel, plugins=P)[1, 32, "cpu"](X.copy(), dx)
    np.testing.assert_allclose(dx, dual_grad(fn, X), rtol=1e-12, atol=1e-14)


LOOP = """
define double @f(double %a) {
entry:
  %a2 = fmul double %a, %a
  %r0 = fsub double %a2, %a
  br label %loop
loop:
  %y = phi double [ %a, %entry ], [ %y1, %loop ]
  %r = phi double [ %r0, %entry ], [ %r1, %loop ]
  %k = phi i64 [ 0, %entry ], [ %k1, %loop ]
  %q = fmul double %r, 0x3FB999999999999A
  %y1 = fsub double %y, %q
  %s = fmul double %y1, %y1
  %r1 = fsub double %s, {update}
  %k1 = add i64 %k, 1
  %c = icmp slt i64 %k1, 10
  br i1 %c, label %loop, label %out
out:
  %y.out = phi double [ %s, %loop ]
  ret double %y.out
}
"""


def _rewritten(update: str) -> tuple[int, str]:
    module = parse(LOOP.replace("{update}", update))
    fn = module.functions["f"]
    n = len(rebuild_carried(fn))
    text = str(module)
    parse_ir(text).verify()  # LLVM reads the result back
    return n, text


def test_residual_and_exit_value_rebuilt_in_the_ir():
    """``r`` becomes ``y*y - a`` at the header; the exit's ``y1*y1`` is computed after the loop from
    ``y1`` passed out, so the loop's own ``s`` feeds only the residual."""
    n, text = _rewritten("%a")
    assert n == 1, text
    assert "%r = phi" not in text and "phi double [ %y1, %loop ]" in text, text


@pytest.mark.parametrize("update", ["%q", "0x3FF0000000000000"])
def test_update_that_is_not_the_start_is_left(update):
    """Start ``a*a - a`` against an update ``s - q`` (a value of the iteration itself) or ``s - 1``: the
    residual stays carried (the exit value may still be rebuilt)."""
    _, text = _rewritten(update)
    assert "%r = phi double" in text, text


def test_update_of_the_iterate_itself_is_rebuilt():
    """``s - y1`` against the start ``a*a - a``: ``y*y - y`` at every iteration (``a`` is ``y``'s start)."""
    n, text = _rewritten("%y1")
    assert n == 1 and "%r = phi" not in text, text


UNWIND = """
declare void @may_throw()
declare i32 @__gxx_personality_v0(...)

define double @f(double %a) personality ptr @__gxx_personality_v0 {
entry:
  br label %loop
loop:
  %y = phi double [ %a, %entry ], [ %y1, %loop ]
  %y1 = fmul double %y, 0.5
  %s = fmul double %y1, %y1
  %w = fadd double %s, %y1
  invoke void @may_throw() to label %loop unwind label %pad
pad:
  %v = phi double [ %s, %loop ]
  %lp = landingpad { ptr, i32 } cleanup
  ret double %v
}
"""


def test_a_loop_left_by_an_exception_is_left_valid():
    """The exit is an unwind destination (C++ compiled by clang): nothing may be computed before its
    ``landingpad``, so ``y1 * y1`` is not rebuilt there; the IR stays valid."""
    module = parse(UNWIND)
    rebuild_carried(module.functions["f"])
    text = str(module)
    parse_ir(text).verify()
    assert "%v = phi double [ %s, %loop ]" in text, text
