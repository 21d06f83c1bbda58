"""A differentiated function with a loop inside a kernel: the n-body gradient
with its loop over the other bodies differentiated, in the CPU grid
emulation against finite differences and through ptxas; the AD tape's own malloc/free pass PTX validation, user code's
do not."""

from __future__ import annotations

import math
import os
import sys

import numpy as np

import ez_funcs as F
from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd
from gpucompiler import kernel
from gpucompiler import types as T
from gpucompiler.llvm import parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import ad_kernels as K

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
NB = 24


def body_energy(px, py, pz, i):
    """The n-body benchmark's per-body energy with its loop over all bodies."""
    e = 0.0
    for j in range(px.shape[0]):
        dx = px[j] - px[i]
        dy = py[j] - py[i]
        dz = pz[j] - pz[i]
        e += 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz + K.EPS)
    return e


def nbody_grad(px, dpx, py, dpy, pz, dpz):
    i = gd.grid(1)
    if i < px.shape[0]:
        autodiff(Reverse, body_energy, Duplicated(px, dpx), Duplicated(py, dpy), Duplicated(pz, dpz),
                 Const(i))


def total_energy(px, py, pz):
    d2 = (px[:, None] - px[None]) ** 2 + (py[:, None] - py[None]) ** 2 + (pz[:, None] - pz[None]) ** 2
    return float(np.sum(1.0 / np.sqrt(d2 + K.EPS)))


def test_nbody_gradient_with_its_loop_in_emulation():
    rng = np.random.default_rng(7)
    pos = [rng.uniform(-1.0, 1.0, NB) for _ in range(3)]
    grads = [np.zeros(NB) for _ in range(3)]
    kernel(nbody_grad, plugins=P)[1, 32, "cpu"](pos[0], grads[0], pos[1], grads[1], pos[2], grads[2])
    h = 1e-6
    for c in range(3):
        fd = np.zeros(NB)
        for k in range(NB):
            up = [p.copy() for p in pos]
            dn = [p.copy() for p in pos]
            up[c][k] += h
            dn[c][k] -= h
            fd[k] = (total_energy(*up) - total_energy(*dn)) / (2 * h)
        np.testing.assert_allclose(grads[c], fd, rtol=1e-6, atol=1e-6)


def test_nbody_gradient_kernel_passes_validation_and_ptxas(check_ptx):
    k = kernel(nbody_grad, plugins=P)
    model = parse(k.inspect_llvm(A, A, A, A, A, A))
    calls = {i.callee.name for f in model.functions.values() for i in f.instructions()
             if i.opcode == "call" and getattr(i.callee, "name", None)}
    assert not {"realloc"} & calls
    check_ptx(k.inspect_asm(A, A, A, A, A, A))


def until_big(x, i):
    s = x[i]
    while s < 4.0:  # a trip count known only as the loop runs
        s = s + 0.5 + 0.1 * math.sin(s)
    return s * s


def until_kernel(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, until_big, Duplicated(x, dx), Const(i))


def test_known_trip_count_tape_in_a_kernel(check_ptx):
    """A loop whose values the reverse needs (sin of a loop-carried value): its cache array is
    allocated with the device's malloc, marked as the AD tape, accepted by validation and ptxas;
    the gradient is checked in the emulation."""
    k = kernel(F.loop_in_kernel, plugins=P)
    text = k.inspect_llvm(A, A)
    assert "!gpuc.ad.tape" in text and "@realloc" not in text
    check_ptx(k.inspect_asm(A, A))
    x = np.linspace(-0.5, 0.7, 16)
    dx = np.zeros_like(x)
    kernel(F.loop_in_kernel, plugins=P)[1, 16, "cpu"](x, dx)
    h, fd = 1e-6, np.zeros_like(x)
    for k_ in range(len(x)):
        e = np.zeros_like(x)
        e[k_] = h
        fd[k_] = sum(F.cumulative(x + e, i) - F.cumulative(x - e, i) for i in range(len(x))) / (2 * h)
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-8)


def test_growing_tape_compiles_for_ptx_without_realloc(check_ptx):
    """A loop whose trip count is known only as it runs grows its array by malloc + copy + free
    (a device has no realloc), all marked as the AD tape: validation and ptxas accept it, and the
    emulated gradient matches finite differences. Before, the kernel failed with DYNAMIC_ALLOCATION."""
    k = kernel(until_kernel, plugins=P)
    model = parse(k.inspect_llvm(A, A))
    heap = [i for f in model.functions.values() for i in f.instructions()
            if i.opcode == "call" and getattr(i.callee, "name", None) in ("malloc", "free", "realloc")]
    assert heap and all(i.callee.name != "realloc" and "gpuc.ad.tape" in i.metadata for i in heap)
    check_ptx(k.inspect_asm(A, A))
    x = np.linspace(-0.5, 0.7, 16)
    dx = np.zeros_like(x)
    kernel(until_kernel, plugins=P)[1, 16, "cpu"](x, dx)
    h = 1e-6
    fd = np.array([(until_big(x + h * (np.arange(16) == i), i) - until_big(x - h * (np.arange(16) == i), i))
                   / (2 * h) for i in range(16)])
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-8)


FIXED_TRIP = 48


def fixed_chain(x, i):
    """A loop of constant trip count whose reverse needs the loop-carried value (sin)."""
    s = x[i]
    for j in range(FIXED_TRIP):
        s = math.sin(s) * x[i] + 0.1 * j
    return s


def fixed_kernel(x, dx):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, fixed_chain, Duplicated(x, dx), Const(i))


def _fixed_chain_derivative(x):
    """d fixed_chain(x, i) / d x[i] by the chain rule, written out."""
    s, ds = x, 1.0
    for j in range(FIXED_TRIP):
        s, ds = math.sin(s) * x + 0.1 * j, math.cos(s) * ds * x + math.sin(s)
    return ds


def test_constant_trip_tape_is_an_alloca_in_a_kernel(check_ptx):
    """The tape of a loop with a constant trip count (a few bytes) is an ``alloca``: no malloc in
    the kernel's IR or PTX (no device heap needed), ptxas accepts it, and the emulated gradient
    matches the chain rule and finite differences."""
    k = kernel(fixed_kernel, plugins=P)
    model = parse(k.inspect_llvm(A, A))
    calls = {i.callee.name for f in model.functions.values() for i in f.instructions()
             if i.opcode == "call" and getattr(i.callee, "name", None)}
    assert not {"malloc", "free", "realloc"} & calls, calls
    ptx = k.inspect_asm(A, A)
    assert "malloc" not in ptx and "free" not in ptx
    check_ptx(ptx)
    x = np.linspace(-0.9, 0.8, 20)
    dx = np.zeros_like(x)
    kernel(fixed_kernel, plugins=P)[2, 16, "cpu"](x, dx)
    want = np.array([_fixed_chain_derivative(v) for v in x])
    np.testing.assert_allclose(dx, want, rtol=1e-12, atol=1e-12)
    h = 1e-6
    fd = np.array([(fixed_chain(x + h * (np.arange(20) == i), i) - fixed_chain(x - h * (np.arange(20) == i), i))
                   / (2 * h) for i in range(20)])
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-8)
