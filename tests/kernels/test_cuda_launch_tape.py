"""A launch tape on the CUDA path, against the fake driver of test_cuda_launch (kernels run on the host; the heap limit of test_cuda_heap's):
arrays with ``__cuda_array_interface__`` on the default stream, gradient and split kernels launched through
the driver, no device synchronisation between the tape's copies and the launches, split tapes in rows."""

import os
import sys

import numpy as np
import pytest

from enzyme_plugin import LaunchTape, LaunchTapeError
from enzyme_plugin.launches import arrays
from test_cuda_heap import HeapDriver

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "enzyme_plugin"))
import launch_programs as P


class DeviceArray(np.ndarray):
    """A NumPy array that says it is in device memory (the fake driver's device memory is the host's)."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str,
                "strides": None if self.flags.c_contiguous else self.strides,
                "data": (self.ctypes.data, False), "version": 3}


class DeviceOps(arrays.ArrayOps):
    """The tape's array operations for :class:`DeviceArray` (shadows, copies and tape rows on the device)."""

    def zeros_like(self, a):
        return super().zeros_like(a).view(DeviceArray)

    def copy(self, a):
        return np.array(a).view(DeviceArray)

    def int64_empty(self, shape, like):
        return np.empty(shape, dtype=np.int64).view(DeviceArray)


class SyncCountingDriver(HeapDriver):  # split kernels may grow tapes onto the heap: a heap limit
    def cuCtxSynchronize(self):
        self.calls.append(("ctx sync",))
        return (0,)


