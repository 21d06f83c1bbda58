"""The loop tape's growth copies and bounded loops: a growing array is copied
8 bytes at a time (no byte loop in the PTX; ``llvm.memcpy`` of a run-time size
is one on NVPTX whatever alignment it states), and the gradients through the
growth paths (inline segment, heap, tape arena) match the exact derivative."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, EnzymeOptions, Forward, Reverse, ReverseSplit, autodiff, autodiff_thunk
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler import types as T
from gpucompiler.targets import PTXTarget

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import ad_kernels as K
from dual import dual_grad

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
PTXAS = "/usr/local/bin/ptxas"
#: a byte-wise load or store (``ld.b8``, ``st.u8``, ``ld.global.b8`` ...)
BYTE_ACCESS = re.compile(r"\b(?:ld|st)(?:\.\w+)*\.[bu]8\b")


def long_walk(x, i):
    """A data-dependent ``while`` of 1/x[i] + 1 iterations: its array grows several times."""
    s = x[i]
    t = 0.0
    while s < 4.0:
        t = t + s * s
        s = s + x[i]
    return t


def k_long_walk(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, long_walk, Duplicated(x, dx), Const(i))


def long_walk_derivative(a):
    """d/da of sum_{j=1..n} (j a)^2 with n = the iterations (j a < 4): 2 a sum j^2."""
    n = 0
    s = a
    while s < 4.0:
        n += 1
        s = s + a
    return 2.0 * a * sum(j * j for j in range(1, n + 1))


def _ptx(fn):
    return kernel(fn, plugins=P).compile((A, A), PTXTarget())[0]


@pytest.mark.parametrize("fn", [K.newton_grad, k_long_walk], ids=["newton", "long_walk"])
def test_ptx_of_a_growing_loop_copies_no_bytes(fn):
    ptx = _ptx(fn)
    assert not BYTE_ACCESS.search(ptx), BYTE_ACCESS.search(ptx)


def test_growing_loop_gradient_on_the_emulation():
    """From the arena into the heap (0.011 needs ~360 iterations: frames past the 1 KiB arena)."""
    x = np.array([0.011, 0.05, 0.3, 1.0, 2.5, 3.9, 4.5, 0.02, 0.13, 0.7])
    dx = np.zeros_like(x)
    kernel(k_long_walk, plugins=P)[1, 32, "cpu"](x, dx)
    expected = [long_walk_derivative(float(a)) for a in x]
    np.testing.assert_allclose(dx, expected, rtol=1e-12)


def test_growing_loop_gradient_on_the_cpu():
    """The host's inline segment, then malloc and the word copy."""
    x = np.array([0.011, 0.3, 2.5, 4.5])
    for i in range(len(x)):
        dx = np.zeros_like(x)
        autodiff(Reverse, long_walk, Duplicated(x, dx), Const(i))
        expected = np.zeros_like(x)
        expected[i] = long_walk_derivative(float(x[i]))
        np.testing.assert_allclose(dx, expected, rtol=1e-12)


@pytest.mark.skipif(not os.path.exists(PTXAS), reason="ptxas not installed")
def test_growing_loop_ptx_assembles(tmp_path):
    path = tmp_path / "k.ptx"
    path.write_text(_ptx(k_long_walk))
    subprocess.run([PTXAS, "-arch=sm_90", str(path), "-o", str(tmp_path / "k.cubin")], check=True)


# -- loops with a constant cap on their trip count (``while ... and it < CAP``) --------------------------


def capped_walk(x, i):
    """Stops when s reaches 30 (x[i] near 1: early) or at the cap of 60 iterations (x[i] small)."""
    a = x[i]
    s = a
    it = 0
    while s < 30.0 and it < 60:
        s = s + a * (1.0 + 0.01 * s)
        it += 1
    return s * s


def long_capped_walk(x, i):
    """The same with a cap of 400 iterations: 400 frames exceed the limit, the array grows."""
    a = x[i]
    s = a
    it = 0
    while s < 30.0 and it < 400:
        s = s + a * (1.0 + 0.01 * s)
        it += 1
    return s * s


def walk_derivative(a: float, cap: int) -> tuple[float, int]:
    """(d/da of the walk's s^2, its iterations), exactly by forward differentiation of the recurrence."""
    s, ds, it = a, 1.0, 0
    while s < 30.0 and it < cap:
        s, ds = s + a * (1.0 + 0.01 * s), ds + (1.0 + 0.01 * s) + a * 0.01 * ds
        it += 1
    return 2.0 * s * ds, it


def k_capped_walk(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, capped_walk, Duplicated(x, dx), Const(i))


def k_long_capped_walk(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, long_capped_walk, Duplicated(x, dx), Const(i))


def h_capped_walk(x, dx, i):
    autodiff(Reverse, capped_walk, Duplicated(x, dx), Const(i))


def h_long_capped_walk(x, dx, i):
    autodiff(Reverse, long_capped_walk, Duplicated(x, dx), Const(i))


