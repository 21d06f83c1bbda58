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

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd
from gpucompiler import kernel
from gpucompiler import types as T
from gpucompiler.targets import PTXTarget

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import ad_kernels as K

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
