"""DLPack (``__dlpack__``/``__dlpack_device__``) arrays as kernel arguments, read through ctypes.

A producer's capsule holds a ``DLManagedTensor`` (capsule ``"dltensor"``) or, asked for DLPack 1.0
(``max_version=(1, 0)``), a ``DLManagedTensorVersioned`` (``"dltensor_versioned"``, with a read-only
flag). Its ``DLTensor`` (data pointer, device, ndim, dtype code/bits/lanes, shape, strides in elements or
NULL for C order, byte offset) becomes a :class:`DLPackView`: the same memory described by
``__cuda_array_interface__`` (device type 2, CUDA, and 13, CUDA managed memory) or ``__array_interface__``
(1, CPU, and 3, CUDA pinned host memory: NumPy views it as ``np.from_dlpack`` would), so the launch paths of
those interfaces take it. The view keeps the capsule, hence the producer's memory, alive as long as it is
referenced (the launch, or the NumPy array that views it); the capsule is not renamed, so its destructor
calls the tensor's deleter then. Nothing of PyTorch, JAX or CuPy is imported.

A producer asked for a CUDA array gets the launch's stream (``stream=1`` for the legacy default stream,
as the protocol numbers it) and orders its own work before it. An array the producer marks read-only, or
copied (``DLPACK_FLAG_BITMASK_IS_COPIED``: writes would be lost), is read-only to the kernel.
"""

from __future__ import annotations

import ctypes
from typing import Any, NoReturn

from ..errors import ArgumentTypeError

#: DLPack's device types: those whose memory a CUDA kernel reads in place, and those the host reads
CUDA_DEVICES = {2: "CUDA", 13: "CUDA managed"}
HOST_DEVICES = {1: "CPU", 3: "CUDA pinned host"}
DEVICE_NAMES = {**CUDA_DEVICES, **HOST_DEVICES, 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI", 10: "ROCm",
                11: "ROCm host", 12: "ext_dev", 14: "oneAPI", 15: "WebGPU", 16: "Hexagon", 17: "MAIA"}
#: (type code, bits) -> ``__array_interface__`` type string (codes: 0 int, 1 uint, 2 float, 5 complex, 6 bool)
TYPESTRS = {**{(0, b): f"<i{b // 8}" for b in (8, 16, 32, 64)}, **{(1, b): f"<u{b // 8}" for b in (8, 16, 32, 64)},
            (2, 32): "<f4", (2, 64): "<f8", (5, 64): "<c8", (5, 128): "<c16", (6, 8): "|b1"}
READ_ONLY, IS_COPIED = 1, 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype, _capsule_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def is_dlpack(value) -> bool:
    """Whether ``value`` is a DLPack producer that neither array interface describes (NumPy arrays, CuPy
    arrays and PyTorch's CUDA tensors take those paths)."""
    return (hasattr(value, "__dlpack__") and not hasattr(value, "__cuda_array_interface__")
            and not hasattr(value, "__array_interface__"))


class DLPackView:
    """The array of a DLPack capsule, holding the capsule and its producer; :class:`CudaView` and
    :class:`HostView` describe it by the interface of its memory."""

    __slots__ = ("producer", "capsule", "device", "interface", "__weakref__")

    def __init__(self, producer: Any, capsule: Any, device: tuple[int, int], interface: dict[str, Any]):
        self.producer, self.capsule, self.device, self.interface = producer, capsule, device, interface

    def __repr__(self) -> str:
        where = DEVICE_NAMES.get(self.device[0], self.device[0])
        return f"{type(self).__name__}({type(self.producer).__name__} on {where} {self.device[1]})"


class CudaView(DLPackView):
    """A DLPack array in CUDA memory, as ``__cuda_array_interface__`` (version 3) describes it."""

    __slots__ = ()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return self.interface


class HostView(DLPackView):
    """A DLPack array in host memory, as ``__array_interface__`` (version 3) describes it."""

    __slots__ = ()

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return self.interface


