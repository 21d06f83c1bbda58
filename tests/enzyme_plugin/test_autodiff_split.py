"""Split reverse mode from plain Python: autodiff_thunk(ReverseSplit, ...) against autodiff(Reverse, ...),
finite differences and the primal; tape consumption and the typed misuse errors."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from enzyme_plugin import (Active, Const, Duplicated, Reverse, ReverseSplit, Tape, TapeError, autodiff,
                           autodiff_thunk)
from gpucompiler import jit
from gpucompiler.errors import ArgumentTypeError, TypeInferenceError

P = ("enzyme",)


def loop_scalar(x, n):
    s = 0.0
    for i in range(n):
        s = s * 0.5 + x * x * (i + 1.0)
    return s * x


def array_fn(x, a, n):
    s = 0.0
    for i in range(n):
        s = s + x * a[i] * a[i] + s * 0.1
    return s * x


def writes_out(a, out):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i] * a[i]
    out[0] = s


def other(x):
    return x * 2.0


def uses_thunk_in_jit(x):
    return autodiff_thunk(ReverseSplit, other, Active)


def uses_split_mode_in_jit(x):
    return autodiff(ReverseSplit, other, Active(x))


def fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("x", [0.3, -1.2, 2.5])
def test_scalar_loop_matches_reverse_and_fd(x):
    fwd, rev = autodiff_thunk(ReverseSplit, loop_scalar, Active, Const)
    tape, y = fwd(Active(x), Const(5))
    assert isinstance(tape, Tape) and not tape.used
    assert y == loop_scalar(x, 5)
    (dx,) = rev(Active(x), Const(5), 1.0, tape)
    assert tape.used
    (ref,) = autodiff(Reverse, loop_scalar, Active(x), Const(5))
    assert dx == pytest.approx(ref, rel=1e-14)
    assert dx == pytest.approx(fd(lambda t: loop_scalar(t, 5), x), rel=1e-6)


def test_seed_scales_the_gradient():
    fwd, rev = autodiff_thunk(ReverseSplit, loop_scalar, Active(0.0), 3)
    tape, _ = fwd(Active(0.8), 3)
    (dx,) = rev(Active(0.8), 3, -2.5, tape)
    assert dx == pytest.approx(-2.5 * autodiff(Reverse, loop_scalar, Active(0.8), 3)[0], rel=1e-14)


def test_array_function_matches_reverse_and_fd():
    a = np.array([1.0, -2.0, 0.5, 3.0])
    x, n = 0.7, 4
    fwd, rev = autodiff_thunk(ReverseSplit, array_fn, Active, Duplicated, Const)
    da = np.zeros_like(a)
    tape, y = fwd(Active(x), Duplicated(a, da), Const(n))
    assert y == array_fn(x, a, n)
    (dx,) = rev(Active(x), Duplicated(a, da), Const(n), 1.0, tape)
    da_ref = np.zeros_like(a)
    (dx_ref,) = autodiff(Reverse, array_fn, Active(x), Duplicated(a, da_ref), Const(n))
    assert dx == pytest.approx(dx_ref, rel=1e-14)
    np.testing.assert_allclose(da, da_ref, rtol=1e-14)
    assert dx == pytest.approx(fd(lambda t: array_fn(t, a, n), x), rel=1e-6)
    for i in range(n):
        e = np.zeros_like(a)
        e[i] = 1e-6
        assert da[i] == pytest.approx((array_fn(x, a + e, n) - array_fn(x, a - e, n)) / 2e-6, rel=1e-6)


def test_function_returning_nothing():
    a, da = np.array([1.0, 2.0, 3.0]), np.zeros(3)
    out, dout = np.zeros(1), np.zeros(1)
    fwd, rev = autodiff_thunk(ReverseSplit, writes_out, Duplicated, Duplicated)
    tape, y = fwd(Duplicated(a, da), Duplicated(out, dout))
    assert y is None and out[0] == 36.0
    dout[0] = 1.0  # seed the adjoint of the output between the passes
    assert rev(Duplicated(a, da), Duplicated(out, dout), None, tape) == ()
    np.testing.assert_allclose(da, 3 * a * a)
    with pytest.raises(TapeError):
        rev(Duplicated(a, da), Duplicated(out, dout), None, tape)


def test_tape_is_consumed_once():
    fwd, rev = autodiff_thunk(ReverseSplit, loop_scalar, Active, Const)
    tape, _ = fwd(Active(1.5), Const(4))
    (d1,) = rev(Active(1.5), Const(4), 1.0, tape)
    with pytest.raises(TapeError, match="already used"):
        rev(Active(1.5), Const(4), 1.0, tape)
    tape2, _ = fwd(Active(1.5), Const(4))
    assert rev(Active(1.5), Const(4), 1.0, tape2) == (d1,)


def test_unused_tapes_are_released():
    a = np.array([1.0, 2.0])
    fwd, rev = autodiff_thunk(ReverseSplit, array_fn, Active, Duplicated, Const)
    da = np.zeros(2)
    for _ in range(50):
        tape, _y = fwd(Active(0.3), Duplicated(a, da), Const(2))
        del tape
    gc.collect()
    np.testing.assert_array_equal(da, 0.0)  # the releasing reverse pass leaves the user's shadows alone
    tape, _y = fwd(Active(0.3), Duplicated(a, da), Const(2))
    (dx,) = rev(Active(0.3), Duplicated(a, da), Const(2), 1.0, tape)
    assert dx == pytest.approx(autodiff(Reverse, array_fn, Active(0.3), Duplicated(a, np.zeros(2)), Const(2))[0])


def test_misuse_errors_are_typed():
    fwd, rev = autodiff_thunk(ReverseSplit, loop_scalar, Active, Const)
    _fwd2, rev2 = autodiff_thunk(ReverseSplit, other, Active)
    tape, _ = fwd(Active(1.0), Const(2))
    with pytest.raises(TapeError, match="another thunk"):
        rev2(Active(1.0), 1.0, tape)
    with pytest.raises(ArgumentTypeError):
        rev(Active(1.0), Const(2), 1.0, "not a tape")
    with pytest.raises(ArgumentTypeError):
        rev(Active(1.0), Const(2), "one", tape)
    with pytest.raises(ArgumentTypeError):
        fwd(Const(1.0), Const(2))  # activities differ from the thunk's
    with pytest.raises(TypeError):
        fwd(Active(1.0))
    assert not tape.used  # rejected calls do not consume the tape
    rev(Active(1.0), Const(2), 1.0, tape)
    with pytest.raises(ArgumentTypeError):
        autodiff_thunk(Reverse, loop_scalar, Active, Const)
    with pytest.raises(ArgumentTypeError):
        autodiff_thunk(ReverseSplit, loop_scalar, float, Const)
    with pytest.raises(ArgumentTypeError):
        autodiff(ReverseSplit, loop_scalar, Active(1.0), 2)


@pytest.mark.parametrize("fn", [uses_thunk_in_jit, uses_split_mode_in_jit])
def test_making_thunks_in_compiled_code_is_a_typed_error(fn):
    with pytest.raises(TypeInferenceError, match="split mode is made in Python"):
        jit(fn, plugins=P)(1.0)
