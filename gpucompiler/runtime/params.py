"""A kernel's parameter buffers: what ``cuLaunchKernel`` takes and the grid emulation passes.

Apart from :mod:`.grid` so that the CUDA runtime fills them without loading the emulation's machinery
(LLVM, the kernel language).
"""

from __future__ import annotations

import ctypes

from .. import types as T

_SCALAR_CTYPES = {T.boolean: ctypes.c_uint8, T.int8: ctypes.c_int8, T.int16: ctypes.c_int16,
                  T.int32: ctypes.c_int32, T.int64: ctypes.c_int64, T.uint8: ctypes.c_uint8,
                  T.uint16: ctypes.c_uint16, T.uint32: ctypes.c_uint32, T.uint64: ctypes.c_uint64,
                  T.float32: ctypes.c_float, T.float64: ctypes.c_double}


def array_param(data_ptr: int, shape, strides) -> ctypes.Array:
    """The parameter buffer of an array argument: ``{ptr, shape..., strides in bytes...}``."""
    return (ctypes.c_int64 * (1 + 2 * len(shape)))(data_ptr, *shape, *strides)


_INT_RANGES = {T.int32: (-(1 << 31), (1 << 31) - 1), T.int64: (-(1 << 63), (1 << 63) - 1)}


def scalar_param(value, t: T.Scalar) -> ctypes.Array:
    """An 8-byte zero-padded buffer holding ``value`` as ``t`` (little-endian first bytes).

    An integer outside ``t``'s range is an ``OverflowError``, never a wrapped value.
    """
    bounds = _INT_RANGES.get(t)
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise OverflowError(f"kernel argument {value} does not fit in {t}")
    if t.kind == "c":  # {real, imag}
        part = ctypes.c_float if t == T.complex64 else ctypes.c_double
        return (part * 2)(value.real, value.imag)
    buf = (ctypes.c_uint8 * 8)()
    _SCALAR_CTYPES[t].from_buffer(buf).value = value
    return buf


def param_array(buffers) -> ctypes.Array:
    """The ``void*[]`` pointing at each buffer (what ``cuLaunchKernel`` and the driver take)."""
    return (ctypes.c_void_p * max(len(buffers), 1))(*[ctypes.addressof(b) for b in buffers])
