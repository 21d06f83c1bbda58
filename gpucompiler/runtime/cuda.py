"""Launching kernels on NVIDIA GPUs through the CUDA driver API (``cuda-bindings``).

* The context is the current one, else device 0's primary context (the one
  CuPy, PyTorch and Numba use), made current on first use. A device chosen
  with :mod:`.devices` (``k[grid, block, Device(1)]``, ``with Device(1):``)
  launches in its primary context, pushed for the launch when another is
  current; where the process sees several devices, an array argument on
  another device than the launch's is a ``DeviceMismatchError``
  (``cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)``, per launch).
* One PTX module per (kernel, argument types, compute capability), loaded
  once per context (``cuModuleLoadData``) and its function looked up once.
* Arguments: an object with ``__cuda_array_interface__`` (CuPy, PyTorch,
  Numba...) is used in place; a NumPy array is copied to the device before
  the launch and back after it (the launch then synchronises its stream);
  scalars go by value. An object with ``__dlpack__`` only (JAX...) is read
  as one of these by its device (:mod:`.dlpack`). Parameter buffers have the layout the kernel's PTX
  declares: an array is ``{ptr, shape[ndim], strides[ndim] (bytes)}``.
* Every failing driver call raises :class:`~gpucompiler.errors.CudaError`
  carrying the CUDA error name (``CUDA_ERROR_ILLEGAL_ADDRESS``...).

Launches whose arguments are all Python scalars, NumPy scalars (float64,
float32, int64, int32, bool) and ``__cuda_array_interface__`` arrays take a
fast path: a :class:`Launcher` per (kernel, context, argument
signature) holds the function handle, a ``struct`` packer writing every
parameter into one preallocated buffer and the ``void*[]`` pointing into it.
The signature key holds each scalar's Python type and each array's typestr,
rank, contiguity and writability: whatever changes the argument types changes
the key, so it compiles a new specialisation. A CuPy array is read by its
attributes (``data.ptr``, ``dtype``, ``shape``, ``strides``), not by its
``__cuda_array_interface__``, a dict CuPy builds at each access; it names
CuPy's current stream, as that dict does. A launch configuration
(``k[grid, block]``) keeps its last launcher (:class:`BoundLaunch`): a launch
with the same signature in the same context is one signature tuple compared,
one ``pack_into`` and ``cuLaunchKernel``, with no driver query. The context is
the one the driver last reported current to this thread; a launch refused
because another library made another context current since is asked again and
retried (a refused launch ran nothing), so switching contexts stays correct.
A launch object that launched many times through its bound launcher gets a native entry over it
(:meth:`BoundLaunch.native`, :mod:`.launch_entry`): the same checks, the packing and ``cuLaunchKernel``
(libcuda's C function, not the binding's) in compiled code, the Python launch for anything else.

Launches are asynchronous on the given stream, like CUDA; synchronise before
reading device results. Without a stream, a launch goes to the stream its
arrays' producers name (``__cuda_array_interface__`` version 3's ``stream``:
CuPy names its current stream), read from the arrays rather than asked of the
driver; arrays naming different streams make the launch wait for the others;
none named: the legacy default stream (handle 0). A stream given is the
launch's: the caller orders it after the arrays' producers.

Device heap: a kernel whose PTX calls ``malloc`` (the AD tape of a loop whose
trip count is known only at run time) allocates from the context's device
heap, 8 MiB by default in CUDA. Before the first launch of such a kernel in a
context, the heap limit (``CU_LIMIT_MALLOC_HEAP_SIZE``) is raised to
:data:`DEFAULT_DEVICE_HEAP` when it is below it, once per context; the
environment variable ``GPUC_DEVICE_HEAP`` (bytes, or with a ``K``/``M``/``G``
suffix) sets another size (:class:`gpucompiler.settings.RuntimeSettings`, read on
first use). CUDA refuses the change once a
kernel using ``malloc`` has run in the context: the launch then goes on with
the heap as it is, after a ``RuntimeWarning``. A thread whose tape ``malloc``
returns null gives back the block it was growing, sets its module's flag and
exits (:mod:`.device_heap`): after a launch of such a kernel the runtime
waits for it, reads the flag and raises :class:`~gpucompiler.errors.DeviceHeapError`
saying how large the heap is and how to raise it; the context stays usable
(these launches are therefore synchronous). A launch tape defers these checks
while it records and replays (:func:`.device_heap.deferring`): they are read
at the end of its recording and of its ``backward``, at :func:`synchronize`,
:func:`check_heap` and a launch that copies results back to the host, each
stream waited for once. Once a kernel calling ``malloc``
has been loaded, a trap (``CUDA_ERROR_LAUNCH_FAILED`` or
``CUDA_ERROR_ILLEGAL_INSTRUCTION``: a tape's overrun or size check) reported
by any later driver call also raises :class:`DeviceHeapError`; the context is
lost then.
"""

