"""AMD GPUs through the HIP runtime: a ``@kernel``'s code object, its kernarg segment, its launch.

:func:`code_object` compiles a kernel for an :class:`~gpucompiler.targets.amdgpu.AMDGPUTarget`
(through the compile cache) into the ELF code object ``hipModuleLoadData`` loads; it needs no
AMD hardware. :func:`launch` runs it where a ROCm device exists: the HIP runtime library
(``libamdhip64``, from ROCm or Debian's ``libamdhip64-5``) is called through ``ctypes``, the
arguments are packed into one kernarg buffer at the offsets the code object's metadata note
names (``HIP_LAUNCH_PARAM_BUFFER_POINTER``), NumPy arrays are staged in device memory and
copied back. Without the library, or without a device, a :class:`~gpucompiler.errors.ToolNotFoundError`
says which is missing. (No AMD GPU was available where this was written: the launch path is
untested on hardware; the code objects, their metadata and the kernarg layout are checked in CI.)
"""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from .. import types as T
from .arguments import argument_type
from ..errors import LaunchError, ToolchainError, ToolNotFoundError
from ..settings import ROCmSettings, RuntimeSettings
from ..targets.amdgpu import AMDGPUTarget
from ..targets.amdgpu.heap import HEAP
from ..targets.amdgpu.tools import disassemble, metadata
from .launchers import register_runtime

_SCALARS = {T.float64: "d", T.float32: "f", T.int64: "q", T.int32: "i", T.boolean: "?"}


@attrs.frozen
class CodeObject:
    """A kernel's loadable AMD code object (``image``) and the name of its kernel symbol."""

    image: bytes = attrs.field(repr=False)
    name: str
    argtypes: tuple
    target: AMDGPUTarget

    def metadata(self) -> dict:
        """This kernel's entry of the AMDGPU metadata note (``.args``, ``.kernarg_segment_size``...)."""
        kernels = metadata(self.image)["amdhsa.kernels"]
        return next(k for k in kernels if k[".name"] == self.name)

    def disassemble(self) -> str:
        """``llvm-objdump -d`` of the code object."""
        return disassemble(self.image)


def code_object(kernel, argtypes: Sequence, target: AMDGPUTarget | None = None) -> CodeObject:
    """The code object of ``kernel`` (a ``@kernel``) for ``argtypes`` (types or example values) on
    ``target`` (default: the kernel's target if it is an AMD GPU, else gfx90a)."""
    if target is None:
        target = kernel.target if isinstance(kernel.target, AMDGPUTarget) else AMDGPUTarget()
    types = tuple(t if isinstance(t, T.Type) else argument_type(t, f"#{k}") for k, t in enumerate(argtypes))
    image, _ = kernel.compile(types, target)
    assert isinstance(image, bytes)
    return CodeObject(image, kernel.symbol, types, target)


# -- the kernarg segment -----------------------------------------------------------------
def _field(t) -> tuple[str, int]:
    """``(struct format, alignment)`` of one kernel argument of type ``t``."""
    if isinstance(t, T.ArrayType):
        return "Q" + "q" * (2 * t.ndim), 8
    fmt = _SCALARS.get(t)
    if fmt is None:
        raise LaunchError(f"the amdgpu runtime cannot pass an argument of type {t!r} to a kernel")
    return fmt, struct.calcsize(fmt)


