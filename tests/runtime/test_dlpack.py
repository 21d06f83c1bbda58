"""DLPack arrays as kernel arguments: a hand-made capsule producer (its "CUDA" memory is host memory the fake
driver of tests/kernels/test_cuda_launch.py runs through the CPU grid emulation), and NumPy's own
``__dlpack__`` on the CPU grid emulation; results against NumPy."""

from __future__ import annotations

import ctypes
import gc
import os
import sys

import numpy as np
import pytest

from gpucompiler import device as gd
from gpucompiler.errors import ArgumentTypeError, LaunchError, ReadOnlyArrayError
from gpucompiler.kernel import Kernel
from gpucompiler.runtime import cuda, dlpack

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
from test_cuda_launch import FakeDriver  # pyright: ignore[reportMissingImports]

_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype, _new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


class Producer:
    """A DLPack producer over ``host`` (a NumPy array) as if it were on ``device``; its capsules' destruction
    and the streams it was asked for are recorded."""

    def __init__(self, host, device=(2, 0), *, versioned=False, flags=0, dtype=None, byte_offset=0, strides=True,
                 shape=None):
        self.host, self.device, self.versioned, self.flags = host, device, versioned, flags
        self.dtype = dtype or (CODES[host.dtype.kind], host.dtype.itemsize * 8, 1)
        self.byte_offset, self.strides, self.shape = byte_offset, strides, shape or host.shape
        self.streams: list = []
        self.alive = 0
        self._keep: list = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None):
        self.streams.append(stream)
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * max(ndim, 1))(*self.shape)
        steps = [s // self.host.itemsize for s in self.host.strides] if self.strides else None
        strides = (ctypes.c_int64 * max(ndim, 1))(*steps) if steps else None
        tensor = dlpack.DLTensor(self.host.ctypes.data - self.byte_offset, dlpack.DLDevice(*self.device), ndim,
                                 dlpack.DLDataType(*self.dtype), ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                                 ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)) if strides else None,
                                 self.byte_offset)
        if self.versioned and max_version is not None:
            managed = dlpack.DLManagedTensorVersioned(dlpack.DLPackVersion(1, 0), None, None, self.flags, tensor)
            name = b"dltensor_versioned"
        else:
            managed = dlpack.DLManagedTensor(tensor, None, None)
            name = b"dltensor"

        def destroyed(_capsule):
            self.alive -= 1

        destructor = _DESTRUCTOR(destroyed)
        self._keep.append((shape, strides, managed, destructor))
        self.alive += 1
        return _new_capsule(ctypes.addressof(managed), name, ctypes.cast(destructor, ctypes.c_void_p))


class NumPyDLPack:
    """Only NumPy's ``__dlpack__`` and ``__dlpack_device__`` of an array (no ``__array_interface__``)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class Watching(FakeDriver):
    """The fake driver, noting how many of ``producer``'s capsules are alive at each launch."""

    producer: Producer | None = None
    alive_at_launch: list

    def cuLaunchKernel(self, *args):
        if self.producer is not None:
            self.alive_at_launch.append(self.producer.alive)
        return super().cuLaunchKernel(*args)


@pytest.fixture
def fake(monkeypatch):
    driver = Watching()
    driver.alive_at_launch = []
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    for name, value in (("_functions", {}), ("_launchers", {}), ("_capability", {}), ("_contexts", {}),
                        ("_state", {"init": False}), ("_heap_checked", set())):
        monkeypatch.setattr(cuda, name, value)
    return driver


def _scale(x, factor):
    i = gd.grid(1)
    if i < x.shape[0]:
        x[i] = x[i] * factor


def _copy2d(src, dst):
    i = gd.grid(1)
    if i < src.shape[0]:
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j] + 1


scale = Kernel(_scale)
copy2d = Kernel(_copy2d)


