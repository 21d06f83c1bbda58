"""Launching kernels on NVIDIA GPUs through the CUDA driver API (``cuda-bindings``).

* The context is the current one, else device 0's primary context (the one
  CuPy, PyTorch and Numba use), made current on first use.
* One PTX module per (kernel, argument types, compute capability), loaded
  once per context (``cuModuleLoadData``) and its function looked up once.
* Arguments: an object with ``__cuda_array_interface__`` (CuPy, PyTorch,
  Numba...) is used in place; a NumPy array is copied to the device before
  the launch and back after it (the launch then synchronises its stream);
  scalars go by value. Parameter buffers have the layout the kernel's PTX
  declares: an array is ``{ptr, shape[ndim], strides[ndim] (bytes)}``.
* Every failing driver call raises :class:`~gpucompiler.errors.CudaError`
  carrying the CUDA error name (``CUDA_ERROR_ILLEGAL_ADDRESS``...).

Launches are asynchronous on the given stream (default: the legacy default
stream, handle 0), like CUDA; synchronise before reading device results.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from .. import types as T
from ..errors import CudaError, LaunchError, ToolchainError
from ..kernel import argument_type, cuda_array_type
from .grid import array_param, param_array, scalar_param

_PY = {int: T.int64, float: T.float64, bool: T.boolean}
_lock = threading.Lock()
_state: dict = {"init": False}
_capability: dict = {}   # context handle -> (major, minor)
_functions: dict = {}    # (kernel id, argtypes, context) -> (CUfunction, module, kernel)


def _driver():
    """The ``cuda.bindings.driver`` module (``cuda.cuda`` on cuda-python < 12.6)."""
    try:
        from cuda.bindings import driver
    except ImportError:
        try:
            from cuda import cuda as driver  # type: ignore[no-redef]
        except ImportError:
            raise ToolchainError("launching on a GPU needs cuda-bindings (`pip install cuda-bindings`) "
                                 "and an NVIDIA driver; use k[grid, block, 'cpu'] for the CPU grid "
                                 "emulation") from None
    return driver


def check(result, call: str = ""):
    """Unpack a ``(CUresult, *values)`` tuple; raise :class:`CudaError` unless it is success."""
    err, rest = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    code = int(err)
    if code != 0:
        d = _driver()
        name, message = f"CUDA_ERROR_{code}", ""
        try:
            e, raw = d.cuGetErrorName(err)
            if int(e) == 0 and raw:
                name = raw.decode() if isinstance(raw, bytes) else str(raw)
            e, raw = d.cuGetErrorString(err)
            if int(e) == 0 and raw:
                message = raw.decode() if isinstance(raw, bytes) else str(raw)
        except Exception:  # noqa: BLE001 - naming the error must not hide it
            pass
        raise CudaError(name, message, call, code)
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


# -- context and device ------------------------------------------------------------
def current_context() -> int:
    """The current CUDA context handle (device 0's primary context if none is current)."""
    d = _driver()
    if not _state["init"]:
        with _lock:
            if not _state["init"]:
                try:
                    result = d.cuInit(0)
                except Exception as exc:  # noqa: BLE001 - e.g. libcuda.so missing
                    raise ToolchainError(f"the CUDA driver could not be loaded ({type(exc).__name__}: "
                                         f"{exc}); use k[grid, block, 'cpu'] for the CPU grid "
                                         "emulation") from exc
                check(result, "cuInit")
                _state["init"] = True
    ctx = check(d.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(ctx) == 0:
        dev = check(d.cuDeviceGet(0), "cuDeviceGet")
        ctx = check(d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return int(ctx)


def capability(ctx: int | None = None) -> tuple[int, int]:
    """Compute capability ``(major, minor)`` of the device of context ``ctx`` (current by default)."""
    ctx = current_context() if ctx is None else ctx
    cap = _capability.get(ctx)
    if cap is None:
        d = _driver()
        dev = check(d.cuCtxGetDevice(), "cuCtxGetDevice")
        attr = d.CUdevice_attribute
        major = check(d.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
        minor = check(d.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
        cap = _capability[ctx] = (int(major), int(minor))
    return cap


def device_name() -> str:
    d = _driver()
    current_context()
    dev = check(d.cuCtxGetDevice(), "cuCtxGetDevice")
    raw = check(d.cuDeviceGetName(256, dev), "cuDeviceGetName")
    return raw.split(b"\0", 1)[0].decode() if isinstance(raw, bytes) else str(raw)


def stream_handle(stream) -> int:
    """An ``int`` CUstream from ``None`` (default stream), an int, CuPy/PyTorch/Numba streams,
    ``CUstream`` or any object with ``__cuda_stream__``."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        return int((proto() if callable(proto) else proto)[1])
    for attr in ("ptr", "cuda_stream", "handle"):
        value = getattr(stream, attr, None)
        if value is not None:
            return int(getattr(value, "value", value) or 0)
    try:
        return int(stream)
    except (TypeError, ValueError):
        raise LaunchError(f"cannot use {stream!r} as a CUDA stream: pass None, an int handle, a CuPy, "
                          "PyTorch or Numba stream, or 'cpu' for the CPU grid emulation") from None


# -- modules and functions -----------------------------------------------------------
def load_function(kernel, argtypes, ctx: int):
    """The ``CUfunction`` of ``kernel`` for ``argtypes`` in context ``ctx`` (compiled and loaded once)."""
    key = (id(kernel), argtypes, ctx)
    hit = _functions.get(key)
    if hit is None:
        d = _driver()
        ptx, job = kernel.compile_ptx(argtypes, capability(ctx))
        module = check(d.cuModuleLoadData(ptx.encode() + b"\0"), "cuModuleLoadData")
        fn = check(d.cuModuleGetFunction(module, kernel.symbol.encode()), "cuModuleGetFunction")
        hit = _functions[key] = (fn, module, kernel)
    return hit[0]


# -- arguments --------------------------------------------------------------------------
class _Copy:
    """A NumPy array staged in device memory for one launch."""

    __slots__ = ("host", "staged", "dptr", "nbytes")

    def __init__(self, host, staged, dptr, nbytes):
        self.host, self.staged, self.dptr, self.nbytes = host, staged, dptr, nbytes


def marshal(args, alloc=None):
    """``(argtypes, buffers, copies)`` for a launch.

    ``buffers`` are the parameter buffers in argument order; ``copies`` the
    NumPy arrays to stage, whose buffers point at device memory from
    ``alloc(nbytes) -> int`` (called only for NumPy arrays).
    """
    types, buffers, copies = [], [], []
    for k, a in enumerate(args):
        t = _PY.get(type(a))
        if t is not None:
            types.append(t)
            buffers.append(scalar_param(a, t))
            continue
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai is not None:
            t = cuda_array_type(cai)
            if t is None:
                argument_type(a, f"#{k}")  # raises the typed error
            shape = tuple(cai["shape"])
            strides = cai.get("strides") or _c_strides(shape, t.dtype.itemsize)
            types.append(t)
            buffers.append(array_param(int(cai["data"][0]), shape, strides))
            continue
        t = argument_type(a, f"#{k}")
        types.append(t)
        if isinstance(t, T.ArrayType):
            staged = np.ascontiguousarray(a)
            t = T.ArrayType(t.dtype, t.ndim, "C")
            types[-1] = t
            dptr = alloc(staged.nbytes) if staged.nbytes else 0
            copies.append(_Copy(a, staged, dptr, staged.nbytes))
            buffers.append(array_param(dptr, staged.shape, staged.strides))
        else:
            buffers.append(scalar_param(a.item() if hasattr(a, "item") else a, t))
    return tuple(types), buffers, copies


def _c_strides(shape, itemsize):
    strides, acc = [], itemsize
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= n
    return tuple(strides)


def launch(kernel, grid, block, stream, args) -> None:
    """Launch ``kernel`` on the GPU; see the module docstring."""
    d = _driver()
    ctx = current_context()
    hstream = stream_handle(stream)
    allocated = []

    def alloc(nbytes):
        ptr = int(check(d.cuMemAlloc(nbytes), "cuMemAlloc"))
        allocated.append(ptr)
        return ptr

    try:
        argtypes, buffers, copies = marshal(args, alloc)
        code = kernel.py_func.__code__
        if len(argtypes) != code.co_argcount:
            raise LaunchError(f"kernel {kernel.py_func.__qualname__} takes {code.co_argcount} "
                              f"arguments, got {len(argtypes)}")
        fn = load_function(kernel, argtypes, ctx)
        for c in copies:
            if c.nbytes:
                check(d.cuMemcpyHtoDAsync(c.dptr, c.staged.ctypes.data, c.nbytes, hstream), "cuMemcpyHtoDAsync")
        params = param_array(buffers)
        check(d.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, hstream,
                               ctypes.addressof(params), 0), "cuLaunchKernel")
        if copies:
            for c in copies:
                if c.nbytes:
                    check(d.cuMemcpyDtoHAsync(c.staged.ctypes.data, c.dptr, c.nbytes, hstream),
                          "cuMemcpyDtoHAsync")
            check(d.cuStreamSynchronize(hstream), "cuStreamSynchronize")
            for c in copies:
                if c.staged is not c.host:
                    c.host[...] = c.staged
    finally:
        for ptr in allocated:
            d.cuMemFree(ptr)


def synchronize() -> None:
    """Wait for all work of the current context."""
    current_context()
    check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")
