"""Several GPUs of one host: a launch on device 1, arrays on the wrong device, one process per GPU,
and PyTorch DDP over NCCL with our kernel as a layer. Skipped (with the reason) below two GPUs;
``scripts/multi_gpu_check.sh`` runs them on a two-GPU machine. The DDP check also runs on the CPU
(gloo, our layer on the grid emulation) where PyTorch is installed."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpucompiler import Device, device as gd, kernel, select_device
from gpucompiler.errors import DeviceMismatchError
from gpucompiler.runtime.pointers import pointer_ordinal

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _gpu_count() -> int:
    try:
        from cuda.bindings import driver
        driver.cuInit(0)
        err, n = driver.cuDeviceGetCount()
        return int(n) if int(err) == 0 else 0
    except Exception:
        return 0


def two_gpus(test):
    skip = pytest.mark.skipif(_gpu_count() < 2, reason="needs two CUDA devices (scripts/multi_gpu_check.sh)")
    return pytest.mark.gpu(pytest.mark.multi_gpu(skip(test)))


@kernel
def scaled(x, y, s):
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = s * x[i] + 1.0


def _ordinal_of(ptr: int) -> int | None:
    from cuda.bindings import driver
    return pointer_ordinal(driver, ptr)  # not cuda-bindings' cuPointerGetAttribute: it answers 0 there


def _current_device() -> int:
    from cuda.bindings import driver
    err, dev = driver.cuCtxGetDevice()
    assert int(err) == 0
    return int(dev)


@two_gpus
def test_a_launch_on_device_1_runs_there_and_leaves_the_current_device():
    cp = pytest.importorskip("cupy")
    with cp.cuda.Device(1):
        x = cp.arange(1000, dtype=cp.float64)
        y = cp.zeros_like(x)
    with cp.cuda.Device(0):
        scaled[4, 256, Device(1)](x, y, 3.0)  # device 0 current: the launch goes to device 1 and back
        assert _current_device() == 0
    with cp.cuda.Device(1):
        cp.cuda.Device(1).synchronize()
        got = cp.asnumpy(y)
    assert _ordinal_of(y.data.ptr) == 1
    np.testing.assert_array_equal(got, 3.0 * np.arange(1000.0) + 1.0)


@two_gpus
def test_arrays_on_another_device_than_the_launch_name_both():
    cp = pytest.importorskip("cupy")
    with cp.cuda.Device(0):
        x = cp.ones(64)
        y = cp.zeros(64)
    with pytest.raises(DeviceMismatchError) as info:
        scaled[1, 64, Device(1)](x, y, 2.0)
    assert "0" in str(info.value) and "1" in str(info.value)


def _one_gpu_worker(rank: int) -> tuple[int, float]:
    import cupy as cp
    select_device(rank)
    with cp.cuda.Device(rank):
        x = cp.linspace(0.0, 1.0, 4096)
        y = cp.zeros_like(x)
        scaled[16, 256](x, y, float(rank + 2))
        cp.cuda.Device(rank).synchronize()
        return _ordinal_of(y.data.ptr), float(cp.asnumpy(y).sum())


@two_gpus
def test_two_processes_each_drive_one_gpu():
    pytest.importorskip("cupy")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        got = pool.map(_one_gpu_worker, [0, 1])
    x = np.linspace(0.0, 1.0, 4096)
    for rank, (ordinal, total) in enumerate(got):
        assert ordinal == rank
        assert total == pytest.approx(float(((rank + 2) * x + 1.0).sum()), rel=1e-12)


def _train(nproc: int, out: Path, *extra: str) -> dict:
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONPATH=f"{ROOT}:{ROOT / 'plugins'}")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           str(HERE / "ddp_train.py"), "--out", str(out), *extra]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(out.read_text())


def _same_training_on_one_and_two(tmp_path, *extra: str) -> None:
    one = _train(1, tmp_path / "one.json", *extra)
    two = _train(2, tmp_path / "two.json", *extra)
    assert (one["world"], two["world"]) == (1, 2)
    for name, want in one["params"].items():
        np.testing.assert_allclose(two["params"][name], want, rtol=1e-10, atol=1e-13, err_msg=name)
    assert not np.allclose(one["params"]["w"], np.linspace(0.5, 1.5, len(one["params"]["w"])), rtol=0, atol=1e-6)  # it trained


@two_gpus
def test_ddp_on_two_gpus_trains_the_same_parameters_as_one(tmp_path):
    pytest.importorskip("torch")
    _same_training_on_one_and_two(tmp_path)


def test_ddp_on_two_cpu_processes_trains_the_same_parameters_as_one(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed (CI: its Linux wheel is the CUDA build)")
    _same_training_on_one_and_two(tmp_path, "--device", "cpu", "--rows", "512", "--features", "16")
