"""Choosing the GPU of a launch, against a fake driver with two devices (tests/kernels/test_cuda_launch.py's,
extended): each device's primary context, a module loaded once per device, arrays on another device refused."""

from __future__ import annotations

import os
import sys
import threading
import types

import numpy as np
import pytest

from gpucompiler import device as gd
from gpucompiler.kernel import Kernel
from gpucompiler.errors import DeviceMismatchError, LaunchError
from gpucompiler.runtime import cuda
from gpucompiler.runtime.devices import Device, current_device, select_device
from gpucompiler.targets import parse_target

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
from test_cuda_launch import FakeDriver  # pyright: ignore[reportMissingImports]

BASE = 0xC0  # device n's primary context is BASE + n


class TwoGPUs(FakeDriver):
    CUpointer_attribute = types.SimpleNamespace(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL="ordinal")

    def __init__(self, count=2):
        super().__init__()
        self.count, self.owner, self.loads, self.launched, self.stack = count, {}, [], [], []

    def cuDeviceGetCount(self):
        return (0, self.count)

    def cuDevicePrimaryCtxRetain(self, dev):
        return (0, BASE + dev)

    def cuCtxGetDevice(self):
        return (0, self.ctx - BASE)

    def cuCtxPushCurrent(self, ctx):
        self.stack.append(self.ctx)
        self.ctx = ctx
        return (0,)

    def cuCtxPopCurrent(self):
        self.ctx = self.stack.pop()
        return (0, self.ctx)

    def cuPointerGetAttribute(self, attr, ptr):
        assert attr == "ordinal"
        for (start, end), dev in self.owner.items():
            if start <= ptr < end:
                return (0, dev)
        return (1, 0)  # CUDA_ERROR_INVALID_VALUE: not device memory

    def cuModuleLoadData(self, image):
        self.loads.append(self.ctx)
        return super().cuModuleLoadData(image)

    def cuLaunchKernel(self, fn, *rest):
        self.launched.append(self.ctx)
        return super().cuLaunchKernel(fn, *rest)


class OnDevice:
    """A host array standing for device memory of GPU ``dev`` (``__cuda_array_interface__``)."""

    def __init__(self, driver: TwoGPUs, array: np.ndarray, dev: int):
        self.array = array
        address = array.ctypes.data
        driver.owner[(address, address + array.nbytes)] = dev
        self.__cuda_array_interface__ = {"shape": array.shape, "typestr": array.dtype.str, "strides": None,
                                         "data": (address, False), "version": 3}


@pytest.fixture
def gpus(monkeypatch):
    driver = TwoGPUs()
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    for name, value in (("_functions", {}), ("_launchers", {}), ("_capability", {}), ("_contexts", {}),
                        ("_state", {"init": False}), ("_heap_checked", set())):
        monkeypatch.setattr(cuda, name, value)
    driver.ctx = BASE  # device 0's context is current, as after CuPy or PyTorch used it
    return driver


def _axpy(a, x, y):
    i = gd.grid(1)
    if i < y.shape[0]:
        y[i] = a * x[i] + y[i]


axpy = Kernel(_axpy)


def _arrays(driver, dev, n=40):
    x, y = np.arange(n, dtype=np.float64), np.ones(n)
    return x, y, OnDevice(driver, x, dev), OnDevice(driver, y, dev)


def test_launch_on_device_one_runs_in_its_context_and_restores_the_current_one(gpus):
    x, y, dx, dy = _arrays(gpus, 1)
    axpy[2, 32, Device(1)](2.0, dx, dy)
    np.testing.assert_array_equal(y, 2.0 * x + 1.0)
    assert gpus.launched == [BASE + 1] and gpus.loads == [BASE + 1]
    assert gpus.ctx == BASE  # the thread's current context is as it was


def test_module_loaded_once_per_device(gpus):
    a0, a1 = _arrays(gpus, 0), _arrays(gpus, 1)
    for _ in range(3):
        axpy[2, 32, Device(0)](1.0, a0[2], a0[3])
        axpy[2, 32, Device(1)](1.0, a1[2], a1[3])
    assert sorted(gpus.loads) == [BASE, BASE + 1]
    assert gpus.launched == [BASE, BASE + 1] * 3
    np.testing.assert_array_equal(a1[1], 3.0 * a1[0] + 1.0)


