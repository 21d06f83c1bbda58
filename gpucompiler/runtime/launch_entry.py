"""Native launch entries: a repeated kernel launch's host work in compiled code.

A launch object (``k[grid, block]``) that launched the same signature many times through its bound launcher
(:class:`gpucompiler.runtime.cuda.BoundLaunch`'s fast path: one device, none chosen, no device-heap check)
gets a builtin function as its ``__call__`` (:class:`gpucompiler.kernel.Launch` asks its runtime for one):
the entry of :mod:`gpucompiler.codegen.launchentry`, compiled once per :data:`~.launchwords.Plan` (the
arguments' kinds; :func:`compiled`, which loads llvmlite at the first one) and made a ``PyCFunction`` whose
``self`` tuple holds this launch's words. A warm launch
is then the interpreter's call into native code that checks what the Python launch checks (argument
count and exact types, each CuPy array's ``dtype``, rank and contiguity, the kernel's global reads,
the launch recorder, the chosen device, the thread, the runtime's state), reads CuPy's current stream,
fills its own parameter buffer and calls the driver's ``cuLaunchKernel`` through its C function pointer.
Anything else goes to the Python launch unchanged (:class:`NativeLaunch`).

A launch tape asks for a *fixed* entry of a launch it recorded and found repeating (:data:`~.launchwords.Plan`'s
third item): the tape calls it while it records, so it does not check the recorder, and it launches only on the
argument objects it was made for, with the values its buffer holds (the recorded launch's, packed as the Python
launch packs them) and on the stream it was made for: other objects, or the same ones reshaped, moved or on
another stream, are a miss.

The driver's function comes from the driver binding's ``native_launch()`` where it has one (the tests' fake
drivers: a ctypes callback), else from ``libcuda.so.1`` (the library cuda-bindings loaded: the same
driver state); a function handle is its ``int``. Entries are made only where :func:`supported` (CPython 3.11 on,
:func:`.pyentry.layout_ok` on live objects) and, for NumPy scalar arguments, :func:`numpy_scalars_ok`.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..codegen.launchwords import (ARG_OBJECT, ARG_WORDS, W_ARGS, W_BUFFER, W_CURRENT, W_DATA, W_DEVICE, W_DIMS,
                                   W_DTYPE, W_FUNCTION, W_GUARD, W_LAUNCH, W_NDARRAY, W_PARAMS, W_PTR, W_RECORDER,
                                   W_SHAPE, W_STREAM, W_STRIDES, W_THREAD, W_VALID, Kind, Plan, StreamMode,
                                   param_sizes)
from ..cache import later
from ..errors import GPUCompilerError
from .pyentry import Guard, layout_ok

_METH_FASTCALL, _METH_KEYWORDS = 0x0080, 0x0002
_NAME = "gpuc_launch_entry"
#: how an entry reads each scalar type a signature may hold (NumPy's by their value, ``obval``)
SCALAR_KINDS = {float: Kind.FLOAT, int: Kind.INT, bool: Kind.BOOL, np.float64: Kind.NP_FLOAT64,
                np.float32: Kind.NP_FLOAT32, np.int64: Kind.NP_INT64, np.int32: Kind.NP_INT32,
                np.bool_: Kind.NP_BOOL}
_PYTHON_KINDS = frozenset({Kind.FLOAT, Kind.INT, Kind.BOOL})


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


#: ``PyCFunction_NewEx`` through a prototype of its own (``ctypes.pythonapi.PyCFunction_NewEx`` is one object,
#: shared with :mod:`.pyentry`, whose argument types it sets)
_new_builtin = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.py_object)(
    ("PyCFunction_NewEx", ctypes.pythonapi))


def builtin_function(name: str, address: int, state: tuple) -> Any:
    """A builtin function (``METH_FASTCALL | METH_KEYWORDS``) running the compiled code at ``address``, its
    ``self`` the tuple ``state`` followed by the method definition (kept alive with the function)."""
    method = _MethodDef(name.encode(), address, _METH_FASTCALL | _METH_KEYWORDS, None)
    return _new_builtin(ctypes.addressof(method), (*state, method), None)


_compile_lock = threading.Lock()
#: a plan (or another key of :func:`compiled_code`) -> its compiled code ``(library, address)``, :data:`_COMPILING`,
#: or the error that stopped its compile
_compiles: dict = {}
_COMPILING, _FAILED = object(), object()


def compiled(plan: Plan) -> tuple[Any, int] | None:
    """The compiled entry of ``plan`` (the library, kept alive here, and the entry's address), or None while it
    compiles: the first ask starts the compile on a thread of its own (:func:`gpucompiler.cache.later.start`,
    waited for at exit and fork), so no launch waits for LLVM (tens of milliseconds, the first one loading
    llvmlite and the code generator). None too, after one ``RuntimeWarning``, where LLVM could not compile or
    load it: these launches stay on the Python launch."""
    return compiled_code(plan, functools.partial(_entry_ir, plan), _NAME,
                         f"launch entry for arguments {plan[0]}", "these launches stay on the Python launch")


def _entry_ir(plan: Plan) -> str:
    from ..codegen.launchentry import emit_launch_entry

    return emit_launch_entry(plan, _NAME)


def compiled_code(key, emit: Callable[[], str], name: str, what: str, instead: str) -> tuple[Any, int] | None:
    """``(library, address of function name)`` of the LLVM IR ``emit()`` gives, compiled once per ``key`` on a
    thread of its own (as :func:`compiled` says), or None while it compiles, and after one ``RuntimeWarning``
    (``no native {what}: {error}; {instead}``) where LLVM could not make it."""
    got = _compiles.get(key)
    if got is None:
        with _compile_lock:
            start = key not in _compiles
            if start:
                _compiles[key] = _COMPILING
        if start:
            later.start(functools.partial(_compile, key, emit, name), "gpuc-native-code")
        got = _compiles[key]  # made already where no thread could start (the interpreter's shutdown)
    if isinstance(got, BaseException):
        _compiles[key] = _FAILED
        warnings.warn(f"no native {what}: {got}; {instead}", RuntimeWarning, stacklevel=3)
        return None
    return None if got is _COMPILING or got is _FAILED else got


def _compile(key, emit: Callable[[], str], name: str) -> None:
    """Compile and load ``emit()``'s module into :data:`_compiles` (its error where LLVM fails)."""
    from .cpu import CPULibrary

    try:
        lib = CPULibrary.from_ir(emit())
        _compiles[key] = (lib, lib.address(name))
    except (GPUCompilerError, RuntimeError) as exc:
        _compiles[key] = exc


@functools.cache
def supported() -> bool:
    """Whether this interpreter can run entries: its objects laid out as :func:`.pyentry.layout_ok` checks, and
    ``PyObject_Vectorcall`` exported (a function from CPython 3.11; 3.10 has it inline in its headers only), which
    an entry calls to hand a miss to the Python launch. Elsewhere every launch is the Python launch."""
    return layout_ok() and hasattr(ctypes.pythonapi, "PyObject_Vectorcall")


@functools.cache
def numpy_scalars_ok() -> bool:
    """Whether NumPy's scalars hold their value at :data:`~.launchentry._SCALAR_VALUE` (``obval``), checked on
    one of each kind."""
    kinds = ((np.float64(1.5), ctypes.c_double), (np.float32(-2.25), ctypes.c_float), (np.int64(-7), ctypes.c_int64),
             (np.int32(-9), ctypes.c_int32), (np.bool_(True), ctypes.c_bool))
    return all(ctype.from_address(id(value) + 16).value == value for value, ctype in kinds)


@functools.cache
def libcuda_launch() -> int | None:
    """The address of ``cuLaunchKernel`` in ``libcuda.so.1`` (``_ptsz`` where cuda-bindings calls the per-thread
    default stream's variant), or None where the library cannot be loaded."""
    per_thread = os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0") not in ("", "0")
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        fn = getattr(lib, "cuLaunchKernel_ptsz" if per_thread else "cuLaunchKernel")
    except (OSError, AttributeError):
        return None
    return ctypes.cast(fn, ctypes.c_void_p).value


def driver_launch(d, fn) -> tuple[int, int] | None:
    """``(address of a C cuLaunchKernel, function fn's handle as an int)`` of driver binding ``d``; None where
    there is no C function or ``fn`` is no handle."""
    own = getattr(d, "native_launch", None)
    address, handle = own() if own is not None else (libcuda_launch(), int)
    try:
        return None if address is None else (address, handle(fn))
    except (TypeError, ValueError):  # not a handle the binding converts: launches stay on the Python launch
        return None


def plan_of(args, key, ndarray, stream_mode: StreamMode, fixed: bool = False) -> Plan | None:
    """The plan of a launch on ``args`` (their signature ``key``; ``ndarray``: CuPy's type, None: none;
    ``fixed``: a launch tape's entry, see :data:`~.launchwords.Plan`), or None where an argument is of another
    kind (an array read by its ``__cuda_array_interface__``)."""
    kinds = []
    for a, item in zip(args, key):
        tp = type(a)
        kind = SCALAR_KINDS.get(tp) if tp is item else None
        if kind is not None:
            if kind not in _PYTHON_KINDS and not numpy_scalars_ok():
                return None
            kinds.append((kind, 0))
        elif ndarray is not None and tp is ndarray:
            kinds.append((Kind.ARRAY, len(a.shape)))
        else:
            return None
    arrays = any(kind is Kind.ARRAY for kind, _ in kinds)
    return tuple(kinds), stream_mode if arrays else StreamMode.GIVEN, fixed


class NativeLaunch:
    """A native entry over one launcher: its words, parameter buffer and builtin function (``function``).

    ``words[W_VALID]`` is cleared by :func:`invalidate` (the launcher or the kernel's code was dropped, the
    driver said another context is current, or nothing holds the function any more): the entry then hands
    every call to the Python launch, which makes a new one when the launches settle again. A fixed entry's
    buffer holds ``values`` (the launch's signature values) packed as ``launcher`` packs them, and ``stream``
    is the one it expects; it takes the objects of ``args`` only (kept alive here). ``owner``: the launch object
    an active launch recorder is handed with the arguments (None in a fixed entry, which has no recorder check)."""

    __slots__ = ("words", "function")

    def __init__(self, plan: Plan, code: tuple[Any, int], launch: tuple[int, int], launcher, dims, stream: int,
                 current, args, key, fallback, on_error, recorder, device, guard: Guard, ndarray, values=(),
                 owner=None):
        kinds = plan[0]
        sizes = param_sizes(plan)
        buffer = (ctypes.c_int64 * max(sum(sizes) // 8, 1))()
        if plan[2]:
            launcher.packer.pack_into(buffer, 0, *values)
        base, offsets, at = ctypes.addressof(buffer), [], 0
        for size in sizes:
            offsets.append(base + at)
            at += size
        params = (ctypes.c_void_p * max(len(sizes), 1))(*offsets)
        names = tuple(sys.intern(n) for n in ("dtype", "shape", "strides", "data", "ptr"))
        words = (ctypes.c_uint64 * (W_ARGS + ARG_WORDS * len(kinds)))()
        words[W_THREAD], (words[W_LAUNCH], words[W_FUNCTION]) = threading.get_ident(), launch
        words[W_STREAM], words[W_PARAMS], words[W_BUFFER] = stream, ctypes.addressof(params), base
        words[W_RECORDER], words[W_DEVICE], words[W_GUARD] = id(recorder), id(device), ctypes.addressof(guard.words)
        words[W_NDARRAY], words[W_CURRENT] = id(ndarray), id(current)
        for at, name in zip((W_DTYPE, W_SHAPE, W_STRIDES, W_DATA, W_PTR), names):
            words[at] = id(name)
        for j, value in enumerate(dims):
            words[W_DIMS + j] = value
        expected: list[Any] = []
        for k, ((kind, _), a, item) in enumerate(zip(kinds, args, key)):
            at = W_ARGS + ARG_WORDS * k
            if kind is Kind.ARRAY:  # item: the signature's (typestr, ndim, contiguous, readonly)
                expected.append(a.dtype)
                words[at], words[at + 1], words[at + 2] = id(a.dtype), a.dtype.itemsize, int(item[2])
            elif kind not in _PYTHON_KINDS:  # a NumPy scalar: its type
                words[at] = id(type(a))
            if plan[2]:  # a fixed entry takes this object only
                words[at + ARG_OBJECT] = id(a)
        words[W_VALID] = 1
        self.words = words
        # the tuple keeps alive everything the words point at
        state = (fallback, words, on_error, owner, buffer, params, guard, names, expected, recorder, device,
                 ndarray, current, launcher, code[0], tuple(args) if plan[2] else ())
        self.function = builtin_function(_NAME, code[1], state)
        weakref.finalize(self.function, invalidate, words).atexit = False


def invalidate(words) -> None:
    """Hand every later call of the entry over ``words`` (a :class:`NativeLaunch`'s) to the Python launch."""
    words[W_VALID] = 0


def is_valid(words) -> bool:
    """Whether the entry over ``words`` still launches."""
    return bool(words[W_VALID])


def current_stream(cupy) -> tuple[Any, StreamMode]:
    """CuPy's current-stream function: ``cupy.cuda.stream.get_current_stream_ptr`` (a handle, no Stream object
    made) where Python can call it without arguments and it gives ``get_current_stream().ptr``, else
    ``cupy.cuda.get_current_stream`` (its ``ptr``)."""
    current = cupy.cuda.get_current_stream
    ptr = getattr(getattr(cupy.cuda, "stream", None), "get_current_stream_ptr", None)
    try:
        if ptr is not None and ptr() == current().ptr:
            return ptr, StreamMode.PTR_CALL
    except Exception:  # another signature (a device argument) or a cdef function: the Stream object's ptr
        pass
    return current, StreamMode.OBJECT


__all__ = ["NativeLaunch", "StreamMode", "builtin_function", "compiled", "compiled_code", "current_stream",
           "driver_launch", "invalidate", "is_valid", "numpy_scalars_ok", "plan_of", "supported"]
