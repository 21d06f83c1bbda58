"""What a CUDA launch keeps between launches (the launcher of the last signature, the thread's context),
against the fake driver of tests/kernels/test_cuda_launch.py, which runs each launch through the CPU grid
emulation: whatever changes the argument types, the context or a global the kernel reads makes the next
launch use the right code and layout; a wrong argument after cached launches is still a typed error."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

import numpy as np
import pytest

from gpucompiler import device as gd
from gpucompiler.kernel import Kernel
from gpucompiler.errors import ArgumentBindingError, ArgumentTypeError, CudaError, DeviceMismatchError
from gpucompiler.runtime import cuda

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scaling"))
from test_cuda_launch import DeviceArray, FakeDriver  # pyright: ignore[reportMissingImports]
from test_devices import OnDevice, TwoGPUs  # pyright: ignore[reportMissingImports]

PRIMARY, OTHER = 0xC7, 0xD0


class ThreadedDriver(FakeDriver):
    """The fake driver with a current context per thread, refusing a function of another context as
    CUDA does (CUDA_ERROR_INVALID_CONTEXT with none current, else CUDA_ERROR_INVALID_HANDLE)."""

    def __init__(self):
        self.local = threading.local()
        super().__init__()
        self.module_ctx: dict = {}  # module -> the context it was loaded in
        self.launched: list = []   # the context of each launch that ran
        self.queries = 0           # cuCtxGetCurrent calls
        self.refused = 0           # launches refused: their function is another context's

    @property
    def ctx(self):
        return getattr(self.local, "ctx", 0)

    @ctx.setter
    def ctx(self, value):
        self.local.ctx = value

    def cuCtxGetCurrent(self):
        self.queries += 1
        return super().cuCtxGetCurrent()

    def cuModuleLoadData(self, image):
        err, module = super().cuModuleLoadData(image)
        self.module_ctx[module] = self.ctx
        return (err, module)

    def cuLaunchKernel(self, fn, *rest):
        owner = self.module_ctx[fn[0]]
        if self.ctx != owner:
            self.refused += 1
            return (201 if self.ctx == 0 else 400,)
        self.launched.append(self.ctx)
        return super().cuLaunchKernel(fn, *rest)


def _reset(monkeypatch, driver):
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    for name, value in (("_functions", {}), ("_launchers", {}), ("_capability", {}), ("_contexts", {}),
                        ("_state", {"init": False}), ("_heap_checked", set())):
        monkeypatch.setattr(cuda, name, value)
    return driver


@pytest.fixture
def fake(monkeypatch):
    return _reset(monkeypatch, ThreadedDriver())


def _scale(x, factor):
    i = gd.grid(1)
    if i < x.shape[0]:
        x[i] = x[i] * factor


scale = Kernel(_scale)


def _describe(x, out):
    if gd.grid(1) == 0:
        out[0] = x.size * 10 + x.ndim


describe = Kernel(_describe)


def test_repeated_launches_ask_the_context_once_and_reuse_one_launcher(fake):
    x = np.arange(64.0)
    launch = scale[2, 32]
    launch(DeviceArray(x), 2.0)  # no context current: the primary one made current
    launch(DeviceArray(x), 2.0)
    asked = fake.queries
    for _ in range(5):
        launch(DeviceArray(x), 2.0)
    np.testing.assert_array_equal(x, 128.0 * np.arange(64.0))
    assert fake.launched == [PRIMARY] * 7 and len(fake.modules) == 1
    assert fake.queries == asked  # later launches reuse the context the driver said is current
    assert len(cuda._launchers) == 1


@pytest.mark.parametrize("first, then, expect", [
    # an int32 array after a float64 one: the int32 layout and code, the int32 result
    ((np.arange(8.0), 1.5), (np.arange(8, dtype=np.int32), 3), 3 * np.arange(8, dtype=np.int32)),
    # a Python int after a float, then the float again (int64 code: truncation is the kernel's own)
    ((np.arange(8.0), 0.5), (np.arange(8.0), 3), 3.0 * np.arange(8.0)),
    # a float32 array after a float64 one (4-byte elements: a float64 layout would read garbage)
    ((np.arange(8.0), 2.0), (np.arange(8, dtype=np.float32), 2.0), 2 * np.arange(8, dtype=np.float32)),
    # a strided array after a contiguous one (the strides are read from the array, not computed)
    ((np.arange(8.0), 2.0), (np.arange(16.0)[::2], 2.0), 2.0 * np.arange(16.0)[::2]),
])
def test_a_new_argument_type_after_cached_launches_gets_its_own_layout(fake, first, then, expect):
    launch = scale[1, 32]
    x0, f0 = first
    for _ in range(3):
        launch(DeviceArray(x0), f0)
    x, f = then
    launch(DeviceArray(x), f)
    np.testing.assert_array_equal(x, expect)
    assert x.dtype == expect.dtype
    np.testing.assert_array_equal(x0, first[0] * 0 + np.arange(8.0) * f0 ** 3)  # untouched by the new launch
    launch(DeviceArray(x0), f0)  # and back to the first signature
    np.testing.assert_array_equal(x0, np.arange(8.0) * f0 ** 4)
    assert len(fake.modules) == 2


def test_another_ndim_after_cached_launches(fake):
    out = np.zeros(1)
    launch = describe[1, 32]
    for _ in range(3):
        launch(DeviceArray(np.zeros(6)), DeviceArray(out))
    assert out[0] == 61
    launch(DeviceArray(np.zeros((3, 5))), DeviceArray(out))
    assert out[0] == 152
    launch(DeviceArray(np.zeros((2, 3, 4))), DeviceArray(out))
    assert out[0] == 243
    launch(DeviceArray(np.zeros(7)), DeviceArray(out))
    assert out[0] == 71
    assert len(fake.modules) == 3


def test_a_new_shape_of_the_same_signature_is_packed_afresh(fake):
    out = np.zeros(1)
    launch = describe[1, 32]
    for n in (4, 9, 4, 1000):
        launch(DeviceArray(np.zeros(n)), DeviceArray(out))
        assert out[0] == 10 * n + 1
    assert len(fake.modules) == 1


def test_wrong_arguments_after_cached_launches_are_typed_errors(fake):
    x = np.arange(8.0)
    launch = scale[1, 32]
    for _ in range(3):
        launch(DeviceArray(x), 2.0)
    before = len(fake.launched)
    with pytest.raises(ArgumentTypeError):
        launch(DeviceArray(np.zeros(8, np.float16)), 2.0)  # no float16 kernels
    with pytest.raises(ArgumentTypeError):
        launch(DeviceArray(x), "2.0")
    with pytest.raises(ArgumentTypeError):
        launch(DeviceArray(x), (2.0, 1.0))
    with pytest.raises(ArgumentBindingError):
        launch(DeviceArray(x))
    with pytest.raises(ArgumentBindingError):
        launch(DeviceArray(x), 2.0, 3.0)
    assert len(fake.launched) == before  # nothing ran
    np.testing.assert_array_equal(x, 8.0 * np.arange(8.0))
    launch(DeviceArray(x), 0.5)  # the cached signature still launches
    np.testing.assert_array_equal(x, 4.0 * np.arange(8.0))


def test_another_context_made_current_between_launches(fake):
    """Another library makes another context current: the launch with the cached function fails before
    running, the context is asked again and the kernel is loaded and launched in the new one."""
    x = np.arange(8.0)
    launch = scale[1, 32]
    launch(DeviceArray(x), 2.0)
    launch(DeviceArray(x), 2.0)
    fake.ctx = OTHER
    launch(DeviceArray(x), 2.0)
    np.testing.assert_array_equal(x, 8.0 * np.arange(8.0))
    assert fake.launched == [PRIMARY, PRIMARY, OTHER] and len(fake.modules) == 2
    assert fake.refused == 1
    fake.ctx = PRIMARY
    launch(DeviceArray(x), 0.5)
    assert fake.launched[-1] == PRIMARY and len(fake.modules) == 2


def test_a_launch_knowing_the_context_changed_does_not_try_the_old_one(fake):
    """Once a launch of this thread saw another context current, a launcher of the old one is not tried."""
    x = np.arange(8.0)
    launch, other = scale[1, 32], scale[2, 32]
    launch(DeviceArray(x), 2.0)
    launch(DeviceArray(x), 2.0)
    fake.ctx = OTHER
    other(DeviceArray(x), 2.0)  # asks the driver: OTHER is current
    launch(DeviceArray(x), 2.0)
    assert fake.refused == 0 and fake.launched == [PRIMARY, PRIMARY, OTHER, OTHER]
    np.testing.assert_array_equal(x, 16.0 * np.arange(8.0))


def test_a_real_launch_error_after_cached_launches_is_raised(fake):
    x = np.arange(8.0)
    launch = scale[1, 32]
    launch(DeviceArray(x), 2.0)
    fake.cuLaunchKernel = lambda *args: (1,)  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CudaError) as info:
        launch(DeviceArray(x), 2.0)
    assert info.value.name == "CUDA_ERROR_INVALID_VALUE" and info.value.call == "cuLaunchKernel"


def test_each_thread_asks_for_its_own_context(fake):
    """A thread with no current context gets the primary one made current, though another thread launched
    the same configuration before."""
    x, y = np.arange(8.0), np.arange(8.0)
    launch = scale[1, 32]
    fake.ctx = OTHER
    launch(DeviceArray(x), 2.0)
    launch(DeviceArray(x), 2.0)
    errors = []

    def worker():
        try:
            launch(DeviceArray(y), 3.0)
            launch(DeviceArray(y), 3.0)
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert errors == []
    np.testing.assert_array_equal(x, 4.0 * np.arange(8.0))
    np.testing.assert_array_equal(y, 9.0 * np.arange(8.0))
    assert fake.launched == [OTHER, OTHER, PRIMARY, PRIMARY]


FACTOR = 2.0


def _scale_by_global(x):
    i = gd.grid(1)
    if i < x.shape[0]:
        x[i] = x[i] * FACTOR


scale_by_global = Kernel(_scale_by_global)


def test_a_rebound_global_after_cached_launches(fake, monkeypatch):
    """World age: every launch object of the kernel, also one held from before, uses the new value."""
    x = np.ones(8)
    first, second = scale_by_global[1, 32], scale_by_global[2, 32]
    for _ in range(2):
        first(DeviceArray(x))
        second(DeviceArray(x))
    np.testing.assert_array_equal(x, 16.0)
    monkeypatch.setitem(globals(), "FACTOR", 0.5)
    second(DeviceArray(x))
    np.testing.assert_array_equal(x, 8.0)
    first(DeviceArray(x))  # bound before the rebinding: its launcher was forgotten
    np.testing.assert_array_equal(x, 4.0)
    assert len(fake.modules) == 2


def test_several_devices_check_every_launch(monkeypatch):
    """Where the process sees two GPUs, an array on the other one is refused also after cached launches."""
    driver = _reset(monkeypatch, TwoGPUs())
    driver.ctx = 0xC0
    x0, x1 = np.arange(8.0), np.arange(8.0)
    d0, d1 = OnDevice(driver, x0, 0), OnDevice(driver, x1, 1)
    launch = scale[1, 32]
    for _ in range(3):
        launch(d0, 2.0)
    with pytest.raises(DeviceMismatchError, match="argument 'x' is an array on device 1 but the launch runs on "
                                                  "device 0"):
        launch(d1, 2.0)
    np.testing.assert_array_equal(x0, 8.0 * np.arange(8.0))
    np.testing.assert_array_equal(x1, np.arange(8.0))


class Stream:
    """A stream object of another library (CuPy's spelling: the handle in ``ptr``)."""

    def __init__(self, ptr):
        self.ptr = ptr


def test_launches_on_stream_objects(fake):
    """A stream object each launch (a new launch object each time) reaches the driver as its handle, without a
    context query per launch, and is not kept alive by the kernel."""
    import gc
    import weakref

    x = np.arange(8.0)
    first = Stream(42)
    for _ in range(2):
        scale[1, 32, first](DeviceArray(x), 2.0)
    asked = fake.queries
    for _ in range(3):
        scale[1, 32, Stream(42)](DeviceArray(x), 2.0)
    scale[1, 32, Stream(43)](DeviceArray(x), 0.5)
    assert [c[3] for c in fake.calls if c[0] == "launch"] == [42] * 5 + [43]
    np.testing.assert_array_equal(x, 16.0 * np.arange(8.0))
    assert fake.queries == asked + 1  # the new handle's first launch only
    gone = weakref.ref(first)
    del first
    gc.collect()
    assert gone() is None


class Produced(DeviceArray):
    """An array whose producer names a stream (``__cuda_array_interface__`` version 3, as CuPy's does)."""

    def __init__(self, host, stream):
        super().__init__(host)
        self.stream = stream

    @property
    def __cuda_array_interface__(self):
        return {**super().__cuda_array_interface__, "stream": self.stream}


def _streams(fake):
    return [c[3] for c in fake.calls if c[0] == "launch"]


def _add(x, y):
    i = gd.grid(1)
    if i < x.shape[0]:
        x[i] = x[i] + y[i]


add = Kernel(_add)


def test_without_a_stream_the_launch_goes_to_the_producers_stream(fake):
    x, y = np.arange(8.0), np.ones(8)
    launch = add[1, 32]
    for _ in range(3):
        launch(Produced(x, 5), Produced(y, 5))
    asked = fake.queries
    launch(Produced(x, 1), Produced(y, 1))  # the legacy default stream: handle 0
    launch(Produced(x, 2), Produced(y, 2))  # the per-thread default stream
    launch(Produced(x, 5), DeviceArray(y))  # an array that names none follows the other
    launch(DeviceArray(x), DeviceArray(y))  # none named: the default stream
    assert fake.queries == asked  # the producers' stream is read from the arrays, not asked of the driver
    add[1, 32, 9](Produced(x, 5), Produced(y, 5))  # a stream given is the launch's
    assert _streams(fake) == [5, 5, 5, 0, 2, 5, 0, 9]
    np.testing.assert_array_equal(x, np.arange(8.0) + 8)


def test_arrays_of_two_streams_wait_for_the_other_one(fake):
    x, y = np.arange(8.0), np.ones(8)
    for _ in range(2):
        add[1, 32](Produced(x, 5), Produced(y, 6))
    calls = [c for c in fake.calls if c[0] in ("launch", "sync")]
    assert [(c[0], c[-1]) for c in calls] == [("sync", 6), ("launch", 5)] * 2
    np.testing.assert_array_equal(x, np.arange(8.0) + 2)


@pytest.mark.parametrize("bad", ["5", -3, 2.0])
def test_a_stream_that_is_not_a_handle_is_a_typed_error(fake, bad):
    from gpucompiler.errors import LaunchError

    x, y = np.arange(8.0), np.ones(8)
    add[1, 32](Produced(x, 5), Produced(y, 5))
    with pytest.raises(LaunchError, match="names stream"):
        add[1, 32](Produced(x, bad), Produced(y, bad))
    np.testing.assert_array_equal(x, np.arange(8.0) + 1)


def test_threads_sharing_a_launch_with_different_signatures(fake):
    """One launch object, two threads alternating two signatures under frequent thread switches: each launch
    packs its own layout (the launcher a launch uses is read whole, never half of another thread's)."""
    launch, rounds, errors = add[1, 32], 150, []
    arrays = {np.float64: (np.zeros(8), np.arange(8.0)), np.int32: (np.zeros(8, np.int32), np.arange(8, dtype=np.int32))}

    def worker(dtype):
        x, y = arrays[dtype]
        try:
            for _ in range(rounds):
                launch(DeviceArray(x), DeviceArray(y))
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in arrays]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    for x, y in arrays.values():
        np.testing.assert_array_equal(x, rounds * y)