def test_with_device_chooses_it_for_the_launches_inside(gpus):
    _x, _y, dx, dy = _arrays(gpus, 1)
    assert current_device() is None
    with Device(1) as dev:
        assert current_device() == dev
        axpy[2, 32](1.0, dx, dy)
        with Device(0):
            assert current_device() == Device(0)
        assert current_device() == Device(1)
    assert current_device() is None
    assert gpus.launched == [BASE + 1]


def test_wrong_device_array_is_a_typed_error_naming_both(gpus):
    _x, y, dx, dy = _arrays(gpus, 1)
    with pytest.raises(DeviceMismatchError, match=r"argument 'x' is an array on device 1 but the launch runs on "
                                                  r"device 0"):
        axpy[2, 32](1.0, dx, dy)  # the current context: device 0's
    with pytest.raises(DeviceMismatchError, match="device 1 but the launch runs on device 0"):
        axpy[2, 32, Device(0)](1.0, dx, dy)
    np.testing.assert_array_equal(y, 1.0)  # nothing ran
    assert gpus.launched == []


def test_mixed_devices_name_the_array_on_the_other_one(gpus):
    _x0, _y0, _dx0, dy0 = _arrays(gpus, 0)
    _x1, _y1, dx1, _dy1 = _arrays(gpus, 1)
    with pytest.raises(DeviceMismatchError, match="argument 'y' is an array on device 0 but the launch runs on "
                                                  "device 1"):
        axpy[2, 32, Device(1)](1.0, dx1, dy0)


def test_numpy_arrays_are_staged_on_the_chosen_device(gpus):
    x, y = np.arange(8.0), np.zeros(8)
    axpy[1, 32, Device(1)](3.0, x, y)
    np.testing.assert_array_equal(y, 3.0 * x)
    assert gpus.launched == [BASE + 1]


def test_device_that_does_not_exist(gpus):
    with pytest.raises(LaunchError, match="there is no device 2: this process sees 2 CUDA device"):
        axpy[1, 32, Device(2)](1.0, np.zeros(2), np.zeros(2))


@pytest.mark.parametrize("bad", [-1, 1.0, True, "1"])
def test_a_device_is_an_ordinal(bad):
    with pytest.raises(LaunchError, match="a device is a CUDA device ordinal"):
        Device(bad)


def test_select_device_is_per_thread(gpus):
    seen = {}

    def worker():
        select_device(1)
        seen["worker"] = current_device()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen["worker"] == Device(1) and current_device() is None


def test_one_device_object_entered_by_two_threads_at_once():
    """The first thread to enter leaves first: blocks are per thread, not a stack on the shared object."""
    shared, errors = Device(1), []
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def worker(first: bool):
        try:
            if not first:
                first_in.wait(5)
            with shared:
                (first_in if first else second_in).set()
                if first:
                    second_in.wait(5)
                else:
                    first_out.wait(5)
                assert current_device() == shared
            assert current_device() is None
        except Exception as exc:
            errors.append(exc)
        finally:
            if first:
                first_out.set()

    threads = [threading.Thread(target=worker, args=(k == 0,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_one_device_asks_no_pointer_attribute(gpus, monkeypatch):
    gpus.count = 1
    x, y, dx, dy = _arrays(gpus, 0)
    monkeypatch.setattr(TwoGPUs, "cuPointerGetAttribute", None)  # a call would fail
    axpy[2, 32](1.0, dx, dy)
    np.testing.assert_array_equal(y, x + 1.0)


def test_the_emulation_ignores_the_chosen_device():
    x, y = np.arange(8.0), np.ones(8)
    with Device(3):
        axpy[1, 32, "cpu"](2.0, x, y)
    np.testing.assert_array_equal(y, 2.0 * x + 1.0)


def test_device_on_a_runtime_without_devices_is_a_typed_error():
    k = Kernel(_axpy, target=parse_target("spirv"))
    with pytest.raises(LaunchError, match="does not choose GPUs by number"):
        k[1, 32, Device(0)](1.0, np.zeros(2), np.zeros(2))