#: x[i] that stop early (s reaches 30 after 1 to ~20 iterations), exactly at or just past the cap of 60,
#: and well past it (the cap of 400 too)
WALK_X = np.array([29.5, 10.0, 3.0, 1.0, 0.7, 0.5, 0.45, 0.43, 0.42, 0.3, 0.1, 0.05, 0.001, 0.0, -0.5])
CAPS = {capped_walk: 60, long_capped_walk: 400}
GROWS = re.compile(r"^cpword[.\w]*:", re.M)  # the copy of a growth step


def _expected(fn):
    found = [walk_derivative(float(a), CAPS[fn]) for a in WALK_X]
    return np.array([d for d, _ in found]), {it for _, it in found}


def test_walk_inputs_stop_early_and_at_the_cap():
    for fn, cap in CAPS.items():
        _, counts = _expected(fn)
        assert cap in counts and min(counts) < 10 and len(counts) > 5, (cap, counts)


@pytest.mark.parametrize("fn,k", [(capped_walk, k_capped_walk), (long_capped_walk, k_long_capped_walk)],
                         ids=["cap60", "cap400"])
def test_capped_loop_gradient_on_the_emulation(fn, k):
    dx = np.zeros_like(WALK_X)
    kernel(k, plugins=P)[1, 32, "cpu"](WALK_X.copy(), dx)
    np.testing.assert_allclose(dx, _expected(fn)[0], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("fn,h", [(capped_walk, h_capped_walk), (long_capped_walk, h_long_capped_walk)],
                         ids=["cap60", "cap400"])
def test_capped_loop_gradient_on_the_cpu(fn, h):
    expected = _expected(fn)[0]
    g = jit(h, plugins=P)
    for i in range(len(WALK_X)):
        dx = np.zeros_like(WALK_X)
        g(WALK_X.copy(), dx, i)
        want = np.zeros_like(WALK_X)
        want[i] = expected[i]
        np.testing.assert_allclose(dx, want, rtol=1e-12, atol=1e-300, err_msg=f"x={WALK_X[i]}")


def test_capped_loop_gets_one_array_in_a_kernel():
    """60 frames of 8 bytes: one array before the loop, no growth, no heap (the arena is not needed)."""
    text = kernel(k_capped_walk, plugins=P).inspect_llvm(A, A)
    assert not GROWS.search(text) and "arena_spill" not in text and "malloc" not in text, text


def test_capped_newton_gets_one_array():
    """The benchmark's Newton solve (``while abs(r) > tol and it < 60``): 60 frames of 8 bytes (the
    iterate: the residual is rebuilt from it, and the quotient's adjoint taken from both) in one array of
    local memory; the PTX's forward loop stores into it with no capacity test."""
    text = kernel(K.newton_grad, plugins=P).inspect_llvm(A, A)
    assert not GROWS.search(text) and "arena_spill" not in text and "malloc" not in text, text
    ptx = _ptx(K.newton_grad)
    assert re.search(r"\.local \.align \d+ \.b8\s+__local_depot0\[480\]", ptx), ptx
    assert ptx.count("st.local.b64") >= 1 and "call.uni" not in ptx.split("newton_grad(")[1].split("\n}\n")[0]


def test_capped_loop_gets_one_array_on_the_cpu():
    text = jit(h_capped_walk, plugins=P).inspect_llvm(A, A, T.int64)
    assert not GROWS.search(text) and "malloc" not in text, text


def test_capped_loop_past_the_limit_grows_as_before():
    """400 frames of 8 bytes exceed MAX_STACK_TAPE and the arena: the array grows (checked above: gradients)."""
    assert GROWS.search(kernel(k_long_capped_walk, plugins=P).inspect_llvm(A, A))
    assert GROWS.search(jit(h_long_capped_walk, plugins=P).inspect_llvm(A, A, T.int64))


@pytest.mark.skipif(not os.path.exists(PTXAS), reason="ptxas not installed")
@pytest.mark.parametrize("fn", [k_capped_walk, k_long_capped_walk, K.newton_grad])
def test_capped_loop_ptx_assembles(fn, tmp_path):
    path = tmp_path / "k.ptx"
    path.write_text(_ptx(fn))
    subprocess.run([PTXAS, "-arch=sm_90", str(path), "-o", str(tmp_path / "k.cubin")], check=True)


# -- variants of the cap against a dual-number run of the same Python code --------------------------------


def cap_or(x, i):
    """The cap under ``or`` (exit on true), the counter stepping by 3 from 5."""
    a = x[i]
    s = a
    it = 5
    while not (s >= 30.0 or it >= 95):
        s = s + a * (1.0 + 0.01 * s)
        it += 3
    return s * s


def cap_first(x, i):
    """The cap tested before the data (the header then tests the counter alone)."""
    a = x[i]
    s = a
    it = 0
    while it < 50 and s < 30.0:
        s = s + a * (1.0 + 0.01 * s)
        it += 1
    return s * s


def cap_break(x, i):
    """``while True`` left by a ``break`` whose test holds the cap."""
    a = x[i]
    s = a
    it = 0
    while True:
        s = s + a / (1.0 + 0.01 * s)
        it += 1
        if s >= 30.0 or it >= 40:
            break
    return s * s


def cap_down(x, i):
    """A counter counting down to the cap."""
    a = x[i]
    s = a
    it = 70
    while s < 30.0 and it > 10:
        s = s + a * (1.0 + 0.01 * s)
        it -= 1
    return s * s


def cap_in_for(x, i):
    """A capped ``while`` inside a ``for``: it grows (an array of the cap per outer iteration would not)."""
    a = x[i]
    t = 0.0
    for j in range(len(x) // 5):  # (a count LLVM cannot unroll)
        s = a + 0.1 * j
        it = 0
        while s < 30.0 and it < 60:
            s = s + a * (1.0 + 0.01 * s)
            it += 1
        t = t + s
    return t * t


VARIANTS = [cap_or, cap_first, cap_break, cap_down, cap_in_for, capped_walk]


def _variant_kernel(fn):
    def grad_kernel(x, dx):
        i = gd.grid(1)
        if i < x.shape[0]:
            autodiff(Reverse, fn, Duplicated(x, dx), Const(i))

    return grad_kernel


@pytest.mark.parametrize("fn", VARIANTS, ids=lambda f: f.__name__)
def test_cap_variants_on_the_emulation_and_the_cpu(fn):
    expected = dual_grad(fn, WALK_X)
    dx = np.zeros_like(WALK_X)
    kernel(_variant_kernel(fn), plugins=P)[1, 32, "cpu"](WALK_X.copy(), dx)
    np.testing.assert_allclose(dx, expected, rtol=1e-12, atol=1e-300)
    for i in range(len(WALK_X)):
        dx = np.zeros_like(WALK_X)
        autodiff(Reverse, fn, Duplicated(WALK_X.copy(), dx), Const(i))
        np.testing.assert_allclose(dx[i], expected[i], rtol=1e-12, atol=1e-300, err_msg=f"x={WALK_X[i]}")
        assert not np.any(np.delete(dx, i))


def test_capped_loop_inside_a_loop_grows():
    assert GROWS.search(kernel(_variant_kernel(cap_in_for), plugins=P).inspect_llvm(A, A))


@pytest.mark.parametrize("arena", [0, 64, 4096])
def test_capped_loop_with_other_arena_sizes(arena):
    """No arena, one too small for anything (both: 3200 bytes grow), one that holds the cap's array."""
    dx = np.zeros_like(WALK_X)
    k = kernel(k_long_capped_walk, plugins=P, options=EnzymeOptions(tape_arena=arena))
    k[1, 32, "cpu"](WALK_X.copy(), dx)
    np.testing.assert_allclose(dx, _expected(long_capped_walk)[0], rtol=1e-12, atol=1e-300)
    text = k.inspect_llvm(A, A)
    assert bool(GROWS.search(text)) == (arena < 3200 + 8), arena  # 400 frames of 8 bytes fit 4 KiB


def test_capped_loop_in_split_mode():
    fwd, rev = autodiff_thunk(ReverseSplit, capped_walk, Duplicated, Const)
    expected = _expected(capped_walk)[0]
    for i in range(len(WALK_X)):
        dx = np.zeros_like(WALK_X)
        tape, y = fwd(Duplicated(WALK_X.copy(), dx), Const(i))
        assert y == capped_walk(WALK_X, i)
        rev(Duplicated(WALK_X.copy(), dx), Const(i), 1.0, tape)
        np.testing.assert_allclose(dx[i], expected[i], rtol=1e-12, atol=1e-300, err_msg=f"x={WALK_X[i]}")


def grad_capped_walk(x, dx, i):
    autodiff(Reverse, capped_walk, Duplicated(x, dx), Const(i))


def k_capped_walk_second(x, v, dx, hv):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Forward, grad_capped_walk, Duplicated(x, v), Duplicated(dx, hv), Const(i))


def test_capped_loop_differentiated_again_in_a_kernel():
    """Forward over reverse: the inner gradient's capped array, differentiated by the outer level."""
    v = np.linspace(-1.0, 2.0, len(WALK_X))
    dx, hv = np.zeros_like(WALK_X), np.zeros_like(WALK_X)
    kernel(k_capped_walk_second, plugins=P)[1, 32, "cpu"](WALK_X.copy(), v.copy(), dx, hv)
    np.testing.assert_allclose(dx, _expected(capped_walk)[0], rtol=1e-12, atol=1e-300)
    h = 1e-6
    d2 = [(walk_derivative(a + h, 60)[0] - walk_derivative(a - h, 60)[0]) / (2 * h) for a in WALK_X]
    np.testing.assert_allclose(hv, np.array(d2) * v, rtol=1e-5, atol=1e-6)