@pytest.mark.parametrize("versioned", [False, True])
def test_a_cuda_dlpack_array_is_used_in_place_and_kept_alive_for_the_launch(fake, versioned):
    x = np.arange(40.0)
    p = Producer(x, versioned=versioned)
    fake.producer = p
    for _ in range(3):  # the first launch and the bound ones after it
        scale[2, 32](p, 2.0)
    np.testing.assert_array_equal(x, 8.0 * np.arange(40.0))
    assert fake.alive_at_launch == [1, 1, 1]  # the capsule lives through each launch...
    gc.collect()
    assert p.alive == 0  # ...and is released after it (its destructor, hence the producer's deleter, ran)
    assert p.streams == [1, 1, 1]  # asked for on the legacy default stream (DLPack's number for it)


def test_strides_in_elements_byte_offset_and_dtypes(fake):
    base = np.arange(24, dtype=np.int32)
    view = base[3::2]  # strides of 2 elements, 12 bytes into the buffer
    scale[1, 32](Producer(view, byte_offset=12), 3)
    want = np.arange(24, dtype=np.int32)
    want[3::2] *= 3
    np.testing.assert_array_equal(base, want)
    src = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # 2-d, strided (2 elements), float32
    dst = np.zeros((3, 2), np.float32)
    copy2d[1, 32](Producer(src), Producer(dst, strides=False))  # NULL strides: C order
    np.testing.assert_array_equal(dst, src + 1)
    assert copy2d.argument_types((Producer(src), Producer(dst)))[0].layout == "A"


@pytest.mark.parametrize("flags", [dlpack.READ_ONLY, dlpack.IS_COPIED])
def test_a_read_only_or_copied_array_is_read_only_to_the_kernel(fake, flags):
    x = np.arange(8.0)
    with pytest.raises(ReadOnlyArrayError):
        scale[1, 32](Producer(x, versioned=True, flags=flags), 2.0)
    np.testing.assert_array_equal(x, np.arange(8.0))
    dst = np.zeros((2, 2))
    copy2d[1, 32](Producer(np.ones((2, 2)), versioned=True, flags=flags), Producer(dst))  # read only: fine
    np.testing.assert_array_equal(dst, 2.0)


@pytest.mark.parametrize("producer, message", [
    (lambda x: Producer(x, dtype=(2, 16, 1), shape=(16,)), "code 2, 16 bits, 1 lanes"),   # float16
    (lambda x: Producer(x, dtype=(2, 32, 2), shape=(4,)), "2 lanes"),                     # float32x2
    (lambda x: Producer(x, dtype=(4, 16, 1), shape=(16,)), "code 4"),                     # bfloat16
    (lambda x: Producer(x, device=(10, 0)), "ROCm device"),
])
def test_what_kernels_cannot_take_is_a_typed_error_naming_the_parameter(fake, producer, message):
    x = np.zeros(8)
    with pytest.raises(ArgumentTypeError, match="parameter 'x'") as info:
        scale[1, 32](producer(x), 2.0)
    assert message in str(info.value)
    assert fake.calls == []  # nothing launched


def test_a_producer_that_gives_no_capsule_is_a_typed_error(fake):
    class NotACapsule(Producer):
        def __dlpack__(self, stream=None, max_version=None):
            return object()

    with pytest.raises(ArgumentTypeError, match="not a DLPack capsule"):
        scale[1, 32](NotACapsule(np.zeros(4)), 2.0)


def test_numpy_dlpack_on_the_cpu_grid_emulation_in_place():
    x = np.arange(50.0)
    scale[2, 32, "cpu"](NumPyDLPack(x), 3.0)
    np.testing.assert_array_equal(x, 3.0 * np.arange(50.0))
    y = np.arange(40, dtype=np.int64)
    scale[1, 32, "cpu"](NumPyDLPack(y[1::3]), -2)
    want = np.arange(40, dtype=np.int64)
    want[1::3] *= -2
    np.testing.assert_array_equal(y, want)