@pytest.fixture
def device(monkeypatch):
    from gpucompiler.runtime import cuda

    driver = SyncCountingDriver()
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    monkeypatch.setattr(cuda, "_functions", {})
    monkeypatch.setattr(cuda, "_launchers", {})
    monkeypatch.setattr(cuda, "_capability", {})
    monkeypatch.setattr(cuda, "_state", {"init": False})
    monkeypatch.setattr(cuda, "_heap_checked", set())
    ops, known = DeviceOps(), arrays._ops_of_type
    monkeypatch.setattr(arrays, "_ops_of_type", lambda cls: ops if cls is DeviceArray else known(cls))
    return driver


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_device_arrays_on_the_default_stream_need_no_synchronisation_and_give_the_gradient(device, split):
    x = np.linspace(0.1, 1.2, 100)
    dx, y, out, w = (np.asarray(a).view(DeviceArray) for a in (x, np.zeros(100), np.zeros(1), [3.0]))
    tape = LaunchTape(split=split)
    with tape:
        P.program(dx, y, w, out, 4, 32, None)
    launches = [c for c in device.calls if c[0] == "launch"]
    assert len(launches) == 3 and all(c[3] == 0 for c in launches)      # the default stream
    if split:
        assert all(isinstance(r.holders, DeviceArray) and np.array_equal(r.holders[:, 0], r.holders[:, 3])
                   for r in tape.records)                                # every thread's stack in its row
    tape.backward(loss=out)
    assert np.allclose(tape.gradient(dx), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
    assert np.isclose(tape.gradient(w)[0], np.sum(np.sin(x * x)), rtol=1e-13)
    assert np.isclose(out[0], 3.0 * np.sum(np.sin(x * x)))
    kinds = [c[0] for c in device.calls]
    assert kinds.count("launch") == 6 and "ctx sync" not in kinds      # three forward, three gradient launches


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_rounds_after_reset_and_backward_again_never_synchronise_the_host(device, split):
    """Later rounds take the cached plans and launches, the reused shadows and (split) tape rows: still no
    synchronisation by the tape and no copy through the host in recording, ``backward``, ``zero`` or
    ``reset``, each round's gradient exact; the gradient launches go back to back on the default stream.
    (Split kernels may grow a tape onto the device heap: the runtime waits for each of their launches to
    check the heap's exhaustion flag, ``cuStreamSynchronize``, one after each launch.)"""
    heap_checks = ["sync"] if split else []
    x = np.linspace(0.1, 1.2, 100)
    dx, y, out, w = (np.asarray(a).view(DeviceArray) for a in (x, np.zeros(100), np.zeros(1), [3.0]))
    tape = LaunchTape(split=split)
    for _ in range(3):
        out[0] = 0.0
        tape.reset()
        with tape:
            P.program(dx, y, w, out, 4, 32, None)
        start = len(device.calls)
        tape.backward(loss=out)
        assert [c[0] for c in device.calls[start:]] == ["launch", *heap_checks] * 3  # three gradient launches
        assert np.allclose(tape.gradient(dx), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
        assert np.isclose(tape.gradient(w)[0], np.sum(np.sin(x * x)), rtol=1e-13)
    if not split:  # the same recording reversed again after zero()
        tape.zero()
        tape.backward(loss=out)
        assert np.allclose(tape.gradient(dx), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
    tape.reset()
    kinds = [c[0] for c in device.calls]
    assert kinds == ["launch", *heap_checks] * (len(kinds) // (1 + len(heap_checks))), set(kinds)


def test_device_arrays_typed_once_per_layout_and_overlapping_views_refused(device):
    """On a GPU the tape reads each array's ``__cuda_array_interface__`` once and remembers its type per
    layout: views of one shape and dtype but other strides (or offsets) give their exact gradients, an int64
    array of the same shape gets no shadow; two views over the same bytes (by their strides) are still a
    LaunchTapeError, disjoint ones are not."""
    base = np.linspace(0.1, 1.2, 128).view(DeviceArray)
    tape = LaunchTape()
    for x in (base[:64], base[::2], base[64:], base[1::2], base[:64]):
        y = np.zeros(64).view(DeviceArray)
        tape.reset()
        with tape:
            P.square[2, 32, None](x, y)
            P.sin_in_place[2, 32, None](y)
        assert np.allclose(y, np.sin(np.asarray(x) ** 2), rtol=1e-15)
        tape.backward(grads=[(y, np.ones(64).view(DeviceArray))])
        np.testing.assert_allclose(tape.gradient(x), np.cos(np.asarray(x) ** 2) * 2 * np.asarray(x), rtol=1e-13)
    with pytest.raises(LaunchTapeError, match="overlap in memory"), LaunchTape():
        P.square[2, 32, None](base[:64], base[32:96])
    with pytest.raises(LaunchTapeError, match="overlap in memory"), LaunchTape():
        P.square[2, 32, None](base[::2], base[1::2])        # interleaved: their spans overlap (conservative)
    with pytest.raises(LaunchTapeError, match="overlap in memory"), LaunchTape():
        P.square[2, 32, None](base[:128:2], base[100:])     # elements 100, 102, ... in both: the stride counts
    xi, yi = np.arange(64).view(DeviceArray), np.zeros(64, np.int64).view(DeviceArray)
    with LaunchTape() as tape:                               # the same shape in int64: no shadows
        P.square[2, 32, None](xi, yi)
    assert np.array_equal(yi, np.arange(64) ** 2)
    with pytest.raises(LaunchTapeError, match="int64 array, which has no shadow"):
        tape.gradient(yi)
    with LaunchTape() as tape:
        P.square[2, 32, None](base[:64], base[64:])         # adjacent, disjoint
    assert np.allclose(base[64:], np.asarray(base[:64]) ** 2)


class StreamArray(DeviceArray):
    """A device array whose producer names stream 5 (as CuPy names its current stream)."""

    @property
    def __cuda_array_interface__(self):
        return {**super().__cuda_array_interface__, "stream": 5}


class StreamOps(DeviceOps):
    """The library of :class:`StreamArray`: its copies go to stream 5."""

    def zeros_like(self, a):
        return super().zeros_like(a).view(StreamArray)

    def copy(self, a):
        return np.array(a).view(StreamArray)

    def int64_empty(self, shape, like):
        return np.empty(shape, dtype=np.int64).view(StreamArray)

    def current_stream(self) -> int:
        return 5


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_a_library_on_another_stream_orders_copies_and_launches_by_that_stream(device, monkeypatch, split):
    """Arrays whose producer names its current stream: launches without a stream go to it, the tape's copies
    too, so nothing waits for the device; a launch on a stream of its own (7) while the library copies on
    another (5) is separated from the copies by a synchronisation. The gradient is exact either way."""
    ops, known = StreamOps(), arrays._ops_of_type
    monkeypatch.setattr(arrays, "_ops_of_type", lambda cls: ops if cls is StreamArray else known(cls))
    x = np.linspace(0.1, 1.2, 100)
    for stream, waits in ((None, False), (7, True)):
        dx, y, out, w = (np.asarray(a).view(StreamArray) for a in (x, np.zeros(100), np.zeros(1), [3.0]))
        start = len(device.calls)
        tape = LaunchTape(split=split)
        with tape:
            P.program(dx, y, w, out, 4, 32, stream)
        tape.backward(loss=out)
        calls = device.calls[start:]
        launched = {int(c[3]) for c in calls if c[0] == "launch"}
        assert launched == {5 if stream is None else 7}
        assert (("ctx sync",) in calls) == waits
        assert np.allclose(tape.gradient(dx), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
        assert np.isclose(tape.gradient(w)[0], np.sum(np.sin(x * x)), rtol=1e-13)
