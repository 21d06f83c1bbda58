"""The device heap limit raised before launching a kernel whose PTX calls malloc (the AD tape
of a loop with a run-time trip count), against the fake driver of test_cuda_launch: once per
context, only when below the configured size, ``GPUC_DEVICE_HEAP`` read as the override."""

import ctypes
import os
import sys

import numpy as np
import pytest

from gpucompiler import kernel
from gpucompiler.errors import CudaError, DeviceHeapError, LaunchError
from gpucompiler.runtime import cuda
from kernel_corpus import saxpy
from test_cuda_launch import FakeDriver

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "enzyme_plugin"))
import ez_funcs as F

HEAP = "heap"


class HeapDriver(FakeDriver):
    class CUlimit:
        CU_LIMIT_MALLOC_HEAP_SIZE = HEAP

    def __init__(self, heap=8 << 20, refuse=False):
        super().__init__()
        self.heap, self.refuse, self.set_calls = heap, refuse, []
        #: the module's heap-exhaustion flag (gpucompiler.runtime.device_heap), in host memory here
        self.flag = ctypes.c_int32(0)

    def cuModuleGetGlobal(self, module, name):
        assert f".global .align 4 .u32 {name.decode()};" in self.modules[module - 1]
        return (0, ctypes.addressof(self.flag), 4)

    def cuMemcpyDtoH(self, dst, src, nbytes):
        ctypes.memmove(dst, src, nbytes)
        return (0,)

    def cuMemsetD32(self, dst, value, count):
        for k in range(count):
            ctypes.c_int32.from_address(int(dst) + 4 * k).value = value
        return (0,)

    def cuCtxGetLimit(self, limit):
        assert limit == HEAP
        return (0, self.heap)

    def cuCtxSetLimit(self, limit, value):
        assert limit == HEAP
        self.set_calls.append(value)
        if self.refuse:
            return (1,)
        self.heap = value
        return (0,)


@pytest.fixture
def heap_fake(monkeypatch, request):
    driver = HeapDriver(**getattr(request, "param", {}))
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    for name, value in (("_functions", {}), ("_launchers", {}), ("_capability", {}),
                        ("_state", {"init": False}), ("_heap_checked", set())):
        monkeypatch.setattr(cuda, name, value)
    monkeypatch.delenv("GPUC_DEVICE_HEAP", raising=False)
    return driver


def _launch_tape_kernel(n=12):
    x = np.linspace(-0.4, 0.6, n)
    dx = np.zeros_like(x)
    kernel(F.loop_in_kernel, plugins=("enzyme",))[1, 16](x, dx)
    return x, dx


def test_kernel_calling_malloc_raises_the_heap_once_per_context(heap_fake):
    x, dx = _launch_tape_kernel()
    assert heap_fake.set_calls == [cuda.DEFAULT_DEVICE_HEAP]
    h, fd = 1e-6, np.zeros_like(x)
    for k in range(len(x)):
        e = np.zeros_like(x)
        e[k] = h
        fd[k] = sum(F.cumulative(x + e, i) - F.cumulative(x - e, i) for i in range(len(x))) / (2 * h)
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-8)
    _launch_tape_kernel()
    assert heap_fake.set_calls == [cuda.DEFAULT_DEVICE_HEAP]  # the context was checked already


def test_kernel_without_malloc_leaves_the_heap_alone(heap_fake):
    n = 64
    x, y = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
    out = np.zeros_like(x)
    saxpy[1, 64](np.float32(2.0), x, y, out)
    np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-6)
    assert heap_fake.set_calls == [] and cuda._heap_checked == set()


@pytest.mark.parametrize("heap_fake", [{"heap": 1 << 30}], indirect=True)
def test_a_larger_heap_is_kept(heap_fake):
    _launch_tape_kernel()
    assert heap_fake.set_calls == [] and heap_fake.heap == 1 << 30


def test_environment_override(heap_fake, monkeypatch):
    monkeypatch.setenv("GPUC_DEVICE_HEAP", "512M")
    _launch_tape_kernel()
    assert heap_fake.set_calls == [512 << 20]


@pytest.mark.parametrize("raw, size", [("1048576", 1 << 20), ("64K", 64 << 10), ("2g", 2 << 30),
                                       ("300 MiB", 300 << 20)])
def test_settings_parse_sizes(raw, size):
    assert cuda.RuntimeSettings.from_env({"GPUC_DEVICE_HEAP": raw}).device_heap == size
    assert cuda.RuntimeSettings.from_env({}).device_heap == cuda.DEFAULT_DEVICE_HEAP


def test_settings_reject_a_bad_size():
    with pytest.raises(LaunchError, match="GPUC_DEVICE_HEAP"):
        cuda.RuntimeSettings.from_env({"GPUC_DEVICE_HEAP": "lots"})


@pytest.mark.parametrize("heap_fake", [{"refuse": True}], indirect=True)
def test_refused_change_warns_and_launches(heap_fake):
    with pytest.warns(RuntimeWarning, match="device heap"):
        _, dx = _launch_tape_kernel()
    assert heap_fake.set_calls == [cuda.DEFAULT_DEVICE_HEAP] and np.any(dx != 0)