def kernarg_layout(argtypes: Sequence) -> list[tuple[int, int]]:
    """``(offset, size)`` of each argument in the kernarg segment (natural alignment, as the back end)."""
    layout, offset = [], 0
    for t in argtypes:
        fmt, align = _field(t)
        offset = -(-offset // align) * align
        size = struct.calcsize("=" + fmt)
        layout.append((offset, size))
        offset += size
    return layout


def pack_kernargs(argtypes: Sequence, values: Sequence) -> bytes:
    """The kernarg buffer: each argument's fields (an array's ``(pointer, shape..., strides...)``)
    at its :func:`kernarg_layout` offset; ``values`` holds an array's fields as a tuple."""
    layout = kernarg_layout(argtypes)
    end = layout[-1][0] + layout[-1][1] if layout else 0
    out = bytearray(-(-end // 8) * 8)
    for t, (offset, _), value in zip(argtypes, layout, values):
        fmt, _ = _field(t)
        fields = value if isinstance(t, T.ArrayType) else (value,)
        struct.pack_into("<" + fmt, out, offset, *fields)
    return bytes(out)


# -- the HIP runtime -----------------------------------------------------------------------
_BUFFER_POINTER, _BUFFER_SIZE, _END = 1, 2, 3
_HOST_TO_DEVICE, _DEVICE_TO_HOST = 1, 2


@functools.cache
def hip_library() -> ctypes.CDLL:
    """The HIP runtime (``libamdhip64``): ``$ROCM_PATH/lib``, ``/opt/rocm/lib``, then the loader's path."""
    roots = [*ROCmSettings.from_env().roots]
    candidates = [str(r / "lib" / "libamdhip64.so") for r in (*roots, Path("/opt/rocm"))]
    candidates += ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"]
    for name in candidates:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise ToolNotFoundError("no HIP runtime: libamdhip64 was not found (install ROCm, or Debian's libamdhip64-5, "
                            "and set ROCM_PATH); looked for " + ", ".join(candidates) + ". The code object "
                            "itself needs none: code_object() builds it on any machine")


def _check(result: int, call: str) -> None:
    if result != 0:
        raise ToolchainError(f"HIP error {result} in {call}")


def device_count() -> int:
    """AMD GPUs the HIP runtime sees (0 without one)."""
    hip = hip_library()
    count = ctypes.c_int(0)
    if hip.hipInit(0) != 0 or hip.hipGetDeviceCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


@functools.cache
def _heap(hip: ctypes.CDLL) -> tuple[int, int]:
    """``(device address, bytes)`` of the process's heap for AD tapes (``GPUC_DEVICE_HEAP``, allocated once)."""
    size = RuntimeSettings.from_env().device_heap
    ptr = ctypes.c_void_p()
    _check(hip.hipMalloc(ctypes.byref(ptr), ctypes.c_size_t(size)), "hipMalloc (the AD tape heap)")
    return ptr.value or 0, size


def _give_heap(hip: ctypes.CDLL, module: ctypes.c_void_p) -> None:
    """Point the module's tape heap (:mod:`gpucompiler.targets.amdgpu.heap`), if it has one, at the
    process's heap, all of it free: a launch's tapes live as long as the launch."""
    address, nbytes = ctypes.c_void_p(), ctypes.c_size_t()
    if hip.hipModuleGetGlobal(ctypes.byref(address), ctypes.byref(nbytes), module, HEAP.encode()) != 0:
        return  # no tape grows on the heap in this kernel
    base, size = _heap(hip)
    header = struct.pack("<QQQ", base, size, 0)
    _check(hip.hipMemcpy(address, ctypes.c_char_p(header), ctypes.c_size_t(len(header)), _HOST_TO_DEVICE),
           "hipMemcpy (the AD tape heap)")


def launch_code(code: CodeObject, grid, block, *args: Any) -> None:
    """Run ``code`` on the first ROCm device with ``grid`` blocks of ``block`` threads (ints or
    triples); NumPy array arguments are copied to the device and back."""
    hip = hip_library()
    if device_count() == 0:
        raise ToolNotFoundError("no ROCm device is visible to the HIP runtime: the amdgpu code object "
                                f"for {code.target.arch} cannot run on this machine")
    grid3, block3 = (tuple(v) + (1,) * (3 - len(v)) if isinstance(v, tuple) else (v, 1, 1) for v in (grid, block))
    module, fn = ctypes.c_void_p(), ctypes.c_void_p()
    _check(hip.hipModuleLoadData(ctypes.byref(module), ctypes.c_char_p(code.image)), "hipModuleLoadData")
    _check(hip.hipModuleGetFunction(ctypes.byref(fn), module, code.name.encode()), "hipModuleGetFunction")
    staged, values = [], []
    try:
        for t, a in zip(code.argtypes, args):
            if isinstance(t, T.ArrayType):
                if not isinstance(a, np.ndarray):
                    raise LaunchError(f"the HIP runtime takes NumPy arrays (copied to the device and back), got "
                                      f"{type(a).__name__}")
                host = np.ascontiguousarray(a)  # a strided view is staged whole, in order
                ptr = ctypes.c_void_p()
                _check(hip.hipMalloc(ctypes.byref(ptr), ctypes.c_size_t(max(host.nbytes, 1))), "hipMalloc")
                staged.append((a, host, ptr))
                _check(hip.hipMemcpy(ptr, ctypes.c_void_p(host.ctypes.data), ctypes.c_size_t(host.nbytes),
                                     _HOST_TO_DEVICE), "hipMemcpy")
                values.append((ptr.value or 0, *host.shape, *host.strides))
            else:
                values.append(a)
        _give_heap(hip, module)
        buffer = pack_kernargs(code.argtypes, values)
        raw = ctypes.create_string_buffer(buffer, len(buffer))
        size = ctypes.c_size_t(len(buffer))
        extra = (ctypes.c_void_p * 5)(_BUFFER_POINTER, ctypes.cast(raw, ctypes.c_void_p), _BUFFER_SIZE,
                                      ctypes.cast(ctypes.byref(size), ctypes.c_void_p), _END)
        _check(hip.hipModuleLaunchKernel(fn, *grid3, *block3, 0, None, None, extra), "hipModuleLaunchKernel")
        _check(hip.hipDeviceSynchronize(), "hipDeviceSynchronize")
        for a, host, ptr in staged:
            if not a.flags.writeable:
                continue
            _check(hip.hipMemcpy(ctypes.c_void_p(host.ctypes.data), ptr, ctypes.c_size_t(host.nbytes),
                                 _DEVICE_TO_HOST), "hipMemcpy")
            if host is not a:
                a[...] = host
    finally:
        for _, _, ptr in staged:
            hip.hipFree(ptr)
        hip.hipModuleUnload(module)


class HIPRuntime:
    """The runtime of AMD GPU kernels (:class:`~gpucompiler.runtime.launchers.Runtime`): HIP."""

    def stream_handle(self, stream) -> int:
        if stream is None or isinstance(stream, int):
            return stream or 0
        raise LaunchError(f"the HIP runtime takes a stream as an int handle (hipStream_t), got {stream!r}")

    def launch(self, kernel, grid, block, hstream: int, args) -> None:
        """Compile ``kernel`` for its AMD target and run it on the default stream (``hstream`` 0 only)."""
        if hstream:
            raise LaunchError("the HIP runtime launches on the default stream only")
        launch_code(code_object(kernel, kernel.argument_types(args), kernel.target), grid, block, *args)

    def forget(self, kernel) -> None:
        """Nothing is kept per kernel (the compile cache holds the code objects)."""


HIP = HIPRuntime()
register_runtime(AMDGPUTarget, HIP)
