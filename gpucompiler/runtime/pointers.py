"""Which GPU a device pointer's memory is on.

cuda-bindings' ``cuPointerGetAttribute`` answers 0 for
``CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`` whatever the device (seen with
cuda-bindings 13 on a two-GPU H200 host, where the driver's own entry point
answers 1 for memory on device 1), so for the real driver the library is
asked directly through ctypes. A driver object that is not cuda-bindings'
module (the tests' fake drivers) answers through its own method.
"""

from __future__ import annotations

import ctypes
import functools

_REAL_DRIVER = "cuda.bindings.driver"


@functools.cache
def _libcuda() -> ctypes.CDLL:
    lib = ctypes.CDLL("libcuda.so.1")  # already loaded by cuda-bindings: this finds the same library
    lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
    lib.cuPointerGetAttribute.restype = ctypes.c_int
    return lib


def pointer_ordinal(d, ptr: int) -> int | None:
    """The ordinal of the device whose memory ``ptr`` points to; None where the driver has none (host or
    managed memory, or a pointer it does not know)."""
    attr = d.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    if getattr(d, "__name__", None) == _REAL_DRIVER:
        value = ctypes.c_int(-1)
        err = _libcuda().cuPointerGetAttribute(ctypes.addressof(value), int(attr), ptr)
        return value.value if err == 0 and value.value >= 0 else None
    err, where = d.cuPointerGetAttribute(attr, ptr)
    return int(where) if int(err) == 0 else None


__all__ = ["pointer_ordinal"]