from __future__ import annotations

import ctypes
import functools
import re
import struct
import sys
import threading
from typing import Any, ClassVar
import warnings

import attrs
import numpy as np

from .. import types as T
from ..errors import (CudaError, DeviceHeapError, DeviceMismatchError, GPUCompilerError, LaunchError, ToolchainError,
                      for_user)
from ..settings import DEFAULT_DEVICE_HEAP as DEFAULT_DEVICE_HEAP, RuntimeSettings, debug_tracebacks
from .arguments import SCALAR_TYPES, TYPESTR, argument_type, cuda_array_type, is_contiguous
from . import dlpack
from .device_heap import after_launch, check_pending, flag_address
from .devices import chosen_device, current_device
from .launch_entry import (NativeLaunch, StreamMode, compiled, current_stream, driver_launch, invalidate, is_valid,
                           plan_of, supported)
from .pyentry import Guard
from ..targets.ptx import PTXTarget
from .params import array_param, param_array, scalar_param
from .pointers import pointer_ordinal
from .launchers import register_runtime

_lock = threading.Lock()
_state: dict = {"init": False}
_capability: dict = {}   # context handle -> (major, minor)
_functions: dict = {}    # (kernel id, argtypes, context) -> (CUfunction, module, kernel, heap flag or None)
_launchers: dict = {}    # (kernel id, context, signature key) -> Launcher
_heap_checked: set = set()  # contexts whose device heap limit was checked
_contexts: dict = {}     # device ordinal -> its primary context (a device chosen with runtime.devices)
_natives: dict = {}      # kernel id -> the words of the native launch entries made for it (BoundLaunch.native)

#: what a trap on the device reports (CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_LAUNCH_FAILED)
_TRAP_CODES = frozenset({715, 719})


def settings() -> RuntimeSettings:
    """The runtime's settings, read from the environment on first use."""
    s = _state.get("settings")
    if s is None:
        s = _state["settings"] = RuntimeSettings.from_env()
    return s


def calls_malloc(ptx: str) -> bool:
    """Whether a PTX module calls the device's ``malloc`` (declared ``.extern .func ... malloc``)."""
    return re.search(r"^\s*\.extern\s+\.func\b[^\n]*\bmalloc\b", ptx, re.M) is not None


def ensure_device_heap(d, ctx: int) -> None:
    """Raise context ``ctx``'s device heap limit to the configured size if it is below it (once per context)."""
    if ctx in _heap_checked:
        return
    _heap_checked.add(ctx)
    want = settings().device_heap
    limit = d.CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE
    have = int(check(d.cuCtxGetLimit(limit), "cuCtxGetLimit"))
    if have >= want:
        return
    err = d.cuCtxSetLimit(limit, want)[0]
    if int(err):
        name = d.cuGetErrorName(err)[1]
        name = name.decode() if isinstance(name, bytes) else str(name)
        warnings.warn(f"could not raise the CUDA device heap from {have} to {want} bytes ({name}): a kernel "
                      "calling malloc already ran in this context; set GPUC_DEVICE_HEAP or launch "
                      "gpucompiler kernels first", RuntimeWarning, stacklevel=3)


def _driver():
    """The ``cuda.bindings.driver`` module (``cuda.cuda`` on cuda-python < 12.6)."""
    try:
        from cuda.bindings import driver  # pyright: ignore[reportMissingImports]  (the optional cuda extra)
    except ImportError:
        try:
            from cuda import cuda as driver  # type: ignore[no-redef]
        except ImportError:
            raise ToolchainError("launching on a GPU needs cuda-bindings (`pip install cuda-bindings`) "
                                 "and an NVIDIA driver; use k[grid, block, 'cpu'] for the CPU grid "
                                 "emulation") from None
    return driver


def check(result, call: str = "") -> Any:
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
        except Exception:
            pass
        if code in _TRAP_CODES and _heap_checked:
            heap = settings().device_heap
            raise DeviceHeapError(name, f"{message}; a kernel that allocates on the device (an AD tape that "
                                  f"grows with a loop's trip count) trapped, most likely because the device "
                                  f"heap of {heap} bytes ran out: set GPUC_DEVICE_HEAP to more (e.g. "
                                  f"GPUC_DEVICE_HEAP={max(2 * heap, 1 << 30) >> 20}M) before the first launch "
                                  "in a new process; this CUDA context cannot be used any more", call, code)
        raise CudaError(name, message, call, code)
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


