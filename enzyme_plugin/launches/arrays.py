"""The few array operations a launch tape needs, on the array library the user launched with.

Shadows, snapshots and split-mode tape holders are made by the library that
made the primal (NumPy, CuPy, PyTorch), so they live on the same device and a
launch takes them as it takes the primal. The library is found by the root
module of the array's type; nothing here imports CuPy or PyTorch.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np

from gpucompiler.errors import ArgumentTypeError

from ..locations import caller_location


class ArrayOps:
    """NumPy's spelling; the base of the others."""

    module: Any = np

    views_hold_base = True
    """Whether a view of an array refers to the array object (NumPy's and CuPy's ``base``), so that the
    object's reference count says whether anything still reads its memory."""

    def zeros_like(self, a):
        """A zero shadow of ``a`` with ``a``'s strides: the gradient kernel takes each shadow with its array's
        type and indexes it with the array's strides (a view gets a view of a zeroed buffer of its span)."""
        if self.strided(a):
            size, offset = _span(a.shape, a.strides, a.dtype.itemsize)
            return self._strided_zeros(a, size, offset)
        return self.module.zeros_like(a)

    def _strided_zeros(self, a, size: int, offset: int):
        return np.ndarray(a.shape, a.dtype, np.zeros(size, np.uint8), offset, a.strides)

    @staticmethod
    def strided(a) -> bool:
        return not (a.flags.c_contiguous or a.flags.f_contiguous)

    def copy(self, a):
        return a.copy()

    def assign(self, dst, src) -> None:
        dst[...] = src

    def copy_into(self, dst, src) -> None:
        """:meth:`assign` of arrays of one type, dtype, shape and strides (a copy kept from an earlier round)."""
        self.assign(dst, src)

    def zero(self, a) -> None:
        """Zero ``a`` in place (CuPy: an asynchronous memset of a contiguous array, on the current stream)."""
        a.fill(0)

    def add_into(self, dst, src) -> None:
        dst += src

    def int64_empty(self, shape: tuple[int, int], like):
        return self.module.empty(shape, dtype=self.module.int64)

    def current_stream(self) -> int:
        """The handle of the CUDA stream the library queues its work on now (0: the legacy default stream):
        its copies and the launches on that stream are ordered without a synchronisation."""
        return 0


def _span(shape, strides, itemsize: int) -> tuple[int, int]:
    """``(bytes, offset of element 0)`` of the buffer a view of these strides (in bytes) spans."""
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return high - low + itemsize, -low


class CupyOps(ArrayOps):
    def __init__(self, module):
        self.module = module
        #: CuPy's asynchronous copy and memset and its current stream, looked up once (a launch tape copies and
        #: zeroes at each recorded launch)
        self._memcpy, self._memset = module.cuda.runtime.memcpyAsync, module.cuda.runtime.memsetAsync
        self._stream = module.cuda.get_current_stream

    def _strided_zeros(self, a, size: int, offset: int):
        buffer = self.module.zeros(size, dtype=self.module.uint8)
        return self.module.ndarray(a.shape, a.dtype, buffer.data + offset, a.strides)

    def assign(self, dst, src) -> None:
        """An asynchronous copy of the bytes when both arrays have one contiguous layout, else CuPy's copy."""
        if type(src) is type(dst) and src.dtype == dst.dtype and src.shape == dst.shape \
                and src.strides == dst.strides and (dst.flags.c_contiguous or dst.flags.f_contiguous):
            self._memcpy(dst.data.ptr, src.data.ptr, dst.nbytes, _DEVICE_TO_DEVICE, self._stream().ptr)
            return
        dst[...] = src

    def copy_into(self, dst, src) -> None:
        """The bytes copied asynchronously when the layout both share is one contiguous block."""
        flags = src.flags
        if flags.c_contiguous or flags.f_contiguous:
            self._memcpy(dst.data.ptr, src.data.ptr, dst.nbytes, _DEVICE_TO_DEVICE, self._stream().ptr)
            return
        dst[...] = src

    def zero(self, a) -> None:
        """An asynchronous memset of a contiguous array (on the current stream), else CuPy's fill."""
        if a.flags.c_contiguous or a.flags.f_contiguous:
            self._memset(a.data.ptr, 0, a.nbytes, self._stream().ptr)
            return
        a.fill(0)

    def current_stream(self) -> int:
        return int(self._stream().ptr)


_DEVICE_TO_DEVICE = 3
"""``cudaMemcpyDeviceToDevice``"""


class TorchOps(ArrayOps):
    views_hold_base = False  # a view shares the storage, not the tensor object

    def __init__(self, module):
        self.module = module

    @staticmethod
    def strided(a) -> bool:
        return not a.is_contiguous()

    def copy(self, a):
        return a.detach().clone()

    def zeros_like(self, a):
        if not a.is_contiguous():  # the view's strides (in elements) over a zeroed buffer of its span
            size, offset = _span(a.shape, a.stride(), 1)
            return self.module.zeros(size, dtype=a.dtype, device=a.device).as_strided(a.shape, a.stride(), offset)
        return self.module.zeros_like(a)

    def assign(self, dst, src) -> None:
        with self.module.no_grad():
            if isinstance(src, (int, float)):
                dst.fill_(src)
            else:
                dst.copy_(src)

    def zero(self, a) -> None:
        with self.module.no_grad():
            a.zero_()

    def add_into(self, dst, src) -> None:
        with self.module.no_grad():
            dst.add_(src)

    def int64_empty(self, shape: tuple[int, int], like):
        return self.module.empty(shape, dtype=self.module.int64, device=like.device)

    def current_stream(self) -> int:
        return int(self.module.cuda.current_stream().cuda_stream) if self.module.cuda.is_available() else 0


NUMPY = ArrayOps()
"""The operations of NumPy arrays (the CPU grid emulation)."""


@functools.lru_cache(maxsize=64)
def _ops_of_type(cls: type) -> ArrayOps | None:
    if issubclass(cls, np.ndarray):
        return NUMPY
    root = cls.__module__.split(".")[0]
    module = sys.modules.get(root)
    if root == "cupy" and module is not None:
        return CupyOps(module)
    if root == "torch" and module is not None:
        return TorchOps(module)
    return None


def ops_of(a, what: str = "array") -> ArrayOps:
    """The operations of ``a``'s library: NumPy arrays, CuPy arrays, PyTorch tensors (one object per type)."""
    ops = _ops_of_type(type(a))
    if ops is not None:
        return ops
    raise ArgumentTypeError(what, type(a).__name__, caller_location(), "LaunchTape",
                            hint="launch recorded kernels on NumPy arrays (CPU grid emulation), CuPy arrays "
                                 "or PyTorch tensors; pass others as NumPy or CuPy views")


__all__ = ["ArrayOps", "NUMPY", "ops_of"]