class NestingDriver(ThreadedDriver):
    """Runs ``nested()`` inside the next ``cuLaunchKernel``, before it reads its parameter buffers: a launch
    started while another one of the same signature is handing its buffers to the driver (another thread,
    a signal handler or a finalizer of this one)."""

    nested: Callable[[], None] | None = None

    def cuLaunchKernel(self, fn, *rest):
        nested, self.nested = self.nested, None
        if nested is not None:
            nested()
        return super().cuLaunchKernel(fn, *rest)


@pytest.mark.parametrize("times", [1, 2])
def test_a_launch_started_during_another_one_packs_into_its_own_buffer(monkeypatch, times):
    """The launcher's shared parameter buffer is one launch's at a time: a launch of the same signature made
    while another is in its driver call packs its own buffers, so neither launches the other's arguments
    (``times``: the nested launch is the bound launch's first, or a later one through the same launcher)."""
    fake = _reset(monkeypatch, NestingDriver())
    launch = add[1, 32]
    x, y, u, v = np.zeros(8), np.arange(8.0), np.zeros(8), np.full(8, 10.0)
    for _ in range(times):
        launch(DeviceArray(u), DeviceArray(v))
    fake.nested = lambda: launch(DeviceArray(u), DeviceArray(v))
    launch(DeviceArray(x), DeviceArray(y))
    np.testing.assert_array_equal(x, np.arange(8.0))
    np.testing.assert_array_equal(u, np.full(8, 10.0 * (times + 1)))
    launch(DeviceArray(x), DeviceArray(y))  # the shared buffer is free again
    np.testing.assert_array_equal(x, 2 * np.arange(8.0))
    assert len(cuda._launchers) == 1