# -- context and device ------------------------------------------------------------
def current_context() -> int:
    """The current CUDA context handle (device 0's primary context if none is current)."""
    d = initialised()
    ctx = check(d.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(ctx) == 0:
        dev = check(d.cuDeviceGet(0), "cuDeviceGet")
        ctx = check(d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return int(ctx)


class _Thread(threading.local):
    """Per thread, the context the driver last said is current (see :class:`BoundLaunch`)."""

    ctx: int | None = None


def initialised():
    """The driver, initialised (``cuInit``) once per process."""
    d = _state.get("driver")
    if d is not None:
        return d
    d = _driver()
    with _lock:
        if not _state["init"]:
            try:
                result = d.cuInit(0)
            except Exception as exc:
                raise ToolchainError(f"the CUDA driver could not be loaded ({type(exc).__name__}: "
                                     f"{exc}); use k[grid, block, 'cpu'] for the CPU grid "
                                     "emulation") from exc
            check(result, "cuInit")
            _state["init"] = True
        _state.setdefault("thread", _Thread())
        _state["driver"] = d
    return d


def device_context(d, ordinal: int) -> int:
    """The primary context of device ``ordinal`` (retained once per process)."""
    ctx = _contexts.get(ordinal)
    if ctx is None:
        count = device_count(d)
        if ordinal >= count:
            raise LaunchError(f"there is no device {ordinal}: this process sees {count} CUDA device(s) "
                              f"(numbered 0 to {count - 1}; CUDA_VISIBLE_DEVICES may hide others)")
        dev = check(d.cuDeviceGet(ordinal), "cuDeviceGet")
        ctx = _contexts[ordinal] = int(check(d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain"))
    return ctx


def device_count(d) -> int:
    """How many CUDA devices this process sees (asked once)."""
    count = _state.get("devices")
    if count is None:
        count = _state["devices"] = int(check(d.cuDeviceGetCount(), "cuDeviceGetCount"))
    return count


def check_devices(d, args, names, ctx: int) -> None:
    """A :class:`DeviceMismatchError` when an array argument's memory is on another device than context
    ``ctx``'s (asked of the driver per launch, only where the process sees several devices)."""
    if device_count(d) < 2:
        return
    launch_dev = int(check(d.cuCtxGetDevice(), "cuCtxGetDevice"))
    for a, name in zip(args, names):
        cai = getattr(a, "__cuda_array_interface__", None)
        ptr = int(cai["data"][0]) if cai is not None else 0
        if not ptr:
            continue
        where = pointer_ordinal(d, ptr)
        if where is not None and where != launch_dev:  # None: not device memory (host, managed): not checked
            raise DeviceMismatchError(f"argument {name!r} is an array on device {where} but the launch runs "
                                      f"on device {launch_dev}: launch on device {where} "
                                      f"(k[grid, block, Device({where})] or `with Device({where}):`) "
                                      f"or copy the array to device {launch_dev} first")


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
        value: Any = proto() if callable(proto) else proto
        return int(value[1])
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
        ptx, _ = kernel.compile(argtypes, attrs.evolve(kernel.target, capability=capability(ctx)))
        if calls_malloc(ptx):
            ensure_device_heap(d, ctx)
        module = check(d.cuModuleLoadData(ptx.encode() + b"\0"), "cuModuleLoadData")
        fn = check(d.cuModuleGetFunction(module, kernel.symbol.encode()), "cuModuleGetFunction")
        flag = flag_address(d, module) if calls_malloc(ptx) else None
        hit = _functions[key] = (fn, module, kernel, flag)
    return hit[0]


def heap_flag(kernel, argtypes, ctx: int) -> int | None:
    """The device address of the heap-exhaustion flag of ``kernel``'s loaded module (see
    :mod:`.device_heap`), or None when its tape never allocates."""
    hit = _functions.get((id(kernel), argtypes, ctx))
    return hit[3] if hit is not None else None


def forget(kernel) -> None:
    """Drop ``kernel``'s loaded functions and launchers (a global it read was rebound): the next
    launch loads freshly compiled code. Loaded modules stay until their context is destroyed."""
    for key in [k for k in _functions if k[0] == id(kernel)]:
        del _functions[key]
    for key in [k for k in _launchers if k[0] == id(kernel)]:
        del _launchers[key]
    for words in _natives.pop(id(kernel), ()):
        invalidate(words)


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
        t = SCALAR_TYPES.get(type(a))
        if t is not None:
            types.append(t)
            buffers.append(scalar_param(a, t))
            continue
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai is not None:
            t = cuda_array_type(cai)
            if t is None:
                argument_type(a, f"#{k}")  # raises the typed error
            assert t is not None
            shape = tuple(cai["shape"])
            strides = cai.get("strides") or _c_strides(shape, t.dtype.itemsize)
            types.append(t)
            buffers.append(array_param(int(cai["data"][0]), shape, strides))
            continue
        t = argument_type(a, f"#{k}")
        types.append(t)
        if isinstance(t, T.ArrayType):
            a = np.asarray(a)  # an array-like (buffer, __array_interface__) as the array that views it
            staged = np.ascontiguousarray(a)
            t = T.ArrayType(t.dtype, t.ndim, "C", t.readonly)
            types[-1] = t
            assert alloc is not None, "NumPy arrays are staged through alloc"
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
    fast_launch(kernel, grid, block, stream_handle(stream), args)


# -- the fast path ----------------------------------------------------------------------
_SCALAR_FORMAT = {T.float64: "d", T.float32: "f4x", T.int64: "q", T.int32: "i4x", T.boolean: "?7x"}
#: the NumPy scalar types launches pack as they are (their frontend types have a ``_SCALAR_FORMAT``)
_NUMPY_SCALARS = frozenset({np.float64, np.float32, np.int64, np.int32, np.bool_})
_LAYOUTS: dict = {}  # (typestr, shape, readonly[, strides]) -> (signature key item, strides in bytes) or None
_CUPY_LAYOUTS: dict = {}  # a CuPy array's (dtype, shape, strides) -> (signature key item, (*shape, *strides)) or None
#: the ``cupy`` module :func:`signature` last found in ``sys.modules`` (None: none), its ``ndarray`` type (None:
#: arrays read by their ``__cuda_array_interface__``) and its ``cuda.get_current_stream``
_CUPY_SEEN: tuple = (None, None, None)
#: what a launch reports when its function belongs to another context than the current one (none
#: current, another one made current by another library, a destroyed one): the thread's context is asked again
_CONTEXT_CODES = frozenset({201, 400, 709})


def signature(args):
    """``(key, values, stream)``: the argument signature, the flat parameter values and the stream the
    arrays' producers name (``__cuda_array_interface__``'s ``stream``, as given; None when none names one),
    or ``None`` when an argument is neither a Python or NumPy (float64, float32, int64, int32, bool) scalar
    nor a ``__cuda_array_interface__`` array of a known type, or when two arrays name different streams.

    A CuPy array (its exact type, CuPy already imported) is read by its attributes (``data.ptr``, ``dtype``,
    ``shape``, ``strides``): its ``__cuda_array_interface__`` builds a new dict at each access. It names
    CuPy's current stream, as that dict would (asked once a launch)."""
    key, values, stream, current = [], [], None, None
    cupy = sys.modules.get("cupy")
    seen = _CUPY_SEEN
    if seen[0] is not cupy:
        seen = _see_cupy(cupy)
    ndarray = seen[1]
    for a in args:
        tp = type(a)
        if tp is ndarray:
            try:
                found = _CUPY_LAYOUTS[(a.dtype, a.shape, a.strides)]
            except KeyError:
                found = _cupy_layout(a)
            if found is None:
                return None
            if current is None:  # the stream its __cuda_array_interface__ would name: CuPy's current one
                current = seen[2]().ptr or 1
                if stream is None:
                    stream = current
            if current != stream:
                return None
            key.append(found[0])
            values.append(a.data.ptr)
            values += found[1]
            continue
        if tp is float or tp is int or tp is bool:
            key.append(tp)
            values.append(a)
            continue
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai is None:
            if tp not in _NUMPY_SCALARS:
                return None
            key.append(tp)  # a NumPy scalar: its type is its frontend type
            values.append(a)
            continue
        shape, strides, data = cai["shape"], cai.get("strides"), cai["data"]
        layout = (cai["typestr"], shape, data[1]) if strides is None else (cai["typestr"], shape, data[1], strides)
        try:
            found = _LAYOUTS[layout]
        except (KeyError, TypeError):  # not seen yet, or a list where a tuple was expected
            found = _array_layout(*layout)
        if found is None:
            return None
        named = cai.get("stream")
        if named is not None:
            if stream is None:
                stream = named
            elif named != stream:
                return None
        key.append(found[0])
        values.append(data[0])
        values.extend(shape)
        values.extend(found[1])
    return tuple(key), values, stream


def _cupy_layout(a):
    """The signature key item of a CuPy array (writable: CuPy has no read-only arrays) and its shape and strides
    in bytes, one tuple, as they go among the parameter values; remembered by its ``(dtype, shape, strides)``."""
    dtype, shape, strides = a.dtype, a.shape, a.strides
    found = _array_layout(dtype.str, shape, False, strides)
    if found is not None:
        found = (found[0], (*shape, *found[1]))
    if len(_CUPY_LAYOUTS) < 4096:
        _CUPY_LAYOUTS[(dtype, shape, strides)] = found
    return found


def _see_cupy(cupy) -> tuple:
    """Remember ``cupy`` (the module ``sys.modules`` holds now, or None) as :data:`_CUPY_SEEN` says."""
    global _CUPY_SEEN
    ndarray = getattr(cupy, "ndarray", None)
    current = getattr(getattr(cupy, "cuda", None), "get_current_stream", None)
    _CUPY_SEEN = (cupy, ndarray if current is not None else None, current)
    return _CUPY_SEEN


def producer_streams(args) -> list[int]:
    """The stream handles the array arguments' producers name (``__cuda_array_interface__`` version 3:
    1 is the legacy default stream, handle 0 here; 2 the per-thread default stream), each once, in order."""
    found = []
    for a in args:
        cai = getattr(a, "__cuda_array_interface__", None)
        named = cai.get("stream") if isinstance(cai, dict) else None
        if named is not None and producer_handle(named) not in found:
            found.append(producer_handle(named))
    return found


def producer_handle(named) -> int:
    """The stream handle of ``__cuda_array_interface__``'s ``stream`` (not None): 1 is the legacy default
    stream (handle 0), 2 the per-thread default stream, another int a stream's handle."""
    if type(named) is not int or named < 0:
        raise LaunchError(f"an array's __cuda_array_interface__ names stream {named!r}: a stream there is None "
                          "or an int handle (1: the legacy default stream, 2: the per-thread one)")
    return 0 if named == 1 else named


def _array_layout(typestr, shape, readonly, strides=None):
    """The signature key item ``(typestr, ndim, contiguous, readonly)`` and the strides in bytes of an array
    described by ``__cuda_array_interface__`` (remembered for the next launch); None for an unknown typestr."""
    dtype = TYPESTR.get(typestr)
    if dtype is None:
        return None
    shape = tuple(shape)
    if strides is None:
        found = ((typestr, len(shape), True, bool(readonly)), _c_strides(shape, dtype.itemsize))
    else:
        strides = tuple(strides)
        found = ((typestr, len(shape), is_contiguous(shape, strides, dtype), bool(readonly)), strides)
    if len(_LAYOUTS) < 4096:
        _LAYOUTS[(typestr, shape, readonly) if strides is None else (typestr, shape, readonly, strides)] = found
    return found


class Launcher:
    """One (kernel, context, argument signature): function handle and parameter layout, the
    ``void*[]`` and the parameter buffer it points into built once and refilled by each launch."""

    __slots__ = ("fn", "ctx", "key", "packer", "buffer", "params", "params_address", "free", "launch_kernel",
                 "heap", "state", "thread")

    def __init__(self, d, fn, argtypes, flag: int | None = None, ctx: int = 0, key: tuple = (), name: str = ""):
        fmt = "<" + "".join(_SCALAR_FORMAT[t] if not isinstance(t, T.ArrayType) else "q" * (1 + 2 * t.ndim)
                            for t in argtypes)
        self.fn, self.ctx, self.key, self.packer = fn, ctx, key, struct.Struct(fmt)
        self.buffer = (ctypes.c_int64 * max(self.packer.size // 8, 1))()
        base, offsets, at = ctypes.addressof(self.buffer), [], 0
        for t in argtypes:
            offsets.append(base + at)
            at += 8 * (1 + 2 * t.ndim) if isinstance(t, T.ArrayType) else 8
        self.params = (ctypes.c_void_p * max(len(argtypes), 1))(*offsets)
        self.params_address = ctypes.addressof(self.params)
        #: ``[True]`` while no launch is packing into ``buffer`` and handing it to the driver (which copies it
        #: during the call): a launch takes the token with ``pop()`` (atomic; an ``IndexError`` when another
        #: launch holds it, of another thread or one the same thread started meanwhile) and puts it back after.
        #: Cheaper than a lock's non-blocking acquire and release.
        self.free = [True]
        self.launch_kernel = d.cuLaunchKernel
        #: (driver, heap flag address, kernel name) of a kernel whose tape allocates: checked after every
        #: launch (:func:`.device_heap.after_launch`)
        self.heap = (d, flag, name) if flag is not None else None
        #: the runtime state it was made under (a launch reusing it checks it is still the current one)
        self.state = _state
        #: per thread, the context the driver last said is current (``ctx``, None before the first launch)
        self.thread = _state["thread"]

    def __call__(self, dims, stream, hstream: int, values) -> int:
        """Launch on ``dims`` (grid x, y, z, block x, y, z, shared bytes) and ``stream`` (the handle
        ``hstream`` as the driver takes it); the CUDA error code (0: launched)."""
        free = self.free
        try:
            token = free.pop()
        except IndexError:  # another launch is using the shared buffer: private buffers
            token = None
        if token is not None:
            try:
                self.packer.pack_into(self.buffer, 0, *values)
                err = self.launch_kernel(self.fn, *dims, stream, self.params_address, 0)[0]
            finally:
                free.append(token)
        else:
            buffer = ctypes.create_string_buffer(self.packer.size + 8)
            self.packer.pack_into(buffer, 0, *values)
            base, offsets = ctypes.addressof(buffer), []
            for addr in self.params:
                offsets.append(base + (addr - ctypes.addressof(self.buffer)))
            params = (ctypes.c_void_p * len(offsets))(*offsets)
            err = self.launch_kernel(self.fn, *dims, stream, ctypes.addressof(params), 0)[0]
        if err:
            return int(err)
        if self.heap is not None:
            after_launch(self.heap[0], self.ctx, hstream, self.heap[1], self.heap[2], check)
        return 0


class BoundLaunch:
    """The launch of one kernel on one grid, block and stream (``k[grid, block, stream]``); its
    :meth:`launch` is called with the arguments.

    Without a stream given, a launch goes to the stream the array arguments' producers name in their
    ``__cuda_array_interface__`` (CuPy names its current stream), the legacy default stream when none
    does; when arrays name different streams, the others are waited for before the launch.

    It keeps the launcher of its last launch: while the arguments have the same signature, no device
    was chosen, the process sees one device and the thread's context is the one the launcher was made
    in (as last asked of the driver by this thread), a launch is one signature, one ``pack_into`` and
    ``cuLaunchKernel``, without driver queries. When another library made another context current
    since, the launch fails with a context error before running (``_CONTEXT_CODES``): the context is
    asked again and the launch goes through :func:`fast_launch`.
    """

    __slots__ = ("kernel", "grid", "block", "hstream", "follow", "dims", "stream", "streams", "bound", "entries")

    def __init__(self, kernel, grid, block, stream):
        self.kernel, self.grid, self.block = kernel, grid, block
        self.hstream = stream_handle(stream)
        #: no stream given: the producers' stream
        self.follow = stream is None
        self.dims = (*grid, *block, 0)
        d = initialised()
        #: a handle as the driver's binding takes a stream (cuda-bindings: a CUstream)
        self.streams = getattr(d, "CUstream", int)
        self.stream = self.streams(self.hstream)  # converted once here, not by each cuLaunchKernel
        #: ``(context, words)`` of the native entries made here (:meth:`native`: one per launch object sharing
        #: this configuration and signature it was made for)
        self.entries: list = []
        self.keep(None)

    def keep(self, launcher: Launcher | None) -> None:
        """Reuse ``launcher`` (None: none) while its signature and context hold: what a launch through it
        passes to the driver, all but the parameters' values, is bound here, in one tuple (replaced at once:
        a thread launching while another keeps a new launcher sees the old one whole or the new one).
        The streams the producers may name that the launch goes to as they are (None, 1: the legacy
        default stream; any when a stream was given) are in that tuple too. The native entries made in
        another context than ``launcher``'s hand their calls to the Python launch from now on (those of
        other signatures in the same context hold: each checks its own)."""
        if launcher is not None:
            for ctx, words in self.entries:
                if ctx != launcher.ctx:
                    invalidate(words)
            self.entries = [(ctx, words) for ctx, words in self.entries if is_valid(words)]
        if launcher is None:
            self.bound = None
            return
        self.bound = (launcher.thread, launcher.ctx, launcher.state, launcher.key,
                      _LEGACY_NAMED if self.follow else None, launcher.free,
                      functools.partial(launcher.packer.pack_into, launcher.buffer, 0),
                      functools.partial(launcher.launch_kernel, launcher.fn, *self.dims, self.stream,
                                        launcher.params_address, 0), launcher)

    def launch(self, args, sig=None) -> None:
        """Launch on ``args``; ``sig``: their :func:`signature` when the caller has read it already (a launch
        tape: each argument read once), None: read here."""
        bound = self.bound
        if bound is not None:
            thread, ctx, state, key, named_as_is, free, pack, go, launcher = bound
            if thread.ctx == ctx and state is _state and chosen_device() is None:
                if sig is None:
                    sig = signature(args)
                if sig is not None and sig[0] == key:
                    named, token = sig[2], None
                    if named_as_is is None or named in named_as_is:
                        try:
                            token = free.pop()
                        except IndexError:  # another launch holds the shared buffer: Launcher.__call__'s own
                            pass
                    if token is not None:
                        try:  # as Launcher.__call__, with its calls bound
                            pack(*sig[1])
                            err = go()[0]
                        except struct.error:  # a scalar out of its type's range: the slow path names the problem
                            err = None
                        finally:
                            free.append(token)
                        if not err:
                            if err is None:
                                return slow_launch(self.kernel, self.grid, self.block, self.hstream, args)
                            heap = launcher.heap
                            if heap is None:
                                return None
                            return after_launch(heap[0], ctx, self.hstream, heap[1], heap[2], check)
                        err = int(err)
                    else:  # a producer's stream, or another thread launching through it: Launcher.__call__
                        hstream = self.hstream if named is None or not self.follow else producer_handle(named)
                        try:
                            err = launcher(self.dims, self.streams(hstream), hstream, sig[1])
                        except struct.error:
                            return slow_launch(self.kernel, self.grid, self.block, hstream, args)
                        if not err:
                            return None
                    if err not in _CONTEXT_CODES:  # else another context is current: fast_launch asks
                        check((err,), "cuLaunchKernel")
        hstream = self.hstream
        if self.follow:
            streams = producer_streams(args)
            for other in streams[1:]:  # arrays of several streams: the launch waits for the others
                check(initialised().cuStreamSynchronize(other), "cuStreamSynchronize")
            hstream = streams[0] if streams else self.hstream
        self.keep(fast_launch(self.kernel, self.grid, self.block, hstream, args))
        return None

    def native(self, args, fallback, recorder, owner=None) -> Any:
        """A builtin function launching like :meth:`launch` through the kept launcher in native code
        (:mod:`.launch_entry`), made for launches like ``args`` by this thread: its misses call ``fallback``
        (the launch object's Python call), ``recorder`` is the launch recorder's context variable (while it
        holds a recorder, the entry calls that with ``owner``, the launch object, and the arguments). None where
        the launcher is not kept, its kernel's tape checks the device heap, ``args`` are not of its
        signature or hold an array other than a CuPy ``ndarray``, or the interpreter's layouts differ; None
        too while the entry's code compiles (the first ask of a kind of arguments starts it).

        ``recorder`` None: a launch tape's *fixed* entry, which the recorder itself calls (no recorder
        check) for a launch it found repeating one it recorded: it launches only on the objects of ``args`` and
        their signature values of now (the same pointers, shapes, strides and scalars, on the same stream), else
        misses."""
        kept = self.bound
        if kept is None or not supported():
            return None
        thread, ctx, state, key, _, _, _, _, launcher = kept
        if launcher.heap is not None or state is not _state or thread.ctx != ctx or chosen_device() is not None:
            return None
        sig = signature(args)
        d = state.get("driver")
        if sig is None or sig[0] != key or d is None:
            return None
        cupy, ndarray = _CUPY_SEEN[0], _CUPY_SEEN[1]
        current, mode = current_stream(cupy) if self.follow and ndarray is not None else (None, StreamMode.GIVEN)
        fixed = recorder is None
        plan = plan_of(args, key, ndarray, mode, fixed)
        launch = driver_launch(d, launcher.fn) if plan is not None else None
        code = compiled(plan) if plan is not None and launch is not None else None
        guard = Guard.of([*self.kernel._deps, (globals(), "_state", _state)]) if code is not None else None
        if plan is None or launch is None or code is None or guard is None:
            return None
        named = sig[2]  # a fixed entry's stream: the one this launch goes to (as launch() chooses it)
        stream = producer_handle(named) if fixed and self.follow and named not in _LEGACY_NAMED else self.hstream
        made: list = []
        entry = NativeLaunch(plan, code, launch, launcher, self.dims, stream, current, args, key, fallback,
                             functools.partial(_refused, made), recorder, chosen_device.__self__, guard, ndarray,
                             sig[1], owner)
        made.append(entry.words)
        self.entries = [(c, w) for c, w in self.entries if is_valid(w)] + [(ctx, entry.words)]
        _natives[id(self.kernel)] = [w for w in _natives.get(id(self.kernel), ()) if is_valid(w)] + [entry.words]
        return entry.function


def _refused(made: list, code: int) -> None:
    """A native launch the driver refused (it ran nothing; ``made[0]``: its entry's words): its typed error;
    where another context is current, the entry hands this and later calls to the Python launch, which asks."""
    if code in _CONTEXT_CODES:
        invalidate(made[0])
        return
    try:
        check((code,), "cuLaunchKernel")
    except GPUCompilerError as exc:  # the caller's frame on top, as the Python launch raises it
        raise for_user(exc, debug_tracebacks()) from None


#: the streams an array's producer may name that a launch without a stream given goes to as it is (None: none
#: named; 1: the legacy default stream, the launch's handle 0)
_LEGACY_NAMED = (None, 1)


def fast_launch(kernel, grid, block, hstream: int, args) -> Launcher | None:
    """Launch with a stream handle; arguments that cannot take the fast path go through :func:`slow_launch`.
    The launcher used, when a later launch of the same signature may reuse it (see :class:`BoundLaunch`).
    DLPack arrays are read here (asked for on this stream), each kept alive until the launch returns."""
    args = dlpack.views(tuple(args), kernel.bind.names, kernel.py_func.__qualname__, hstream or 1)
    d = initialised()
    err, ctx = d.cuCtxGetCurrent()
    ctx = int(ctx)
    device = current_device()
    if device is not None:
        chosen = device_context(d, device.id)
        if chosen != ctx:  # the chosen device's context, current for this launch only
            check(d.cuCtxPushCurrent(chosen), "cuCtxPushCurrent")
            try:
                fast_launch(kernel, grid, block, hstream, args)
                return None
            finally:
                check(d.cuCtxPopCurrent(), "cuCtxPopCurrent")
    sig = signature(args) if int(err) == 0 and ctx else None
    if sig is None:
        slow_launch(kernel, grid, block, hstream, args)
        return None
    key, values, _ = sig
    state = _state
    single = state.get("devices") == 1
    if not single:  # several devices (or not asked yet): arrays on the launch's device
        check_devices(d, args, kernel.bind.names, ctx)
    launcher = _launchers.get((id(kernel), ctx, key))
    if launcher is None:
        launcher = _new_launcher(d, kernel, ctx, key, args)
    try:
        err = launcher((*grid, *block, 0), hstream, hstream, values)
    except struct.error:  # a scalar out of its type's range: the slow path names the problem
        slow_launch(kernel, grid, block, hstream, args)
        return None
    if err:
        check((err,), "cuLaunchKernel")
    if device is None:
        state["thread"].ctx = ctx  # this thread's context, as the driver says now
    return launcher if single and device is None else None


def _new_launcher(d, kernel, ctx, key, args) -> Launcher:
    argtypes, _, _ = marshal(args)  # full checks and typed errors; no NumPy arrays here
    if len(argtypes) != len(kernel.bind.names):
        kernel.bind.bind(tuple(args), {})  # raises the binding error
    fn = load_function(kernel, argtypes, ctx)
    launcher = _launchers[(id(kernel), ctx, key)] = Launcher(d, fn, argtypes, heap_flag(kernel, argtypes, ctx),
                                                             ctx, key, kernel.py_func.__qualname__)
    return launcher


def slow_launch(kernel, grid, block, hstream: int, args) -> None:
    """Any arguments: NumPy arrays staged to the device and copied back, NumPy scalars."""
    d = _driver()
    ctx = current_context()
    allocated = []

    def alloc(nbytes):
        ptr = int(check(d.cuMemAlloc(nbytes), "cuMemAlloc"))
        allocated.append(ptr)
        return ptr

    check_devices(d, args, kernel.bind.names, ctx)
    try:
        argtypes, buffers, copies = marshal(args, alloc)
        if len(argtypes) != len(kernel.bind.names):
            kernel.bind.bind(tuple(args), {})  # raises the binding error
        fn = load_function(kernel, argtypes, ctx)
        for c in copies:
            if c.nbytes:
                check(d.cuMemcpyHtoDAsync(c.dptr, c.staged.ctypes.data, c.nbytes, hstream), "cuMemcpyHtoDAsync")
        params = param_array(buffers)
        check(d.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, hstream,
                               ctypes.addressof(params), 0), "cuLaunchKernel")
        flag = heap_flag(kernel, argtypes, ctx)
        if flag is not None:
            after_launch(d, ctx, hstream, flag, kernel.py_func.__qualname__, check)
        if copies:
            for c in copies:  # a read-only array is not written by the kernel (its type forbids it)
                if c.nbytes and c.host.flags.writeable:
                    check(d.cuMemcpyDtoHAsync(c.staged.ctypes.data, c.dptr, c.nbytes, hstream),
                          "cuMemcpyDtoHAsync")
            check(d.cuStreamSynchronize(hstream), "cuStreamSynchronize")
            check_pending(check)  # results on the host: launches deferred before them are checked now
            for c in copies:
                if c.staged is not c.host and c.host.flags.writeable:
                    c.host[...] = c.staged
    finally:
        for ptr in allocated:
            d.cuMemFree(ptr)


def synchronize() -> None:
    """Wait for all work of the current context; then read the heap flags of launches that deferred their
    check (:mod:`.device_heap`)."""
    current_context()
    check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")
    check_pending(check)


def check_heap() -> None:
    """Read the heap flags of launches that deferred their check (:func:`.device_heap.deferring`), waiting
    for their streams; a DeviceHeapError when a thread ran out. Nothing to do: no driver call."""
    check_pending(check)


@attrs.frozen
class CudaRuntime:
    """The runtime of PTX kernels (:class:`~gpucompiler.runtime.launchers.Runtime`): the CUDA driver."""

    #: launches honour the device chosen with :mod:`gpucompiler.runtime.devices`
    chooses_devices: ClassVar[bool] = True

    def stream_handle(self, stream) -> int:
        return stream_handle(stream)

    def launch(self, kernel, grid, block, hstream: int, args) -> None:
        fast_launch(kernel, grid, block, hstream, args)

    def bind(self, kernel, grid, block, stream):
        """The launch of ``kernel`` on ``grid``, ``block`` and ``stream`` (as given), called with the arguments:
        :meth:`BoundLaunch.launch` (a bound method: called at once, without an instance's ``__call__``)."""
        return BoundLaunch(kernel, grid, block, stream).launch

    def native(self, run, args, fallback, recorder, owner=None) -> Any:
        """A builtin function doing ``run(args)``'s launches in native code (:meth:`BoundLaunch.native`), or
        None."""
        bound = getattr(run, "__self__", None)
        return bound.native(args, fallback, recorder, owner) if isinstance(bound, BoundLaunch) else None

    def forget(self, kernel) -> None:
        forget(kernel)


CUDA = CudaRuntime()
register_runtime(PTXTarget, CUDA)