def test_a_read_only_numpy_array_through_dlpack_stays_read_only():
    x = np.arange(8.0)
    x.flags.writeable = False
    with pytest.raises(ReadOnlyArrayError):
        scale[1, 32, "cpu"](NumPyDLPack(x), 2.0)
    dst = np.zeros((2, 2))
    copy2d[1, 32, "cpu"](NumPyDLPack(np.ones((2, 2))[:]), NumPyDLPack(dst))
    np.testing.assert_array_equal(dst, 2.0)


def test_a_host_dlpack_array_on_the_gpu_is_staged_like_a_numpy_array(fake):
    x = np.arange(16.0)
    scale[1, 32](NumPyDLPack(x), 0.5)
    np.testing.assert_array_equal(x, 0.5 * np.arange(16.0))
    assert [c[0] for c in fake.calls if c[0] != "launch"] == ["HtoD", "DtoH", "sync"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="this test's producer frees its capsule through a ctypes "
                    "callback, which Python 3.10 refuses to run while the error propagates (real producers' "
                    "deleters are C functions)")
def test_a_cuda_dlpack_array_on_the_cpu_grid_emulation_is_refused():
    with pytest.raises(LaunchError, match="CPU grid emulation runs on host memory"):
        scale[1, 32, "cpu"](Producer(np.zeros(4)), 2.0)


@pytest.mark.parametrize("device", [(1, 0), (3, 0)])  # CPU, CUDA pinned host memory
def test_a_hand_made_host_capsule_on_the_cpu_grid_emulation(device):
    x = np.arange(12.0).reshape(3, 4)[:, 1::2]
    base = x.base
    dst = np.zeros((3, 2))
    p = Producer(x, device=device, versioned=True)
    copy2d[1, 32, "cpu"](p, Producer(dst, device=device))
    np.testing.assert_array_equal(dst, x + 1)
    assert p.streams == [None]  # host memory: no stream asked for
    assert base is not None and np.shares_memory(base, x)


def test_a_producer_without_dlpack_device_is_read_from_its_capsule(fake):
    class NoDevice(Producer):
        __dlpack_device__ = None  # pyright: ignore[reportAssignmentType]

    x = np.arange(10.0)
    p = NoDevice(x)
    scale[1, 32](p, 4.0)
    np.testing.assert_array_equal(x, 4.0 * np.arange(10.0))
    assert p.streams == [None]


def test_an_empty_array(fake):
    x = np.zeros(0)
    p = Producer(x)
    fake.producer = p
    scale[1, 32](p, 2.0)  # nothing to do, nothing read
    assert fake.alive_at_launch == [1] and x.shape == (0,)


def test_a_capsule_of_a_later_major_version_is_refused(fake):
    class Version2(Producer):
        def __dlpack__(self, stream=None, max_version=None):
            capsule = super().__dlpack__(stream, max_version)
            self._keep[-1][2].version.major = 2
            return capsule

    with pytest.raises(ArgumentTypeError, match=r"version 2\.0"):
        scale[1, 32](Version2(np.zeros(4), versioned=True), 2.0)


@pytest.mark.gpu
def test_cupy_arrays_through_dlpack_only_on_a_gpu():
    """On a GPU: CuPy's ``__dlpack__`` (its ``__cuda_array_interface__`` hidden) in place, strided, on a stream."""
    cp = pytest.importorskip("cupy")
    x = cp.arange(4096, dtype=cp.float64)
    scale[16, 256](NumPyDLPack(x), 3.0)  # the wrapper forwards any array's __dlpack__
    src = cp.arange(300, dtype=cp.float32).reshape(100, 3)[:, ::2]
    dst = cp.zeros((100, 2), cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    copy2d[1, 128, stream.ptr](NumPyDLPack(src), NumPyDLPack(dst))
    stream.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(x), 3.0 * np.arange(4096.0))
    np.testing.assert_array_equal(cp.asnumpy(dst), cp.asnumpy(src) + 1)
