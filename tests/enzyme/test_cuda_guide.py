"""Enzyme's CUDA guide end to end: cuda/guide.cu (our device code) compiled by
clang --cuda-device-only -> ``gpuc enzyme --target ptx:sm_90`` -> PTX,
assembled by ptxas; the same per-thread body compiled for the host and
differentiated checks the numbers on the CPU; the ``gpu`` test launches the
kernel and checks the gradient on the device."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import enzyme_plugin
from gpucompiler.runtime import CPULibrary

HERE = Path(__file__).resolve().parent
CUDA = HERE / "cuda"
ROOT = HERE.parents[1]


def gpuc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpucompiler", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'plugins'}"})


def expected(x: np.ndarray, seed: np.ndarray) -> np.ndarray:
    return seed * (3 * x * x + 2)


@pytest.fixture(scope="module")
def guide_ptx(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("guide")
    proc = gpuc("enzyme", str(CUDA / "guide.ptx.ll"), "--target", "ptx:sm_90", "-o", "guide.ptx", cwd=out)
    assert proc.returncode == 0, proc.stderr
    return (out / "guide.ptx").read_text()


def test_device_code_reads_markers_in_address_space_1():
    text = (CUDA / "guide.ptx.ll").read_text()
    assert "addrspace(1) externally_initialized global i32 0" in text
    assert "load i32, ptr addrspacecast (ptr addrspace(1) @enzyme_dup to ptr)" in text


def test_gpuc_enzyme_target_ptx_writes_the_kernel(guide_ptx):
    assert ".target sm_90" in guide_ptx
    assert ".visible .entry dcube(" in guide_ptx
    assert "__enzyme_autodiff" not in guide_ptx  # differentiated: no marker call is left


def test_ptx_assembles(guide_ptx, ptxas_path, tmp_path):
    (tmp_path / "guide.ptx").write_text(guide_ptx)
    proc = subprocess.run([ptxas_path, "-arch=sm_90", "guide.ptx", "-o", "guide.cubin"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_compile_ir_with_the_enzyme_plugin_is_the_same_path(guide_ptx, tmp_path):
    proc = gpuc("compile-ir", str(CUDA / "guide.ptx.ll"), "--plugin", "enzyme", "--target", "ptx:sm_90",
                "--emit", "asm", "--entry", "dcube", "-o", "same.ptx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "same.ptx").read_text() == guide_ptx


def test_same_body_on_the_host_gives_the_gradient():
    lib = CPULibrary.from_ir(enzyme_plugin.differentiate((CUDA / "guide.host.ll").read_text()))
    p = ctypes.POINTER(ctypes.c_double)
    run = lib.function("dcube_host", None, p, p, p, p, ctypes.c_int)
    n = 300
    x = np.linspace(-2.0, 2.0, n)
    dx, y, dy = np.zeros(n), np.zeros(n), np.linspace(0.5, 1.5, n)
    seed = dy.copy()
    run(*(a.ctypes.data_as(p) for a in (x, dx, y, dy)), n)
    np.testing.assert_allclose(dx, expected(x, seed), rtol=1e-14)
    np.testing.assert_allclose(y, x ** 3 + 2 * x, rtol=1e-14)
    assert not dy.any(), "the seed is consumed"


@pytest.mark.gpu
def test_kernel_on_the_gpu(tmp_path):
    cp = pytest.importorskip("cupy")
    from gpucompiler.runtime import cuda

    major, minor = cuda.capability()
    proc = gpuc("enzyme", str(CUDA / "guide.ptx.ll"), "--target", f"ptx:sm_{major}{minor}", "-o", "g.ptx",
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    kernel = cp.RawModule(path=str(tmp_path / "g.ptx")).get_function("dcube")
    n = 1000
    x = np.linspace(-2.0, 2.0, n)
    seed = np.linspace(0.5, 1.5, n)
    d_x, d_dx, d_y, d_dy = cp.asarray(x), cp.zeros(n), cp.zeros(n), cp.asarray(seed)
    kernel(((n + 127) // 128,), (128,), (d_x, d_dx, d_y, d_dy, np.int32(n)))
    cp.cuda.runtime.deviceSynchronize()
    np.testing.assert_allclose(cp.asnumpy(d_dx), expected(x, seed), rtol=1e-13)
    np.testing.assert_allclose(cp.asnumpy(d_y), x ** 3 + 2 * x, rtol=1e-13)
