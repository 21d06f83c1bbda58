"""Kernels through the compile cache: a fresh process launches a cached kernel (``autodiff`` inside)
on the CPU grid emulation and gets its PTX with no frontend or interpreter work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, sys
sys.path[:0] = [{ez!r}]
if sys.argv[1] == "hit":  # any frontend or interpreter work is an error
    import gpucompiler.interpreter.infer as infer

    def refuse(*args, **kwargs):
        raise AssertionError("the frontend or the interpreter ran on a cache hit")

    infer.Interpreter.infer = refuse
    infer.lower_function = refuse
import numpy as np
import ez_funcs as F
from gpucompiler import kernel, parse_target, types as T
from gpucompiler.cache.default import default_cache

k = kernel(F.grad_energy_kernel, plugins=("enzyme",))
x, w = np.linspace(-2.0, 2.0, 256), np.array([1.5, -0.25])
dx, dw = np.zeros(256), np.zeros(2)
A = T.ArrayType(T.float64, 1, "C")
if sys.argv[2] == "cpu":
    k[4, 64, "cpu"](x, dx, w, dw)
    emulation = k.emulated((A, A, A, A)).origin
else:  # the CUDA launch compiles (or finds) the PTX for the device's capability
    k[4, 64](x, dx, w, dw)
    emulation = None
ptx, job = k.compile((A, A, A, A), parse_target("ptx:sm_80"))
stats = dict(default_cache().stats)
print(json.dumps({{"dx": dx.tolist(), "dw": dw.tolist(), "ptx": ptx, "stats": stats, "emulation": emulation}}))
"""


def run(mode: str, cache_dir: Path, device: str = "cpu") -> dict:
    env = {**os.environ, "GPUC_CACHE_DIR": str(cache_dir)}
    for name in ("GPUC_CACHE_URL", "GPUC_SERVICE_URL", "GPUC_CACHE_SHARED_DIR"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT.format(ez=str(TESTS / "enzyme_plugin")), mode, device],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def expected(x, w):
    dx = w[0] * (np.cos(x) * x + np.sin(x)) + 2 * w[1] * x
    dw = np.array([np.sum(np.sin(x) * x), np.sum(x * x)])
    return dx, dw


def test_fresh_process_launches_a_cached_autodiff_kernel_without_frontend_or_interpreter(tmp_path, check_ptx):
    cold = run("cold", tmp_path / "cache")
    hit = run("hit", tmp_path / "cache")
    x, w = np.linspace(-2.0, 2.0, 256), np.array([1.5, -0.25])
    edx, edw = expected(x, w)
    for answer in (cold, hit):
        np.testing.assert_allclose(answer["dx"], edx, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(answer["dw"], edw, rtol=1e-12)
    assert cold["stats"]["compile"] == 2 and cold["emulation"] == "compiled"
    assert "compile" not in hit["stats"] and hit["emulation"] == "disk"
    assert hit["stats"]["index.hit.disk"] == 2 and hit["stats"]["hit.disk"] == 2
    assert hit["ptx"] == cold["ptx"] and ".entry grad_energy_kernel" in hit["ptx"]
    check_ptx(hit["ptx"], arch="sm_80")


def test_the_kernel_rules_still_run_before_a_compile(tmp_path, monkeypatch):
    from gpucompiler import kernel
    from gpucompiler.errors import KernelError

    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))

    def returns(x):
        return x[0]

    k = kernel(returns)
    with pytest.raises(KernelError, match="RETURN_VALUE"):
        k[1, 1, "cpu"](np.zeros(2))
    with pytest.raises(KernelError, match="RETURN_VALUE"):
        k.inspect_asm(np.zeros(2))


def test_a_rebound_global_misses_the_cached_kernel_in_a_fresh_process(tmp_path):
    """The index key's dependency record is checked: another value of a global the kernel reads
    compiles again (and gives the new result)."""
    source = tmp_path / "kmod.py"
    script = ("import sys, json; sys.path.insert(0, {d!r}); import numpy as np, kmod\n"
              "from gpucompiler import kernel\nfrom gpucompiler.cache.default import default_cache\n"
              "out = np.zeros(4); kernel(kmod.fill)[1, 4, 'cpu'](out)\n"
              "print(json.dumps({{'out': out.tolist(), 'compiles': default_cache().stats['compile']}}))")
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    answers = []
    for scale in (2.0, 2.0, 3.0):
        source.write_text(f"from gpucompiler import device as gd\nSCALE = {scale!r}\n\n"
                          "def fill(out):\n    i = gd.grid(1)\n    out[i] = SCALE * i\n")
        proc = subprocess.run([sys.executable, "-c", script.format(d=str(tmp_path))], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        answers.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert [a["compiles"] for a in answers] == [1, 0, 1]
    assert [a["out"] for a in answers] == [[0.0, 2.0, 4.0, 6.0]] * 2 + [[0.0, 3.0, 6.0, 9.0]]


@pytest.mark.gpu
def test_fresh_process_launches_a_cached_autodiff_kernel_on_the_gpu_without_frontend_or_interpreter(tmp_path):
    cold = run("cold", tmp_path / "cache", "gpu")
    hit = run("hit", tmp_path / "cache", "gpu")
    x, w = np.linspace(-2.0, 2.0, 256), np.array([1.5, -0.25])
    edx, edw = expected(x, w)
    for answer in (cold, hit):
        np.testing.assert_allclose(answer["dx"], edx, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(answer["dw"], edw, rtol=1e-10)
    assert cold["stats"]["compile"] >= 1 and "compile" not in hit["stats"]
