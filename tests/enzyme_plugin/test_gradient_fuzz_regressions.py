"""Programs the gradient fuzzer (fuzz_gradients.py) found differentiated wrongly or not at all, minimised;
each derivative against central finite differences of the CPython-run function."""

import math
import os

import numpy as np

from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler.errors import GPUCompilerError


def _fd(f, x, *rest, h=1e-6):
    return (f(x + h, *rest) - f(x - h, *rest)) / (2 * h)


def _nested_while_on_an_invariant(y, n):
    for _ in range(n):
        k = 0
        while k < n + 1 and n >= 2:  # unswitched and unrolled: a switch reaches one exit by two cases
            y = math.cos(y)
            k += 1
    return y


def test_reverse_through_a_switch_with_two_cases_to_one_block():
    for n in (0, 1, 2, 3, 5):
        (dy,) = autodiff(Reverse, _nested_while_on_an_invariant, Active(0.7), Const(n))
        assert abs(dy - _fd(_nested_while_on_an_invariant, 0.7, n)) < 1e-8, n
        (t,) = autodiff(Forward, _nested_while_on_an_invariant, Duplicated(0.7, 1.0), Const(n))
        assert abs(t - dy) < 1e-12, n


def _inverse_hyperbolic(x, y):
    return math.asinh(x * y) + math.acosh(1.5 + x * x) * math.atanh(0.5 * math.tanh(y))


def test_inverse_hyperbolic_functions_have_derivatives():
    x, y = 0.7, -0.4
    dx, dy = autodiff(Reverse, _inverse_hyperbolic, Active(x), Active(y))
    assert abs(dx - _fd(_inverse_hyperbolic, x, y)) < 1e-8
    assert abs(dy - _fd(lambda v: _inverse_hyperbolic(x, v), y)) < 1e-8
    (t,) = autodiff(Forward, _inverse_hyperbolic, Duplicated(x, 1.0), Duplicated(y, 2.0))
    assert abs(t - (dx + 2.0 * dy)) < 1e-12


def _store_and_reduce(x, y, b, n):
    s = 1.0
    for i in range(n):
        b[(i + 1) % 2] = math.sin(x / (1.5 + x * x))  # a scatter when the loop is vectorised
        s = s + (x if i < 3 else y) * 1.25
    return s + b[0]


def test_a_vectorised_scatter_is_differentiated_or_refused_at_the_users_line():
    """Where the host's cost model vectorises the loop with a scatter, the gradient is a typed
    error naming a line of the loop in this file (it named no line); elsewhere it is right."""
    b, db = np.zeros(2), np.zeros(2)
    first = _store_and_reduce.__code__.co_firstlineno
    try:
        dx, dy = autodiff(Reverse, _store_and_reduce, Active(0.3), Active(0.2), Duplicated(b, db), Const(20))
    except GPUCompilerError as exc:
        lines = [f"{os.path.basename(__file__)}:{first + k}: no derivative rule" for k in (2, 3, 4)]
        assert any(w in str(exc) for w in lines), str(exc)
        assert "vectorizer" in str(exc)
        return
    fx = _fd(lambda v: _store_and_reduce(v, 0.2, np.zeros(2), 20), 0.3)
    assert abs(dx - fx) < 1e-7 and abs(dy - 17 * 1.25) < 1e-9
