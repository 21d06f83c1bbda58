"""Errors inside differentiated functions: bounds checks and Python errors stop ``f`` and raise.

``f`` is compiled with the parent's checks; a failed check stops it at once
(through an error slot, so the engine keeps plain signatures) and the code
after ``autodiff`` raises before any result is used. Memory next to the
arrays (views of one buffer) shows that no wild read or write happened.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import device as gd, jit, kernel, types as T
from gpucompiler.llvm import parse

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")


def weighted(x, a, i):
    return x * a[i] * a[i]


def scatter(x, a, i):
    a[i] = x * x
    return a[i] * x


def partial_sums(a, n):
    s = 0.0
    for k in range(n):
        s += math.sin(a[k]) * a[k]
    return s


def helper_reads(a, i):
    return a[i] * 2.0


def calls_helper(x, a, i):
    return x * helper_reads(a, i) + x


def ratio(x, y):
    return x / y


def floor_ratio(x, n):
    return x * (7 // n)


def _views(n=4, pad=3):
    """``(buffer, a view of n items with pad items on each side)``, the buffer filled with sentinels."""
    buf = np.full(n + 2 * pad, 7.0)
    view = buf[pad:pad + n]
    view[:] = np.arange(1.0, n + 1.0)
    return buf, view


def _message(a, i):
    with pytest.raises(IndexError) as ref:
        a[i]
    return str(ref.value)


# -- plain-Python autodiff -------------------------------------------------
@pytest.mark.parametrize("i", [4, 7, -5])
def test_read_out_of_range_raises_numpys_index_error(i):
    buf, a = _views()
    sbuf, da = _views()
    sbuf[:] = 0.0
    before, sbefore = buf.copy(), sbuf.copy()
    with pytest.raises(IndexError) as info:
        autodiff(Reverse, weighted, Active(2.0), Duplicated(a, da), Const(i))
    assert str(info.value) == _message(a, i)
    np.testing.assert_array_equal(buf, before)
    np.testing.assert_array_equal(sbuf, sbefore)


def test_write_out_of_range_raises_and_leaves_neighbours_alone():
    buf, a = _views()
    sbuf, da = _views()
    sbuf[:] = 0.0
    before, sbefore = buf.copy(), sbuf.copy()
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        autodiff(Reverse, scatter, Active(3.0), Duplicated(a, da), Const(4))
    np.testing.assert_array_equal(buf, before)
    np.testing.assert_array_equal(sbuf, sbefore)


def test_forward_mode_checks_too():
    buf, a = _views()
    before = buf.copy()
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        autodiff(Forward, weighted, Duplicated(2.0, 1.0), Const(a), Const(9))
    np.testing.assert_array_equal(buf, before)


def test_loop_stops_at_the_bad_index_and_a_callee_error_stops_the_caller():
    _buf, a = _views()
    sbuf, da = _views()
    sbuf[:] = 0.0
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        autodiff(Reverse, partial_sums, Duplicated(a, da), Const(1000))
    assert (sbuf[:3] == 0).all() and (sbuf[7:] == 0).all()  # no adjoint written past the view
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        autodiff(Reverse, calls_helper, Active(1.0), Duplicated(a, da), Const(5))
    assert (sbuf[:3] == 0).all() and (sbuf[7:] == 0).all()


def test_division_by_zero_raises():
    with pytest.raises(ZeroDivisionError):
        autodiff(Reverse, ratio, Active(1.0), Active(0.0))
    with pytest.raises(ZeroDivisionError):
        autodiff(Reverse, floor_ratio, Active(1.0), Const(0))
    assert autodiff(Reverse, ratio, Active(1.0), Active(4.0)) == pytest.approx((0.25, -1.0 / 16))


def test_in_range_derivatives_match_finite_differences():
    rng = np.random.default_rng(3)
    a = rng.uniform(-1.0, 1.0, 6)
    da = np.zeros(6)
    autodiff(Reverse, partial_sums, Duplicated(a, da), Const(5))
    h = 1e-6
    for k in range(6):
        e = np.zeros(6)
        e[k] = h
        fd = (partial_sums(a + e, 5) - partial_sums(a - e, 5)) / (2 * h)
        assert da[k] == pytest.approx(fd, rel=1e-7, abs=1e-9)
    da = np.zeros(6)
    (dx,) = autodiff(Reverse, calls_helper, Active(1.5), Duplicated(a, da), Const(-1))
    assert dx == pytest.approx(2.0 * a[-1] + 1.0) and da[-1] == pytest.approx(3.0)
    assert not da[:-1].any()


# -- @jit ------------------------------------------------------------------
def _grad_weighted(x, a, da, i):
    return autodiff(Reverse, weighted, Active(x), Duplicated(a, da), Const(i))[0]


grad_weighted = jit(_grad_weighted, plugins=P)


@jit(plugins=P)
def grad_then_loop(x, a, da, i):
    d = autodiff(Reverse, weighted, Active(x), Duplicated(a, da), Const(i))[0]
    n = 0
    while d != d + 1.0:  # would never end on the result of an unchecked failure
        n += 1
        d = d + 1.0
    return n


def test_jit_raises_after_the_autodiff_call_before_using_its_result():
    buf, a = _views()
    sbuf, da = _views()
    sbuf[:] = 0.0
    before = buf.copy()
    assert grad_weighted(2.0, a, da, 1) == pytest.approx(4.0) and da[1] == pytest.approx(8.0)
    with pytest.raises(IndexError) as info:
        grad_weighted(2.0, a, da, 4)
    assert str(info.value) == _message(a, 4)
    with pytest.raises(IndexError):
        grad_then_loop(2.0, a, da, -5)
    np.testing.assert_array_equal(buf, before)
    assert (sbuf[:3] == 0).all() and (sbuf[7:] == 0).all()


@jit(plugins=P)
def grad_ratio(x, y):
    return autodiff(Reverse, ratio, Active(x), Active(y))


def test_jit_division_by_zero_raises():
    with pytest.raises(ZeroDivisionError):
        grad_ratio(1.0, 0.0)
    assert grad_ratio(3.0, 2.0) == pytest.approx((0.5, -0.75))


def _nested_ir(boundscheck):
    return jit(_grad_weighted, plugins=P, boundscheck=boundscheck).inspect_llvm(
        T.float64, A, A, T.int64, stage="link_deferred")


def test_boundscheck_false_turns_the_checks_off_in_the_nested_job():
    checked, unchecked = _nested_ir(True), _nested_ir(False)
    assert "out of bounds for axis" in checked
    assert "out of bounds for axis" not in unchecked
    nested = [f for n, f in parse(checked).functions.items() if ".deferred." in n and not f.is_declaration]
    assert nested and all(str(f.args[0].type) == "ptr" for f in nested)  # the error slot


# -- kernels -----------------------------------------------------------------
def energy_at(x, w, i, k):
    return math.sin(x[i]) * w[k] * x[i]


def grad_kernel(x, dx, w, dw, k):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, energy_at, Duplicated(x, dx), Duplicated(w, dw), Const(i), Const(k))


def test_kernel_boundscheck_covers_the_differentiated_function_in_emulation():
    n = 64
    x = np.linspace(-1.0, 1.0, n)
    wbuf, w = _views(2, 2)
    dx, dwbuf = np.zeros(n), np.zeros(6)
    dw = dwbuf[2:4]
    k = kernel(grad_kernel, plugins=P, boundscheck=True)
    k[2, 32, "cpu"](x, dx, w, dw, 1)
    np.testing.assert_allclose(dx, w[1] * (np.cos(x) * x + np.sin(x)), rtol=1e-13)
    assert dw[1] == pytest.approx(np.sum(np.sin(x) * x)) and dw[0] == 0.0
    before, dbefore = wbuf.copy(), dwbuf.copy()
    with pytest.raises(IndexError) as info:
        k[2, 32, "cpu"](x, np.zeros(n), w, dw, 2)
    assert str(info.value).startswith(_message(w, 2) + f" at {__file__}:")
    np.testing.assert_array_equal(wbuf, before)
    np.testing.assert_array_equal(dwbuf, dbefore)


def test_kernel_boundscheck_traps_in_the_differentiated_function_on_the_gpu(check_ptx):
    plain = kernel(grad_kernel, plugins=P).inspect_llvm(A, A, A, A, T.int64)
    k = kernel(grad_kernel, plugins=P, boundscheck=True)
    assert "llvm.trap" not in plain and "llvm.trap" in k.inspect_llvm(A, A, A, A, T.int64)
    ptx = k.inspect_asm(A, A, A, A, T.int64)
    assert "trap;" in ptx
    check_ptx(ptx)
