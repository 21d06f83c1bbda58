"""A read of an undefined global raises CPython's NameError at the read: before any later effect (a
division, a write into an argument, a return), and only when the read runs."""

from __future__ import annotations

import numpy as np
import pytest

import gpucompiler as gpuc
from gpucompiler.errors import TypeInferenceError

# ruff: noqa: F821  (the names read below are undefined on purpose)


def unused_then_divides(x):
    zz = undefined_name  # noqa: F841
    return 1.0 / x


def unused_then_returns_a_constant(x):
    zz = undefined_name  # noqa: F841
    return 7.0


def read_then_writes_the_argument(a, x):
    zz = undefined_name  # noqa: F841
    a[0] = x
    return 1.0


def read_before_it_is_used_after_a_write(a, x):
    zz = undefined_name
    a[1] = x
    return zz + x


def read_in_a_branch(a, x):
    a[0] = 2.0
    if x > 100.0:
        zz = undefined_name  # noqa: F841
        a[1] = 3.0
    return x


def merged_in_a_branch(a, x):
    if x > 0.0:
        y = undefined_name
    else:
        y = 1.5
    a[0] = y
    return y


def read_in_a_loop(a, x):
    for i in range(a.shape[0]):
        a[i] = x
        if i == int(x):
            t = undefined_name  # noqa: F841
    return 0.0


def attribute_of_an_undefined_module(a, x):
    a[0] = x
    a[1] = undefined_module.pi
    return 0.0


def undefined_callee_after_an_argument(a, x):
    return undefined_function(a.sum(), x)


def read_in_a_while_condition(a, x):
    n = 0
    while n < 3 and (x < 0.0 or undefined_flag):
        a[n] = x
        n += 1
    return float(n)


def read_in_a_conditional_expression(a, x):
    a[0] = 1.0
    y = x if x > 0.0 else undefined_name
    a[1] = y
    return y


CASES = [
    (unused_then_divides, (0.0,)),
    (unused_then_divides, (2.0,)),
    (unused_then_returns_a_constant, (1.0,)),
    *((fn, (np.zeros(4), x)) for fn in (read_then_writes_the_argument, read_before_it_is_used_after_a_write,
                                        read_in_a_branch, merged_in_a_branch, read_in_a_loop,
                                        attribute_of_an_undefined_module, undefined_callee_after_an_argument,
                                        read_in_a_while_condition, read_in_a_conditional_expression)
      for x in (-1.0, 0.0, 2.0, 200.0)),
]


def _outcome(fn, args):
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    try:
        out = ("ok", fn(*args))
    except Exception as exc:  # compared with CPython's exception and message
        out = ("raises", type(exc), str(exc))
    return out, [a.tolist() for a in args if isinstance(a, np.ndarray)]


@pytest.mark.parametrize(("fn", "args"), CASES, ids=lambda v: getattr(v, "__name__", None) or repr(v[-1]))
def test_an_undefined_global_raises_as_cpython_does(fn, args):
    assert _outcome(gpuc.jit(fn), args) == _outcome(fn, args)


def test_every_shape_raises_on_some_input_and_runs_on_another():
    """The cases above are not vacuous: CPython raises NameError on some and returns on others."""
    outcomes = [_outcome(fn, args)[0][0] for fn, args in CASES]
    assert outcomes.count("raises") >= 15 and outcomes.count("ok") >= 10


def kernel_writes_after_an_undefined_read(out, k):
    out[0] = 1.0
    if k > 0:
        zz = undefined_in_kernel  # noqa: F841
    out[1] = 2.0


def test_a_kernel_stops_at_the_read_before_its_next_write():
    k = gpuc.kernel(kernel_writes_after_an_undefined_read)
    out = np.zeros(2)
    k[1, 1, "cpu"](out, 0)
    assert out.tolist() == [1.0, 2.0]
    out = np.zeros(2)
    with pytest.raises(NameError, match="undefined_in_kernel"):
        k[1, 1, "cpu"](out, 1)
    assert out.tolist() == [1.0, 0.0]


def test_a_merged_undefined_value_on_a_path_not_taken_is_no_compile_error():
    """CPython raises only when the read runs: a branch never taken compiles and runs (it was a
    TypeInferenceError at compile time)."""
    try:
        assert gpuc.jit(merged_in_a_branch)(np.zeros(2), -1.0) == 1.5
    except TypeInferenceError as exc:  # pragma: no cover - the failure this pins
        pytest.fail(str(exc))