@pytest.mark.parametrize("factor, dtype", [(np.float32(2.5), np.float32), (np.float64(2.5), np.float64),
                                           (np.int32(3), np.int32), (np.int64(-3), np.int64),
                                           (np.bool_(True), np.float64)])
def test_numpy_scalars_take_the_cached_path(fake, factor, dtype):
    """A NumPy scalar is packed as its type, launch after launch without a driver query; switching to a
    Python scalar or another NumPy type after cached launches gets its own layout."""
    x = np.arange(1, 9, dtype=dtype)
    launch = scale[1, 32]
    launch(DeviceArray(x), factor)
    launch(DeviceArray(x), factor)
    asked = fake.queries
    launch(DeviceArray(x), factor)
    assert fake.queries == asked
    np.testing.assert_array_equal(x, np.arange(1, 9, dtype=dtype) * (dtype(factor) ** 3))
    other = np.int64(2) if isinstance(factor, np.floating) else np.float32(0.5)
    y = np.arange(1, 9, dtype=np.float64)
    launch(DeviceArray(y), other)
    launch(DeviceArray(y), 2)
    np.testing.assert_array_equal(y, np.arange(1, 9) * (float(other) * 2))


@pytest.mark.parametrize("config", [(True, 32), (1, False), (0, 32), (1, 1025), (2**31, 32), (-1, 32), (1.0, 32),
                                    ((1, True), 32), ((2, 1.0), (32, 1))])
def test_a_configuration_out_of_range_is_a_typed_error(config):
    """Also after the configuration it equals (1 == True == 1.0) was cached by a launch."""
    from gpucompiler.errors import LaunchError

    for cached in [(1, 32), (1, 1), ((1, 1), 32), ((2, 1), (32, 1))]:
        assert scale[cached] is scale[cached]
    with pytest.raises(LaunchError, match=r"must be a positive int|is at most"):
        scale[config]
