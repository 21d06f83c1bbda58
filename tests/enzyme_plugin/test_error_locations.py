"""Errors of ``autodiff`` & co called from Python name the user's line of the call and, for a construct in
the differentiated function, that line too (not the generated entry's ``<enzyme_plugin.autodiff ...>``)."""

from __future__ import annotations

import dataclasses
import functools
import inspect

import numpy as np
import pytest

from enzyme_plugin import Active, BatchDuplicated, Const, Duplicated, Forward, Reverse, autodiff, gradient, hvp
from gpucompiler.errors import ArgumentTypeError, SourceError, TypeInferenceError, UnsupportedError


def square(x):
    return x * x


def sumsq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def pair(x):
    return x, x * x


def uses_a_set(x):
    s = {x}  # the offending construct (compiled code has lists and dicts, no sets)
    return x * x + len(s)


def here() -> int:
    """The caller's line."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


@pytest.mark.parametrize("call, match", [
    (lambda: autodiff(Reverse, square, Active(2)), "Active takes a float scalar"),
    (lambda: autodiff(Forward, square, Active(2.0)), "Active is for reverse mode"),
    (lambda: autodiff(Reverse, square, Duplicated(2.0, 0.0)), "in reverse mode Duplicated takes arrays"),
    (lambda: autodiff(Reverse, sumsq, Duplicated(np.ones(3, np.int64), np.zeros(3, np.int64))),
     "Duplicated takes a float scalar, a float array"),
    (lambda: autodiff(Reverse, sumsq, Active(np.ones(3))), "Active is for float scalars"),
    (lambda: autodiff(Reverse, sumsq, Duplicated(np.ones(3), np.zeros(3, np.float32))), "float32"),
    (lambda: autodiff(Reverse, sumsq, BatchDuplicated(np.ones(2), (np.zeros(2),)), Const(1.0)), "takes 1"),
    (lambda: gradient(square, 2), "pass a Python float"),
    (lambda: hvp(square, 2.0, np.ones(2)), "pass a direction like x"),
])
def test_errors_at_the_call_name_the_callers_line(call, match):
    line = inspect.getsourcelines(call)[1]
    with pytest.raises((SourceError, ArgumentTypeError), match=match) as info:
        call()
    assert "<enzyme_plugin" not in str(info.value)
    assert info.value.filename == __file__ and info.value.line == line


def test_an_error_in_the_differentiated_function_names_its_line_and_the_call():
    construct = inspect.getsourcelines(uses_a_set)[1] + 1
    with pytest.raises(UnsupportedError, match="Set") as info:
        call = here() + 1
        autodiff(Reverse, uses_a_set, Active(2.0))
    assert info.value.filename == __file__ and info.value.line == construct
    assert f"in autodiff called at {__file__}:{call}" in str(info.value)


class Scaled:
    def times(self, x):
        return 3.0 * x


@dataclasses.dataclass
class Record:
    c: float

    def times(self, x):
        return self.c * x


def scaled(c, x):
    return c * x


def produces(x):
    yield x


@pytest.mark.parametrize("f, match", [
    (functools.partial(square, x=1.0), "functools.partial without keywords"),
    (produces, "generator function"),
    ("square", "pass a Python function"),
])
def test_what_is_not_a_plain_function_is_a_typed_error_with_the_way_out(f, match):
    with pytest.raises(ArgumentTypeError, match=match) as info:
        call = here() + 1
        autodiff(Reverse, f, Active(2.0))
    assert info.value.filename == __file__ and info.value.line == call


def test_a_lambda_and_a_bound_methods_function_are_differentiated():
    assert autodiff(Reverse, lambda x: x * x * x, Active(2.0)) == (12.0,)
    assert autodiff(Reverse, functools.partial(scaled, 3.0), Active(2.0)) == (3.0,)
    assert autodiff(Reverse, Record(3.0).times, Active(2.0)) == (3.0,)
    with pytest.raises(ArgumentTypeError, match=r"parameter .self.* Scaled"):
        autodiff(Reverse, Scaled().times, Active(2.0))


def test_split_mode_errors_name_the_thunks_call():
    from enzyme_plugin import ReverseSplit, autodiff_thunk

    fwd, _ = autodiff_thunk(ReverseSplit, sumsq, Duplicated)
    a = np.ones(3)
    for call, error, match in [
        (lambda: fwd(Duplicated(a, np.zeros(3)), 1.0), TypeError, "expected 1 argument"),
        (lambda: fwd(Duplicated(a, np.zeros(3, np.float32))), ArgumentTypeError, "float32"),
        (lambda: fwd(Duplicated(a, np.zeros(2))), ValueError, "axis 0 has 3 elements in the value, 2"),
        (lambda: autodiff_thunk(ReverseSplit, sumsq, BatchDuplicated), ArgumentTypeError, "no batches"),
        (lambda: autodiff_thunk(ReverseSplit, square, Active)[0](Active(2)), TypeInferenceError, "Active takes"),
        (lambda: autodiff_thunk(ReverseSplit, pair, Active)[0](Active(2.0)), TypeInferenceError,
         "split mode: pair must return a float or nothing"),
    ]:
        with pytest.raises(error, match=match) as info:
            call()
        assert isinstance(info.value, SourceError) and info.value.filename == __file__
        assert info.value.line == inspect.getsourcelines(call)[1]
