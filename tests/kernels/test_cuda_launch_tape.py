"""A launch tape on the CUDA path, against the fake driver of test_cuda_launch (kernels run on the host; the heap limit of test_cuda_heap's):
arrays with ``__cuda_array_interface__`` on the default stream, gradient and split kernels launched through
the driver, no device synchronisation between the tape's copies and the launches, split tapes in rows."""

import ctypes
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
    (Split kernels may grow a tape onto the device heap: the heap's exhaustion flag is read once at the end
    of the recording and once at the end of ``backward``, each after one ``cuStreamSynchronize``; none
    between the launches.)"""
    heap_checks = ["sync"] if split else []
    x = np.linspace(0.1, 1.2, 100)
    dx, y, out, w = (np.asarray(a).view(DeviceArray) for a in (x, np.zeros(100), np.zeros(1), [3.0]))
    tape = LaunchTape(split=split)
    for _ in range(3):
        out[0] = 0.0
        tape.reset()
        start = len(device.calls)
        with tape:
            P.program(dx, y, w, out, 4, 32, None)
            assert [c[0] for c in device.calls[start:]] == ["launch"] * 3       # recording: no waiting
        assert [c[0] for c in device.calls[start:]] == ["launch"] * 3 + heap_checks
        start = len(device.calls)
        tape.backward(loss=out)
        assert [c[0] for c in device.calls[start:]] == ["launch"] * 3 + heap_checks  # three gradient launches
        assert np.allclose(tape.gradient(dx), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
        assert np.isclose(tape.gradient(w)[0], np.sum(np.sin(x * x)), rtol=1e-13)
    if not split:  # the same recording reversed again after zero()
        tape.zero()
        tape.backward(loss=out)
        assert np.allclose(tape.gradient(dx), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
    tape.reset()
    kinds = [c[0] for c in device.calls]
    assert kinds == ["launch", "launch", "launch", *heap_checks] * (len(kinds) // (3 + len(heap_checks))), kinds


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


class ModuleFlagDriver(SyncCountingDriver):
    """A heap flag per module (as each loaded PTX module has its own), set by the launches chosen in
    ``exhaust`` (their positions in the driver's launches, from 1) as a thread that ran out of heap does."""

    def __init__(self):
        super().__init__()
        self.flags, self.exhaust, self.read = {}, set(), []

    def cuModuleGetGlobal(self, module, name):
        super().cuModuleGetGlobal(module, name)
        flag = self.flags.setdefault(module, ctypes.c_int32(0))
        return (0, ctypes.addressof(flag), 4)

    def cuMemcpyDtoH(self, dst, src, nbytes):
        self.read.append(src)
        return super().cuMemcpyDtoH(dst, src, nbytes)

    def cuLaunchKernel(self, fn, *rest):
        out = super().cuLaunchKernel(fn, *rest)
        if sum(c[0] == "launch" for c in self.calls) in self.exhaust:
            self.flags[fn[0]].value = 1
        return out

    def launches(self, start=0):
        return [c for c in self.calls[start:] if c[0] == "launch"]


@pytest.fixture
def flags(device, monkeypatch):
    from gpucompiler.runtime import cuda

    driver = ModuleFlagDriver()
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    return driver


def _program_arrays(cls=DeviceArray):
    x = np.linspace(0.1, 1.2, 100)
    return x, [np.asarray(a).view(cls) for a in (x, np.zeros(100), np.zeros(1), [3.0])]


def _exact(tape, x, dx, w):
    assert np.allclose(tape.gradient(dx), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
    assert np.isclose(tape.gradient(w)[0], np.sum(np.sin(x * x)), rtol=1e-13)


def test_a_split_launch_that_ran_out_of_heap_is_reported_at_the_end_of_the_recording_never_reversed(flags):
    """The second augmented launch of a split round runs out of device heap: the launches go on without
    waiting, the recording's end waits once and raises DeviceHeapError naming the kernel and the recorded
    launch (its flag cleared, the others read); backward() then refuses the incomplete tapes, reset() drops
    them without launching their reverse sweeps, and the next round gives the exact gradient."""
    from gpucompiler.errors import DeviceHeapError

    x, (dx, y, out, w) = _program_arrays()
    tape = LaunchTape(split=True)
    flags.exhaust = {2}
    with pytest.raises(DeviceHeapError, match=r"gpuc_split_\w*sin_in_place \(recorded launch 2\).*"
                       r"GPUC_DEVICE_HEAP=1024M.*still usable") as info, tape:
        P.program(dx, y, w, out, 4, 32, None)
        assert [c[0] for c in flags.calls] == ["launch"] * 3   # nothing waited for yet
    assert info.value.name == "GPUC_DEVICE_HEAP_EXHAUSTED" and "recorded launch 1" not in str(info.value)
    assert [c[0] for c in flags.calls] == ["launch"] * 3 + ["sync"]
    assert sorted(flags.read) == sorted(ctypes.addressof(f) for f in flags.flags.values())  # each module once
    assert all(f.value == 0 for f in flags.flags.values())
    start = len(flags.calls)
    with pytest.raises(LaunchTapeError, match="ran out of device heap"):
        tape.backward(loss=out)
    tape.reset()
    assert flags.calls[start:] == []                               # no reverse sweep of incomplete tapes
    flags.exhaust = set()
    out[0] = 0.0
    with tape:
        P.program(dx, y, w, out, 4, 32, None)
    tape.backward(loss=out)
    _exact(tape, x, dx, w)


def test_a_gradient_launch_that_ran_out_of_heap_is_reported_at_the_end_of_backward(flags):
    """The reverse sweeps of backward go back to back; the one that ran out (of the first recorded launch,
    launched last) is named by the DeviceHeapError that backward raises after them, having waited once."""
    from gpucompiler.errors import DeviceHeapError

    _, (dx, y, out, w) = _program_arrays()
    tape = LaunchTape(split=True)
    with tape:
        P.program(dx, y, w, out, 4, 32, None)
    flags.exhaust = {6}
    start = len(flags.calls)
    with pytest.raises(DeviceHeapError, match=r"gpuc_split_\w*square \(gradient of recorded launch 1\)"):
        tape.backward(loss=out)
    assert [c[0] for c in flags.calls[start:]] == ["launch"] * 3 + ["sync"]


def test_a_wait_inside_the_recording_reads_the_flags_and_the_tape_is_incomplete(flags, monkeypatch):
    """A launch on its own stream (7) while the library copies on stream 5 makes the tape wait for the device
    between them (``synchronize``): the flags of the launches before are read there, the error raised at the
    launch that waited, and the recording counts as incomplete."""
    from gpucompiler.errors import DeviceHeapError

    ops, known = StreamOps(), arrays._ops_of_type
    monkeypatch.setattr(arrays, "_ops_of_type", lambda cls: ops if cls is StreamArray else known(cls))
    _, (dx, y, out, w) = _program_arrays(StreamArray)
    tape = LaunchTape(split=True)
    flags.exhaust = {1}
    with pytest.raises(DeviceHeapError, match=r"square \(recorded launch 1\)"), tape:
        P.program(dx, y, w, out, 4, 32, 7)
    assert len(flags.launches()) == 1 and ("ctx sync",) in flags.calls
    with pytest.raises(LaunchTapeError, match="ran out of device heap"):
        tape.backward(loss=out)


def test_deferred_checks_are_read_by_synchronize_and_by_a_copy_to_the_host(flags):
    """Outside a tape a launch is checked at once; deferred (device_heap.deferring), its flag is read by the
    runtime's synchronize() or by the next launch that copies results to the host, never lost."""
    from gpucompiler import kernel
    from gpucompiler.errors import DeviceHeapError
    from gpucompiler.runtime import cuda, device_heap

    import ez_funcs as F

    x = np.linspace(-0.4, 0.6, 12)
    k = kernel(F.loop_in_kernel, plugins=("enzyme",))
    flags.exhaust = {1}
    with pytest.raises(DeviceHeapError, match=r"launch of loop_in_kernel"):
        k[1, 16](x, np.zeros_like(x))                                 # at once: NumPy arrays, no tape
    assert [c[0] for c in flags.calls][:2] == ["HtoD", "HtoD"] and ("sync", 0) in flags.calls
    for reader in (cuda.synchronize, lambda: k[1, 16](x, np.zeros_like(x))):
        flags.calls.clear()
        flags.exhaust = {sum(c[0] == "launch" for c in flags.calls) + 1}
        dx = np.zeros_like(x).view(DeviceArray)
        with device_heap.deferring():
            k[1, 16](np.asarray(x).view(DeviceArray), dx)
        assert "sync" not in [c[0] for c in flags.calls]
        flags.calls.clear()
        flags.exhaust = set()
        with pytest.raises(DeviceHeapError, match=r"one of the launches loop_in_kernel\b"):
            reader()
        cuda.synchronize()                                            # read and cleared: reported once


def test_a_split_round_of_many_launches_waits_once_at_its_end_and_once_in_backward(device):
    """Twelve recorded launches (the program four times, each step feeding the next through ``y``) and their
    twelve reverse sweeps: one synchronisation after the recording, one after backward, none between."""
    x = np.linspace(0.1, 1.2, 100)
    dx, y, w = (np.asarray(a).view(DeviceArray) for a in (x, np.zeros(100), [3.0]))
    outs = [np.zeros(1).view(DeviceArray) for _ in range(4)]
    tape = LaunchTape(split=True)
    start = len(device.calls)
    with tape:
        for out in outs:
            P.program(dx, y, w, out, 4, 32, None)
    assert [c[0] for c in device.calls[start:]] == ["launch"] * 12 + ["sync"]
    start = len(device.calls)
    tape.backward(grads=[(out, np.ones(1).view(DeviceArray)) for out in outs])
    assert [c[0] for c in device.calls[start:]] == ["launch"] * 12 + ["sync"]
    assert np.allclose(tape.gradient(dx), 4 * 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
    assert np.isclose(tape.gradient(w)[0], 4 * np.sum(np.sin(x * x)), rtol=1e-13)


def test_an_exception_in_the_recording_after_a_launch_ran_out_keeps_both_errors(flags):
    """The recording ends with the user's exception after a launch that ran out of heap: the DeviceHeapError
    is raised (never lost) with the user's exception as its context, and the recording is incomplete."""
    from gpucompiler.errors import DeviceHeapError

    _, (dx, y, _, _) = _program_arrays()
    tape = LaunchTape(split=True)
    flags.exhaust = {1}
    with pytest.raises(DeviceHeapError, match=r"square \(recorded launch 1\)") as info, tape:
        P.square[4, 32, None](dx, y)
        raise KeyError("the user's own error")
    assert isinstance(info.value.__context__, KeyError) and not info.value.__suppress_context__  # both shown
    with pytest.raises(LaunchTapeError, match="ran out of device heap"):
        tape.backward(grads=[(y, np.ones(100).view(DeviceArray))])
