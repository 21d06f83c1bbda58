"""Split mode inside compiled code: thunks made at module level called in ``@jit`` functions and in
kernels, the tape handle kept in caller memory between the halves (a local, or an int64 array element
from one kernel launch to the next); gradients against the combined reverse mode and analytic values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Reverse, ReverseSplit, autodiff, autodiff_thunk
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler import types as T
from gpucompiler.errors import TypeInferenceError

P = ("enzyme",)


def wave(x, a, n):
    acc = 0.0
    for i in range(n):
        acc += math.sin(x * a[i])
    return acc


FWD, REV = autodiff_thunk(ReverseSplit, wave, Active, Duplicated, Const)


def split_step(x, a, da, n, seed):
    tape, y = FWD(Active(x), Duplicated(a, da), Const(n))
    (dx,) = REV(Active(x), Duplicated(a, da), Const(n), seed, tape)
    return y, dx


def test_split_mode_in_jit_matches_the_combined_reverse_mode():
    a = np.array([0.5, 1.0, 1.5, -2.0])
    da = np.zeros(4)
    y, dx = jit(split_step, plugins=P)(0.7, a, da, 4, 2.0)
    assert y == pytest.approx(wave(0.7, a, 4), rel=1e-15)
    want_da = np.zeros(4)
    (want_dx,) = autodiff(Reverse, wave, Active(0.7), Duplicated(a, want_da), Const(4))
    assert dx == pytest.approx(2.0 * want_dx, rel=1e-14)
    np.testing.assert_allclose(da, 2.0 * want_da, rtol=1e-14)
    np.testing.assert_allclose(da, 2.0 * np.cos(0.7 * a) * 0.7, rtol=1e-14)


def scale_at(x, a, i):
    return x * a[i] * a[i]


SF, SR = autodiff_thunk(ReverseSplit, scale_at, Active, Duplicated, Const)


def forward_launch(xs, a, da, tapes, ys):
    i = gd.grid(1)
    if i < xs.shape[0]:
        tape, y = SF(Active(xs[i]), Duplicated(a, da), Const(i))
        tapes[i] = tape   # the tape handle, kept in device memory for the reverse launch
        ys[i] = y


def reverse_launch(xs, a, da, tapes, dys, dxs):
    i = gd.grid(1)
    if i < xs.shape[0]:
        r = SR(Active(xs[i]), Duplicated(a, da), Const(i), dys[i], tapes[i])
        dxs[i] = r[0]


def launch_inputs():
    n = 128
    return (np.linspace(0.0, 1.0, n), np.linspace(1.0, 2.0, n), np.zeros(n), np.zeros(n, dtype=np.int64),
            np.zeros(n), np.linspace(-1.0, 1.0, n), np.zeros(n))


def check_launches(xs, a, da, ys, dys, dxs):
    np.testing.assert_allclose(ys, xs * a * a, rtol=1e-15)
    np.testing.assert_allclose(dxs, dys * a * a, rtol=1e-15)
    np.testing.assert_allclose(da, dys * 2 * xs * a, rtol=1e-15, atol=1e-300)


def test_tape_kept_in_an_int64_array_between_two_kernel_launches_on_the_emulation():
    xs, a, da, tapes, ys, dys, dxs = launch_inputs()
    kernel(forward_launch, plugins=P)[4, 32, "cpu"](xs, a, da, tapes, ys)
    assert np.all(tapes != 0)
    kernel(reverse_launch, plugins=P)[4, 32, "cpu"](xs, a, da, tapes, dys, dxs)
    check_launches(xs, a, da, ys, dys, dxs)


def test_split_kernels_assemble_with_ptxas(check_ptx):
    A, IA = T.ArrayType(T.float64, 1, "C"), T.ArrayType(T.int64, 1, "C")
    check_ptx(kernel(forward_launch, plugins=P).inspect_asm(A, A, A, IA, A))
    check_ptx(kernel(reverse_launch, plugins=P).inspect_asm(A, A, A, IA, A, A))


@pytest.mark.gpu
def test_split_kernels_on_the_gpu():
    cp = pytest.importorskip("cupy")
    host = launch_inputs()
    xs, a, da, tapes, ys, dys, dxs = (cp.asarray(v) for v in host)
    kernel(forward_launch, plugins=P)[4, 32](xs, a, da, tapes, ys)
    kernel(reverse_launch, plugins=P)[4, 32](xs, a, da, tapes, dys, dxs)
    check_launches(*(cp.asnumpy(v) for v in (xs, a, da, ys, dys, dxs)))


def wrong_activity(x, a, da):
    return FWD(Const(x), Duplicated(a, da), Const(3))


def float_tape(x, a, da):
    return REV(Active(x), Duplicated(a, da), Const(3), 1.0, 2.5)


@pytest.mark.parametrize("fn,words", [(wrong_activity, "argument 0 must be Active"),
                                      (float_tape, "the tape must be the int64 handle")])
def test_thunk_misuse_in_compiled_code_is_a_typed_error(fn, words):
    with pytest.raises(TypeInferenceError, match=words):
        jit(fn, plugins=P)(1.0, np.ones(3), np.zeros(3))
