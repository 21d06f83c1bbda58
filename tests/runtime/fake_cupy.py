"""A stand-in for the ``cupy`` module over host memory: what the CUDA runtime and the launch tape use of CuPy.

With the fake driver of tests/kernels/test_cuda_launch.py ("device" memory is the host's), its arrays are
CuPy arrays to the code under test: their type's module is ``cupy`` and ``sys.modules["cupy"]`` is this
module while :func:`installed` is active (no in-place reshaping: an array's layout is set when it is made). Like CuPy's, an array's ``__cuda_array_interface__`` builds a new
dict at each access (it names the current stream, 1 for the legacy default one) and counts the accesses
(:data:`READS`); ``data.ptr``, ``shape``, ``strides`` and ``dtype`` are attributes. Copies and memsets run at
once (host memory); a captured graph replays nothing (use ``LaunchTape(graphs=False)`` where results count).
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import types

import numpy as np

from gpucompiler.runtime import cuda as runtime_cuda

READS = [0]
"""``__cuda_array_interface__`` accesses so far"""


class MemoryPointer:
    """CuPy's ``ndarray.data``: the address, keeping its memory alive."""

    __slots__ = ("ptr", "owner")

    def __init__(self, ptr: int, owner):
        self.ptr, self.owner = ptr, owner

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self.ptr + offset, self.owner)


class ndarray:
    """A CuPy-like array viewing a NumPy array (``host``)."""

    __slots__ = ("host", "data", "shape", "strides", "dtype", "__weakref__")

    def __init__(self, shape, dtype=float, memptr: MemoryPointer | None = None, strides=None):
        dtype = np.dtype(dtype)
        if memptr is None:
            host = np.zeros(shape, dtype)
        else:  # a view of memptr's memory: element 0 at memptr.ptr, the others where the strides say
            shape = tuple(shape)
            strides = tuple(strides) if strides is not None else _c_strides(shape, dtype.itemsize)
            low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0) if all(shape) else 0
            high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) if all(shape) else 0
            raw = np.ctypeslib.as_array(ctypes.cast(memptr.ptr + low, ctypes.POINTER(ctypes.c_uint8)),
                                        (high - low + dtype.itemsize,))
            host = np.ndarray(shape, dtype, buffer=raw, offset=-low, strides=strides)
            _view(self, host, MemoryPointer(memptr.ptr, memptr.owner))
            return
        _view(self, host, MemoryPointer(host.ctypes.data, host))

    flags = property(lambda self: self.host.flags)
    nbytes = property(lambda self: self.host.nbytes)
    size = property(lambda self: self.host.size)
    ndim = property(lambda self: self.host.ndim)

    @property
    def __cuda_array_interface__(self) -> dict:
        READS[0] += 1
        h = self.host
        return {"shape": h.shape, "typestr": h.dtype.str, "descr": [("", h.dtype.str)],
                "strides": None if h.flags.c_contiguous else h.strides, "data": (h.ctypes.data, False),
                "version": 3, "stream": cuda.get_current_stream().ptr or 1}

    def get(self) -> np.ndarray:
        return self.host.copy()

    def copy(self) -> ndarray:
        return wrap(self.host.copy())

    def fill(self, value) -> None:
        self.host.fill(value)

    def reshape(self, *shape) -> ndarray:
        return wrap(self.host.reshape(*shape))

    def __getitem__(self, index):
        got = self.host[index]
        return wrap(got) if isinstance(got, np.ndarray) else got

    def __setitem__(self, index, value) -> None:
        self.host[index] = value.host if isinstance(value, ndarray) else value

    def __iadd__(self, other) -> ndarray:
        self.host += other.host if isinstance(other, ndarray) else other
        return self

    def __float__(self) -> float:
        return float(self.host)


ndarray.__module__ = "cupy"


def _c_strides(shape, itemsize: int) -> tuple:
    out, step = [], itemsize
    for n in reversed(shape):
        out.insert(0, step)
        step *= max(n, 1)
    return tuple(out)


def wrap(host: np.ndarray) -> ndarray:
    """A fake CuPy array viewing ``host``."""
    a = ndarray.__new__(ndarray)
    _view(a, host, MemoryPointer(host.ctypes.data, host))
    return a


def _view(a: ndarray, host: np.ndarray, data: MemoryPointer) -> None:
    """``a`` views ``host`` at ``data``; its layout attributes read as cheaply as CuPy's (set once)."""
    a.host, a.data, a.shape, a.strides, a.dtype = host, data, host.shape, host.strides, host.dtype


class Stream:
    """A CuPy stream: its handle in ``ptr``; ``with stream:`` makes it current."""

    def __init__(self, non_blocking: bool = False, ptr: int = 0):
        self.ptr, self._before = ptr, []

    def __enter__(self) -> Stream:
        self._before.append(_CURRENT[0])
        _CURRENT[0] = self
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT[0] = self._before.pop()

    def begin_capture(self) -> None:
        pass

    def end_capture(self) -> Graph:
        return Graph()


class Graph:
    def launch(self, stream) -> None:
        pass


_CURRENT = [Stream()]


class _Runtime:
    @staticmethod
    def memcpyAsync(dst, src, nbytes, kind, stream) -> None:
        ctypes.memmove(dst, src, nbytes)

    @staticmethod
    def memsetAsync(ptr, value, nbytes, stream) -> None:
        ctypes.memset(ptr, value, nbytes)


class _Device:
    id = 0

    def synchronize(self) -> None:
        pass


cuda = types.SimpleNamespace(get_current_stream=lambda: _CURRENT[0], runtime=_Runtime, Stream=Stream,
                             Device=_Device)
int64, float64, float32, uint8 = np.int64, np.float64, np.float32, np.uint8


def asarray(a, dtype=None) -> ndarray:
    return wrap(np.array(a, dtype=dtype))


def zeros(shape, dtype=float) -> ndarray:
    return wrap(np.zeros(shape, dtype))


def empty(shape, dtype=float) -> ndarray:
    return wrap(np.empty(shape, dtype))


def zeros_like(a: ndarray) -> ndarray:
    return wrap(np.zeros_like(a.host))


MODULE = types.ModuleType("cupy")
MODULE.__dict__.update(ndarray=ndarray, cuda=cuda, int64=int64, float64=float64, float32=float32, uint8=uint8,
                       asarray=asarray, zeros=zeros, empty=empty, zeros_like=zeros_like)


@contextlib.contextmanager
def installed():
    """``sys.modules["cupy"]`` is this fake while active (a CuPy imported before comes back after)."""
    before = sys.modules.get("cupy")
    sys.modules["cupy"] = MODULE
    try:
        yield MODULE
    finally:
        if before is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = before


@contextlib.contextmanager
def on_driver(monkeypatch, driver):
    """The CUDA runtime on ``driver`` (tests/kernels/test_cuda_launch.py's fake; the runtime's caches emptied,
    put back after) with this fake installed as ``cupy``: yields the fake module."""
    monkeypatch.setattr(runtime_cuda, "_driver", lambda: driver)
    for name, value in (("_functions", {}), ("_launchers", {}), ("_capability", {}), ("_contexts", {}),
                        ("_state", {"init": False}), ("_heap_checked", set())):
        monkeypatch.setattr(runtime_cuda, name, value)
    with installed() as module:
        yield module