def view(value, name: str = "?", function: str = "", stream: int | None = None) -> DLPackView:
    """The :class:`DLPackView` of the DLPack producer ``value``; a CUDA producer is asked for its array on
    ``stream`` (the protocol's number: 1 the legacy default stream, 2 the per-thread one, else a handle).
    An array on another device, of a type NumPy's interfaces cannot spell (``lanes`` > 1, bfloat16) or a
    capsule that is not DLPack's is an :class:`ArgumentTypeError` naming the parameter."""
    device = _device(value)
    kind = device[0] if device is not None else None
    try:
        capsule = _capsule(value, stream if kind in CUDA_DEVICES else None)
    except BufferError as exc:  # the producer cannot export it (NumPy: a read-only array to a pre-1.0 consumer)
        _refuse(value, name, function, f"its __dlpack__() refused: {exc}")
    try:
        tag = _capsule_name(capsule) if type(capsule).__name__ == "PyCapsule" else None
    except ValueError:
        tag = None
    if tag == b"dltensor_versioned":
        managed = DLManagedTensorVersioned.from_address(_capsule_pointer(capsule, tag))
        if managed.version.major != 1:
            hint = f"its DLPack capsule is of version {managed.version.major}.{managed.version.minor}; this " \
                   "runtime reads 1.x"
            capsule = None  # released before the error: its destructor must not run while the error propagates
            _refuse(value, name, function, hint)
        tensor, flags = managed.dl_tensor, int(managed.flags)
    elif tag == b"dltensor":
        tensor, flags = DLManagedTensor.from_address(_capsule_pointer(capsule, tag)).dl_tensor, 0
    else:
        hint = (f"its __dlpack__() gave {capsule!r}, not a DLPack capsule ('dltensor' or 'dltensor_versioned'; "
                "'used_dltensor' was consumed already)")
        capsule = None
        _refuse(value, name, function, hint)
    kind = int(tensor.device.device_type)
    if kind not in CUDA_DEVICES and kind not in HOST_DEVICES:
        capsule = None
        _refuse(value, name, function, f"it is a DLPack array on a {DEVICE_NAMES.get(kind, 'unknown')} device "
                f"(device type {kind}); kernels take CUDA and host memory: copy it to one of them")
    code, bits, lanes = int(tensor.dtype.code), int(tensor.dtype.bits), int(tensor.dtype.lanes)
    typestr = TYPESTRS.get((code, bits)) if lanes == 1 else None
    if typestr is None:
        capsule = None
        _refuse(value, name, function, f"its DLPack dtype (code {code}, {bits} bits, {lanes} lanes) is not an "
                "element type of kernels: bool, int8-int64, uint8-uint64, float32, float64, complex64, complex128")
    ndim, itemsize = int(tensor.ndim), bits // 8
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    strides = tuple(int(tensor.strides[i]) * itemsize for i in range(ndim)) if tensor.strides else None
    data = (int(tensor.data or 0) + int(tensor.byte_offset), bool(flags & (READ_ONLY | IS_COPIED)))
    interface = {"shape": shape, "typestr": typestr, "strides": strides, "data": data, "version": 3}
    return (CudaView if kind in CUDA_DEVICES else HostView)(value, capsule, (kind, int(tensor.device.device_id)),
                                                           interface)


def views(args: tuple, names: tuple[str, ...], function: str, stream: int | None) -> tuple:
    """``args`` with each DLPack producer (:func:`is_dlpack`) replaced by its :func:`view`."""
    if not any(is_dlpack(a) for a in args):
        return args
    return tuple(view(a, names[k] if k < len(names) else f"#{k}", function, stream) if is_dlpack(a) else a
                 for k, a in enumerate(args))


def _device(value) -> tuple[int, int] | None:
    """``__dlpack_device__()`` as ints; None when the producer has none (the capsule then says)."""
    ask = getattr(value, "__dlpack_device__", None)
    if ask is None:
        return None
    kind, ordinal = ask()
    return int(kind), int(ordinal)


def _capsule(value, stream: int | None) -> Any:
    """``value.__dlpack__``'s capsule, DLPack 1.0's when the producer gives it (older ones take no
    ``max_version``)."""
    try:
        return value.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:
        return value.__dlpack__(stream=stream)


def _refuse(value, name: str, function: str, hint: str) -> NoReturn:
    raise ArgumentTypeError(name, type(value).__name__, function=function, hint=hint)


__all__ = ["CUDA_DEVICES", "HOST_DEVICES", "CudaView", "DLPackView", "HostView", "is_dlpack", "view", "views"]
