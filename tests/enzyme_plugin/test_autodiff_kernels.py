"""autodiff inside kernels: CPU grid emulation against finite differences, PTX properties, the GPU (``gpu``)."""

from __future__ import annotations

import numpy as np
import pytest

import ez_funcs as F
from gpucompiler import kernel
from gpucompiler import types as T
from gpucompiler.llvm import parse

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
N = 256


def energy_np(x, w):
    return np.sin(x) * w[0] * x + w[1] * x * x


def inputs():
    return np.linspace(-2.0, 2.0, N), np.array([1.5, -0.25])


def expected_energy_grads(x, w):
    dx = w[0] * (np.cos(x) * x + np.sin(x)) + 2 * w[1] * x
    dw = np.array([np.sum(np.sin(x) * x), np.sum(x * x)])
    return dx, dw


def test_shared_parameter_gradient_in_emulation():
    """Every thread reads w: the adjoints of w from all threads must add up."""
    x, w = inputs()
    dx, dw = np.zeros(N), np.zeros(2)
    kernel(F.grad_energy_kernel, plugins=P)[N // 64, 64, "cpu"](x, dx, w, dw)
    edx, edw = expected_energy_grads(x, w)
    np.testing.assert_allclose(dx, edx, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(dw, edw, rtol=1e-12)
    h = 1e-6  # finite differences of the total energy in w[0]
    fd = (energy_np(x, w + [h, 0]).sum() - energy_np(x, w - [h, 0]).sum()) / (2 * h)
    assert dw[0] == pytest.approx(fd, rel=1e-7)


def test_autodiff_in_a_kernel_without_bounds_checks_in_emulation():
    """An emulated kernel stops on errors without bounds checks too: the nested job takes the error
    slot the kernel passes (it took none, and the marker call had an argument too many: an ADError)."""
    x, w = inputs()
    dx, dw = np.zeros(N), np.zeros(2)
    kernel(F.grad_energy_kernel, plugins=P, boundscheck=False)[N // 64, 64, "cpu"](x, dx, w, dw)
    edx, edw = expected_energy_grads(x, w)
    np.testing.assert_allclose(dx, edx, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(dw, edw, rtol=1e-12)


def test_shared_parameter_adjoints_are_atomic_in_ptx(check_ptx):
    k = kernel(F.grad_energy_kernel, plugins=P)
    model = parse(k.inspect_llvm(A, A, A, A))
    entry = next(f for f in model.functions.values() if not f.is_declaration and "grad_energy_kernel" in f.name)
    rmw = [i for f in model.functions.values() for i in f.instructions() if i.opcode == "atomicrmw"]
    assert rmw and all("fadd" in i.parts[0] for i in rmw)
    assert entry is not None
    check_ptx(k.inspect_asm(A, A, A, A))


@pytest.mark.parametrize("kern", [F.derivative_kernel, F.forward_kernel])
def test_scalar_derivative_per_thread_in_emulation(kern):
    x, a = np.linspace(-1.0, 1.5, N), 0.3
    out = np.zeros(N)
    kernel(kern, plugins=P)[N // 128, 128, "cpu"](x, out, a)
    exact = a * np.exp(a * x) + 2 * x / (1 + x * x)
    # the two terms are of order 1 and cancel where the sum crosses zero: rounding is absolute there
    np.testing.assert_allclose(out, exact, rtol=1e-14, atol=1e-15)
    h = 1e-6
    fd = (np.exp(a * (x + h)) + np.log1p((x + h) ** 2) - np.exp(a * (x - h)) - np.log1p((x - h) ** 2)) / (2 * h)
    np.testing.assert_allclose(out, fd, rtol=1e-6, atol=1e-8)


def test_ptx_math_goes_to_libdevice_and_nvvm_intrinsics_are_restored(check_ptx):
    k = kernel(F.derivative_kernel, plugins=P)
    model = parse(k.inspect_llvm(A, A, T.float64))
    names = set(model.functions)
    declared = {n for n, f in model.functions.items() if f.is_declaration}
    assert any(n.startswith("llvm.nvvm.read.ptx.sreg.") for n in declared)
    assert not [n for n in names if n.startswith(("gpuc.", "__enzyme", "enzyme_"))]
    assert not [n for n in declared if n.startswith("__nv_")]
    assert not {"exp", "log", "llvm.exp.f64", "llvm.log.f64", "log1p"} & declared  # libdevice linked in instead
    check_ptx(k.inspect_asm(A, A, T.float64))


def test_barrier_is_mirrored_in_the_reverse_sweep():
    k = kernel(F.grad_square_sync_kernel, plugins=P)
    model = parse(k.inspect_llvm(A, A, A, A))
    calls = [i for f in model.functions.values() for i in f.instructions()
             if i.opcode == "call" and getattr(i.callee, "name", "").startswith("llvm.nvvm.barrier")]
    assert len(calls) == 2  # the primal's and its mirror in the reverse sweep
    x = np.linspace(0.5, 2.0, 64)
    dx, out, dout = np.zeros(64), np.zeros(64), np.linspace(1.0, 2.0, 64)
    seed = dout.copy()
    kernel(F.grad_square_sync_kernel, plugins=P)[2, 32, "cpu"](x, dx, out, dout)
    np.testing.assert_allclose(out, 2 * x * x, rtol=1e-15)
    np.testing.assert_allclose(dx, 4 * x * seed, rtol=1e-15)


@pytest.mark.gpu
def test_autodiff_kernel_on_the_gpu():
    cp = pytest.importorskip("cupy")
    x, w = inputs()
    d_x, d_dx, d_w, d_dw = cp.asarray(x), cp.zeros(N), cp.asarray(w), cp.zeros(2)
    kernel(F.grad_energy_kernel, plugins=P)[N // 64, 64](d_x, d_dx, d_w, d_dw)
    edx, edw = expected_energy_grads(x, w)
    np.testing.assert_allclose(cp.asnumpy(d_dx), edx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(cp.asnumpy(d_dw), edw, rtol=1e-11)
    out = cp.zeros(N)
    kernel(F.derivative_kernel, plugins=P)[N // 128, 128](d_x, out, 0.3)
    np.testing.assert_allclose(cp.asnumpy(out), 0.3 * np.exp(0.3 * x) + 2 * x / (1 + x * x), rtol=1e-12)


def test_loop_tape_in_a_gpu_kernel_is_sized_before_the_loop():
    """A loop inside the differentiated function: its trip count is known before it, so its tape is
    one device-side malloc marked as the AD tape (test_loop_tape_kernels.py checks more)."""
    text = kernel(F.loop_in_kernel, plugins=P).inspect_llvm(A, A)
    assert "!gpuc.ad.tape" in text and "@realloc" not in text