class TrappingDriver(HeapDriver):
    """Every launch stops with a trap (CUDA_ERROR_LAUNCH_FAILED), as a tape whose malloc failed does."""

    def cuLaunchKernel(self, *args):
        return (719,)

    def cuGetErrorName(self, err):
        return (0, b"CUDA_ERROR_LAUNCH_FAILED" if int(err) == 719 else b"CUDA_ERROR_UNKNOWN")


@pytest.fixture
def trapping(monkeypatch, heap_fake):
    driver = TrappingDriver()
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    return driver


def test_trap_of_a_kernel_with_a_growing_tape_is_a_heap_error_saying_how_to_raise_it(trapping, monkeypatch):
    """A data-dependent while of about 200 steps grows its tape with device malloc; a trap is reported
    as DeviceHeapError naming the heap's size and GPUC_DEVICE_HEAP, not as a bare launch failure. (A while
    capped by a constant, as the corpus's Newton solve, takes its tape in one piece and never reaches the heap.)"""
    import kernel_gradient_corpus as C

    monkeypatch.setenv("GPUC_DEVICE_HEAP", "64M")
    x = np.linspace(-1.0, 1.0, 8)
    with pytest.raises(DeviceHeapError, match=r"heap of 67108864 bytes.*GPUC_DEVICE_HEAP=1024M") as info:
        kernel(C.k_long_while, plugins=("enzyme",))[1, 8](x, np.zeros_like(x))
    assert info.value.name == "CUDA_ERROR_LAUNCH_FAILED"


def test_trap_of_a_kernel_without_malloc_stays_a_cuda_error(trapping):
    x = np.ones(8, np.float32)
    with pytest.raises(CudaError) as info:
        saxpy[1, 8](np.float32(2.0), x, x, np.zeros_like(x))
    assert type(info.value) is CudaError and info.value.name == "CUDA_ERROR_LAUNCH_FAILED"


class ExhaustingDriver(HeapDriver):
    """The kernel runs, and a thread whose tape found the heap full set the flag (as the tape's
    out-of-heap path does on a device before the thread exits)."""

    exhaust = True

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        out = super().cuLaunchKernel(fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
        self.flag.value = int(self.exhaust)
        return out


def test_a_thread_that_ran_out_of_heap_is_a_heap_error_and_the_context_goes_on(monkeypatch, heap_fake):
    """After the launch the runtime reads the module's flag: set, it is cleared and DeviceHeapError says
    the context is still usable; the next launch (flag clear) runs and reports nothing."""
    driver = ExhaustingDriver()
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    with pytest.raises(DeviceHeapError, match=r"the 268435456 bytes it has.*still usable") as info:
        _launch_tape_kernel()
    assert info.value.name == "GPUC_DEVICE_HEAP_EXHAUSTED" and driver.flag.value == 0
    assert ("sync", 0) in driver.calls
    driver.exhaust = False  # the heap has room again
    _, dx = _launch_tape_kernel()
    assert driver.flag.value == 0 and np.any(dx != 0)


def test_a_launch_without_a_tape_never_reads_the_flag(heap_fake):
    x = np.ones(8, np.float32)
    heap_fake.flag.value = 1  # would raise if it were read
    saxpy[1, 8](np.float32(2.0), x, x, np.zeros_like(x))
    assert heap_fake.flag.value == 1


def test_deferred_checks_wait_for_each_stream_in_the_context_it_was_launched_in():
    """Launches deferred in two contexts (a device chosen for them: its context pushed during the launch)
    and on two streams: check_pending waits once per (context, stream), with that context current, then
    reads each flag once; a set one is a DeviceHeapError naming the launches, and it is cleared."""
    from gpucompiler.runtime import device_heap

    class Driver(HeapDriver):
        def __init__(self):
            super().__init__()
            self.ctx, self.stack = 3, []

        def cuCtxPushCurrent(self, ctx):
            self.calls.append(("push", ctx))
            self.stack.append(self.ctx)
            self.ctx = ctx
            return (0,)

        def cuCtxPopCurrent(self):
            self.calls.append(("pop",))
            self.ctx = self.stack.pop()
            return (0, self.ctx)

        def cuStreamSynchronize(self, stream):
            self.calls.append(("sync", self.ctx, stream))
            return (0,)

    d, other = Driver(), ctypes.c_int32(0)
    flag, other_flag = ctypes.addressof(d.flag), ctypes.addressof(other)
    with device_heap.deferring():
        for ctx, stream, where in ((3, 0, flag), (5, 0, flag), (5, 0, other_flag), (3, 9, flag), (3, 0, flag)):
            device_heap.after_launch(d, ctx, stream, where, "k", cuda.check)
    assert d.calls == []
    d.flag.value = 1
    with pytest.raises(DeviceHeapError, match=r"launches k, k, k, k \(launched without waiting"):
        device_heap.check_pending(cuda.check)
    assert d.calls == [("sync", 3, 0), ("push", 5), ("sync", 5, 0), ("pop",), ("sync", 3, 9)]
    assert d.flag.value == 0 and device_heap.PENDING.checks == {}
    device_heap.check_pending(cuda.check)                      # nothing pending: no driver call
    assert len(d.calls) == 5
