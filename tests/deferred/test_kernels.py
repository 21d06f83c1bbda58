"""mock_autodiff inside @kernel: CPU grid emulation, PTX IR, and a real GPU (``gpu`` marker)."""

from __future__ import annotations

import numpy as np
import pytest

import deferred_funcs as F
from deferred_helpers import callees, defined_and_declared
from gpucompiler import kernel
from gpucompiler import types as T

PLUGINS = ("mock_enzyme",)
N = 1000
ARR = T.ArrayType(T.float64, 1, "C")


def expected(xs):
    return np.array([F.sin_plus_direct(x) + F.square(x) for x in xs])


@pytest.fixture
def k():
    return kernel(F.autodiff_kernel, plugins=PLUGINS)


def inputs():
    return np.linspace(-4.0, 4.0, N), np.zeros(N)


def test_kernel_in_cpu_grid_emulation(k):
    xs, out = inputs()
    k[(N + 127) // 128, 128, "cpu"](xs, out)
    np.testing.assert_allclose(out, expected(xs), rtol=1e-15, atol=0)


def test_kernel_ptx_ir_resolves_lookups_and_markers(k, libdevice_path):
    ir = k.inspect_llvm(ARR, ARR)
    defined, declared = defined_and_declared(ir)
    assert not {"gpuc.lookup", "__autodiff"} & (defined | declared)
    assert not any(n.startswith("__nv_") for n in declared)  # libdevice linked in
    assert "autodiff_kernel" in defined


def test_kernel_nested_job_uses_ptx_overlay(k):
    from deferred_helpers import linked_ir

    ir = linked_ir(k.job((ARR, ARR)))
    nested = [n for n in defined_and_declared(ir)[0] if n.startswith(F.__name__ + ".sin_plus.deferred.")]
    assert len(nested) == 1 and callees(ir, nested[0]) == ["__nv_sin"]


@pytest.mark.gpu
def test_kernel_on_the_gpu(k):
    cp = pytest.importorskip("cupy")
    xs, _ = inputs()
    d_xs, d_out = cp.asarray(xs), cp.zeros(N)
    k[(N + 127) // 128, 128](d_xs, d_out)
    np.testing.assert_allclose(cp.asnumpy(d_out), expected(xs), rtol=1e-13, atol=1e-13)
